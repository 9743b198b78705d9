"""A three-case suite end to end with the built-in analyst, as users run it: killed (SIGKILL)
in the middle of its second case, then resumed. The finished case is not run again, and no
evaluation recorded before the kill is run again (its journal row is the same row, same time
stamp); the table has every case with its Pass@ rates. Cheap cases: two 1D problems with exact
references (imported from records written by us) and Burgers on 1 sample of the shared data
without its audit (a run with work left after its first evaluation: a budget of 3 leaves two
more, each over a second of sandbox and solver, for the kill to land in)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdesharp.cli import main

pytestmark = pytest.mark.slow
ARGS = ["--candidates", "2", "--max-rounds", "1", "--budget-evals", "3", "--no-convergence",
        "--max-samples", "1", "--audit", "off"]


def _rows(db_path: Path, sql: str) -> list[tuple]:
    if not db_path.is_file():
        return []
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute(sql).fetchall()
    except sqlite3.OperationalError:  # created but not yet initialised
        return []
    finally:
        db.close()


def _evaluations(cell: Path) -> list[tuple]:
    return _rows(cell / "run.sqlite", "SELECT seq, ts, candidate_id, split FROM evaluations "
                                      "ORDER BY seq")


def test_three_cases_killed_mid_case_and_resumed(tmp_path, one_d_suite, shared_data):
    suite = tmp_path / "suite"
    suite.mkdir()
    for case in ("c1_heat1d", "c3_poisson1d"):
        shutil.copytree(one_d_suite / case, suite / case)
    (suite / "c2_burgers").mkdir()
    (suite / "c2_burgers" / "case.yaml").write_text("task: burgers\n")
    out = tmp_path / "out"
    env = {**os.environ, "PDESHARP_DATA": str(shared_data)}
    proc = subprocess.Popen([sys.executable, "-m", "pdesharp.cli", "suite", "run", str(suite),
                             "--out", str(out), *ARGS], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = out / "cases" / "c1_heat1d" / "c1_heat1d" / "sharp-r0"
    second = out / "cases" / "c2_burgers" / "burgers" / "sharp-r0"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:  # the first case done, the second one started
            done = _rows(out / "suite.sqlite", "SELECT state FROM cases WHERE name='c1_heat1d'")
            if done == [("done",)] and _evaluations(second):
                break
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.1)
        else:
            pytest.fail("the suite did not reach its second case in time")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and everything it started
        proc.wait()
    assert not (second / "summary.json").exists(), "the second case ended before the kill"
    before_first = ((first / "summary.json").read_text(), _evaluations(first))
    before_second = _evaluations(second)
    assert before_second

    assert main(["suite", "resume", str(out)]) == 0
    assert ((first / "summary.json").read_text(), _evaluations(first)) == before_first
    after = _evaluations(second)
    assert after[:len(before_second)] == before_second  # recorded rows kept, none re-run
    table = json.loads((out / "table.json").read_text())
    rows = {r["case"]: r for r in table["rows"]}
    assert list(rows) == ["c1_heat1d", "c2_burgers", "c3_poisson1d"]
    assert all(r["state"] == "done" for r in rows.values())
    # the budget of 3 evaluations may stop Burgers' search (a result, not a failure)
    assert rows["c2_burgers"]["status"] in ("finished", "budget_stop")
    assert all(1 <= r["evaluations"] <= 3 for r in rows.values())  # the budget per case
    # the 1D cases' references are exact: the analyst's exact designs reach the float32
    # storage of the reference (~6e-8 relative per value; 1e-6 leaves a wide margin)
    for name in ("c1_heat1d", "c3_poisson1d"):
        assert rows[name]["nrmse"] < 1e-6 and rows[name]["vs_pde"] == rows[name]["nrmse"]
        assert rows[name]["score_split"] == "test"
    assert rows["c2_burgers"]["score_split"] == "dev"  # the shared data has no test split
    (rates,) = table["pass"]
    passed = sum(r["nrmse"] <= 1e-2 for r in rows.values())
    assert rates["passed@0.01"] == passed and rates["cases"] == 3
    md = (out / "table.md").read_text()
    assert "Pass@1e-4" in md and "c2_burgers" in md
    html = (out / "index.html").read_text()
    assert "<script" not in html and "c3_poisson1d" in html
    # a second resume does nothing: every case is done
    stamp = (out / "suite.sqlite").stat().st_mtime_ns
    assert main(["suite", "resume", str(out)]) == 0
    assert _evaluations(second) == after
    assert stamp <= (out / "suite.sqlite").stat().st_mtime_ns
