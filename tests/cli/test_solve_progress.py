"""Issue 20.3: `pdesharp solve` shows progress. On a terminal (a pseudo-terminal here, so Rich
is in terminal mode): elapsed time, evaluations k of N, the lowest score. In a log: one line
per stage and per evaluation, not wrapped; after a resume the counts start from what the run
already has."""

from __future__ import annotations

import re
import sys

import h5py

from cli_helpers import pdesharp
from test_hostile_terminal import run_on_pty

QUICK = ("--max-samples", "1", "--no-convergence", "--audit", "off")


def short_burgers(shared_data, path, frames: int = 21):
    """The first sample and ``frames`` frames of the shared Burgers file (a user's own short
    file): the progress lines are the same, the evaluations a tenth of the full window's."""
    with h5py.File(shared_data / "burgers_dev.hdf5", "r") as h5, h5py.File(path, "w") as out:
        out["tensor"] = h5["tensor"][:1, :frames]
        out["t-coordinate"] = h5["t-coordinate"][:frames]
        out["x-coordinate"] = h5["x-coordinate"][:]
    return str(path)


def test_solve_progress_on_a_terminal_and_in_a_log(tmp_path, shared_data):
    dev = short_burgers(shared_data, tmp_path / "dev.hdf5")  # advection ends after one evaluation
    out = run_on_pty([sys.executable, "-m", "pdesharp.cli", "solve", "burgers", "--dev-data",
                      dev, *QUICK, "--max-evals", "2", "--out", str(tmp_path), "--run-id", "p"])
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode("utf-8", "replace"))
    assert "elapsed" in text and re.search(r"elapsed\s+\d+:\d\d", text)
    assert re.search(r"evaluations\s+2/2 \(--max-evals\)", text)
    assert re.search(r"lowest score\s+\d\.\d{3}e-0\d", text)

    log = pdesharp("resume", str(tmp_path / "p"), "--max-evals", "3")  # stderr: a log
    assert log.returncode == 0, log.stderr
    lines = log.stderr.splitlines()
    assert any("resuming run p: 2 evaluations" in line for line in lines)
    reused = [line for line in lines if "stored result reused, not counted" in line]
    assert len(reused) >= 2 and all("evaluations 2/3" in line for line in reused)
    fresh = [line for line in lines if re.search(r"\| c?\S+ \(dev\): ok", line)
             and "reused" not in line]
    assert fresh and "evaluations 3/3" in fresh[-1]
    assert any("| stage synthesis" in line for line in lines)
    assert all(re.match(r"\[\d+:\d\d\] solve p: ", line) for line in lines
               if "solve p:" in line)
    long_lines = [line for line in lines if len(line) > 100]
    assert long_lines  # lines are not wrapped at 80 columns
