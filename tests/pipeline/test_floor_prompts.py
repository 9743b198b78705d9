"""What the judges and the reporter are told once the reference floor is in force.

Found by playing the model through the bridge (../shared/tools/llm_bridge.py) on advection with
--floor-saturation: after round 1's nominees ran, both were below the floor and the exact
propagator (400x the lowest score, 5x faster) was ranked first, yet the propose prompt asked the
judges to "improve its score", the listing said only "rank 1 of 2", the state line gave the best
score without saying the floor was reached, and the rule said the search ends "as soon as" the
floor is reached although that round's modifications still ran. Expected texts and labels are
derived by hand from the rule in pdesharp/synthesis/ranking.py's docstring."""

from __future__ import annotations

import asyncio
import re

import pytest
from test_floor_ranking import ADVECTION, FLOOR

from pdesharp.prompting import analysis_context, render
from pdesharp.records import Analysis, Classification
from pdesharp.roles import RoundInfo
from pdesharp.store import RunStore
from pdesharp.synthesis.judges import LLMJudge
from pdesharp.synthesis.ranking import Objective, Rule
from pdesharp.synthesis.timing import settle
from pdesharp.synthesis.tournament import Tournament, TournamentSettings
from pdesharp.task import load_task


def _info(best, objective="accuracy", floor=FLOOR, bar=None, leader="E"):
    return RoundInfo(cycle=0, round=1, max_rounds=2, cycles=1, best_score=best,
                     ranking_floor=floor, objective=objective, bar=bar, leader=leader,
                     leader_score=1.088e-3, leader_per_sample=0.005)


def _flat(text):
    return re.sub(r"\s+", " ", text)


def _propose(info):
    return _flat(render("judge_propose", info=info, base_id="W", base_title="", base_code="x",
                        base_shown=True, base_against="", base_diff="",
                        base_result="nRMSE 9.9e-4", entries=[], ranking={"ranked": []}))


@pytest.mark.parametrize("best, floor, reached", [
    (9.70e-4, FLOOR, True), (FLOOR, FLOOR, True),  # at or below: in force
    (1.3e-3, FLOOR, False), (9.70e-4, None, False), (None, FLOOR, False)])
def test_floor_reached_is_the_lowest_score_at_or_below_the_floor(best, floor, reached):
    assert _info(best, floor=floor).floor_reached is reached


def test_once_the_floor_is_reached_judges_are_asked_for_speed_not_score():
    text = _propose(_info(9.70e-4, bar=FLOOR))
    assert "The reference floor is reached" in text
    assert "make it faster while its score stays at or below the floor" in text
    # a lower score under the floor is no improvement, yet the tie-break among the equally fast
    # (it used to say such a change "cannot change the pick", which the time rule contradicts)
    assert "is not an improvement (there a lower score measures agreement with the reference's " \
        "own errors, and it decides only between solvers the time rule counts as equally fast)" \
        in text and "cannot change the pick" not in text
    assert "expect to improve its score" not in text
    assert "the aim is in your instructions" not in text  # this round's aim is the floor's
    state = _flat(render("_state", info=_info(9.70e-4, bar=FLOOR)))
    assert "the lowest score is at or below the reference floor 1.210e-03" in state
    assert "every solver at or below the floor is eligible" in state
    assert "the pick so far: E (1.088e-03, 0.005 s per sample)" in state
    assert "the search ends after this round" in state
    # one rule, not two: the state points at the time rule, under which a lower score still
    # decides among the equally fast (it said "a lower score no longer counts")
    assert "time decides among them by the time rule (a lower score wins only among the " \
        "solvers the time rule counts as equally fast)" in state
    assert "no longer counts" not in state
    # above the floor (and without one) the accuracy aim, stated once in the system prompt
    for info in (_info(1.3e-3), _info(9.70e-4, floor=None)):
        assert "Propose one modification of W (the aim is in your instructions)." \
            in _propose(info)
        assert "reference floor" not in _flat(render("_state", info=info))


def test_under_a_time_objective_the_state_gives_the_wider_bar_and_does_not_end_the_search():
    # fastest-within:2 with lowest 9.7e-4: bar 1.94e-3 > floor, so the bar is what is eligible
    state = _flat(render("_state", info=_info(9.70e-4, "fastest-within:2", bar=1.94e-3)))
    assert "every solver with a score up to 1.940e-03 is eligible" in state
    assert "the search ends" not in state


