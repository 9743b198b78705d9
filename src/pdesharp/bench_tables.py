"""The comparison table of a bench folder: per (task, method), numbers read back from the
cells' run stores (read-only) and ``summary.json`` files; written as table.md / .csv / .json.
Split from :mod:`pdesharp.bench` (which runs the cells)."""

from __future__ import annotations

import csv
import io
import json
import math
import sqlite3
import statistics
from pathlib import Path

from pdesharp.baselines import short_label
from pdesharp.bench_fair import (BEST_OF_FILE, reference_error, stored_record,
                                 winner_vs_converged)
from pdesharp.store import SEARCH_ROWS, RunStore
from pdesharp.untrusted import path_component, read_text_inside


def cell_dir(out: str | Path, task: str, method: str, repeat: int) -> Path:
    """A bench cell's run folder; task and method are names read from bench.json (untrusted
    when a bench folder is handed over), so each must be one path component."""
    return Path(out) / path_component(task, "task") / path_component(f"{method}-r{repeat}",
                                                                      "method")


SOLVER_ORIGINS = ("genesis", "patch", "baseline")  # solvers written from scratch or by patch


def cell_stats(run_dir: Path) -> dict:
    """One finished cell's numbers: counts from its store (read-only), scores from summary.json."""
    # a bench folder may be someone else's (pdesharp report BENCH): bounded, no link followed
    summary = json.loads(read_text_inside(run_dir, "summary.json") or "{}")
    if not isinstance(summary, dict):
        raise ValueError(f"{run_dir}/summary.json is not a JSON object")
    split = summary.get("feedback_split", "dev")
    db = sqlite3.connect(f"file:{Path(run_dir) / RunStore.DB_NAME}?mode=ro", uri=True)
    try:
        evals = db.execute(f"SELECT COUNT(*) FROM evaluations WHERE {SEARCH_ROWS} AND split=?",
                           (split,)).fetchone()[0]
        debug = db.execute("SELECT COUNT(*) FROM debug_iterations").fetchone()[0]
        calls, t_in, t_out, cost = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
            " COALESCE(SUM(cost_usd), 0) FROM model_calls WHERE cached=0 AND error=''").fetchone()
        n_solvers = db.execute(
            "SELECT COUNT(*) FROM candidates WHERE origin IN (%s)" % ",".join("?" * len(SOLVER_ORIGINS)),
            SOLVER_ORIGINS).fetchone()[0]
    finally:
        db.close()
    return {
        "run": str(run_dir),
        "status": summary.get("status"),
        "test_nrmse": summary.get("test_nrmse"),
        "dev_score": summary.get("best_dev_score"),
        "seconds_per_sample": summary.get("best_seconds_per_sample"),
        "evaluations": evals,
        "debug_iterations": debug,
        "solvers": n_solvers,
        "model_calls": calls,
        "tokens_in": t_in,
        "tokens_out": t_out,
        "tokens_in_reported": summary.get("tokens_in_reported", True),
        "cost_usd": round(cost, 6),
        "wall_seconds": summary.get("wall_seconds"),
        "label": summary.get("method_short"),
        "dev_vs_converged": winner_vs_converged(Path(run_dir), summary),
    }


def _mean_spread(values: list[float]) -> tuple[float | None, float | None]:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None, None
    return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)


def collect(out: str | Path, tasks: list[str], methods: list[str], repeats: int) -> list[dict]:
    """One row per (task, method): means (and spread of the score) over finished repeats."""
    rows = []
    for task in tasks:
        for method in methods:
            cells = [cell_stats(d) for k in range(repeats)
                     if ((d := cell_dir(out, task, method, k)) / "summary.json").is_file()]
            if not cells:
                continue
            has_test = all(c["test_nrmse"] is not None for c in cells)
            scores = [c["test_nrmse"] if has_test else c["dev_score"] for c in cells]
            score, spread = _mean_spread(scores)
            mean = lambda key: statistics.fmean(c[key] for c in cells)  # noqa: E731
            solvers = sum(c["solvers"] for c in cells)
            rows.append({
                "task": task, "method": method,
                "label": cells[0]["label"] or short_label(method),
                "repeats": len(cells),
                "score_split": "test" if has_test else "dev",
                "nrmse": score, "nrmse_spread": spread, "nrmse_per_repeat": scores,
                "dev_score": _mean_spread([c["dev_score"] for c in cells])[0],
                "test_nrmse": (_mean_spread([c["test_nrmse"] for c in cells])[0]
                               if has_test else None),
                "dev_vs_converged": (_mean_spread([c["dev_vs_converged"] for c in cells])[0]
                                     if all(c["dev_vs_converged"] is not None for c in cells)
                                     else None),
                "reference_error": reference_error(out, task),
                "seconds_per_sample": _mean_spread([c["seconds_per_sample"] for c in cells])[0],
                "evaluations": mean("evaluations"),
                "debug_iterations": mean("debug_iterations"),
                "debug_per_solver": (sum(c["debug_iterations"] for c in cells) / solvers
                                     if solvers else None),
                "model_calls": mean("model_calls"),
                "tokens_in": mean("tokens_in") if all(c["tokens_in_reported"] for c in cells)
                else None,
                "tokens_out": mean("tokens_out"),
                "cost_usd": mean("cost_usd"),
                "wall_seconds": statistics.fmean(c["wall_seconds"] or 0.0 for c in cells),
                "runs": [c["run"] for c in cells],
                "statuses": [c["status"] for c in cells],
            })
            if method == "codepde":
                rows += _best_of_rows(out, task, repeats)
    return rows


