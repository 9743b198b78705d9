"""The reference floor in the ranking rule: once the lowest score is at or below the floor,
every solver at or below it is eligible and time decides among them; above the floor, and with
no floor, nothing changes. Unit tests of the rule, then runs with scripted roles (replies written
by us, pipeline_scripts.py; MarkerEvaluator executes nothing) showing the floor reaches the
judges, the summary, the report and resumed runs.

Every expected value is derived by hand from the rule in pdesharp/synthesis/ranking.py's
docstring, not computed by the code."""

from __future__ import annotations

import asyncio
import json

import pytest
from pipeline_scripts import MarkerEvaluator
from test_objective import ids, ok, pool
from test_pipeline import GENESIS3, rules_for, run, tournament_rules
from test_reference_floor import audit_of  # noqa: F401 - the fixture

from pdesharp.audit import runs
from pdesharp.pipeline import SolveConfig, solve
from pdesharp.report.html import render_run
from pdesharp.report.runview import load_run
from pdesharp.roles import RoundInfo
from pdesharp.rolesets import RulesModel, build_roles
from pdesharp.store import RunStore
from pdesharp.synthesis.ranking import (Objective, Rule, decided_by_floor, eligible, improved,
                                        pick_best, rank, standing)
from pdesharp.task import load_task

# The advection pool the lead measured (issue 11/13): E the exact propagator (within the data's
# own error of the PDE, fast), W and C finite-volume designs with lower scores (they share more
# of the reference's own MUSCL error) at 50x the time, F an exact propagator with a
# second-order symbol, above the floor. Floor 1.21e-3 (1.11 x the reference error 1.089e-3).
FLOOR = 1.21e-3
ADVECTION = pool([("E", ok(1.088e-3, 0.005)), ("W", ok(9.90e-4, 0.26)),
                  ("C", ok(9.70e-4, 0.26)), ("F", ok(1.674e-3, 0.014))])


def rule(objective="accuracy", floor=None, margin=0.3):
    return Rule(Objective.parse(objective), time_margin=margin, floor=floor)


@pytest.mark.parametrize("floor, order", [
    # no floor: the lowest score C (W is 2 % above it: no tie), then W, E, F
    (None, ["C", "W", "E", "F"]),
    # floor 1.21e-3 >= lowest: E, W, C eligible; E is 50x faster than W and C: E. Then W and C
    # are equally fast: the lower score C, then W; F (above the floor) last
    (FLOOR, ["E", "C", "W", "F"]),
    # a floor below the lowest score (9.7e-4): not in force, the plain ranking
    (9.0e-4, ["C", "W", "E", "F"]),
    # exactly at the lowest score: "at or below" is in force; the floor 9.7e-4 itself admits
    # only C (and its 1 % tie, which holds nobody else)
    (9.70e-4, ["C", "W", "E", "F"]),
    # a floor that admits E and not F: F is never eligible, whatever its time
    (1.1e-3, ["E", "C", "W", "F"]),
])
def test_below_the_floor_the_fastest_wins_and_above_it_nothing_changes(floor, order):
    assert ids(rank(ADVECTION, rule(floor=floor))) == order
    assert pick_best(ADVECTION, rule(floor=floor))[0].id == order[0]


def test_the_time_margin_still_applies_below_the_floor():
    # E only 15 % slower than W and C: one timing cannot tell them apart, so the lower score wins
    close = pool([("E", ok(1.088e-3, 0.30)), ("W", ok(9.90e-4, 0.26)), ("C", ok(9.70e-4, 0.26))])
    assert pick_best(close, rule(floor=FLOOR))[0].id == "C"
    # no margin: the fastest eligible wins outright, C and W tie on time: the lower score C
    assert ids(rank(close, rule(floor=FLOOR, margin=0.0))) == ["C", "W", "E"]
    # E 1.4x faster than W and C (past the 30 % margin): E
    faster = pool([("E", ok(1.088e-3, 0.18)), ("W", ok(9.90e-4, 0.26)), ("C", ok(9.7e-4, 0.26))])
    assert pick_best(faster, rule(floor=FLOOR))[0].id == "E"


