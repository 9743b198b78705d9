"""Regression test: the bridge run with the reference floor in force, replayed.

The 12 replies in tests/fixtures/bridge_advection_floor were written by a model (a helper agent
playing a strong LLM) through the llm_bridge loopback endpoint, 2026-11-24; they are not
recordings of a commercial API (see the fixture's README). Calls are answered by tag, judge and
call order; evaluations from the run's recorded results by code sha256, so nothing executes.
The audit is the run's (reference error 5.262e-04), installed as test_reference_floor does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_scripts import prompts, systems
from test_bridge_replay import replay_fixture

from pdesharp.audit import runs
from pdesharp.audit.records import AuditReport

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bridge_advection_floor"
REFERENCE_ERROR = 5.262398961215886e-04  # the run's audit of its 4 dev samples


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("floor")
    report = AuditReport(task="advection", task_fingerprint="replay", data_file="dev.h5",
                         data_sha256="0", samples=[0, 1, 2, 3], reference_error=REFERENCE_ERROR,
                         float32_floor=3e-8, method="the bridge run's audit, restated")
    audit = runs.RunAudit(report=report, path="dev.h5.audit/replay.json", indices=[0, 1, 2, 3],
                          reference_error=REFERENCE_ERROR, converged=None)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runs, "find", lambda task, evaluator, mode, progress=None: (audit, ""))
        # retime=0: the run was recorded when --retime defaulted to 0 under accuracy (before
        # issue 21.4); the replay reproduces it as it ran
        return replay_fixture(FIXTURE, tmp, candidates=3, max_rounds=2, rejudge_cycles=0,
                              max_evals=8, max_samples=4, floor_saturation=True, retime=0)


def test_replay_reproduces_the_run_and_the_floor_picks_the_faster_solver(replayed):
    _, result, replies, evaluator = replayed
    assert result.status == "finished"
    assert sum(replies.used.values()) == 12 == sum(len(q) for q in replies.queues.values())
    assert sorted(evaluator.calls) == sorted(evaluator.recorded_as.values())  # each once
    s = result.summary
    # by hand from evaluations.json: floor 5.262e-4 / 0.9 = 5.847e-4; g1 (5.254e-4) and g2,
    # c0r1-j2, c0r1-j1 (1.2e-6 / 5.254e-4) are all at or below it; g1 is the fastest (0.0369 s
    # for 4 samples vs c0r1-j2's 0.0620, 1.68x: beyond the 30 % margin)
    assert result.best_id == "g1" and s["floor_pick"]["lowest_id"] == "g2"
    assert s["feedback_evaluations"] == 4
    assert "reached the reference floor 5.847e-04" in s["stop_reason"]


def test_judges_are_asked_for_speed_once_the_floor_is_reached(replayed):
    store, _, _, _ = replayed
    system = " ".join(systems(store, "judge.nominate")[0].split())
    assert "Reference floor: 5.847e-04" in system
    assert "the goal is the fastest eligible solver" in system
    assert "The search ends at the end of the round in which the lowest score reaches" in system
    for propose in prompts(store, "judge.propose"):
        flat = " ".join(propose.split())
        # after the nominees g1 and g2 ran, the lowest score 1.210e-06 is below the floor
        assert "the lowest score is at or below the reference floor 5.847e-04" in flat
        assert "the pick so far: g1 (5.254e-04" in flat
        assert "the search ends after this round" in flat
        assert "(rank 1 of 2, eligible)" in flat and "(rank 2 of 2, eligible)" in flat
        assert "make it faster while its score stays at or below the floor" in flat
        assert "expect to improve its score" not in flat


def test_the_reporter_is_told_which_solvers_are_at_or_below_the_floor(replayed):
    store, _, _, _ = replayed
    (reporter,) = prompts(store, "reporter")
    flat = " ".join(reporter.split())
    assert "so the floor is in force" in flat
    assert flat.count("(at or below the floor)") == 4  # every solver that ran
    assert "not re-timed: --retime 0" in flat  # g1 and c0r1-j2 are within (1.3)^2: finalists
