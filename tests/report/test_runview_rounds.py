"""The run view's per-round progress follows when a solver was evaluated, and a run without
summary.json still shows its status and best result (read from the store)."""

from __future__ import annotations

import asyncio

from pdesharp.records import Candidate, EvalResult
from pdesharp.report.html import write_report
from pdesharp.report.runview import load_run
from pdesharp.store import RunStore
from pdesharp.task import load_task

SCORES = {"g1": 2.5e-4, "g2": 3.0e-4, "c0r1-j1": 2.9e-4}


class ScoreEvaluator:
    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        return EvalResult(status="ok", split=split, feedback=feedback, nrmse=SCORES[label],
                          solver_seconds=1.0)


def _run(tmp_path) -> RunStore:
    """The bridge run's shape: g2 nominated and run in round 1, g1 only in round 2."""
    store = RunStore.create(tmp_path, task=load_task("burgers"), config={"feedback": "nrmse"},
                            run_id="r")
    store.set_status("running")
    cands = [Candidate(id="g1", code="# g1\n", origin="genesis"),
             Candidate(id="g2", code="# g2\n", origin="genesis"),
             Candidate(id="c0r1-j1", code="# p\n", origin="patch", parents=["g2"], round=1)]
    for c in cands:
        store.add_candidate(c)
    ev = ScoreEvaluator()

    async def go():
        store.event("nomination", cycle=0, round=1, judge="judge-1", nominee="g2")
        await store.evaluate(ev, cands[1], split="dev", feedback="nrmse")
        await store.evaluate(ev, cands[2], split="dev", feedback="nrmse")
        store.event("nomination", cycle=0, round=2, judge="judge-1", nominee="g1")
        await store.evaluate(ev, cands[0], split="dev", feedback="nrmse")

    asyncio.run(go())
    store.close()
    return store


def test_scores_belong_to_the_round_they_were_measured_in(tmp_path):
    view = load_run(_run(tmp_path).dir)
    rows = [(r.label, r.ran, r.best_id, r.best, r.so_far_id, r.so_far) for r in view.rounds]
    assert rows == [("cycle 0, round 1", ["g2", "c0r1-j1"], "c0r1-j1", 2.9e-4, "c0r1-j1", 2.9e-4),
                    ("cycle 0, round 2", ["g1"], "g1", 2.5e-4, "g1", 2.5e-4)]  # no "genesis" row
    # the Genesis candidates that ran are in the tournament table, in the round they ran
    assert [(r.cand.id, r.cycle, r.round, r.rank) for r in view.rows] == [
        ("g2", 0, 1, 3), ("c0r1-j1", 0, 1, 2), ("g1", 0, 2, 1)]


def test_missing_summary_is_filled_from_the_store(tmp_path):
    store = _run(tmp_path)
    view = load_run(store.dir)
    assert view.summary["status"].startswith("running")
    assert view.summary["best_id"] == "g1" and view.summary["best_dev_score"] == 2.5e-4
    assert view.summary["feedback_evaluations"] == 3
    html = write_report(store.dir, plot=False).read_text()
    assert "unfinished" not in html and "running" in html and "g1" in html