def test_unknown_times_count_as_slowest_below_the_floor():
    # E's time is unknown: the fastest known are W and C (equal): C
    no_e = pool([("E", ok(1.088e-3, None)), ("W", ok(9.90e-4, 0.26)), ("C", ok(9.7e-4, 0.26))])
    assert ids(rank(no_e, rule(floor=FLOOR))) == ["C", "W", "E"]
    # only E's time is known: E, the others by score
    only_e = pool([("E", ok(1.088e-3, 0.005)), ("W", ok(9.90e-4, None)),
                   ("C", ok(9.7e-4, None))])
    assert ids(rank(only_e, rule(floor=FLOOR))) == ["E", "C", "W"]
    # no time at all: the score alone
    none = pool([("E", ok(1.088e-3, None)), ("W", ok(9.90e-4, None)), ("C", ok(9.7e-4, None))])
    assert ids(rank(none, rule(floor=FLOOR))) == ["C", "W", "E"]


@pytest.mark.parametrize("objective, floor, pick, bar", [
    # within 1.05 x 9.7e-4 = 1.0185e-3: C and W (equal times): C; the floor widens the bar to
    # 1.21e-3, admitting E: E
    ("fastest-within:1.05", None, "C", 1.0185e-3),
    ("fastest-within:1.05", FLOOR, "E", FLOOR),
    # within 2 x = 1.94e-3 already admits everything: the floor changes nothing
    ("fastest-within:2", None, "E", 1.94e-3),
    ("fastest-within:2", FLOOR, "E", 1.94e-3),
    # target 1e-3 reached by C and W: C; with the floor the bar is max(1e-3, 1.21e-3): E
    ("fastest-below:1e-3", None, "C", 1e-3),
    ("fastest-below:1e-3", FLOOR, "E", FLOOR),
    # target 5e-4 not reached: the accuracy rule; with the floor, the accuracy rule with it
    ("fastest-below:5e-4", None, "C", None),
    ("fastest-below:5e-4", FLOOR, "E", None),
])
def test_time_objectives_take_the_larger_of_their_bar_and_the_floor(objective, floor, pick, bar):
    r = rule(objective, floor)
    assert pick_best(ADVECTION, r)[0].id == pick
    got = r.bar(9.70e-4)
    assert (got is None) if bar is None else got == pytest.approx(bar, rel=1e-12)


def test_fastest_below_with_an_unreached_target_is_not_met_because_of_the_floor():
    # the floor makes E eligible, but the target (5e-4) is still not met: saturation keeps
    # counting score improvements, not time
    r = rule("fastest-below:5e-4", FLOOR)
    st = standing(ADVECTION, r)
    assert st is not None and not st.target_met and st.lowest == 9.70e-4 and st.score == 1.088e-3
    assert [ADVECTION[i][0].id for i in eligible(ADVECTION, r)] == ["E", "W", "C"]


def test_an_eligible_solver_is_never_ranked_below_one_that_is_not():
    # G is just above the floor and the fastest of all: never above E, W or C
    pool_g = ADVECTION + pool([("G", ok(1.22e-3, 0.001))])
    order = ids(rank(pool_g, rule(floor=FLOOR)))
    assert order[:3] == ["E", "C", "W"] and set(order[3:]) == {"G", "F"}


def test_saturation_is_unchanged_under_accuracy():
    # the floor changes the pick, not the lowest score that saturation compares
    before = standing(ADVECTION, rule(floor=FLOOR))
    assert before.lowest == 9.70e-4 and before.score == 1.088e-3
    better = ADVECTION + pool([("H", ok(8.0e-4, 0.3))])  # 8e-4 < 0.9 x 9.7e-4
    assert improved(rule(floor=FLOOR), before, standing(better, rule(floor=FLOOR)), 0.9)
    same = ADVECTION + pool([("H", ok(9.0e-4, 0.001))])  # 9e-4 > 0.9 x 9.7e-4
    assert not improved(rule(floor=FLOOR), before, standing(same, rule(floor=FLOOR)), 0.9)


def test_decided_by_floor_and_the_words():
    assert decided_by_floor(ADVECTION, rule(floor=FLOOR))
    assert not decided_by_floor(ADVECTION, rule())
    assert not decided_by_floor(ADVECTION, rule(floor=9.0e-4))  # not in force
    words = rule(floor=FLOOR).words("nRMSE", 9.70e-4)
    assert words.startswith("the lowest nRMSE") and "reference floor 1.210e-03" in words \
        and "time decides among them, by the time rule" in words
    assert "floor" not in rule(floor=FLOOR).words("nRMSE", 1.3e-3)  # above the floor
    assert rule().words("nRMSE", 9.70e-4) == Objective().words("nRMSE")


