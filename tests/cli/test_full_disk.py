"""Issue 18.7: a run folder on a full disk. The runs folder is a real tmpfs mount (CI runs as
root, like this suite); the disk is filled by a ballast file while the run is working, after
its first evaluations are recorded. The run ends with one line, not a traceback; it is not left
`running`; after space is freed, `pdesharp resume` finishes it and repeats nothing recorded."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from cli_helpers import pdesharp, rows


def mounted(tmp_path, size: str):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                   check=True)
    return mount


@pytest.fixture
def small_disk(tmp_path):
    mount = mounted(tmp_path, "24m")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def tiny_disk(tmp_path):
    mount = mounted(tmp_path, "16k")  # room for a few files, not for a run folder
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_run_folder_that_cannot_be_made_is_one_line_and_leaves_nothing(tiny_disk,
                                                                         shared_data):
    got = pdesharp("solve", "advection", "--dev-data", str(shared_data / "advection_dev.hdf5"),
                   "--out", str(tiny_disk / "runs"), "--run-id", "t", "--quiet", timeout=300)
    assert got.returncode == 2, got.stderr
    assert "Traceback" not in got.stderr
    assert [line for line in got.stderr.splitlines() if line.startswith("pdesharp: error:")]
    assert not (tiny_disk / "runs" / "t").exists()


def fill(folder) -> None:
    """Write a ballast file until the file system refuses (unbuffered: a buffered file would
    raise again when closed)."""
    fd = os.open(folder / "ballast", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * (1 << 16))
    except OSError:
        pass
    finally:
        os.close(fd)


def test_full_disk_mid_run_one_line_resumable_nothing_lost(small_disk, shared_data):
    runs = small_disk / "runs"
    # Burgers without its audit: more than one evaluation (advection ends after its first).
    # Three are enough: the disk fills once the first is recorded, and the run still has two
    # to record (each over a second of sandbox and solver), which the resume then does
    argv = [sys.executable, "-m", "pdesharp.cli", "solve", "burgers", "--dev-data",
            str(shared_data / "burgers_dev.hdf5"), "--max-samples", "1", "--no-convergence",
            "--audit", "off", "--max-evals", "3", "--workers", "1", "--out", str(runs),
            "--run-id", "full", "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = runs / "full" / "run.sqlite"
    deadline = time.monotonic() + 600
    try:
        while True:  # wait for the first recorded evaluation, then fill the disk
            assert time.monotonic() < deadline, "no evaluation recorded within 600 s"
            assert proc.poll() is None, f"the run ended before the disk filled: {proc.stderr.read()}"
            try:
                if db.exists() and rows(db, "SELECT COUNT(*) FROM evaluations")[0][0] >= 1:
                    break
            except Exception:  # noqa: BLE001 - the schema is being created
                pass
            time.sleep(0.2)
        fill(small_disk)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, (out, err)
    assert "Traceback" not in err and "OperationalError" not in err
    errors = [line for line in err.splitlines() if line.startswith("pdesharp: error:")]
    assert len(errors) == 1 and "full" in errors[0] and "pdesharp resume" in errors[0], err
    recorded = rows(db, "SELECT candidate_id, code_sha256 FROM evaluations WHERE counted=1")
    assert recorded  # what was computed before the disk filled is there
    shown = pdesharp("show", str(runs / "full"))
    assert shown.returncode == 0 and "status running" not in shown.stdout
    assert "interrupted" in shown.stdout
    assert not (runs / "full" / "run.lock").exists()

    (small_disk / "ballast").unlink()
    resumed = pdesharp("resume", str(runs / "full"), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    again = rows(db, "SELECT candidate_id, code_sha256 FROM evaluations WHERE counted=1")
    assert set(recorded) <= set(again)
    # nothing ran twice: one counted execution per code on the dev split
    dev = rows(db, "SELECT code_sha256 FROM evaluations WHERE counted=1 AND split='dev'")
    assert len(dev) == len(set(dev))
    assert rows(db, "SELECT status FROM runs")[0][0] in ("finished", "budget_stop")
