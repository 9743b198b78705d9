"""A suite on the session's local Ray instance (conftest.py) whose case loses its worker: the
Ray worker process running the case is killed (SIGKILL) after the case recorded model calls and
an evaluation; Ray runs the case again in another worker process, which reopens the case's run
folder and finishes it. No recorded evaluation is run again (its journal row is the same row,
same time stamp) and no recorded model call reaches the model again (the scripted model, rules
written by us, logs every call that reaches it, across processes). Also: the stages a worker
reports reach the driver through the Ray queue."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))

from suite_helpers import import_one_d

pytestmark = pytest.mark.slow

# The exact solution of c3_poisson1d (u = sin(pi x) + x), written by us as a scripted reply;
# sample 0 answers at once, samples 1-3 only once the test has killed the worker (it writes
# GO after the kill; DELAY s at most): the case is killed between, and its second attempt in a
# new worker is answered at once (it used to wait out the DELAY too, 25 s of an idle worker).
REPLY = """Plan: the exact solution.
```python
import numpy as np

def solver(grid, kappa):
    return np.sin(np.pi * grid) + grid
```
"""
DELAY = 25.0
GO = "worker-killed"


def _rules(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "calls.jsonl"
    rules = [{"tag": "codepde.generate", "sample": 0, "reply": REPLY}] + \
        [{"tag": "codepde.generate", "sample": k, "delay_s": DELAY + k, "reply": REPLY,
          "until_file": str(tmp_path / GO)} for k in (1, 2, 3)]
    path = tmp_path / "rules.yaml"
    path.write_text("# written by us (pdesharp tests); not a model's output\n"
                    + json.dumps({"call_log": str(log), "rules": rules}))
    return path, log


def _rows(db: Path, sql: str) -> list[tuple]:
    if not db.is_file():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def _calls(log: Path) -> list[dict]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.is_file() else []


def _journal_calls(db: Path) -> list[tuple]:
    return _rows(db, "SELECT seq, ts, tag, sample_index, messages, source FROM model_calls "
                     "ORDER BY seq")


def _key(row: tuple) -> tuple[int, str]:
    """A journal row's call as the scripted model logs it: (sample, request hash); CodePDE's
    samples send the same messages, told apart by their sample index."""
    from pdesharp.llm.base import Message
    from pdesharp.rolesets import request_hash

    return row[3], request_hash([Message(**m) for m in json.loads(row[4])])


def test_a_worker_lost_mid_case_is_retried_without_repeating_recorded_work(ray_cluster,
                                                                            tmp_path):
    from pdesharp.suite.run import SuiteConfig, run_suite

    suite = import_one_d(tmp_path)
    for other in ("c1_heat1d",):  # one case: the one that loses its worker
        import shutil

        shutil.rmtree(suite / other)
    rules, log = _rules(tmp_path)
    out = tmp_path / "out"
    cfg = SuiteConfig(suite=str(suite), out=str(out), methods=["codepde"],
                      model=f"scripted:{rules}", samples=4, debug_rounds=0,
                      convergence=False, executor="ray")
    stages: list[tuple[str, str]] = []
    got: dict = {}

    def drive():
        try:
            got["result"] = run_suite(cfg, stage=lambda c, s: stages.append((c, s)))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            got["error"] = exc

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    db = out / "cases" / "c3_poisson1d" / "c3_poisson1d" / "codepde-r0" / "run.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # sample 0 answered and evaluated, 1-3 still waiting
        evaluated = _rows(db, "SELECT seq, ts, candidate_id, split FROM evaluations")
        if evaluated and _journal_calls(db):
            break
        assert driver.is_alive(), got
        time.sleep(0.2)
    else:
        pytest.fail("the case recorded no evaluation in time")
    (worker,) = {c["pid"] for c in _calls(log)}  # the process that made the case's calls
    assert worker != os.getpid()
    os.kill(worker, signal.SIGKILL)
    (tmp_path / GO).touch()  # the calls of the next attempt are answered at once
    recorded_evals = _rows(db, "SELECT seq, ts, candidate_id, split FROM evaluations "
                               "ORDER BY seq")
    recorded_calls = [r for r in _journal_calls(db) if r[5] == "model"]
    assert len(recorded_calls) == 1 and not (db.parent / "summary.json").exists()

    driver.join(timeout=240)
    assert not driver.is_alive(), "the suite did not finish after the worker was lost"
    assert "error" not in got, got.get("error")
    (row,) = json.loads((out / "table.json").read_text())["rows"]
    assert row["state"] == "done" and row["model_calls"] == 4, row
    # the evaluations recorded before the kill are the same rows, not run again
    after = _rows(db, "SELECT seq, ts, candidate_id, split FROM evaluations ORDER BY seq")
    assert after[:len(recorded_evals)] == recorded_evals
    assert sorted(r[3] for r in after) == ["dev"] * 4 + ["test"]  # 4 samples, the winner's test
    # the recorded model call reached the model once: the new attempt replayed it
    calls = _calls(log)
    assert len({c["pid"] for c in calls}) == 2  # the case ran again in another worker
    made = [(c["sample"], c["request"]) for c in calls]
    for r in recorded_calls:
        assert made.count(_key(r)) == 1, "a recorded model call was made again"
    # ... and its journal row is the same row (a finished sample is not asked again at all;
    # an unfinished one's recorded calls would be replayed from the journal)
    assert [r for r in _journal_calls(db) if r[:2] == recorded_calls[0][:2]] == recorded_calls
    # the calls in flight at the kill (samples 1-3, never recorded) were made again: each of
    # the 4 samples' requests was answered into the journal exactly once
    answered = [r for r in _journal_calls(db) if r[5] == "model"]
    assert sorted(r[3] for r in answered) == [0, 1, 2, 3]
    # stage progress came from the workers through the Ray queue
    assert any(c == "c3_poisson1d" and "codepde" in s for c, s in stages), stages