def test_the_rule_of_a_config_reads_the_floor_and_older_configs_have_none():
    assert Rule.of({"objective": "accuracy"}).floor is None  # an older run's config.json
    assert Rule.of({"ranking_floor": 1.5e-3}).floor == 1.5e-3
    assert Rule.of({"ranking_floor": 1.5e-3}, floor=2e-3).floor == 2e-3
    info = RoundInfo(cycle=0, round=1, max_rounds=4, cycles=2, ranking_floor=FLOOR)
    assert Rule.of(info) == Rule(floor=FLOOR)
    assert Rule.of(RoundInfo(cycle=0, round=1, max_rounds=4, cycles=2)).floor is None
    # the record: the first reference-audit lookup of a run; older runs did not write it
    assert runs.ranking_floor([{"kind": "reference_audit", "status": "ok", "floor": 1e-3}]) \
        is None
    assert runs.ranking_floor([{"kind": "x"}, {"kind": "reference_audit", "ranking_floor": 1e-3},
                               {"kind": "reference_audit", "ranking_floor": 5.0}]) == 1e-3
    assert runs.ranking_floor([]) is None


# -- runs with scripted roles --------------------------------------------------------------
# MarkerEvaluator scores `scale = X` as |1 - X| + 1e-3 in 0.01 s: round 1 of tournament_rules()
# runs g2 (scale 0.8: 0.201), g3 (crashes), its fix g3-d1 (no scale: 1.001) and the patches
# c0r1-j1 (0.95: 0.051), c0r1-j2 (0.99: 0.011), c0r1-j3 (1.0: 0.001). All times are equal, so
# below a floor the lowest score still wins: the floor changes only the words and the record.

def _systems(store):
    return [json.loads(r[0])[0]["content"] for r in store.db.execute(
        "SELECT messages FROM model_calls WHERE tag LIKE 'judge%'")]


def test_judges_are_told_the_floor_rule_when_the_floor_is_on(tmp_path, audit_of):  # noqa: F811
    audit_of(1e-1)  # floor 1e-1 / 0.9 = 0.111: c0r1-j1 and c0r1-j3 are below it
    store, res = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                     MarkerEvaluator(), candidates=3,
                     max_rounds=1, rejudge_cycles=0, floor_saturation=True)
    systems = _systems(store)
    assert systems and all("Reference floor: 1.111e-01" in s for s in systems)
    assert all("time decides among them" in s for s in systems)
    # the goal line agrees with the rule: at the floor the fastest wins, not the best score
    assert all("the goal is the fastest eligible solver" in " ".join(s.split())
               for s in systems)
    (event,) = store.events("reference_audit")
    assert event["ranking_floor"] == pytest.approx(1e-1 / 0.9)
    # the floor is floor factor x the reference error: the run records that judges were told,
    # though --tell-judges-reference-error was not given
    assert event["judges_told"] is True
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    block = summary["reference_audit"]
    assert block["ranking_floor"] == pytest.approx(1e-1 / 0.9) and block["ranked_below_floor"]
    # equal times: the floor did not change the pick, so there is no floor_pick to explain
    assert res.best_id == "c0r1-j3" and "floor_pick" not in summary
    assert "at or below the reference floor 1.111e-01" in summary["objective_words"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "- Objective: the lowest nRMSE" in report \
        and "time decides among them, by the time rule" in report
    # the HTML report reads the floor back from the run folder and ranks the winner first
    view = load_run(tmp_path / "run")
    assert view.rule.floor == pytest.approx(1e-1 / 0.9)
    assert next(r for r in view.rows if r.rank == 1).cand.id == "c0r1-j3"
    assert "at or below the reference floor" in render_run(tmp_path / "run")


def test_without_the_floor_judges_hear_nothing_of_it(tmp_path, audit_of):  # noqa: F811
    audit_of(1e-1)  # an audit, and --no-floor-saturation: the paper's set-up
    store, _ = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                   MarkerEvaluator(), candidates=3, max_rounds=1,
                   rejudge_cycles=0, floor_saturation=False)
    assert _systems(store) and not any("Reference floor" in s for s in _systems(store))
    assert not any("an audit measured their own error" in s for s in _systems(store))
    (event,) = store.events("reference_audit")
    assert event["ranking_floor"] is None and event["judges_told"] is False
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "floor" not in summary["objective_words"]
    assert not summary["reference_audit"]["ranked_below_floor"]