def test_the_rule_says_the_search_ends_after_the_round_not_at_once():
    system = _flat(render("_rule", info=_info(None)))
    assert "The search ends at the end of the round in which the lowest score reaches the floor" \
        in system
    assert "as soon as" not in system


def _tournament(tmp_path, objective="accuracy", floor=FLOOR):
    task = load_task("advection")
    store = RunStore.create(tmp_path, task=task, config={}, run_id="t")
    t = Tournament(task, None, [], store, None, TournamentSettings(
        rule=Rule(Objective.parse(objective), floor=floor)))
    for c, r in ADVECTION:
        t.pool.append(c)
        t.known[c.id] = r
    return t, store


def test_the_listing_marks_who_is_eligible_below_the_floor(tmp_path):
    t, store = _tournament(tmp_path)
    info = t.info(0, 1, 0)
    # lowest 9.7e-4 <= floor 1.21e-3: the bar is the floor (the 1 % tie is below it)
    assert info.floor_reached and info.bar == pytest.approx(FLOOR)
    judge = LLMJudge(None, "judge-1")
    judge.observe(info)
    entries = t.ranked([t.entry(c) for c in t.pool])
    listed, ranking = judge._entries(entries, full_first=[])
    ranks = {e["id"]: e["rank"] for e in listed}
    # E is 50x faster than W and C: first; F (1.674e-3) is above the floor
    assert ranks == {"E": "rank 1 of 4, eligible", "C": "rank 2 of 4, eligible",
                     "W": "rank 3 of 4, eligible",
                     "F": "rank 4 of 4, not eligible: above the reference floor"}
    # and the ranking line of every later turn
    line = _flat(render("_ranking", ranking=ranking))
    assert "1. E (eligible), 2. C (eligible), 3. W (eligible), 4. F (not eligible: above the " \
        "reference floor)." in line
    store.close()


def test_without_the_floor_in_force_accuracy_listings_carry_no_eligibility(tmp_path):
    for floor in (None, 9.0e-4):  # no floor; a floor below the lowest score
        t, store = _tournament(tmp_path / str(floor), floor=floor)
        info = t.info(0, 1, 0)
        assert info.bar is None and not info.floor_reached
        judge = LLMJudge(None, "judge-1")
        judge.observe(info)
        entries = t.ranked([t.entry(c) for c in t.pool])
        listed, ranking = judge._entries(entries, full_first=[])
        assert all("eligible" not in e["rank"] for e in listed)
        assert "eligible" not in render("_ranking", ranking=ranking)
        store.close()


def test_the_winner_time_note_says_whether_time_decided(tmp_path):
    store = RunStore.create(tmp_path, task=load_task("advection"), config={}, run_id="t")
    # below the floor E is 50x faster than the others: time decided, clearly
    _, clear = asyncio.run(settle(store, None, ADVECTION, Rule(floor=FLOOR), 0))
    assert clear.note == "not re-timed: time decided by more than the timing noise"
    # no floor: C alone is eligible (W is 2 % above it)
    _, alone = asyncio.run(settle(store, None, ADVECTION, Rule(), 0))
    assert alone.note == "not re-timed: time did not decide (one eligible solver)"
    store.close()


