"""Issue 20.2 / 18.7: a run is self-contained, and a refused or failed command changes nothing.

Real CLI in subprocesses for what a user sees (a run made from $PDESHARP_DATA, show, report,
resume from another shell, a resume refused for missing data, two resumes at once, a dead
endpoint); real sandbox, the shared Burgers dev file; small budgets (--max-evals, one sample)
keep each run to seconds of solver time. Where a command only sets a test up, or its outcome
is already seen through a real process elsewhere in this file, it runs in-process
(``pdesharp.cli.main``): the same code, without a second interpreter's start and imports.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import pdesharp, rows, snapshot

from pdesharp.cli import main

QUICK = ("--max-samples", "1", "--no-convergence", "--audit", "off")
# Burgers without its audit: the built-in analyst's first design is not the last word there
# (advection's exact propagator ends a run after one evaluation), so a budget stops the run and
# a resume has work to do
TASK, DEV = "burgers", "burgers_dev.hdf5"


@pytest.fixture(scope="module")
def data_run(tmp_path_factory, shared_data):
    """A run made with only $PDESHARP_DATA pointing at the data (no --data-dir)."""
    root = tmp_path_factory.mktemp("selfcontained")
    data = root / "mydata"
    (data / "pdebench").mkdir(parents=True)
    shutil.copy(shared_data / DEV, data / "pdebench" / DEV)
    work = root / "work"
    work.mkdir()
    got = pdesharp("solve", TASK, "--max-evals", "1", *QUICK, "--run-id", "r1",
                   cwd=work, env={"PDESHARP_DATA": str(data)})
    assert got.returncode == 0, got.stderr
    # an untouched copy, before any test resumes r1: the lock tests below start from a copy of
    # it (a budget-stopped run, as a solve of their own would leave) instead of solving again
    shutil.copytree(work / "runs" / "r1", root / "pristine" / "r1")
    return root, data, work / "runs" / "r1"


def budget_stopped_run(data_run, dest: Path) -> Path:
    """A copy of the module's run as its solve left it (budget stop after one evaluation; its
    data recorded as an absolute data folder the module keeps): a folder of its own."""
    root = data_run[0]
    shutil.copytree(root / "pristine" / "r1", dest)
    assert rows(dest / "run.sqlite", "SELECT status FROM runs")[0][0] == "budget_stop"
    return dest


def test_run_records_where_its_data_came_from(data_run):
    root, data, run = data_run
    config = json.loads((run / "config.json").read_text())
    assert config["data_dir"] == str(data.resolve())
    assert Path(config["out"]).is_absolute()


def test_report_show_and_resume_work_from_another_shell_and_folder(data_run, tmp_path):
    root, data, run = data_run
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    drop = ("PDESHARP_DATA", "PDESHARP_RUNS")
    shown = pdesharp("show", str(run), cwd=elsewhere, drop=drop)
    assert shown.returncode == 0 and "r1" in shown.stdout
    html = elsewhere / "r.html"
    rep = pdesharp("report", str(run), "--out", str(html), cwd=elsewhere, drop=drop)
    assert rep.returncode == 0, rep.stderr
    text = html.read_text()
    assert "plot not drawn" not in text and "data:image/png;base64" in text
    res = pdesharp("resume", str(run), "--max-evals", "2", "--quiet", cwd=elsewhere, drop=drop)
    assert res.returncode == 0, res.stderr
    assert json.loads((run / "summary.json").read_text())["feedback_evaluations"] == 2


def test_failed_resume_changes_nothing_then_data_dir_fixes_it(tmp_path, shared_data):
    data = tmp_path / "d1"
    data.mkdir()
    shutil.copy(shared_data / DEV, data / "adv.hdf5")
    # the run to resume (set-up, in-process; a subprocess solve is the module's fixture)
    assert main(["solve", TASK, "--dev-data", str(data / "adv.hdf5"), "--max-evals", "1",
                 *QUICK, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet"]) == 0
    run = tmp_path / "runs" / "m"
    moved = tmp_path / "d2"
    data.rename(moved)  # the data folder moved: the recorded file is gone
    before = snapshot(run)
    failed = pdesharp("resume", str(run), "--max-evals", "16", "--quiet")
    assert failed.returncode == 2
    assert "adv.hdf5" in failed.stderr and "--dev-data" in failed.stderr
    assert snapshot(run) == before  # no max_evals 16, no resume event, no status change
    # the fix, in-process (a resume in a real process runs in the test above)
    assert main(["resume", str(run), "--max-evals", "2", "--dev-data", str(moved / "adv.hdf5"),
                 "--quiet"]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["max_evals"] == 2 and config["dev_data"] == str(moved / "adv.hdf5")
    events = [json.loads(d) for (d,) in rows(run / "run.sqlite",
                                             "SELECT data FROM events WHERE kind='resume'")]
    assert events == [{"changed": ["dev_data", "max_evals"]}]


def test_refused_resume_writes_nothing(data_run, tmp_path, capsys):
    # in-process (SystemExit(2) is a process's exit status 2): real processes that race for
    # the lock are the next test's
    run = budget_stopped_run(data_run, tmp_path / "busy")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run / "run.lock").write_text(str(sleeper.pid))  # a live process works on the run
        before = snapshot(run)
        with pytest.raises(SystemExit) as refused:
            main(["resume", str(run), "--max-evals", "9", "--quiet"])
        assert refused.value.code == 2 and f"process {sleeper.pid}" in capsys.readouterr().err
        assert snapshot(run) == before  # no resume event, no raised limit, no -wal/-shm
    finally:
        sleeper.kill()
        sleeper.wait()


def test_two_resumes_at_once_one_runs_one_is_refused(data_run, tmp_path):
    run = budget_stopped_run(data_run, tmp_path / "two")
    # one more evaluation for the one that runs (the module's run has one): the race for the
    # lock is at the start, whatever the budget
    argv = [sys.executable, "-m", "pdesharp.cli", "resume", str(run), "--max-evals", "2",
            "--quiet"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes in ([0, 2], [0, 0]), outs  # [0, 0]: the first ended before the second began
    n_resume = rows(run / "run.sqlite", "SELECT COUNT(*) FROM events WHERE kind='resume'")[0][0]
    assert n_resume == codes.count(0)  # the refused one wrote no event
    assert rows(run / "run.sqlite", "SELECT status FROM runs")[0][0] == "budget_stop"


def test_dead_endpoint_leaves_no_run_folder(tmp_path, shared_data, capsys):
    argv = ["solve", TASK, "--model", "compat:nobody", "--base-url", "http://127.0.0.1:9/v1",
            "--llm-retries", "0", "--no-cache", "--dev-data", str(shared_data / DEV), "--out",
            str(tmp_path), "--quiet"]
    got = pdesharp(*argv, timeout=300)  # as a user meets it: a real process
    assert got.returncode == 1, got.stderr
    assert "127.0.0.1:9" in got.stderr and "was removed" in got.stderr
    # and again into the same folder (in-process: the same code, without a second interpreter)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 1, err
    assert "127.0.0.1:9" in err and "was removed" in err
    assert list(tmp_path.iterdir()) == []


def test_finished_run_leaves_no_sqlite_side_files(data_run):
    _, _, run = data_run
    time.sleep(0.1)
    assert not list(run.glob("run.sqlite-*"))
