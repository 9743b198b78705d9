"""Figures for the HTML report, returned as ``data:`` URIs so the page fetches nothing."""

from __future__ import annotations

import base64
import io
import math


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_uri(data: bytes | None) -> str | None:
    """PNG bytes as a ``data:image/png;base64`` URI; None unless they start with the PNG
    signature (a run folder's "PNG" may be any file)."""
    if not data or not data.startswith(PNG_SIGNATURE):
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode()


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


def legend_outside(ax) -> None:
    """The legend to the right of the axes, where it cannot cover a point or a curve (the
    figures are saved with ``bbox_inches="tight"``, which makes room for it)."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def decade_limits(values) -> tuple[float, float]:
    """Log-axis limits at whole decades around positive ``values``: a value is read against
    full decades, never against an axis cut off just below the smallest one."""
    pos = _positive(values)
    lo = 10.0 ** math.floor(math.log10(min(pos)))
    hi = 10.0 ** math.ceil(math.log10(max(pos)))
    return (lo, hi * 10.0) if hi <= lo else (lo, hi)


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
    legend_outside(ax)
    uri = _svg_uri(fig)
    plt.close(fig)
    return uri


def round_figure(rows: list[tuple[str, float]], *, title: str):
    """The matplotlib figure of :func:`round_bars` (None if nothing to draw)."""
    rows = [(k, v) for k, v in rows if v is not None and math.isfinite(v)]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    labels, values = zip(*rows)
    # points joined by a line, not bars: a bar's length on a log axis depends on where the axis
    # happens to start, so bars would exaggerate or hide the differences between rounds
    ax.plot(range(len(values)), values, "-o", color="#4a7bb7", ms=5, lw=1.2)
    ax.set_xticks(range(len(values)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(values) - 0.5)
    if len(_positive(values)) == len(values):
        ax.set_yscale("log")
        ax.set_ylim(*decade_limits(values))
    ax.set_ylabel("best score")
    ax.set_title(title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return fig


def round_bars(rows: list[tuple[str, float]], *, title: str) -> str | None:
    """Best score per tournament round, one point per round (log axis over whole decades when
    every score is positive), as a data URI."""
    fig = round_figure(rows, title=title)
    if fig is None:
        return None
    uri = _svg_uri(fig)
    _plt().close(fig)
    return uri


def pareto_svg(view, *, metric: str, title: str, bar: float | None = None) -> bytes | None:
    """Score against solver time per sample for every placed solver of a
    :class:`~pdesharp.report.pareto.ParetoView`: the front as a staircase, the winner as a star,
    ``bar`` (a time objective's highest eligible score) as a dashed line. SVG bytes, or None if
    there is nothing to draw. Log axes when every value is positive (both span decades)."""
    fig = pareto_figure(view, metric=metric, title=title, bar=bar)
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def pareto_figure(view, *, metric: str, title: str, bar: float | None = None):
    """The matplotlib figure of :func:`pareto_svg` (None if nothing to draw); the legend sits
    outside the axes, so it never covers a solver."""
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
    legend_outside(ax)
    return fig


def svg_uri(svg: bytes | None) -> str | None:
    return None if svg is None else "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