def test_the_reporter_marks_the_solvers_at_or_below_the_floor():
    pool = [{"rank": 1, "id": "E", "title": "", "origin": "genesis", "parents": [], "judge": "",
             "score": "1.088e-03", "per_sample": "0.005 s", "cycle": 0, "round": 1,
             "status": "ok", "below_floor": True},
            {"rank": 2, "id": "F", "title": "", "origin": "genesis", "parents": [], "judge": "",
             "score": "1.674e-03", "per_sample": "0.014 s", "cycle": 0, "round": 1,
             "status": "ok", "below_floor": False}]
    analysis = Analysis(classification=Classification(
        time_order=1, space_order=1, linear=True, pde_type="hyperbolic", boundary="periodic"))
    common = dict(title="t", **analysis_context(analysis), rounds=[], pool=pool, feedback="nrmse",
                  tie_tolerance=0.01, rule=Rule(floor=FLOOR), objective_words="",
                  winner_time={}, never=[], declined=[], end="", evals_used=2, eval_limit=None,
                  retimed=0, best_id="E", best_title="", ancestry=[], justifications=[],
                  reference_error=None)
    text = _flat(render("reporter", floor_in_force=True, **common))
    assert "E: genesis, cycle 0 round 1; nrmse 1.088e-03 (at or below the floor)" in text
    assert "F: genesis, cycle 0 round 1; nrmse 1.674e-03, 0.014 s" in text
    assert "the floor is in force" in text
    assert "did not affect the ranking" in _flat(render("reporter", floor_in_force=False,
                                                        **common))
    # the floor's factor over the reference's own error, where the run knows that error (a
    # bridge review read "a multiple of" as unstated): FLOOR = 1.21e-3 over 1.1e-3 is 1.1
    told = _flat(render("reporter", floor_in_force=True, **dict(common, reference_error=1.1e-3)))
    assert ("The reference floor is 1.210e-03 (1.1 × the reference data's own error against the"
            " PDE, 1.100e-03)") in told
    assert "a multiple of" in text and "a multiple of" not in told
    # the winner's time taken apart reaches the reporter (a bridge review found it missing)
    timed = {"per_sample": 0.0153, "how": "one evaluator timing", "warm_per_sample": 0.0208,
             "one_off_seconds": 0.0484}
    apart = _flat(render("reporter", floor_in_force=True, **dict(common, winner_time=timed)))
    assert ("Its solver time: 0.0153 s per sample, one evaluator timing. Taken apart by one more"
            " run after the search") in apart
    assert ("0.0208 s per sample warm, 0.0484 s one-off per run, not per sample (import, "
            "compilation, planning: the first call, on one sample, less one warm sample)") in apart
    assert "Taken apart" not in text  # winner_time without the parts


def test_the_judges_are_told_the_floor_factor_and_the_last_round():
    from pdesharp.facts import TaskFacts

    info = _info(None)
    raw = render("_rule", info=info, facts=TaskFacts(reference_error=1.1e-3))
    assert "1.100e-03\n  (from an audit" in raw  # the line break kept (a bridge review saw "  (")
    known = _flat(raw)
    assert ("Reference floor: 1.210e-03, 1.1 × the reference data's own error against the PDE,"
            " 1.100e-03 (from an audit") in known
    for facts in (TaskFacts(), None):  # the error not known: the old words
        assert "1.210e-03, a multiple of the reference data's own error" in _flat(
            render("_rule", info=info, facts=facts))
    # round 2 of at most 2 is the cycle's last; round 1 of 2 is not
    last = RoundInfo(cycle=0, round=2, max_rounds=2, cycles=1)
    assert "Round 2 of at most 2 (the last this cycle allows) in cycle 0" in _flat(
        render("_state", info=last))
    assert "the last this cycle allows" not in _flat(render("_state", info=info))
    # the re-timing runs' warm call, as the rule uses it (ranking._pick)
    retimed = _flat(render("_rule", info=RoundInfo(cycle=0, round=1, max_rounds=2, cycles=1,
                                                   retime=2), facts=None))
    assert ("Solvers still equally fast by the rule then run 2 more warm runs each (a solver "
            "as fast by the rule that was not a finalist is first re-timed like them): each calls the solver twice, on "
            "the first sample and then on the others, and times the second call alone") in retimed
    assert "wins before the lower score" in retimed and "the budget may leave none" in retimed


def test_the_floor_widens_a_fastest_below_goal_only_when_the_target_is_below_it():
    """Bridge review (KdV, fastest-below:1e-4, floor 6.4e-10): "every solver at or below the
    floor is eligible too" suggested a second goal where the target already covers the floor;
    it is said only where the floor is above the target (Rule.bar: max(target, floor))."""
    from pdesharp.facts import TaskFacts
    from pdesharp.prompting import task_context
    from pdesharp.synthesis.judges import BLOCK_RULE, feedback_note
    task = load_task("advection")
    facts = TaskFacts.from_spec(task)
    said = {}
    for target in ("1e-2", "1e-4"):  # above and below the floor 1.21e-3
        info = _info(2e-3, objective=f"fastest-below:{target}")
        text = _flat(render("judge_system", top_k=5, **task_context(task, "nrmse", facts),
                            **analysis_context(None, facts), info=info,
                            feedback_note=feedback_note("nrmse", False), block_rule=BLOCK_RULE))
        said[target] = "every solver at or below the floor is eligible too" in text
    assert said == {"1e-2": False, "1e-4": True}
