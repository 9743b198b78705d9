"""`pdesharp solve`, `bench`, `eval` and `sandbox` with --executor ray, as users run them, on
the session's local Ray instance (conftest.py): the same results as on this machine, the
executor recorded in the run so that `pdesharp resume` stays on the cluster."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from pdesharp.cli import main
from pdesharp.evaluate import Evaluator
from pdesharp.task import load_task

RULES = Path(__file__).resolve().parents[1] / "baselines" / "fixtures" / "codepde_rules.yaml"


def _results(run_dir: Path) -> list[dict]:
    db = sqlite3.connect(run_dir / "run.sqlite")
    try:
        return [json.loads(r[0]) for r in db.execute(
            "SELECT result FROM evaluations WHERE counted=1 ORDER BY seq")]
    finally:
        db.close()


def test_solve_through_ray_matches_local_and_resume_stays_on_ray(ray_cluster, shared_data,
                                                                   tmp_path, monkeypatch):
    """The built-in analyst's default run, locally and through Ray; the Ray run is stopped by
    its budget after one evaluation and resumed (`pdesharp resume` is told the executor again:
    a run folder is never a source of settings): the same winner, scores and evaluation
    counts, every evaluation on Ray."""
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    # One sample (half the time of two). Its candidates tie on dev (1.228e-4, differing in the
    # sixth digit), so the clock would pick between them; a time margin no timing exceeds makes
    # the lower score win in both runs, and --retime 0 keeps the clock from choosing which
    # finalists are re-timed (a winner outside the fastest few adds runs: 13 against 11
    # evaluations under load).
    base = ["solve", "burgers", "--data-dir", str(shared_data), "--max-samples", "1",
            "--candidates", "2", "--max-rounds", "1", "--rejudge-cycles", "0",
            "--no-convergence", "--quiet", "--time-margin", "1000", "--retime", "0",
            # no reference floor, and burgers: advection's first design (the exact propagator)
            # or a design at the floor would end the run before --max-evals 1 stops it
            "--audit", "off"]
    assert main(base + ["--out", str(tmp_path / "local"), "--run-id", "l"]) == 0
    assert main(base + ["--out", str(tmp_path / "ray"), "--run-id", "r", "--executor", "ray",
                        "--max-evals", "1"]) == 0
    run = tmp_path / "ray" / "r"
    assert json.loads((run / "config.json").read_text())["executor"] == "ray"
    assert json.loads((run / "summary.json").read_text())["status"] == "budget_stop"
    assert main(["resume", str(run), "--max-evals", "50", "--executor", "ray", "--quiet"]) == 0
    local = json.loads((tmp_path / "local" / "l" / "summary.json").read_text())
    remote = json.loads((run / "summary.json").read_text())
    same = ("status", "best_id", "best_dev_score", "test_nrmse", "evaluations",
            "feedback_evaluations", "debug_iterations")
    assert {k: remote[k] for k in same} == {k: local[k] for k in same}
    assert remote["status"] == "finished" and remote["evaluations"] >= 2
    code = lambda d: (d / "best_solver.py").read_text().split("\n", 1)[1]  # noqa: E731
    assert code(run) == code(tmp_path / "local" / "l")
    assert remote["isolation"]["executor"] == "ray" and local["isolation"]["executor"] == "local"
    rows = _results(run)
    assert len(rows) == remote["evaluations"] and all(r["host"] for r in rows)
    assert not any(r["host"] for r in _results(tmp_path / "local" / "l"))


def test_bench_cell_eval_and_sandbox_through_ray(ray_cluster, shared_data, tmp_path, capsys,
                                                 monkeypatch):
    """A bench cell (CodePDE, a scripted model file written by us) end to end through Ray: its
    score is the one the local evaluator gives the same solver; `eval` and `sandbox` say where
    the solvers ran."""
    monkeypatch.setenv("PDESHARP_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / "bench"
    assert main(["bench", "--tasks", "advection", "--methods", "codepde", "--model",
                 f"scripted:{RULES}", "--samples", "1", "--out", str(out), "--data-dir",
                 str(shared_data), "--max-samples", "2", "--executor", "ray"]) == 0
    assert json.loads((out / "bench.json").read_text())["executor"] == "ray"
    (row,) = json.loads((out / "table.json").read_text())
    assert row["evaluations"] == 1 and row["score_split"] == "dev"
    cell = Path(row["runs"][0])
    (result,) = _results(cell)
    assert result["host"] and result["status"] == "ok"
    solver = cell / "candidates" / f"{_best_id(cell)}.py"
    local = Evaluator(load_task("advection"), data_dir=shared_data, max_samples=2)
    again = local.evaluate_sync(solver.read_text(), split="dev", feedback="nrmse")
    assert again.nrmse == row["nrmse"] == result["nrmse"]
    capsys.readouterr()

    out_json = tmp_path / "eval.json"
    assert main(["eval", str(solver), "--task", "advection", "--data-dir", str(shared_data),
                 "--max-samples", "2", "--no-convergence", "--executor", "ray",
                 "--json", str(out_json)]) == 0
    data = json.loads(out_json.read_text())
    assert data["nrmse"] == again.nrmse and data["host"]
    assert data["sandbox"]["executor"] == "ray"
    assert main(["sandbox", "--executor", "ray"]) == 0
    printed = capsys.readouterr().out
    assert "Ray cluster" in printed and f"isolation {data['isolation']}" in printed


def _best_id(run_dir: Path) -> str:
    db = sqlite3.connect(run_dir / "run.sqlite")
    try:
        return db.execute("SELECT candidate_id FROM evaluations WHERE counted=1").fetchone()[0]
    finally:
        db.close()
