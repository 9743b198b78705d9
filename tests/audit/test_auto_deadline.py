"""``--audit auto`` spends what it promises: an audit whose estimate fits the budget but whose
real cost does not (a 2D implicit audit: the 2-sample burgers2d example is estimated at ~2 s and
takes about a minute) is stopped at twice the budget, stores nothing, and the run is told which
command computes it."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

from pdesharp.audit import cost, runs
from pdesharp.evaluate import Evaluator
from pdesharp.examples import example_path
from pdesharp.task import load_task

DATA = Path(__file__).resolve().parents[1] / "builtin" / "data" / "burgers2d" / "dev.hdf5"


def test_an_audit_over_its_budget_is_stopped_and_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PDESHARP_AUDIT_DIR", str(tmp_path / "audits"))
    # budget 4 s, deadline 8 s (twice the budget): the audit itself takes about a minute on a
    # quiet machine (7x the deadline) and slows as much under load, so it cannot finish in time
    # on any machine. The child computes until it is stopped: every second of deadline is a
    # second of CPU, hence no more than needed. Under heavy load its spawn and imports (~2 s
    # quiet, over 10 s at load 8) may take the whole deadline: it is stopped all the same,
    # which is what this test checks (its steps coming through is checked below)
    monkeypatch.setenv(cost.AUTO_SECONDS_ENV, "4")
    task = load_task(example_path("burgers2d"))
    ev = Evaluator(task, dev_data=DATA, max_samples=2, convergence=False)
    estimate = cost.estimate_seconds(task, DATA, 2)
    # the estimate says: cheap (1.8 s, from the file's size: the same on any machine), within
    # the budget with a 2.2x margin
    assert estimate is not None and estimate <= 4
    steps: list[str] = []
    start = time.monotonic()
    audit, reason = runs.find(task, ev, "auto", steps.append)
    took = time.monotonic() - start
    assert audit is None
    assert reason.startswith("no audit of") and "stopped after 8 s" in reason, reason
    # 8 s plus the child's stop (at most 2 x 5 s of joins) and slack, short of the whole audit
    assert took < 35, took
    assert not any(p.name == "pdesharp-audit" for p in mp.active_children())
    assert not list((tmp_path / "audits").rglob("*.json"))  # nothing a later run could take
    # (that the child's steps come through is checked where the audit completes, below: here
    # a loaded machine may spend the whole deadline on the child's imports)


def test_an_audit_within_its_budget_is_computed_in_the_child_and_cached(tmp_path, monkeypatch,
                                                                        shared_data):
    monkeypatch.setenv("PDESHARP_AUDIT_DIR", str(tmp_path / "audits"))
    monkeypatch.delenv(cost.AUTO_SECONDS_ENV, raising=False)
    task = load_task("advection")  # the exact shift: well under a second per sample
    ev = Evaluator(task, data_dir=shared_data, max_samples=2, convergence=False)
    steps: list[str] = []
    audit, reason = runs.find(task, ev, "auto", steps.append)
    assert audit is not None, reason
    assert steps and steps[0].startswith("exact translation")  # the child's steps came through
    assert list((tmp_path / "audits").rglob("*.json"))
    again, _ = runs.find(task, ev, "auto")  # now cached: the same reference error
    assert again.reference_error == audit.reference_error
