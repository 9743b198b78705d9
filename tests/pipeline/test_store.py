"""RunStore: evaluation de-duplication (the resume contract), accounting, lineage queries."""

from __future__ import annotations

import asyncio
import json

from pdesharp.llm.base import Message, Reply, Usage
from pdesharp.records import Candidate, EvalResult
from pdesharp.store import RunStore
from pdesharp.task import load_task


class CountingEvaluator:
    """Executes nothing: scores code by a ``# score=X`` marker; counts its calls."""

    def __init__(self):
        self.calls = 0

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        self.calls += 1
        await asyncio.sleep(0.01)
        for line in code.splitlines():
            if line.startswith("# score="):
                return EvalResult(status="ok", split=split, feedback=feedback,
                                  nrmse=float(line.split("=")[1]))
        return EvalResult(status="error", split=split, feedback=feedback, message="boom")


def _cand(cid, score, parents=(), origin="genesis"):
    return Candidate(id=cid, code=f"# score={score}\n", origin=origin, parents=list(parents))


def test_evaluate_dedupes_and_counts(tmp_path):
    task = load_task("advection")
    store = RunStore.create(tmp_path, task=task, config={"model": "x"}, run_id="r1")
    ev = CountingEvaluator()
    a, b, twin = _cand("a", 0.5), _cand("b", 0.1), _cand("twin", 0.5)
    for c in (a, b, twin):
        store.add_candidate(c)

    async def go():
        # a and its identical twin concurrently: one execution shared
        return await asyncio.gather(store.evaluate(ev, a, split="dev", feedback="nrmse"),
                                    store.evaluate(ev, twin, split="dev", feedback="nrmse"),
                                    store.evaluate(ev, b, split="dev", feedback="nrmse"))

    ra, rt, rb = asyncio.run(go())
    assert ev.calls == 2 and store.n_evaluations == 2
    assert ra.nrmse == rt.nrmse == 0.5
    # reopen (as a resume does): nothing is re-executed
    store.close()
    store2 = RunStore.open(tmp_path / "r1")
    asyncio.run(store2.evaluate(ev, a, split="dev", feedback="nrmse"))
    assert ev.calls == 2 and store2.n_evaluations == 2
    best, res = store2.best_candidate()
    assert best.id == "b" and res.nrmse == 0.1
    assert (tmp_path / "r1" / "candidates" / "a.py").read_text() == a.code


def test_lineage_accounting_summary(tmp_path):
    task = load_task("advection")
    store = RunStore.create(tmp_path, task=task, config={}, run_id="r2")
    store.add_candidate(_cand("g1", 1))
    store.add_candidate(_cand("g2", 1))
    store.add_candidate(_cand("p1", 1, parents=["g1", "g2"], origin="patch"))
    store.add_candidate(_cand("d1", 1, parents=["p1"], origin="debug"))
    assert [c.id for c in store.lineage("d1")] == ["d1", "p1", "g1", "g2"]
    assert [c.id for c in store.candidates(origin="genesis")] == ["g1", "g2"]
    store.record_model_call(model="m", tag="genesis", messages=[Message(role="user", content="hi")],
                            reply=Reply(text="x", model="m", usage=Usage(prompt_tokens=10,
                                        completion_tokens=5), cost_usd=0.01))
    store.record_model_call(model="m", tag="genesis", messages=[], reply=Reply(
        text="x", model="m", usage=Usage(prompt_tokens=10, completion_tokens=5), cached=True))
    store.count_debug_iteration("p1", key="p1#1")
    store.count_debug_iteration("p1", key="p1#1")  # idempotent on resume
    store.event("nomination", judge="j1", nominee="g1")
    s = store.write_summary(best_dev_score=0.1)
    on_disk = json.loads((tmp_path / "r2" / "summary.json").read_text())
    assert on_disk == s
    assert s["model_calls"] == 1 and s["cached_model_calls"] == 1
    assert s["tokens_in"] == 10 and s["tokens_out"] == 5 and s["cost_usd"] == 0.01
    assert s["debug_iterations"] == 1 and s["evaluations"] == 0
    assert store.events("nomination") == [{"kind": "nomination", "judge": "j1", "nominee": "g1"}]
