"""``--objective fastest-below:floor``: the fastest solver as accurate as the reference can tell.
Its target is the run's floor (the audit's reference floor, else the data's round-off floor),
known only once the audit is: the rule is given it then, records it, and reads it back; a run
with no floor ranks by accuracy and says so; set-ups without floors refuse it up front.

Expected values are the numbers put in by hand (a floor of 6.002114578123457e-09, the shape of
1D KS's ranking floor in the side-by-side bench)."""

from __future__ import annotations

import pytest

from pdesharp.bench import BenchConfig, BenchError
from pdesharp.cli import main
from pdesharp.config import SolveConfig
from pdesharp.pipeline import objective_without_floor
from pdesharp.store import RunStore
from pdesharp.synthesis import run_rule
from pdesharp.synthesis.ranking import ACCURACY, Objective, Rule
from pdesharp.task import load_task

FLOOR = 6.002114578123457e-09  # more digits than %g keeps: the target must be this, exactly
FLOOR_OBJECTIVE = "fastest-below:floor"


def test_the_floor_objective_is_read_and_written_in_one_form():
    for text in ("fastest-below:floor", "Fastest_Below: floor", " fastest-below:FLOOR "):
        o = Objective.parse(text)
        assert (o.kind, o.value, o.at_floor, o.by_time) == ("fastest-below", None, True, True)
        assert str(o) == FLOOR_OBJECTIVE
        assert SolveConfig(objective=text).objective == FLOOR_OBJECTIVE
    assert "floor" in Objective.parse(FLOOR_OBJECTIVE).words("nRMSE")
    # a number written with more digits than %g keeps comes back exactly (it was rounded to
    # six digits before); the forms users write are unchanged
    assert str(Objective.parse("fastest-below:1.2345678e-6")) == "fastest-below:1.2345678e-06"
    assert str(Objective.parse("fastest-below:1e-3")) == "fastest-below:0.001"


def test_the_target_is_the_floor_the_run_ranks_by():
    asked = SolveConfig(objective=FLOOR_OBJECTIVE)
    rule = run_rule.build(asked, floor=FLOOR, ranking_floor=FLOOR, round_off=2.6e-8)
    assert rule.objective.value == FLOOR and rule.objective.at_floor
    assert str(rule.objective) == f"fastest-below:{FLOOR!r}"  # what judges' prompts are given
    assert rule.stop_score() is None  # a time objective: at the floor the search goes on
    assert rule.bar(7e-9) is None  # above the floor: the accuracy rule
    assert rule.bar(5e-9) == FLOOR  # at it: every solver up to the floor is eligible
    assert "at most 6.002e-09, the run's floor" in rule.objective.words("nRMSE")
    # no audit, float32 data: the round-off floor is the target
    rule = run_rule.build(asked, floor=None, ranking_floor=None, round_off=2.6e-8)
    assert rule.objective.value == 2.6e-8
    # the codepde facts level states no number read from the data: not the round-off floor
    codepde = SolveConfig(objective=FLOOR_OBJECTIVE, task_facts="codepde")
    assert run_rule.build(codepde, floor=None, ranking_floor=None, round_off=2.6e-8).objective \
        == ACCURACY
    assert run_rule.build(codepde, floor=FLOOR, ranking_floor=FLOOR, round_off=2.6e-8) \
        .objective.value == FLOOR  # the reference floor: every prompt states it already
    # neither: no target; the accuracy objective
    assert run_rule.build(asked, floor=None, ranking_floor=None, round_off=None).objective \
        == ACCURACY
    # not yet given its floor, a rule still reads it from its own floors
    assert Rule(Objective.parse(FLOOR_OBJECTIVE), floor=1e-3).bar(5e-4) == 1e-3
    assert Rule(Objective.parse(FLOOR_OBJECTIVE)).bar(1e-12) is None


def test_the_recorded_target_is_read_back_exactly_with_its_origin(tmp_path):
    store = RunStore.create(tmp_path, task=load_task("advection"), config={}, run_id="r")
    rule = run_rule.build(SolveConfig(objective=FLOOR_OBJECTIVE), floor=FLOOR,
                          ranking_floor=FLOOR, round_off=None)
    run_rule.record(store, rule)
    back = run_rule.recorded(store, {})
    assert back == rule and back.objective.value == FLOOR and back.objective.at_floor
    # a run folder is data: an at_floor flag on another objective is not believed
    (event,) = store.events("rule")
    forged = dict(event, objective="fastest-within:3", at_floor=True)
    assert not run_rule._from_event(forged).objective.at_floor
    assert not run_rule._from_event(dict(event, at_floor="yes")).objective.at_floor


