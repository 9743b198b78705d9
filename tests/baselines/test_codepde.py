"""CodePDE repeated sampling and refinement on the run store, with a marker evaluator (ours)
and scripted replies (ours, not recordings of a real model)."""

from __future__ import annotations

import asyncio
import json

from baseline_fakes import MarkerEvaluator, solver_reply

from pdesharp.baselines.common import BaselineConfig, extract_code
from pdesharp.baselines.runner import run_baseline
from pdesharp.llm import ScriptedModel
from pdesharp.store import RunStore
from pdesharp.task import load_task


def test_extract_code_takes_the_longest_python_block_and_none_without_one():
    text = "```python\nx = 1\n```\nthen\n```python\ndef solver(a):\n    return a\n```\n```\nplain\n```"
    assert extract_code(text) == "def solver(a):\n    return a\n"
    assert extract_code("no code here, only ```bash\nls\n```") is None
    assert extract_code("") is None


def run(coro):
    return asyncio.run(coro)


def test_codepde_debugs_in_the_same_conversation_and_counts_everything(tmp_path):
    task = load_task("advection")
    # Sample 0: error, then NaN, then ok; sample 1: no code at all; sample 2: ok at once.
    replies = {
        "codepde.generate": [solver_reply("# RAISE"), "I would use a spectral method.",
                             solver_reply("# SCORE 2e-3")],
        "codepde.debug": [solver_reply("# NAN"), solver_reply("# SCORE 1e-3")],
    }
    model = ScriptedModel(replies)
    ev = MarkerEvaluator()
    cfg = BaselineConfig(samples=3, concurrency=1)
    summary = run(run_baseline("codepde", task, model=model, evaluator=ev, out_root=tmp_path,
                               cfg=cfg))
    model.assert_exhausted()
    # Executions: s00, s00.d1, s00.d2, s02 on dev, then the winner on test.
    assert [c for c in ev.calls if c[1] == "dev"] == [("s00", "dev"), ("s00.d1", "dev"),
                                                     ("s00.d2", "dev"), ("s02", "dev")]
    assert ev.calls[-1] == ("s00.d2", "test")
    assert summary["feedback_evaluations"] == 4
    assert summary["evaluations"] == 5  # the test run is an execution too
    assert summary["debug_iterations"] == 2
    assert summary["model_calls"] == 5
    assert summary["best_solver"] == "s00.d2"
    assert summary["best_dev_score"] == 1e-3
    assert abs(summary["test_nrmse"] - 1.1e-3) < 1e-12
    assert summary["sample_outcomes"] == {"ok": 2, "no_code": 1}
    # The debug call saw the error tail, capped at 5000 characters, in the same conversation.
    debug_calls = model.calls_for("codepde.debug")
    first = debug_calls[0].messages
    assert [m.role for m in first] == ["system", "user", "assistant", "user"]
    assert "ZeroDivisionError" in first[-1].content
    assert first[-1].content.count("step 1") <= 5000 // 7 + 1
    assert "NaN" in debug_calls[1].messages[-1].content
    store = RunStore.open(tmp_path / "advection-codepde")
    assert store.lineage("s00.d2")[-1].id == "s00"
    assert json.loads((tmp_path / "advection-codepde" / "summary.json").read_text())["method"] == "codepde"


def test_finished_run_is_not_rerun_and_unfinished_run_resumes(tmp_path):
    task = load_task("advection")
    model = ScriptedModel({"codepde.generate": [solver_reply("# SCORE 3e-3")] * 2})
    ev = MarkerEvaluator(test_data=False)
    cfg = BaselineConfig(samples=2, concurrency=1)
    first = run(run_baseline("codepde", task, model=model, evaluator=ev, out_root=tmp_path, cfg=cfg))
    assert first["test_nrmse"] is None and "no test data" in first["test_note"]
    # Identical code from two samples is executed once (the store de-duplicates).
    assert first["feedback_evaluations"] == 1 and first["model_calls"] == 2
    again = run(run_baseline("codepde", task, model=ScriptedModel({}), evaluator=ev,
                             out_root=tmp_path, cfg=cfg))
    assert again == first

    # An interrupted run: one sample done, then the model dies; the resumed run asks only the
    # missing sample and runs nothing twice.
    class Boom(Exception):
        pass

    dying = ScriptedModel({"codepde.generate": [solver_reply("# SCORE 4e-3"), Boom("killed")]})
    try:
        run(run_baseline("codepde", task, model=dying, evaluator=ev, out_root=tmp_path / "b",
                         cfg=cfg))
    except Boom:
        pass
    store = RunStore.open(tmp_path / "b" / "advection-codepde")
    assert store.summary() is None and store.status == "failed"
    store.close()
    resumed_model = ScriptedModel({"codepde.generate": [solver_reply("# SCORE 5e-4")]})
    summary = run(run_baseline("codepde", task, model=resumed_model, evaluator=ev,
                               out_root=tmp_path / "b", cfg=cfg))
    resumed_model.assert_exhausted()
    assert summary["best_dev_score"] == 5e-4 and summary["feedback_evaluations"] == 2


