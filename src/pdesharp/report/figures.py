"""Figures for the HTML report, returned as ``data:`` URIs so the page fetches nothing.

Drawn by :mod:`pdesharp.report.svgplot` (pure Python: no matplotlib import per report). Values
come from run folders: a non-finite one is not drawn, and an axis is logarithmic only when every
value on it is positive (scores and times span decades), linear otherwise."""

from __future__ import annotations

import base64
import math

from pdesharp.report.svgplot import BLUE, CYCLE, Plot, Scale, decade_limits, linear, log_scale

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GREY, ORANGE, RED = "#9aa5b1", "#d9822b", "#c23030"

__all__ = ["decade_limits", "pareto_svg", "png_uri", "round_bars", "round_svg",
           "score_curves", "svg_uri"]


def png_uri(data: bytes | None) -> str | None:
    """PNG bytes as a ``data:image/png;base64`` URI; None unless they start with the PNG
    signature (a run folder's "PNG" may be any file)."""
    if not data or not data.startswith(PNG_SIGNATURE):
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode()


def svg_uri(svg: bytes | None) -> str | None:
    return None if svg is None else "data:image/svg+xml;base64," + base64.b64encode(svg).decode()


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def _scale(values) -> Scale:
    return log_scale(values) if all(v > 0 for v in values) else linear(values)


def score_curves(curves: dict[str, list[tuple[int, float]]], *, title: str,
                 ylabel: str = "best dev nRMSE so far") -> str | None:
    """Best-so-far score against counted solver evaluations, one step line per curve.

    ``curves``: label -> [(evaluation number, best score so far), ...]. None if there is
    nothing to draw."""
    drawable = {label: sorted((x, y) for x, y in pts if _finite(x) and _finite(y))
                for label, pts in curves.items()}
    drawable = {label: pts for label, pts in drawable.items() if pts}
    if not drawable:
        return None
    xs = [x for pts in drawable.values() for x, _ in pts]
    ys = [y for pts in drawable.values() for _, y in pts]
    plot = Plot(linear(xs), _scale(ys), title=title, ylabel=ylabel, integer_x=True,
                xlabel="solver evaluations (feedback split)")  # evaluations are counts
    for i, (label, pts) in enumerate(drawable.items()):
        plot.line(*zip(*pts), color=CYCLE[i % len(CYCLE)], step=True, marker=2.5, label=label)
    return svg_uri(plot.svg())


def round_svg(rows: list[tuple[str, float]], *, title: str) -> bytes | None:
    """Best score per tournament round, one point per round joined by a line (log axis over
    whole decades when every score is positive); SVG bytes, None if nothing to draw."""
    rows = [(str(k), v) for k, v in rows if _finite(v)]
    if not rows:
        return None
    values = [v for _, v in rows]
    y = Scale(*decade_limits(values), log=True) if all(v > 0 for v in values) else linear(values)
    every = math.ceil(len(rows) / 40)  # at most 40 round names under a 520 px frame
    names = [(i, name if i % every == 0 else "") for i, (name, _) in enumerate(rows)]
    # points joined by a line, not bars: a bar's length on a log axis depends on where the axis
    # happens to start, so bars would exaggerate or hide the differences between rounds
    plot = Plot(Scale(-0.5, len(rows) - 0.5), y, title=title, xlabel="", ylabel="best score",
                height=200, xticks=names, xrotate=30, grid_x=False, pad=0)
    plot.line(range(len(rows)), values, color=BLUE, width=1.2, marker=3.0)
    return plot.svg()


def round_bars(rows: list[tuple[str, float]], *, title: str) -> str | None:
    """:func:`round_svg` as a data URI (the name is older than the chart: it has no bars)."""
    return svg_uri(round_svg(rows, title=title))


def pareto_svg(view, *, metric: str, title: str, bar: float | None = None) -> bytes | None:
    """Score against solver time per sample for every placed solver of a
    :class:`~pdesharp.report.pareto.ParetoView`: the front as a staircase with each point's id,
    the winner as a star, ``bar`` (a time objective's highest eligible score) as a dashed line,
    the legend outside the frame on the right. SVG bytes, or None if there is nothing to draw."""
    pts = [p for p in view.points if _finite(p.per_sample) and _finite(p.score)]
    if not pts:
        return None
    bar = bar if _finite(bar) and bar > 0 else None
    xs, ys = [p.per_sample for p in pts], [p.score for p in pts]
    plot = Plot(_scale(xs), _scale(ys + ([bar] if bar else [])), title=title, ylabel=metric,
                xlabel="solver time per sample (s, evaluator's clock)", width=480, height=320,
                minor_labels=True)
    plot.points(xs, ys, color=GREY, r=3.0, label="evaluated solver")
    front = sorted((p for p in pts if p.front), key=lambda p: (p.per_sample, p.score))
    if front:
        fx, fy = [p.per_sample for p in front], [p.score for p in front]
        plot.line(fx, fy, color=ORANGE, step=True, marker=4.0, label="Pareto front")
        for p in front:
            plot.note(p.per_sample, p.score, p.id)
    win = next((p for p in pts if p.winner), None)
    if win is not None:
        plot.points([win.per_sample], [win.score], color=RED, r=9.0, shape="star",
                    label=f"winner {win.id}")
    if bar:
        plot.hline(bar, color=BLUE, label=f"objective: eligible up to {bar:.2g}")
    return plot.svg()