@pytest.mark.parametrize("flags", [["--no-floor-saturation"], ["--feedback", "residual"]])
def test_set_ups_without_floors_refuse_it_before_anything_runs(flags, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["solve", "advection", "--objective", FLOOR_OBJECTIVE, "--out", str(tmp_path),
              "--run-id", "r", *flags])
    err = capsys.readouterr().err
    assert exc.value.code != 0 and "fastest-below:floor" in err and "fastest-below:1e-6" in err
    assert not (tmp_path / "r").exists()


def test_baselines_in_a_bench_have_no_audit_to_take_the_floor_from():
    with pytest.raises(BenchError, match="baselines do not run"):
        BenchConfig(tasks=["advection"], methods=["sharp", "codepde"], model="openai:x",
                    objective=FLOOR_OBJECTIVE).validate()
    only = BenchConfig(tasks=["advection"], methods=["sharp"], model="builtin",
                       objective=FLOOR_OBJECTIVE)
    only.validate()
    assert only.objective == FLOOR_OBJECTIVE


def test_a_run_without_a_floor_says_it_ranks_by_accuracy(tmp_path):
    store = RunStore.create(tmp_path, task=load_task("advection"), config={}, run_id="r")
    notes = []
    config = SolveConfig(objective=FLOOR_OBJECTIVE)
    none = run_rule.build(config, floor=None, ranking_floor=None, round_off=None)
    objective_without_floor(config, none, store, lambda **kw: notes.append(kw["note"]))
    (event,) = store.events("objective_fallback")
    assert event["objective"] == "accuracy" and "no reference floor" in event["reason"]
    assert notes == [event["reason"]]
    # with a floor, nothing is said
    objective_without_floor(config, run_rule.build(config, floor=FLOOR, ranking_floor=FLOOR,
                                                   round_off=None), store,
                            lambda **kw: notes.append(kw))
    assert len(store.events("objective_fallback")) == 1 and len(notes) == 1


def test_a_refused_setting_is_named_as_its_option_in_one_line_each(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["solve", "advection", "--candidates", "0", "--saturation-factor", "2", "--out",
              str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "--candidates: Input should be greater than or equal to 1" in err
    assert "--saturation-factor: Input should be less than or equal to 1" in err
    assert "pydantic" not in err and "type=" not in err


def test_the_analysis_and_genesis_prompts_state_the_target_the_audit_gave(tmp_path,
                                                                          monkeypatch):
    # a bridge review (advection, fastest-below:floor) found the analysis and Genesis prompts
    # saying "at most the run's floor" with no number, while the judges were told it: the
    # roles are built before the audit, and the pipeline restates the goal once the rule is
    from pipeline_scripts import MarkerEvaluator, prompts
    from test_pipeline import GENESIS3, rules_for, run, tournament_rules

    build = run_rule.build
    monkeypatch.setattr(run_rule, "build", lambda config, **kw: build(
        config, **{**kw, "floor": FLOOR, "ranking_floor": FLOOR}))  # as if an audit gave it
    store, _ = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                   MarkerEvaluator(), candidates=3, max_rounds=1, rejudge_cycles=0,
                   objective=FLOOR_OBJECTIVE)
    said = "at most 6.002e-09, the run's floor"
    analysis, genesis = prompts(store, "analysis.classification"), prompts(store, "genesis")
    assert analysis and genesis
    assert all(said in " ".join(p.split()) for p in analysis + genesis)
    assert store.events("rule")[0]["objective"] == f"fastest-below:{FLOOR!r}"


def test_the_judges_saturation_rule_names_the_target_it_speaks_of():
    # the bridge review: "a round improves if the first solver reaches the target", with the
    # target named only in the objective's line above it
    from pdesharp.prompting import render
    from pdesharp.roles import RoundInfo

    info = RoundInfo(cycle=0, round=1, max_rounds=2, cycles=1,
                     objective=f"fastest-below:{FLOOR!r}", ranking_floor=FLOOR)
    text = " ".join(render("_rule", info=info).split())
    assert "a round improves if the first solver reaches the target 6.00211e-09;" in text
