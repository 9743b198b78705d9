"""``pdesharp bench --objective``: recorded with the bench, and under a fastest-* objective the
baselines' final pick follows the same rule as PDE-SHARP's. Marker evaluator and scripted
replies are ours."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from baseline_fakes import MarkerEvaluator, solver_reply

from pdesharp.bench import BenchConfig, BenchError, run_bench
from pdesharp.llm import ScriptedModel


class TimedMarkers(MarkerEvaluator):
    """MarkerEvaluator with the solver time from ``# SECONDS x`` in the code."""

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        r = await super().evaluate(code, split=split, feedback=feedback, label=label)
        m = re.search(r"# SECONDS ([0-9.]+)", code)
        return r.model_copy(update={"solver_seconds": float(m.group(1))}) if m and r.ok else r


def bench(tmp_path, objective):
    cfg = BenchConfig(tasks=["advection"], methods=["codepde"], model="scripted",
                      out=str(tmp_path / objective.replace(":", "-")), samples=2,
                      objective=objective)
    replies = [solver_reply("# SCORE 1e-3\n# SECONDS 2.0"),
               solver_reply("# SCORE 5e-3\n# SECONDS 0.2")]
    rows = asyncio.run(run_bench(cfg, model_factory=lambda *a: ScriptedModel({"*": replies}),
                                 evaluator_factory=lambda t: TimedMarkers()))
    return cfg, rows[0]


def test_bench_objective_picks_each_baselines_winner_and_shows_its_time(tmp_path):
    # 2 samples of 2 (1e-3 in 1 s per sample, 5e-3 in 0.1 s): CodePDE's rule (accuracy) takes
    # the lowest score; fastest-within:10 takes the faster one, 5x the lowest score
    _, acc = bench(tmp_path, "accuracy")
    cfg, fast = bench(tmp_path, "fastest-within:10")
    assert acc["dev_score"] == 1e-3 and acc["seconds_per_sample"] == 1.0
    assert fast["dev_score"] == 5e-3 and fast["seconds_per_sample"] == pytest.approx(0.1)
    assert fast["nrmse"] == pytest.approx(5.5e-3)  # the test split of that winner (x 1.1)
    saved = json.loads((tmp_path / "fastest-within-10" / "bench.json").read_text())
    assert saved["objective"] == "fastest-within:10"
    summary = json.loads((tmp_path / "fastest-within-10" / "advection" / "codepde-r0" /
                          "summary.json").read_text())
    assert summary["objective"] == "fastest-within:10"
    assert summary["winner_time"]["how"].startswith("one evaluator timing")
    table = (tmp_path / "fastest-within-10" / "table.md").read_text()
    assert "| s/sample |" in table.splitlines()[0] and "| 0.1 |" in table
    # a bench folder keeps its objective: another one would make its cells incomparable
    cfg.objective = "accuracy"
    with pytest.raises(BenchError, match="objective"):
        asyncio.run(run_bench(cfg, model_factory=lambda *a: None,
                              evaluator_factory=lambda t: TimedMarkers()))
    with pytest.raises(BenchError, match="FACTOR must be at least 1"):
        BenchConfig(tasks=["advection"], methods=["codepde"], model="m",
                    objective="fastest-within:0.1").validate()
