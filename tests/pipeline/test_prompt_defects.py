"""Issue 24 item 6: the prompt defects of the real-reply Burgers review, each checked where it
was found (Genesis, result lines, the stability step, the winning file, the ancestry, the
cross-check, the full facts level), and item 2's result line beside the score.

Scripted models (replies written by us, pipeline_scripts) and MarkerEvaluator (nothing
executes), or the prompt functions called directly.
"""

from __future__ import annotations

import json

import pytest
from pipeline_scripts import MarkerEvaluator, nominate, shift
from test_pipeline import rules_for, run

from pdesharp.facts import TaskFacts, build_facts, parameter_text
from pdesharp.prompting import facts_block
from pdesharp.records import EvalResult
from pdesharp.synthesis.judges import LLMJudge, describe_result
from pdesharp.synthesis.lineage import is_rewrite, kept_share, prune_unreachable
from pdesharp.task import builtin_task_names, load_task


def test_genesis_on_a_hybrid_route_does_not_assume_a_splitting(tmp_path):
    store, _ = run(tmp_path, rules_for("hybrid", [(shift(1.0), "exact")], [
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.propose", "reply": "NO_CHANGE\n```json\n{\"no_change\": true}\n```"}]),
        MarkerEvaluator(),
        candidates=1, max_rounds=1, rejudge_cycles=0)
    (messages,) = [json.loads(m) for (m,) in store.db.execute(
        "SELECT messages FROM model_calls WHERE tag='genesis'")]
    prompt = " ".join(messages[-1]["content"].split())
    # the recommended route may be an integrating factor or ETDRK4, which split nothing
    assert "combine them with a splitting of adequate order" not in prompt
    assert "an integrating factor or exponential integrator needs no splitting" in prompt


def test_a_result_line_shows_the_pde_distance_and_no_self_convergence_rate():
    r = EvalResult(status="ok", split="dev", feedback="nrmse", nrmse=1.228e-4,
                   nrmse_converged=2.3e-8, convergence_order=1.991, n_samples=1,
                   solver_seconds=0.5)
    told = describe_result(r, "nrmse", converged=True)
    assert "nRMSE: 1.228e-04" in told
    assert "distance from the converged solution (not ranked): 2.300e-08" in told
    assert "1.991" not in told and "convergence" not in told.replace("converged", "")
    # without an audit told to the judges (the paper's set-up) only the score and the time
    assert "converged" not in describe_result(r, "nrmse")


def test_a_judge_sees_the_distance_when_the_facts_carry_the_reference_error():
    task = load_task("burgers")
    facts = TaskFacts.from_spec(task).model_copy(update={"reference_error": 1.228e-4})
    judge = LLMJudge(None, "judge-1", facts=facts)
    judge._start(task, None)
    system = " ".join(judge.messages[0].content.split())
    assert "distance from the audit's converged solution of the PDE" in system
    assert "an audit measured their own error as nRMSE 1.228e-04" in system
    assert "self-convergence" not in system


@pytest.mark.parametrize("name", ["burgers", "reacdiff1d", "cns1d", "advection"])
def test_the_stability_prompt_gives_an_example_in_the_tasks_own_symbols(name, tmp_path):
    from prompt_runs import calls, solve_run

    task = load_task(name)
    store = solve_run(tmp_path, name)
    (stability,) = [c[-1]["content"] for c in calls(store, "analysis.stability")]
    u = task.equation.unknowns[0]
    assert f'"0.4*dx/{u}max"' in stability
    # Burgers' prompt carried advection's "0.4*dx/abs(beta)"
    others = {"beta", "nu", "rho", "eta", "zeta"} - set(task.parameters) \
        - set(task.equation.unknowns)
    example = stability.split("(e.g.", 1)[1].split(")", 1)[0]
    assert not any(p in example for p in others)


# -- a rewrite that keeps the replaced solver as dead code --------------------------------------
NEW_DESIGN = '''def solver(u0_batch, t_coordinate, beta):
    """A different design: a copy of the data, undamped."""
    batch = np.asarray(u0_batch)
    frames = len(t_coordinate)
    scale = 1.0
    out = np.empty((batch.shape[0], frames, batch.shape[1]))
    for k in range(frames):
        out[:, k] = batch
    out[:, 1:] *= scale
    return out


def _old_solver(u0_batch, t_coordinate, beta):'''


def _rewrite_reply() -> str:
    from pipeline_scripts import js

    return ("A new design; the old one is kept, renamed, for reference.\n<<<<<<< SEARCH\n"
            "def solver(u0_batch, t_coordinate, beta):\n=======\n" + NEW_DESIGN +
            "\n>>>>>>> REPLACE\n" + js({"title": "copy", "justification": "a rewrite",
                                         "parents": ["g1"]}))


@pytest.fixture(scope="module")
def rewrite_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rewrite")
    rules = rules_for("numerical", [(shift(0.8), "damped shift")], [
        {"tag": "judge.nominate", "when": "Round 1 ", "reply": nominate("g1")},
        {"tag": "judge.propose", "when": "Round 1 ", "context": "You are judge-1,",
         "reply": _rewrite_reply()},
        {"tag": "judge.propose", "reply": "NO_CHANGE\n```json\n{\"no_change\": true, "
                                          "\"justification\": \"done\"}\n```"},
        {"tag": "judge.nominate", "reply": nominate("c0r1-j1")}])
    return run(tmp, rules, MarkerEvaluator(), candidates=1, max_rounds=2, rejudge_cycles=0)


def test_the_winning_file_leaves_out_the_replaced_solver(rewrite_run):
    store, res = rewrite_run
    assert res.best_id == "c0r1-j1"
    evaluated = store.candidate("c0r1-j1").code
    assert "def _old_solver(" in evaluated  # what ran, unchanged in the run store
    shipped = (store.dir / "best_solver.py").read_text()
    assert "_old_solver" not in shipped.split("\n", 2)[2]  # the code after the header lines
    assert "# Unreachable definitions of the evaluated code left out: _old_solver" in shipped
    assert "def solver(u0_batch, t_coordinate, beta):" in shipped and "scale = 1.0" in shipped
    compile(shipped, "best_solver.py", "exec")


def test_the_ancestry_and_the_pool_call_a_rewrite_a_rewrite(rewrite_run):
    store, _ = rewrite_run
    report = (store.dir / "report.md").read_text()
    assert "g1 — damped shift [2.010e-01] (replaced by a rewrite, not modified)" in report
    later = [json.loads(m)[-1]["content"] for (m,) in store.db.execute(
        "SELECT messages FROM model_calls WHERE tag='judge.nominate' ORDER BY seq")][3:]
    # the other judges are told whose rewrite it is; its author, that it is its own
    mine = [p for p in later if "as you proposed it" in p]
    assert len(mine) == 1 and "your new design (cycle 0, round 1) replacing g1" in mine[0]
    assert len(later) == 3 and all("a new design by judge-1 (cycle 0, round 1) replacing g1" in
                                   " ".join(p.split()) for p in later if p not in mine)


def test_pruning_removes_only_what_cannot_run():
    code = ("import numpy as np\n\n\ndef solver(u, t, beta):\n    return _helper(u)\n\n\n"
            "def _helper(u):\n    return u\n\n\ndef _dead(u):\n    return _deader(u)\n\n\n"
            "def _deader(u):\n    return u\n\n\n@staticmethod\ndef _decorated(u):\n    return u\n"
            "\n\ndef _by_name(u):\n    return u\n\n\nHOOK = globals()['_by_name']\n\n\n"
            "def _side_effect(u, x=print('hello')):\n    return u\n")
    pruned, removed = prune_unreachable(code, "solver")
    assert removed == ["_dead", "_deader"]  # _deader only became unreachable with _dead
    for kept in ("def _helper", "def _decorated", "def _by_name", "def _side_effect"):
        assert kept in pruned
    compile(pruned, "x", "exec")
    assert kept_share(code, code, "solver") == 1.0 and not is_rewrite(code, code, "solver")


def test_the_cross_check_does_not_call_an_explicit_flux_exact():
    from pdesharp.builtin.compare import not_comparable
    from pdesharp.records import StabilityBound

    bound = StabilityBound(scheme="RK4 on the pseudo-spectral flux, diffusion exact "
                                  "(integrating factor), 2/3 de-aliasing",
                           expression="2.83*dx/(pi*umax)")
    why = not_comparable(bound, "advective")
    assert "steps this part exactly" not in why
    assert "treats another part of the problem exactly" in why
    assert "explicit rest of that scheme" in why


# -- the full facts level ------------------------------------------------------------------------
def test_a_parameter_set_as_a_multiple_of_pi_is_said_so():
    assert parameter_text(0.0031830988618379067) == "0.0031830988618379067 (= 0.01/π)"
    assert parameter_text(0.1) == "0.1" and parameter_text(1.0) == "1.0"
    assert parameter_text(0) == "0"


@pytest.mark.parametrize("name", builtin_task_names())
def test_full_facts_state_the_grid_convention_parameters_and_time_span(name, shared_data):
    task = load_task(name)
    full = " ".join(facts_block(task, build_facts(task, "full", data_dir=shared_data,
                                                  max_samples=2)).split())
    assert "point values of the fields at these points, not cell averages" in full
    assert "cell centres" in full
    if not task.steady:
        lo, hi = task.time_span
        assert f"Time span: t from {lo} to {hi}" in full
        assert f"output times from {lo:g} to {hi:g}" in full
    for k in task.parameters:
        assert f"{k} = " in full
    if name == "burgers":
        assert "nu = 0.0031830988618379067 (= 0.01/π)" in full
        assert "0.01/pi" in load_task(name).title  # the title no longer says nu = 0.01
    # codepde keeps CodePDE's text, its errors included, by design
    codepde = facts_block(task, build_facts(task, "codepde", data_dir=shared_data,
                                            max_samples=2))
    assert "point values" not in codepde and "/π)" not in codepde