def test_budget_evals_stops_new_executions(tmp_path):
    task = load_task("advection")
    model = ScriptedModel({"codepde.generate": [solver_reply(f"# SCORE {k}e-3") for k in range(1, 6)]})
    ev = MarkerEvaluator(test_data=False)
    summary = run(run_baseline("codepde", task, model=model, evaluator=ev, out_root=tmp_path,
                               cfg=BaselineConfig(samples=5, concurrency=2, budget_evals=3)))
    assert summary["feedback_evaluations"] == 3
    assert summary["status"] == "budget_stop"


def test_refinement_shows_seeds_with_their_score_line_and_keeps_only_refined(tmp_path):
    task = load_task("advection")
    ev = MarkerEvaluator(test_data=False)
    seeds_model = ScriptedModel({"codepde.generate": [solver_reply(f"# SCORE {k}e-3") for k in
                                                      (7, 3, 9, 1, 5, 8)]})
    run(run_baseline("codepde", task, model=seeds_model, evaluator=ev, out_root=tmp_path,
                     cfg=BaselineConfig(samples=6, concurrency=1)))
    refine_model = ScriptedModel({"codepde-r.generate": [solver_reply("# SCORE 2e-3"),
                                                         solver_reply("# RAISE")],
                                  "codepde-r.debug": [solver_reply("# SCORE 6e-4")]})
    summary = run(run_baseline("codepde-r", task, model=refine_model, evaluator=ev,
                               out_root=tmp_path, seed_run=tmp_path / "advection-codepde",
                               cfg=BaselineConfig(refine_samples=2, concurrency=1)))
    prompt = refine_model.calls_for("codepde-r.generate")[0].messages[-1].content
    # The 5 best of the 6 (9e-3 is left out), each with its CodePDE-style result line.
    assert prompt.count("Running it gave:") == 5
    assert "nRMSE: 1.000e-03 | Time: 0.01s | Average convergence rate: 1.000" in prompt
    assert "SCORE 9e-3" not in prompt
    assert summary["best_solver"] == "r01.d1" and summary["best_dev_score"] == 6e-4
    assert summary["feedback_evaluations"] == 3 and summary["seed_evaluations"] == 6
    store = RunStore.open(tmp_path / "advection-codepde-r")
    assert set(store.candidate("r00").parents) == {f"seed-s{i:02d}" for i in (0, 1, 3, 4, 5)}


def test_killed_in_a_debugging_round_resumes_without_asking_or_running_twice(tmp_path):
    task = load_task("advection")
    ev = MarkerEvaluator(test_data=False)
    cfg = BaselineConfig(samples=1)

    class Killed(Exception):
        pass

    first = ScriptedModel({"codepde.generate": [solver_reply("# RAISE")],
                           "codepde.debug": [Killed("kill -9 stand-in")]})
    try:
        run(run_baseline("codepde", task, model=first, evaluator=ev, out_root=tmp_path, cfg=cfg))
    except Killed:
        pass
    assert ev.calls == [("s00", "dev")]
    # The resumed run replays the generation from the run's journal (no model call), reuses
    # the stored result of s00 (no execution) and only asks the model for the debugging fix.
    second = ScriptedModel({"codepde.debug": [solver_reply("# SCORE 2e-3")]})
    summary = run(run_baseline("codepde", task, model=second, evaluator=ev, out_root=tmp_path,
                               cfg=cfg))
    second.assert_exhausted()
    assert [c.tag for c in second.calls] == ["codepde.debug"]
    assert ev.calls == [("s00", "dev"), ("s00.d1", "dev")]
    assert summary["model_calls"] == 2 and summary["cached_model_calls"] == 1
    assert summary["debug_iterations"] == 1 and summary["best_solver"] == "s00.d1"


def test_dead_endpoint_fails_the_run_with_the_endpoint_named(tmp_path):
    import socket

    from pdesharp.llm.openai_compat import OpenAICompatModel

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x",
                              max_retries=0, timeout=5)
    ev = MarkerEvaluator(test_data=False)
    summary = run(run_baseline("codepde", load_task("advection"), model=model, evaluator=ev,
                               out_root=tmp_path, cfg=BaselineConfig(samples=2)))
    assert summary["status"] == "failed" and ev.calls == []
    assert summary["sample_outcomes"] == {"model_error": 2}
    assert "model error" in summary["note"] and f"127.0.0.1:{port}" in summary["note"]
