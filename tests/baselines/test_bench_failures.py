"""A bench with broken cells: the others finish, the tables are written, the broken ones are
named and resumed next time. Marker evaluator and scripted replies are ours."""

from __future__ import annotations

import asyncio

import pytest
from baseline_fakes import MarkerEvaluator, solver_reply

from pdesharp.bench import BenchConfig, BenchError, BenchIncomplete, cell_dir, run_bench
from pdesharp.llm import ScriptedModel


def test_failed_cell_does_not_cost_the_others_and_is_resumed(tmp_path):
    cfg = BenchConfig(tasks=["advection"], methods=["codepde", "codepde-r", "cot"],
                      model="scripted", out=str(tmp_path), samples=1, refine_samples=1)
    ev = MarkerEvaluator(test_data=False)

    def broken(method, task, repeat):
        if method == "cot":
            return ScriptedModel({})  # no reply at all: ScriptExhausted inside the cell
        # codepde's only sample crashes even after debugging: codepde-r has no seed.
        return ScriptedModel({"*": [solver_reply(f"# RAISE attempt {k}") for k in range(5)]})

    with pytest.raises(BenchIncomplete) as info:
        asyncio.run(run_bench(cfg, model_factory=broken, evaluator_factory=lambda t: ev))
    assert len(info.value.failures) == 1 and "advection / cot / repeat 0" in info.value.failures[0]
    rows = {r["method"]: r for r in info.value.rows}
    assert set(rows) == {"codepde", "codepde-r"}
    assert rows["codepde"]["nrmse"] is None and rows["codepde"]["evaluations"] == 5
    assert rows["codepde"]["debug_iterations"] == 4
    assert rows["codepde-r"]["statuses"] == ["failed"] and rows["codepde-r"]["evaluations"] == 0
    assert "failed" in (tmp_path / "table.md").read_text()
    assert not (cell_dir(tmp_path, "advection", "cot", 0) / "summary.json").exists()

    # Next time only the broken cell runs.
    asked = []

    def fixed(method, task, repeat):
        asked.append(method)
        return ScriptedModel({"*": ["<output>" + solver_reply("# SCORE 1e-3") + "</output>"]})

    rows = asyncio.run(run_bench(cfg, model_factory=fixed, evaluator_factory=lambda t: ev))
    assert asked == ["cot"]
    assert {r["method"]: r["nrmse"] for r in rows}["cot"] == 1e-3


def test_bench_rejects_unknown_methods_and_builtin_for_baselines(tmp_path):
    with pytest.raises(BenchError, match="unknown method"):
        asyncio.run(run_bench(BenchConfig(tasks=["advection"], methods=["nope"], model="m",
                                          out=str(tmp_path))))
    with pytest.raises(BenchError, match="builtin has no language model"):
        asyncio.run(run_bench(BenchConfig(tasks=["advection"], methods=["codepde"],
                                          model="builtin", out=str(tmp_path))))


def test_tasks_given_as_yaml_paths_are_named_by_the_task(tmp_path):
    from pdesharp.task import load_task

    spec = tmp_path / "my_advection.yaml"
    spec.write_text(load_task("advection").to_yaml())
    cfg = BenchConfig(tasks=[str(spec)], methods=["codepde"], model="scripted",
                      out=str(tmp_path / "b"), samples=1)
    rows = asyncio.run(run_bench(
        cfg, model_factory=lambda m, t, r: ScriptedModel({"*": [solver_reply("# SCORE 2e-3")]}),
        evaluator_factory=lambda t: MarkerEvaluator(False)))
    assert [(r["task"], r["nrmse"]) for r in rows] == [("advection", 2e-3)]
    from pdesharp.report.html import write_report

    assert "task-advection" in write_report(tmp_path / "b").read_text()


def test_changing_cell_settings_in_an_existing_bench_folder_is_refused(tmp_path):
    make = lambda m, t, r: ScriptedModel({"*": [solver_reply("# SCORE 2e-3")] * 2})  # noqa: E731
    ev = lambda t: MarkerEvaluator(False)  # noqa: E731
    cfg = BenchConfig(tasks=["advection"], methods=["codepde"], model="scripted",
                      out=str(tmp_path), samples=1)
    asyncio.run(run_bench(cfg, model_factory=make, evaluator_factory=ev))
    cfg2 = BenchConfig(tasks=["advection"], methods=["codepde"], model="scripted",
                       out=str(tmp_path), samples=2)
    with pytest.raises(BenchError, match="samples: 1 -> 2"):
        asyncio.run(run_bench(cfg2, model_factory=make, evaluator_factory=ev))
    # More repeats and methods are fine: the bench grows.
    cfg3 = BenchConfig(tasks=["advection"], methods=["codepde", "cot"], model="scripted",
                       out=str(tmp_path), samples=1, repeats=2)
    rows = asyncio.run(run_bench(cfg3, model_factory=make, evaluator_factory=ev))
    assert [(r["method"], r["repeats"]) for r in rows] == [("codepde", 2), ("cot", 2)]