def _best_of_rows(out: str | Path, task: str, repeats: int) -> list[dict]:
    """The "CodePDE best-of-N" row: CodePDE's best of its first N evaluations, N = PDE-SHARP's
    (:func:`pdesharp.bench_fair.equal_budget` wrote one file per repeat)."""
    picks = []
    for k in range(repeats):
        pick = stored_record(cell_dir(out, task, "codepde", k), BEST_OF_FILE)
        if pick is not None:
            picks.append(pick)
    if not picks:
        return []
    ns = sorted({int(p.get("n", 0)) for p in picks})
    n_text = "/".join(map(str, ns))
    has_test = all(p.get("test_nrmse") is not None for p in picks)
    dev = [p.get("dev_score") for p in picks]
    score, spread = _mean_spread([p.get("test_nrmse") for p in picks] if has_test else dev)
    conv = [p.get("dev_vs_converged") for p in picks]
    return [{
        "task": task, "method": f"codepde@{n_text}", "label": f"CodePDE best-of-{n_text}",
        "repeats": len(picks), "score_split": "test" if has_test else "dev",
        "nrmse": score, "nrmse_spread": spread,
        "dev_score": _mean_spread(dev)[0],
        "test_nrmse": _mean_spread([p.get("test_nrmse") for p in picks])[0] if has_test else None,
        "dev_vs_converged": _mean_spread(conv)[0] if all(c is not None for c in conv) else None,
        "reference_error": reference_error(out, task),
        "seconds_per_sample": _mean_spread([p.get("seconds_per_sample") for p in picks])[0],
        "evaluations": statistics.fmean(int(p.get("evaluations", 0)) for p in picks),
        "debug_iterations": None, "debug_per_solver": None, "model_calls": None,
        "tokens_in": None, "tokens_out": None, "cost_usd": None, "wall_seconds": None,
        "runs": [], "statuses": ["best-of-N" for _ in picks],
        "note": "the CodePDE cell's first N counted dev evaluations, N = PDE-SHARP's; its "
                "calls and tokens are the CodePDE row's",
    }]


COLUMNS = [
    ("task", "task"), ("label", "method"), ("dev_score", "dev nRMSE"),
    ("test_nrmse", "test nRMSE"), ("dev_vs_converged", "dev vs converged"),
    ("reference_error", "reference error"), ("seconds_per_sample", "s/sample"),
    ("evaluations", "solver evals"), ("debug_per_solver", "debug iters / solver"),
    ("model_calls", "model calls"), ("tokens_in", "tokens in"), ("tokens_out", "tokens out"),
    ("cost_usd", "cost USD"), ("wall_seconds", "wall s"), ("repeats", "repeats"),
]


def fmt(key: str, row: dict) -> str:
    v = row.get(key)
    if key == "nrmse":
        if v is None:
            return "failed"
        spread = f" ± {row['nrmse_spread']:.1e}" if row["repeats"] > 1 else ""
        return f"{v:.3e}{spread} ({row['score_split']})"
    if v is None:
        return "failed" if key == "dev_score" else "n/a"  # no winner: the cell failed
    if key in ("dev_score", "dev_vs_converged", "reference_error"):
        return f"{v:.3e}"
    if key == "test_nrmse":
        spread = f" ± {row['nrmse_spread']:.1e}" if row["repeats"] > 1 and \
            row.get("score_split") == "test" and row.get("nrmse_spread") is not None else ""
        return f"{v:.3e}{spread}"
    if key == "seconds_per_sample":
        return f"{v:.3g}"
    if key in ("evaluations", "model_calls", "tokens_in", "tokens_out", "debug_iterations"):
        return f"{v:.1f}" if row["repeats"] > 1 and v != int(v) else f"{int(round(v))}"
    if key == "debug_per_solver":
        return f"{v:.2f}"
    if key == "cost_usd":
        return f"{v:.4f}"
    if key == "wall_seconds":
        return f"{v:.1f}"
    return str(v)


def to_markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(h for _, h in COLUMNS) + " |"
    sep = "|" + "|".join("---" for _ in COLUMNS) + "|"
    lines = [head, sep] + ["| " + " | ".join(fmt(k, r) for k, _ in COLUMNS) + " |" for r in rows]
    notes = ["", "dev nRMSE: the winner's score on the dev split, against the reference (mean "
             "over repeats). test nRMSE: the winner on the held-out test split (mean ± sample "
             "standard deviation over repeats; 'n/a' without test data). dev vs converged: the "
             "winner's dev nRMSE against the reference audit's converged float64 solution of "
             "the PDE, i.e. how well it solves the PDE; reference error: the reference's own "
             "distance from that solution (below it, a lower dev score means agreeing with the "
             "reference's errors). CodePDE best-of-N: CodePDE's best of its first N counted "
             "evaluations, N = PDE-SHARP's. s/sample: the winner's solver time "
             "per sample on dev, as the evaluator measured it (mean over repeats). Solver evals: "
             "counted executions on the feedback split, debugging and re-timing runs included. "
             "'n/a' tokens in: the OptiLLM proxy reports completion tokens only."]
    return "\n".join(lines + notes) + "\n"


def to_csv(rows: list[dict]) -> str:
    keys = ["task", "method", "label", "repeats", "score_split", "nrmse", "nrmse_spread",
            "dev_score", "test_nrmse", "dev_vs_converged", "reference_error",
            "seconds_per_sample", "evaluations", "debug_iterations", "debug_per_solver", "model_calls",
            "tokens_in", "tokens_out", "cost_usd", "wall_seconds"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in keys})
    return buf.getvalue()


def write_tables(out: str | Path, rows: list[dict]) -> None:
    out = Path(out)
    (out / "table.md").write_text(to_markdown(rows))
    (out / "table.csv").write_text(to_csv(rows))
    (out / "table.json").write_text(json.dumps(rows, indent=2))


