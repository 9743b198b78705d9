"""Regression test: the bridge run with the reference floor in force, replayed.

The 12 replies in tests/fixtures/bridge_advection_floor were written by a model (a helper agent
playing a strong LLM) through the llm_bridge loopback endpoint, 2026-11-24; they are not
recordings of a commercial API (see the fixture's README). Calls are answered by tag, judge and
call order; evaluations from the run's recorded results by code sha256, so nothing executes.
The audit is the run's (reference error 5.262e-04), installed as test_reference_floor does.
Since issue 24 (one rule for every model) the replay stops at the first nominee at the floor,
so the fixture's modification replies are no longer asked for.
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
        mp.setattr(runs, "find",
                   lambda task, evaluator, mode, progress=None, round_off=None: (audit, ""))
        # retime=0: the run was recorded when --retime defaulted to 0 under accuracy (before
        # issue 21.4); the replay reproduces it as it ran
        return replay_fixture(FIXTURE, tmp, candidates=3, max_rounds=2, rejudge_cycles=0,
                              max_evals=8, max_samples=4, floor_saturation=True, retime=0)


def test_replay_stops_at_the_first_nominee_at_the_floor(replayed):
    # issue 24 item 1: language models stop at the floor as the built-in analyst does. The
    # bridge run (concurrent nominees, then a modification step) spent 4 evaluations to pick
    # g1; now the nominees run in nomination order and judge-1's nominee g1 (5.254e-4, at or
    # below the floor 5.262e-4 / 0.9 = 5.847e-4) ends the search: the same winner in one
    _, result, replies, evaluator = replayed
    assert result.status == "finished"
    assert evaluator.calls == ["g1"]
    # the three modification replies are not asked for: 2 analysis + 3 genesis + 3 nominate +
    # the reporter
    assert sum(replies.used.values()) == 9
    assert not any(k[0] == "judge.propose" for k in replies.used)
    s = result.summary
    assert result.best_id == "g1" and s["feedback_evaluations"] == 1
    assert ("reached the reference floor 5.847e-04 (1.111 x the reference's own error "
            "5.262e-04)") in s["stop_reason"]


def test_judges_are_told_the_floor_and_the_reference_error(replayed):
    store, _, _, _ = replayed
    system = " ".join(systems(store, "judge.nominate")[0].split())
    assert ("Reference floor: 5.847e-04, 1.111 × the reference data's own error against the"
            " PDE, 5.262e-04 (from an audit") in system  # (a bridge review: one space, the factor)
    assert "the goal is the fastest eligible solver" in system
    assert "the search ends as soon as one reaches the floor" in system
    # what a score means (issue 24 item 2): the reference's own error and the goal
    assert "an audit measured their own error as nRMSE 5.262e-04" in system
    assert "a score below that measures agreement with the reference's own errors" in system
    assert "The goal is the PDE's solution" in system
    for genesis in prompts(store, "genesis"):
        assert "an audit measured their own error as nRMSE 5.262e-04" in " ".join(genesis.split())


def test_the_reporter_is_told_which_solvers_are_at_or_below_the_floor(replayed):
    store, _, _, _ = replayed
    (reporter,) = prompts(store, "reporter")
    flat = " ".join(reporter.split())
    assert "so the floor is in force" in flat
    # the floor's basis, from the run's audit (the task facts file predates it)
    assert ("The reference floor is 5.847e-04 (1.111 × the reference data's own error against"
            " the PDE, 5.262e-04)") in flat
    assert flat.count("(at or below the floor)") == 1  # g1, the only solver that ran
