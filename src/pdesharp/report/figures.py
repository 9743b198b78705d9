"""Figures for the HTML report, returned as ``data:`` URIs so the page fetches nothing."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path


def png_uri(path: str | Path) -> str | None:
    """A PNG file as a ``data:image/png;base64`` URI (None if it does not exist)."""
    p = Path(path)
    if not p.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()


def _svg_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _positive(values):
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def score_curves(curves: dict[str, list[tuple[int, float]]], *, title: str,
                 ylabel: str = "best dev nRMSE so far") -> str | None:
    """Best-so-far score against counted solver evaluations, one step line per curve.

    ``curves``: label -> [(evaluation number, best score so far), ...]. Log scale when every
    score is positive (nRMSE spans decades); None if there is nothing to draw."""
    drawable = {k: v for k, v in curves.items() if v}
    if not drawable:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for label, pts in drawable.items():
        xs, ys = zip(*pts)
        ax.step(xs, ys, where="post", label=label, marker="o", ms=3, lw=1.4)
    ys_all = [y for pts in drawable.values() for _, y in pts]
    if len(_positive(ys_all)) == len(ys_all):
        ax.set_yscale("log")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # evaluations are counts
    ax.set_xlabel("solver evaluations (feedback split)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    uri = _svg_uri(fig)
    plt.close(fig)
    return uri


def round_bars(rows: list[tuple[str, float]], *, title: str) -> str | None:
    """Best score per tournament round as a bar chart (log scale when all positive)."""
    rows = [(k, v) for k, v in rows if v is not None and math.isfinite(v)]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    labels, values = zip(*rows)
    ax.bar(range(len(values)), values, color="#4a7bb7")
    ax.set_xticks(range(len(values)), labels, rotation=30, ha="right", fontsize=8)
    if len(_positive(values)) == len(values):
        ax.set_yscale("log")
    ax.set_ylabel("best score")
    ax.set_title(title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    uri = _svg_uri(fig)
    plt.close(fig)
    return uri


def pareto_svg(view, *, metric: str, title: str, bar: float | None = None) -> bytes | None:
    """Score against solver time per sample for every placed solver of a
    :class:`~pdesharp.report.pareto.ParetoView`: the front as a staircase, the winner as a star,
    ``bar`` (a time objective's highest eligible score) as a dashed line. SVG bytes, or None if
    there is nothing to draw. Log axes when every value is positive (both span decades)."""
    if not view.points:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = [p.per_sample for p in view.points]
    ys = [p.score for p in view.points]
    ax.scatter(xs, ys, s=22, color="#9aa5b1", label="evaluated solver", zorder=2)
    front = sorted(view.front, key=lambda p: (p.per_sample, p.score))
    if front:
        ax.step([p.per_sample for p in front], [p.score for p in front], where="post",
                color="#d9822b", lw=1.4, zorder=3)
        ax.scatter([p.per_sample for p in front], [p.score for p in front], s=34,
                   color="#d9822b", label="Pareto front", zorder=4)
        for p in front:
            ax.annotate(p.id, (p.per_sample, p.score), textcoords="offset points",
                        xytext=(4, 4), fontsize=7)
    win = view.winner
    if win is not None:
        ax.scatter([win.per_sample], [win.score], marker="*", s=220, color="#c23030",
                   edgecolor="black", linewidth=0.6, label=f"winner {win.id}", zorder=5)
    if bar is not None and math.isfinite(bar) and bar > 0:
        ax.axhline(bar, ls="--", lw=1, color="#4a7bb7", label=f"objective: eligible up to {bar:.2g}", zorder=1)
    from matplotlib.ticker import FuncFormatter, LogLocator

    compact = FuncFormatter(lambda v, _: f"{v:.2g}")  # 0.03 and 4e-10, not 3x10^-2 crowding
    for axis, values, scale in ((ax.xaxis, xs, ax.set_xscale), (ax.yaxis, ys, ax.set_yscale)):
        if len(_positive(values)) == len(values):
            scale("log")
            axis.set_major_formatter(compact)
            axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
            axis.set_minor_formatter(compact)
    ax.set_xlabel("solver time per sample (s, evaluator's clock)")
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def svg_uri(svg: bytes | None) -> str | None:
    return None if svg is None else "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