class SlowExactMarker(MarkerEvaluator):
    """MarkerEvaluator, but the exact shift (scale 1.0) takes 1 s where the others take 0.01 s:
    below a floor of 0.111, c0r1-j1 (0.051) and c0r1-j2 (0.011) are 100x faster than c0r1-j3
    (0.001), so the floor picks c0r1-j2 (the lower score of the two equally fast ones)."""

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        r = await super().evaluate(code, split=split, feedback=feedback, label=label)
        return r.model_copy(update={"solver_seconds": 1.0}) if "scale = 1.0" in code else r


def _run_with_first_lookup(tmp_path, first: dict | None, **cfg):
    """A run whose store already holds its first reference-audit lookup (a resumed run)."""
    config = SolveConfig(task="advection", model="scripted:test", out=str(tmp_path),
                         candidates=3, max_rounds=1, rejudge_cycles=0, floor_saturation=True,
                         **cfg)
    store = RunStore.create(tmp_path, task=load_task("advection"), config=config.model_dump(),
                            run_id="run")
    if first is not None:
        store.event("reference_audit", **first)
    roles = build_roles(config, store, models={"scripted:test": RulesModel(
        rules_for("numerical", GENESIS3, tournament_rules()))})
    result = asyncio.run(solve(load_task("advection"), config, store, roles, SlowExactMarker()))
    return store, result


def test_the_floor_picks_the_faster_solver_and_the_report_says_why(tmp_path, audit_of):  # noqa: F811
    audit_of(1e-1)
    store, res = _run_with_first_lookup(tmp_path, None)
    assert res.best_id == "c0r1-j2"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    pick = summary["floor_pick"]
    assert pick["lowest_id"] == "c0r1-j3" and pick["floor"] == pytest.approx(1e-1 / 0.9)
    assert "tie_break" not in summary
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Decided below the reference floor: `c0r1-j3` scored lowest" in report
    view = load_run(tmp_path / "run")  # the HTML report's view ranks the winner first
    assert next(r for r in view.rows if r.rank == 1).cand.id == "c0r1-j2"


def test_a_resumed_run_ranks_as_it_started(tmp_path, audit_of, monkeypatch):  # noqa: F811
    audit_of(1e-1)
    floor = 1e-1 / 0.9
    common = dict(status="ok", audit="dev.h5.audit/test.json", reference_error=1e-1, floor=floor,
                  judges_told=False)
    # started before the floor entered the ranking: its lookup recorded no ranking_floor, so it
    # resumes with the plain ranking (the floor still stops the search, as it did then)
    old, res = _run_with_first_lookup(tmp_path / "old", common)
    assert res.best_id == "c0r1-j3" and runs.ranking_floor(old.events()) is None
    assert load_run(tmp_path / "old" / "run").rule.floor is None
    assert not any("Reference floor" in s for s in _systems(old))
    # started with it: resumes with it, even if the audit is gone from the cache by now
    monkeypatch.setattr(runs, "find", lambda *a, **k: (None, "no audit cached"))
    new, res = _run_with_first_lookup(tmp_path / "new", {**common, "ranking_floor": floor})
    assert res.best_id == "c0r1-j2"
    assert load_run(tmp_path / "new" / "run").rule.floor == pytest.approx(floor)


def test_the_pareto_figure_draws_the_floor_bar_only_when_it_is_in_force():
    from pdesharp.report import pareto

    view = pareto.pareto([c for c, _ in ADVECTION], {c.id: r for c, r in ADVECTION}, "E")
    assert pareto.objective_bar(view, rule()) is None  # accuracy, no floor: no bar
    assert pareto.objective_bar(view, rule(floor=FLOOR)) == FLOOR
    assert pareto.objective_bar(view, rule(floor=9.0e-4)) is None  # below the lowest score
