"""``pdesharp data generate`` as a user meets it: a line per sample in a log, Ctrl-C keeps the
finished samples, the same command resumes and writes exactly what an uninterrupted run writes;
a seed whose draw blows up is rejected, said so, and redrawn."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from pdesharp.cli import main
from pdesharp.data.generate import chunked

CLI = [sys.executable, "-c", "import sys; from pdesharp.cli import main; sys.exit(main())"]
# As a user's terminal starts it: Ctrl-C raises KeyboardInterrupt. A test session started in the
# background of a non-interactive shell (`... &`, as CI scripts and nohup do) has SIGINT
# ignored, which its children inherit and Python then keeps: the interrupt would never land.
INTERRUPTIBLE = [sys.executable, "-c", "import signal, sys; "
                 "signal.signal(signal.SIGINT, signal.default_int_handler); "
                 "from pdesharp.cli import main; sys.exit(main())"]

# Walls: the Chebyshev generator integrates one sample at a time (0.1-0.2 s each).
WALLS = textwrap.dedent("""\
    name: heat_robin
    equation: dt(u) = 0.05*dx(u, 2) + sin(pi*x)
    domain: {x: [0, 1]}
    boundary: "x = 0: u = 0.5; x = 1: dx(u) + u = 1"
    time_span: [0, 0.5]
    n_frames: 3
    generator: {modes: 3, ranges: {u: [0, 1]}}
    """)


# The same walls, a nonlinear law: Radau takes 0.3-0.4 s per sample (the heat law 0.1 s)
SLOWER = WALLS.replace("dt(u) = 0.05*dx(u, 2) + sin(pi*x)", "dt(u) = 0.01*dx(u, 2) + u - u**3"
                       ).replace("time_span: [0, 0.5]", "time_span: [0, 1]")
NO_CHECK = ("--check-samples", "0")


def test_the_slower_law_replaced_the_heat_law():
    # the tests below rely on SLOWER being the nonlinear law on the longer window: a reworded
    # WALLS would otherwise make them time the heat law without saying so
    assert "u - u**3" in SLOWER and "[0, 1]" in SLOWER and "sin(pi*x)" not in SLOWER


def _read(path: Path) -> tuple[dict, dict]:
    with h5py.File(path, "r") as h5:
        arrays = {k: h5[k][()] for k in h5.keys()}
        attrs = {k: h5.attrs[k] for k in h5.attrs if k != "created"}
    return arrays, attrs


def _generate(spec: Path, out: Path, samples: int, *extra: str, cli: list[str] = CLI
              ) -> list[str]:
    return cli + ["data", "generate", str(spec), "--samples", str(samples), "--seed", "5",
                  "--nx", "16", "--out", str(out), *extra]


def test_ctrl_c_keeps_finished_samples_and_the_rerun_resumes_to_identical_data(tmp_path, capfd):
    # Eight samples of an Allen-Cahn law between the same walls, 0.3-0.4 s of CPU each
    # (measured): the interrupt, sent as the first is logged, has the other seven (~2.5 s of
    # CPU) to land in. No error estimate: it is not what is tested here, and it would be the
    # run's longest step.
    N = 8
    spec = tmp_path / "heat_robin.yaml"
    spec.write_text(SLOWER)
    out = tmp_path / "dev.hdf5"
    proc = subprocess.Popen(_generate(spec, out, N, *NO_CHECK, cli=INTERRUPTIBLE),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = []
    deadline = time.monotonic() + 240
    for line in proc.stderr:  # the log: one line per finished sample
        log.append(line)
        if "sample #0 done" in line:
            proc.send_signal(signal.SIGINT)
            break
        assert time.monotonic() < deadline, "".join(log)
    _, rest = proc.communicate(timeout=120)
    err = "".join(log) + rest
    assert proc.returncode == 130, err
    assert f"samples 1/{N}" in err and "interrupted:" in err
    assert "run the same command again" in err
    kept = int(err.split("interrupted: ")[1].split(f" of {N}")[0])
    assert 1 <= kept < N
    assert not out.exists() and (tmp_path / "dev.hdf5.partial").is_dir()

    again = subprocess.run(_generate(spec, out, N, *NO_CHECK), capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {kept} of {N} samples were kept" in again.stderr
    # only the missing samples were computed this time, one log line each
    assert again.stderr.count(" done in ") == N - kept
    assert not (tmp_path / "dev.hdf5.partial").exists()

    # the uninterrupted run to compare with, in-process (the same command; the interrupted
    # and resumed ones above are the real processes a user runs)
    whole = tmp_path / "whole.hdf5"
    capfd.readouterr()
    assert main(_generate(spec, whole, N, *NO_CHECK, cli=[])) == 0
    assert capfd.readouterr().err.count(" done in ") == N
    resumed, attrs_r = _read(out)
    uninterrupted, attrs_u = _read(whole)
    assert resumed.keys() == uninterrupted.keys()
    for key in resumed:
        assert np.array_equal(resumed[key], uninterrupted[key]), key  # bit for bit
    assert attrs_r == attrs_u


def test_a_partial_run_with_other_settings_is_refused_then_restarted(tmp_path, capsys):
    spec = tmp_path / "heat_robin.yaml"
    spec.write_text(WALLS)
    out = tmp_path / "dev.hdf5"
    # leave what an interrupted run with --nx 16 leaves: a manifest and one finished sample
    work = chunked.PartialWork(out, {"nx": 16})
    work.open()
    work.save(0, 1, chunked.Batch({"tensor": np.zeros((1, 3, 16))}))
    with pytest.raises(SystemExit) as exc:
        main(["data", "generate", str(spec), "--samples", "2", "--seed", "5", "--nx", "12",
              "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "other settings" in err and "--restart" in err
    assert (tmp_path / "dev.hdf5.partial" / "samples-0000000-0000001.npz").is_file()  # kept
    assert main(["data", "generate", str(spec), "--samples", "2", "--seed", "5", "--nx", "12",
                 "--out", str(out), "--restart"]) == 0
    with h5py.File(out, "r") as h5:
        assert h5["tensor"].shape == (2, 3, 12)
    assert not (tmp_path / "dev.hdf5.partial").exists()


BLOWUP = textwrap.dedent("""\
    name: blowup_some
    equation: dt(u) = 0.01*dx(u, 2) + u**2
    domain: {x: [0, 1]}
    boundary: periodic
    time_span: [0, 2]
    n_frames: 3
    """)


def test_draws_that_blow_up_are_rejected_said_so_and_redrawn(tmp_path, capsys):
    # u_t = u^2 blows up before t = 2 from data whose maximum is near 1 (about half the draws
    # of the default scaling max |u| = 1); seed 0's samples 1 and 2 are such draws (sample 2
    # twice), found by running it
    spec = tmp_path / "blowup.yaml"
    spec.write_text(BLOWUP)
    out = tmp_path / "b.hdf5"
    # no error estimate: its finer runs of near-blow-up draws are slow and not what this tests
    assert main(["data", "generate", str(spec), "--samples", "4", "--seed", "0", "--nx", "16",
                 "--out", str(out), "--check-samples", "0"]) == 0
    captured = capsys.readouterr()
    assert "sample #1: draw 0 rejected (DOP853 failed" in captured.err
    assert "sample #2: draw 1 rejected" in captured.err and "drawing another" in captured.err
    assert "3 random draw(s) were rejected" in captured.out
    with h5py.File(out, "r") as h5:
        u = h5["tensor"][()]
        rejected = json.loads(h5.attrs["rejected_draws"])
    assert u.shape == (4, 3, 16) and np.all(np.isfinite(u))
    assert [(r["sample"], r["draw"]) for r in rejected] == [(1, 0), (2, 0), (2, 1)]
    # the samples that integrated are the ones an all-at-once draw gives (draw 0 of the seed)
    from pdesharp.data.generate.generic import generate_task
    from pdesharp.task import load_task

    first = generate_task(load_task(spec), 1, 0, 16, first=0)["tensor"]
    assert np.allclose(u[0], first[0], rtol=0, atol=1e-6)  # float32 storage


def test_a_task_that_always_blows_up_gives_up_with_the_reason_and_keeps_nothing(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(chunked, "MAX_DRAWS", 2)
    spec = tmp_path / "always.yaml"
    spec.write_text(BLOWUP.replace("0.01*dx(u, 2) + u**2", "u**2 + 5"))
    out = tmp_path / "a.hdf5"
    with pytest.raises(SystemExit) as exc:
        main(["data", "generate", str(spec), "--samples", "1", "--seed", "0", "--nx", "16",
              "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "draw 1 rejected" in err and "giving up" in err
    assert "2 random draws in a row failed" in err and "generator.ranges" in err
    assert os.listdir(tmp_path) == ["always.yaml"]  # no output, no .partial folder


def test_periodic_batches_resume_to_the_same_data(tmp_path):
    """The 1D periodic generator integrates 8 samples at a time: an interruption after the first
    batch and a resumed call give the data of one uninterrupted call."""
    from pdesharp.data.generate import generate_to_file
    from pdesharp.task import load_task

    spec = tmp_path / "ac.yaml"
    spec.write_text("name: ac\nequation: dt(u) = 0.01*dx(u, 2) + u - u**3\n"
                    "domain: {x: [0, 1]}\nboundary: periodic\ntime_span: [0, 0.5]\nn_frames: 3\n")
    task = load_task(spec)

    def stop_after_first_batch(event):
        if event.kind == "samples":
            raise KeyboardInterrupt

    out = tmp_path / "resumed.hdf5"
    with pytest.raises(KeyboardInterrupt):
        generate_to_file(task, 11, 2, out=out, nx=16, sink=stop_after_first_batch)
    assert [p.name for p in (tmp_path / "resumed.hdf5.partial").glob("*.npz")] == \
        ["samples-0000000-0000008.npz"]
    events = []
    generate_to_file(task, 11, 2, out=out, nx=16, sink=events.append)
    events = [e for e in events if e.kind != "check"]  # the error estimate's steps come first
    assert events[0].kind == "start" and events[0].done == 8
    assert [(e.first, e.last) for e in events if e.kind == "samples"] == [(8, 11)]
    whole = generate_to_file(task, 11, 2, out=tmp_path / "whole.hdf5", nx=16)
    (a, attrs_a), (b, attrs_b) = _read(out), _read(whole)
    assert all(np.array_equal(a[k], b[k]) for k in a) and a.keys() == b.keys()
    assert attrs_a == attrs_b
