"""Regression test: the issue-11 bridge run under --objective fastest-within:10, replayed.

The 21 replies in tests/fixtures/bridge_advection_objective were written by a model (a helper
agent playing a strong LLM) through the llm_bridge loopback endpoint, 2026-11-23; they are not
recordings of a commercial API (see the fixture's README). Calls are answered by tag, judge and
call order; evaluations from the run's recorded results by code sha256 (a re-timing run from
the recorded re-timing results), so nothing executes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_scripts import prompts, systems
from test_bridge_replay import RecordedEvaluator, replay_fixture

from pdesharp.records import EvalResult
from pdesharp.store import RETIME_MARK, code_sha256, parse_run_id

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bridge_advection_objective"


class RecordedWithRetimes(RecordedEvaluator):
    def __init__(self, fixture: Path):
        super().__init__(fixture)
        data = json.loads((fixture / "evaluations.json").read_text())
        self.retimes = {sha: [EvalResult.model_validate(r) for r in v.get("retimes", [])]
                        for sha, v in data.items()}

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        _, mark, k = parse_run_id(label)
        k = k if mark == RETIME_MARK else 0
        if not k:
            return await super().evaluate(code, split=split, feedback=feedback, label=label)
        self.calls.append(label)
        return self.retimes[code_sha256(code)][k - 1]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("objective")
    return replay_fixture(FIXTURE, tmp, RecordedWithRetimes(FIXTURE), candidates=3,
                          max_rounds=2, rejudge_cycles=0, max_evals=10, max_samples=4,
                          objective="fastest-within:10")


def test_replay_reproduces_the_run_and_its_retiming(replayed):
    _, result, replies, evaluator = replayed
    assert result.status == "finished"
    assert sum(replies.used.values()) == 21 == sum(len(q) for q in replies.queues.values())
    runs = [c for c in evaluator.calls if "#t" not in c]
    assert sorted(runs) == sorted(evaluator.recorded_as.values())  # every solver, once
    # the three finalists within (1.3)^2 of the fastest eligible single time, one re-run each
    # (10 - 7 = 3 evaluations left), counted
    assert sorted(c for c in evaluator.calls if "#t" in c) == ["c0r1-j2#t1", "c0r2-j1#t1",
                                                               "g1#t1"]
    s = result.summary
    assert s["feedback_evaluations"] == 10 and result.best_id == "c0r1-j2"
    assert s["objective"] == "fastest-within:10"
    timed = s["winner_time"]
    assert timed["timings_per_sample"] == pytest.approx([0.141 / 4, 0.1219 / 4], rel=1e-2)
    assert "re-timing limited by --max-evals to 1 run(s) per finalist" in timed["how"]
    assert s["objective_pick"]["lowest_id"] == "g1"  # the winner is not the lowest score


def test_judges_see_eligibility_and_the_eligible_solvers_first(replayed):
    store, _, _, _ = replayed
    propose = prompts(store, "judge.propose")[0]
    # round 1 under the bar 1.22e-05: g2 (eligible, slower) is listed above g3 (not eligible)
    assert propose.index("### Solver g2") < propose.index("### Solver g3")
    assert "(rank 1 of 3, eligible)" in propose
    assert "(rank 3 of 3, not eligible: above the bar)" in propose
    assert "eligible scores now up to 1.221e-05" in propose
    system = systems(store, "judge.nominate")[0]
    # the re-timing the judges are promised: the finalists as timing.finalists picks them, and
    # a budget that may cut it (this run's did: one run per finalist, test above)
    assert "the finalists (the 3\n  fastest of the eligible solvers whose timings noise could " \
        "reorder, plus the pick so far if it\n  is not one of them)" in system
    assert "counted evaluations: the budget may allow fewer runs, or none" in system
    assert "at most 10 × the lowest score" in system


def test_report_shows_the_front_and_how_the_time_was_established(replayed):
    store, _, _, _ = replayed
    report = (store.dir / "report.md").read_text()
    assert "- Winner's time: 0.0329 s per sample on the dev split, median of 2" in report
    assert "- Not the lowest score: `g1` scored lowest (1.221e-06" in report
    front = [line.split("`")[1] for line in report.splitlines()
             if line.startswith("| `") and "| yes |" in line]
    # by hand from evaluations.json: g1 is the lowest score, c0r1-j2 (median 0.0329) the
    # fastest of the rest with a lower score than anything faster; everything else is beaten
    # by one of them in both (g3, g2, c0r1-j1, c0r1-j3, c0r2-j1 by c0r1-j2 or g1)
    assert sorted(front) == ["c0r1-j2", "g1"]
