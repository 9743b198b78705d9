"""The whole pipeline with scripted models (replies written by us, see pipeline_scripts.py).

These tests use MarkerEvaluator (executes nothing) so the tournament logic is checked quickly;
test_end_to_end.py runs real sandboxed evaluations through a loopback HTTP model.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from pdesharp.pipeline import SolveConfig, solve
from pdesharp.rolesets import RulesModel, build_roles
from pdesharp.store import RunStore
from pdesharp.task import load_task

from pipeline_scripts import (CRASH, MarkerEvaluator, analysis_replies, genesis_reply, js, nominate,
                      patch, shift, systems)

J = ["judge-1", "judge-2", "judge-3"]


def rules_for(route="numerical", genesis=None, extra=None):
    """Rules (first match wins): specific ones first, generic fallbacks last."""
    rules = list(extra or [])
    for tag, replies in analysis_replies(route).items():
        rules.append({"tag": tag, "reply": replies[0]})
    for i, (code, title) in enumerate(genesis or []):
        rules.append({"tag": "genesis", "sample": i, "reply": genesis_reply(code, title)})
    rules.append({"tag": "reporter", "reply": "Narrative written by the test."})
    return rules


def run(tmp_path, rules, evaluator, price=None, **cfg):
    # These scripted tournaments count calls and evaluations of routes, patches, budgets and
    # resumes; their equally timed solvers would all be re-timed under the default since issue
    # 21.4 (re-timing whenever time decides). They keep the accuracy objective's former
    # --retime 0; the default itself is tested in test_objective.py.
    if str(cfg.get("objective", "accuracy")) == "accuracy":
        cfg.setdefault("retime", 0)
    task = load_task("advection")
    config = SolveConfig(task="advection", model="scripted:test", out=str(tmp_path), **cfg)
    store = RunStore.create(tmp_path, task=task, config=config.model_dump(), run_id="run")
    model = RulesModel(rules, price=price)
    roles = build_roles(config, store, models={"scripted:test": model})
    result = asyncio.run(solve(task, config, store, roles, evaluator))
    return store, result


def calls_by_tag(store):
    return dict(store.db.execute("SELECT tag, COUNT(*) FROM model_calls GROUP BY tag").fetchall())


def tournament_rules():
    r1 = "Round 1 of cycle 0"
    ctx = lambda j: f"You are {j},"  # noqa: E731
    return [
        # cycle 0, round 1: two judges pick g2, judge-3 picks the crashing g3
        {"tag": "judge.nominate", "when": r1, "context": ctx(J[0]), "reply": nominate("g2")},
        {"tag": "judge.nominate", "when": r1, "context": ctx(J[1]), "reply": nominate("g2")},
        {"tag": "judge.nominate", "when": r1, "context": ctx(J[2]), "reply": nominate("g3")},
        {"tag": "judge.debug", "reply": patch(
            '    raise RuntimeError("scripted crash: dt is undefined")',
            "    return np.repeat(u0_batch[:, None, :], len(t_coordinate), axis=1)",
            "copy the initial state", ["g3"])},
        {"tag": "judge.propose", "when": r1, "context": ctx(J[0]),
         "reply": patch("    scale = 0.8", "    scale = 0.95", "less damping", ["g2"])},
        # judge-2 quotes a line that is not in g2: the patch fails and is repaired once
        {"tag": "judge.propose", "when": r1, "context": ctx(J[1]),
         "reply": patch("    scale = 0.7", "    scale = 0.99", "wrong quote", ["g2"])},
        {"tag": "judge.repair", "reply": patch("    scale = 0.8", "    scale = 0.99",
                                               "almost no damping", ["g2"])},
        # judge-3 writes a whole new file, borrowing from g2 (a hybrid)
        {"tag": "judge.propose", "when": r1, "context": ctx(J[2]), "reply":
            "Hybrid of g3-d1 and g2.\n```python\n" + shift(1.0) + "```\n"
            + js({"title": "exact shift", "justification": "no damping at all",
                  "parents": ["g3-d1", "g2"]})},
        # later rounds and the rejudging cycle: everyone nominates the winner, the same no-op
        {"tag": "judge.nominate", "reply": nominate("c0r1-j3", ["c0r1-j3", "c0r1-j2"])},
        {"tag": "judge.propose", "reply": patch("    scale = 1.0", "    scale = 1.00",
                                                "same again", ["c0r1-j3"])},
    ]


GENESIS3 = [(shift(0.5), "half"), (shift(0.8), "damped"), (CRASH, "crashes")]


def test_numerical_route_full_tournament(tmp_path):
    ev = MarkerEvaluator()
    store, res = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()), ev,
                     candidates=3, max_rounds=3, rejudge_cycles=1)
    # model calls: analysis 5, genesis 3, cycle 0 round 1: 3 nominate + 1 debug + 3 propose
    # + 1 repair; round 2: 3 + 3 (then saturation); cycle 1 round 1: 3 + 3; reporter 1
    tags = calls_by_tag(store)
    assert sum(v for k, v in tags.items() if k.startswith("analysis")) == 5
    assert tags["genesis"] == 3 and tags["judge.debug"] == 1 and tags["judge.repair"] == 1
    assert tags["judge.nominate"] == 9 and tags["judge.propose"] == 9 and tags["reporter"] == 1
    assert sum(tags.values()) == 29
    # evaluations: g2, g3, g3-d1, c0r1-j1..3, then one for the identical no-op patches; + test
    dev_runs = [c for c in ev.calls if c[1] == "dev"]
    assert len(dev_runs) == 7 and ev.calls.count(("c0r1-j3", "test")) == 1
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["evaluations"] == 8 and s["feedback_evaluations"] == 7 and s["test_evaluations"] == 1
    assert s["debug_iterations"] == 1 and s["model_calls"] == 29
    assert s["best_dev_score"] == pytest.approx(1e-3) and s["test_nrmse"] == pytest.approx(7e-3)
    assert res.best_id == "c0r1-j3" and res.status == "finished"
    # candidates by origin, lineage of the winner (hybrid: two parents)
    assert [c.id for c in store.candidates("genesis")] == ["g1", "g2", "g3"]
    assert [c.id for c in store.candidates("debug")] == ["g3-d1"]
    assert len(store.candidates("patch")) == 3 + 3 + 3
    assert store.candidate("c0r1-j3").parents == ["g3-d1", "g2"]
    assert [c.id for c in store.lineage("c0r1-j3")] == ["c0r1-j3", "g3-d1", "g2", "g3"]
    # events: the failed patch, saturation in both cycles, the rejudging cycle
    assert len(store.events("patch_failed")) == 1 and not store.events("patch_abandoned")
    assert "scale = 0.8" in store.events("patch_failed")[0]["error"]  # nearest lines shown
    assert [e["cycle"] for e in store.events("saturation")] == [0, 1]
    assert len(store.events("rejudge")) == 1
    # rejudging judges start from a fresh context: their first call has no earlier turn, only
    # the system prompt, the Genesis solvers, the pool now and the judge's own request
    first_c1 = store.db.execute("SELECT messages FROM model_calls WHERE tag='judge.nominate' "
                                "ORDER BY seq LIMIT 1 OFFSET 6").fetchone()[0]
    assert [m["role"] for m in json.loads(first_c1)] == ["system", "user", "user", "user"]
    # artefacts
    run_dir = tmp_path / "run"
    best_file = (run_dir / "best_solver.py").read_text()
    assert best_file.endswith(shift(1.0)) and "solver c0r1-j3, dev nrmse 1.000e-03" in best_file
    report = (run_dir / "report.md").read_text()
    assert "Narrative written by the test." in report and "c0r1-j2" in report
    # the test score is in the report but never shown to a model (the narrative is the last
    # call, made after the test evaluation)
    assert "Test-split nRMSE: 7.000e-03" in report
    prompts = "".join(r[0] for r in store.db.execute("SELECT messages FROM model_calls"))
    assert "7.000e-03" not in prompts and "7e-03" not in prompts and "0.007" not in prompts
    assert "Model calls: 29 paid" in report


@pytest.mark.parametrize("route,analysis_calls,phrase", [
    ("analytical", 2, "found an exact solution"),
    ("transformation", 4, "found a transformation"),
    ("hybrid", 5, "recommends treating part of the problem exactly"),
    ("numerical", 5, "No exact route applies"),
])
def test_each_analysis_route_drives_genesis(tmp_path, route, analysis_calls, phrase):
    rules = rules_for(route, [(shift(1.0), "exact")], [
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.propose", "reply": patch("    scale = 1.0", "    scale = 1.0  # kept",
                                                "no-op", ["g1"])}])
    store, res = run(tmp_path, rules, MarkerEvaluator(), candidates=1, max_rounds=1,
                     rejudge_cycles=0)
    analysis = json.loads((tmp_path / "run" / "analysis.json").read_text())
    assert analysis["route"] == route
    tags = calls_by_tag(store)
    assert sum(v for k, v in tags.items() if k.startswith("analysis")) == analysis_calls
    genesis_prompt = store.db.execute(
        "SELECT messages FROM model_calls WHERE tag='genesis'").fetchone()[0]
    assert phrase in genesis_prompt
    if route != "analytical":  # the stability step's recommendation reaches the authors
        assert "Recommended schemes: exact spectral shift" in genesis_prompt
    if route != "analytical":
        assert analysis["stability"][0]["value"] == pytest.approx((1 / 1024) / 0.1)
    assert res.best_id in ("g1", "c0r1-j1")


def test_malformed_replies_are_reasked_or_recorded(tmp_path):
    bad_json = "Hyperbolic.\n```json\n{\"time_order\": 1, \"linear\": tru\n```"
    extra = [
        {"tag": "analysis.classification.reask", "reply": js({
            "time_order": 1, "space_order": 1, "linear": True, "pde_type": "hyperbolic",
            "boundary": "periodic"})},
        {"tag": "analysis.classification", "reply": bad_json},
        {"tag": "genesis.reask", "sample": 1, "reply": "Still no code, sorry."},
        {"tag": "genesis", "sample": 1, "reply": "I would use an upwind scheme."},
        {"tag": "judge.nominate.reask", "reply": "nominee is g1"},
        {"tag": "judge.nominate", "reply": "I like g1 best."},
        {"tag": "judge.propose", "reply": patch("    scale = 0.9", "    scale = 1.0", "fix", ["g1"])},
    ]
    store, res = run(tmp_path, rules_for("numerical", [(shift(0.9), "ok")], extra),
                     MarkerEvaluator(), candidates=2, max_rounds=1, rejudge_cycles=0)
    analysis = json.loads((tmp_path / "run" / "analysis.json").read_text())
    assert analysis["classification"]["pde_type"] == "hyperbolic"  # from the re-ask
    g2 = store.candidate("g2")
    assert g2.code == "" and g2.static_check == "no code block in the reply"
    tags = calls_by_tag(store)
    assert tags["genesis.reask"] == 1 and tags["judge.nominate.reask"] == 3
    noms = store.events("nomination")
    assert all(n["nominee"] == "g1" and "_fallback" in n["reasons"] for n in noms)
    # the failed sample is never shown to judges
    nominate_prompt = store.db.execute(
        "SELECT messages FROM model_calls WHERE tag='judge.nominate'").fetchone()[0]
    assert "Solver g2" not in nominate_prompt and "Solver g1" in nominate_prompt
    assert res.best_id == "c0r1-j1"


def test_patch_failing_twice_is_abandoned_and_debug_limit_holds(tmp_path):
    extra = [
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.debug", "reply": patch('    raise RuntimeError("scripted crash: dt is undefined")',
                                              '    raise ValueError("still broken")',
                                              "still broken", ["g1"])},
        {"tag": "judge.propose", "reply": patch("    not in the file", "x", "bad", ["g1"])},
        {"tag": "judge.repair", "reply": patch("    still not in the file", "x", "bad", ["g1"])},
    ]
    ev = MarkerEvaluator()
    store, res = run(tmp_path, rules_for("numerical", [(CRASH, "crash")], extra), ev,
                     candidates=1, max_rounds=1, rejudge_cycles=0, debug_attempts=2)
    # g1 crashes; two debugging iterations: the first changes the code (still crashing), the
    # second's SEARCH no longer matches -> recorded as a failed debug patch
    assert store.n_debug_iterations == 2
    assert [c.id for c in store.candidates("debug")] == ["g1-d1"]
    assert len(store.events("debug_patch_failed")) == 1
    assert len(store.events("patch_abandoned")) == 3  # every judge's patch failed twice
    assert res.best_id is None and res.test_nrmse is None
    assert not (tmp_path / "run" / "best_solver.py").exists()
    assert store.n_evaluations == 2  # g1 and g1-d1


def test_budget_stop_on_evaluations_keeps_best_so_far(tmp_path):
    ev = MarkerEvaluator()
    store, res = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()), ev,
                     candidates=3, max_rounds=3, rejudge_cycles=1, max_evals=3)
    assert res.status == "budget_stop" and "--max-evals" in res.stop_reason
    assert store.status == "budget_stop" and len(store.events("budget_stop")) == 1
    s = store.summary()
    assert s["feedback_evaluations"] == 3 and s["test_evaluations"] == 1  # test run is extra
    assert s["best_solver"] and res.test_nrmse is not None
    assert "reporter" not in calls_by_tag(store)  # no narrative after a budget stop
    assert "Stopped early" in (tmp_path / "run" / "report.md").read_text()


@pytest.mark.parametrize("max_evals, proposals, cut", [
    (3, 0, [("proposals", 0, J)]),
    (4, 1, [("proposals", 1, J[1:]), ("nominations", 0, J)]),
    (5, 2, [("proposals", 2, J[2:]), ("nominations", 0, J)])])
def test_judges_are_not_asked_for_patches_the_budget_cannot_run(tmp_path, max_evals, proposals,
                                                                cut):
    """(bridge review, issue 27) Round 1 spends 3 evaluations on its nominees (g2, g3 and g3's
    debugged copy). With k evaluations left, only the first k judges are asked for a patch;
    with none left, none is asked, and the next round asks for no nomination either: each call
    would be paid for a solver that cannot run. The search ends as a budget stop, as before."""
    store, res = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                     MarkerEvaluator(), candidates=3, max_rounds=3, rejudge_cycles=1,
                     max_evals=max_evals)
    assert res.status == "budget_stop" and store.summary()["feedback_evaluations"] == max_evals
    tags = calls_by_tag(store)
    assert tags.get("judge.propose", 0) == proposals and tags["judge.nominate"] == 3
    assert [(e["step"], e["evals_left"], e["judges"]) for e in store.events("calls_cut")] == cut
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"- judge calls not made (no evaluation left to run their answer): " \
           f"{sum(len(j) for _, _, j in cut)}" in report
    # and the judges are told so (the bridge review: judge-3 was skipped without a word)
    told = " ".join(systems(store, "judge.nominate")[0].split())
    assert "With fewer evaluations left than judges when the modifications are asked for, only " \
           "that many judges are asked, in their order (judge-1 first)" in told


def test_budget_stop_on_tokens_during_analysis(tmp_path):
    store, res = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                     MarkerEvaluator(), candidates=3, max_tokens=500)
    assert res.status == "budget_stop" and "--max-tokens" in res.stop_reason
    assert res.best_id is None and store.n_evaluations == 0
    assert store.summary()["tokens_in"] >= 500 - store.summary()["tokens_out"]


def test_budget_stop_on_usd(tmp_path):
    from pdesharp.llm.prices import Price

    # an absurd price makes every call cost dollars: the third analysis call crosses $2.5
    store, res = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                     MarkerEvaluator(), price=Price(input=1000.0, output=1000.0),
                     candidates=3, max_usd=2.5)
    s = store.summary()
    assert res.status == "budget_stop" and "--max-usd" in res.stop_reason
    # each analysis call costs dollars at this price: the call that crosses $2.5 is used
    # (already paid for), and the next call is refused
    costs = [r[0] for r in store.db.execute("SELECT cost_usd FROM model_calls ORDER BY seq")]
    assert sum(costs[:-1]) < 2.5 <= sum(costs) == pytest.approx(s["cost_usd"])
    assert s["model_calls"] == len(costs) >= 2
    assert s["evaluations"] == 0 and res.best_id is None


def test_feedback_none_shows_only_status(tmp_path):
    rules = rules_for("numerical", [(shift(0.5), "a"), (CRASH, "b")], [
        {"tag": "judge.nominate", "context": "You are judge-3,", "reply": nominate("g2")},
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.debug", "reply": "I cannot fix it."},
        {"tag": "judge.propose", "reply": patch("    scale = 0.5", "    scale = 1.0", "x", ["g1"])}])
    store, res = run(tmp_path, rules, MarkerEvaluator(has_test=False), candidates=2,
                     max_rounds=1, rejudge_cycles=0, feedback="none", debug_attempts=1)
    prompt = store.db.execute("SELECT messages FROM model_calls WHERE tag='judge.propose'"
                              " ORDER BY seq DESC LIMIT 1").fetchone()[0]
    assert "ran successfully" in prompt and "failed to execute" in prompt
    # no measured number and no result line ("nRMSE: ..."); the task's own notes may still
    # mention nRMSE as a fact about its reference data, and the prompt says there is no score
    assert "nRMSE:" not in prompt and "1.001e" not in prompt and "5.010e" not in prompt
    assert "There is no score" in prompt
    assert res.best_id == "g1"  # no scores: the earliest solver that ran ok
    assert store.summary()["test_note"].startswith("no test split")


def test_model_error_mid_run_then_resume_replays_completed_calls(tmp_path):
    from pdesharp.llm.base import ModelError
    from pdesharp.llm.scripted import ScriptedModel

    task = load_task("advection")
    config = SolveConfig(task="advection", model="m", out=str(tmp_path), candidates=1,
                         max_rounds=1, rejudge_cycles=0)
    store = RunStore.create(tmp_path, task=task, config=config.model_dump(), run_id="run")
    script = {k: v for k, v in analysis_replies("numerical").items()}
    script["genesis"] = [ModelError("endpoint http://127.0.0.1:9 refused the connection")]
    dead = ScriptedModel(script, name="m")
    with pytest.raises(ModelError):
        asyncio.run(solve(task, config, store, build_roles(config, store, {"m": dead}),
                          MarkerEvaluator()))
    # second session: a healthy model answers; the five analysis calls are replayed
    healthy = RulesModel(rules_for("numerical", [(shift(1.0), "exact")], [
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.propose", "reply": patch("    scale = 1.0", "    scale = 1.0  # ok", "x", ["g1"])}]),
        name="m")
    res = asyncio.run(solve(task, config, store, build_roles(config, store, {"m": healthy}),
                            MarkerEvaluator()))
    assert res.status == "finished" and res.best_id in ("g1", "c0r1-j1")
    src = dict(store.db.execute("SELECT source, COUNT(*) FROM model_calls GROUP BY source"))
    assert src["replay"] == 5
    assert store.db.execute("SELECT COUNT(*) FROM model_calls WHERE tag LIKE 'analysis%' AND "
                            "source='model'").fetchone()[0] == 5
    assert store.db.execute("SELECT COUNT(*) FROM model_calls WHERE error != ''").fetchone()[0] == 1


def test_builtin_model_selects_builtin_roles(tmp_path, monkeypatch):
    import pdesharp.builtin as builtin

    from pdesharp.rolesets import builtin_roles

    config = SolveConfig(model="builtin", feedback="residual")
    for name in ("BuiltinAnalyst", "BuiltinJudge", "make_roles"):
        monkeypatch.delattr(builtin, name, raising=False)
    if not hasattr(builtin, "BuiltinAuthor"):
        monkeypatch.setattr(builtin, "BuiltinAuthor", object, raising=False)
    with pytest.raises(RuntimeError, match="missing BuiltinAnalyst, BuiltinJudge"):
        builtin_roles(config)

    class Judge:  # a minimal stand-in with the constructor the pipeline uses
        def __init__(self, name, feedback):
            self.name, self.feedback = name, feedback

    monkeypatch.setattr(builtin, "BuiltinAnalyst", lambda: "analyst", raising=False)
    monkeypatch.setattr(builtin, "BuiltinJudge", Judge, raising=False)
    roles = build_roles(config, RunStore.create(tmp_path, task=load_task("advection"),
                                                config={}, run_id="b"))
    assert roles.analyst == "analyst" and roles.reporter is None
    assert [(j.name, j.feedback) for j in roles.judges] == [
        ("judge-1", "residual"), ("judge-2", "residual"), ("judge-3", "residual")]


def test_prompts_do_not_depend_on_completion_order(tmp_path):
    """Resume relies on identical prompts: concurrent judge turns finishing in another order
    (here: a slow reply for one judge's proposal) must not change any request."""
    keys = []
    for name, slow in (("a", J[0]), ("b", J[2])):
        rules = rules_for("numerical", GENESIS3, tournament_rules())
        for r in rules:
            if r["tag"] == "judge.propose" and r.get("context") == f"You are {slow},":
                r["delay_s"] = 0.05
        store, _ = run(tmp_path / name, rules, MarkerEvaluator(), candidates=3, max_rounds=3,
                       rejudge_cycles=1)
        keys.append(sorted(r[0] for r in store.db.execute("SELECT request_key FROM model_calls")))
    assert keys[0] == keys[1]


def test_llm_analysis_is_cross_checked_against_the_symbolic_one(tmp_path):
    # the scripted classification calls advection "parabolic" and nonlinear: both are wrong
    wrong = ("Scripted wrong answer.\n" + js({
        "time_order": 1, "space_order": 1, "linear": False, "pde_type": "parabolic",
        "boundary": "periodic"}))
    rules = rules_for("numerical", [(shift(1.0), "exact")], [
        {"tag": "analysis.classification", "reply": wrong},
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.propose", "reply": patch("    scale = 1.0", "    scale = 1.0  # ok", "x", ["g1"])}])
    store, _ = run(tmp_path, rules, MarkerEvaluator(), candidates=1, max_rounds=1,
                   rejudge_cycles=0)
    facts = {d["fact"]: d for d in store.events("disagreement")}
    assert facts["classification.linear"]["severity"] == "error"
    assert facts["classification.pde_type"]["builtin"] == "hyperbolic"
    report = (tmp_path / "run" / "report.md").read_text()
    assert "model says parabolic, symbolic analysis says hyperbolic" in report
    prompts = "".join(r[0] for r in store.db.execute("SELECT messages FROM model_calls"))
    assert "symbolic analysis says" not in prompts  # reported, never fed back


def test_budget_stop_during_genesis_keeps_written_candidates(tmp_path):
    from pdesharp.llm.prices import Price

    # analysis (5 calls) costs about $1.7 at this price, each genesis call about $0.3: with
    # $2.6 the budget runs out part-way through the eight samples (for any analysis cost
    # between $0.6 and $2.6, so prompt edits do not break the test)
    genesis = [(shift(0.5 + 0.05 * i), f"s{i}") for i in range(8)]
    store, res = run(tmp_path, rules_for("numerical", genesis, tournament_rules()),
                     MarkerEvaluator(), price=Price(input=200.0, output=200.0), candidates=8,
                     max_usd=2.6)
    assert res.status == "budget_stop" and "--max-usd" in res.stop_reason
    written = store.candidates("genesis")
    n_genesis = store.db.execute("SELECT COUNT(*) FROM model_calls WHERE tag='genesis'").fetchone()[0]
    assert 0 < len(written) == n_genesis < 8  # every paid sample kept, none beyond the budget
    assert all((tmp_path / "run" / "candidates" / f"{c.id}.py").is_file() for c in written)
    assert store.n_evaluations == 0


def test_stability_bounds_use_the_data_scales(shared_data):
    from pdesharp.analysis import evaluate_bound, reference_scales

    task = load_task("burgers")
    scales = reference_scales(task, dev_data=shared_data / "burgers_dev.hdf5")
    assert scales["nx"] == 1024 and 0.1 < scales["umax"] < 10
    value, note = evaluate_bound("min(0.4*dx/umax, dx**2/(2*nu))", task, scales)
    dx = 1 / 1024  # nu is the solver's argument (0.01/pi): the diffusive limit is the smaller
    assert note == "" and value == pytest.approx(min(0.4 * dx / scales["umax"],
                                                     dx**2 / (2 * task.parameters["nu"])))
    assert evaluate_bound("dx/umax", task, {})[1] == "depends on umax"
    assert evaluate_bound("dx/(", task, {})[1].startswith("not readable: unbalanced parentheses")


def test_wrong_llm_stability_bound_is_flagged_in_the_run(tmp_path):
    # A scripted (written by us) stability step whose advective bound is 100x too large:
    # explicit upwind for u_t + beta u_x = 0 needs dt <= dx/|beta|, not 100 dx/|beta|.
    wrong = ("Explicit upwind is stable for large steps.\n" + js({
        "bounds": [{"scheme": "explicit upwind advection", "expression": "100*dx/abs(beta)",
                    "note": "CFL condition"}],
        "recommended_schemes": ["upwind"], "key_facts": []}))
    rules = rules_for("numerical", [(shift(1.0), "exact")], [
        {"tag": "analysis.stability", "reply": wrong},
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.propose", "reply": patch("    scale = 1.0", "    scale = 1.0  # ok", "x", ["g1"])}])
    store, _ = run(tmp_path, rules, MarkerEvaluator(), candidates=1, max_rounds=1,
                   rejudge_cycles=0)
    flagged = [d for d in store.events("disagreement") if d["fact"].startswith("stability")]
    assert flagged, store.events("disagreement")
    assert "off by a factor 100" in flagged[0]["note"]
    assert "stability" in (tmp_path / "run" / "report.md").read_text()
