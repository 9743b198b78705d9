"""The side-by-side bench's output (bench/side_by_side.py): the table it prints, the plot of the
fronts, and each run folder's library front (the report's section)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from sbs_cases import Case
from sbs_pairing import front


def setting_text(p: dict) -> str:
    c = dict(p["config"])
    grid = f", grid x{p['refine']}" if p.get("refine", 1) != 1 else ""
    if "substeps" in c:
        prec = "float64" if c.get("x64") else "float32"
        order = f", ETDRK{c['order']}" if "order" in c else ""
        return f"{c['substeps']} substeps/frame{order}, {prec}{grid}"
    return f"{c.get('solver')} tol {c.get('tol', c.get('dt'))}{grid}"


def export_front(case: Case, run: Path, points: list[dict], winner: dict) -> None:
    """The library's points and the winner's into the run folder; report.md gets the section
    (pdesharp.report.library_front)."""
    from pdesharp.report.library_front import FILE, update_report

    pts = [{"setting": setting_text(p), "nrmse": max(p["nrmse"], 1e-300), "warm": p["warm"],
            "cold": p["cold"]} for p in points
           if not p.get("failed") and math.isfinite(p["nrmse"]) and p["warm"] > 0]
    if not pts or not run.is_dir():
        return
    split = {k: winner[k] for k in ("import", "first", "batch", "evaluator") if winner.get(k)}
    (run / FILE).write_text(json.dumps({"library": case.library, "points": pts, "winner": {
        "setting": "best_solver.py", **{k: winner[k] for k in ("nrmse", "warm", "cold")}},
        **({"winner_split": split} if {"import", "first", "batch"} <= set(split) else {})},
        indent=1))
    update_report(run)


def reference_error(meta: dict) -> float:
    """The reference's own error as its reference.json states it (sbs_data.py: per sample the
    time bound over 15 plus the spatial estimate, the mean over samples: what dev.hdf5 states
    and a run takes as its floor); 0 when it states none."""
    return float(meta.get("own_error") or 0.0)


def table(results: list[dict]) -> str:
    head = ("| case | objective | pdesharp nRMSE | warm s/sample | cold s (batch) | library"
            " warm at that nRMSE | library cold | warm ratio (in turns) | warm ratio (processes)"
            " | warm CPU ratio | cold ratio | note |\n" + "|---" * 12 + "|")
    lines = [head]
    for r in results:
        for row in r["rows"]:
            if row.get("failed"):
                lines.append(f"| {r['case']} | {row['objective']} | failed | | | | | | | | | |")
                continue
            note = "" if row["lib_reaches"] else \
                (f"{r['library']} reaches only {row['lib_best_nrmse']:.1e} "
                 f"({row['lib_best_nrmse'] / row['nrmse']:.0f}x pdesharp's error)")
            if row.get("evaluator_per_sample"):
                note += f"; evaluator {row['evaluator_per_sample']:.2e} s/sample"
            if row.get("same_as"):
                note += f"; the {row['same_as']} row's solver (paired once)"
            own = reference_error(r.get("reference", {}))
            if own and row["nrmse"] < own:  # compared there (run_case)
                note += f"; below the reference's own error ({own:.1e}): compared at it"
            elif own and row["nrmse"] < 3 * own:  # at the reference's floor: below it is noise
                note += f"; within 3x of the reference's own error (~{own:.1e})"
            lines.append(
                f"| {r['case']} | {row['objective']} | {row['nrmse']:.2e} | {row['warm']:.2e} |"
                f" {row['cold']:.2f} | {row['lib_warm']:.2e} | {row['lib_cold']:.2f} |"
                f" {row['ratio_warm']:.3g} | {row.get('ratio_warm_procs', math.nan):.3g} |"
                f" {row.get('ratio_warm_cpu', math.nan):.3g} |"
                f" {row['ratio_cold']:.3g} | {note} |")
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(results)
    cols = min(n, 4)
    rows = -(-n // cols)
    fig, axs = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax, r in zip(axs.flat, results):
        for key, style in (("warm", "-o"), ("cold", "--s")):
            fr = front(r["points"], key)
            pts = [p for p in r["points"] if not p.get("failed") and math.isfinite(p["nrmse"])]
            ax.loglog([p[key] for p in pts], [p["nrmse"] for p in pts], ".", color="0.7")
            ax.loglog([p[key] for p in fr], [p["nrmse"] for p in fr], style, ms=3,
                      label=f"{r['library']} {key}")
        for row in r["rows"]:
            if row.get("failed"):
                continue
            m = "*" if row["objective"] == "accuracy" else "D"
            ax.loglog([row["warm"]], [row["nrmse"]], m, color="C3", ms=9,
                      label=f"pdesharp {row['objective'].split(':')[0]} warm")
            ax.loglog([row["cold"]], [row["nrmse"]], m, color="C2", ms=9, mfc="none",
                      label=f"pdesharp {row['objective'].split(':')[0]} cold")
        ax.set_title(r["case"], fontsize=9)
        ax.set_xlabel("seconds (warm: per sample; cold: batch)", fontsize=7)
        ax.set_ylabel("nRMSE vs converged", fontsize=7)
        ax.tick_params(labelsize=7)
    axs.flat[0].legend(fontsize=6)
    for ax in list(axs.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
