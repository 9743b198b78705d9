"""A small SVG writer for the report's figures: one frame with linear or log axes, a light grid,
lines, markers, notes and a legend to the right of the frame. Pure Python, so drawing a report
imports no matplotlib (1.5-3 s of CPU per run before).

Every text drawn (solver ids, titles, task names) comes from run folders and task files: each
goes through :func:`pdesharp.untrusted.xml_text`. The writer emits no script, no link and no
reference to anything outside the file; the only URI in it is the SVG namespace's name.

    plot = Plot(linear([0, 9]), log_scale([1e-4, 3e-2]), title="t", xlabel="x", ylabel="y")
    plot.line([0, 4, 9], [3e-2, 1e-3, 1e-4], color=BLUE, step=True, marker=2.5, label="run")
    svg_bytes = plot.svg()
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdesharp.untrusted import xml_text

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
SIZE = 10  # px of tick labels and legend text; notes are smaller, the title larger
CHAR = 0.62  # a glyph's mean width in em: margins and the legend are sized from text length
LABEL = 48  # characters of an untrusted label shown (ids can be long)
BLUE = "#4a7bb7"
CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
         "#7f7f7f", "#bcbd22", "#17becf")


def width_of(text: str, size: float = SIZE) -> float:
    return CHAR * size * min(len(text), LABEL)


def compact(v: float) -> str:
    return f"{v:.2g}"  # 0.03 and 4e-10, not a crowded 3x10^-2


def decade_limits(values) -> tuple[float, float]:
    """Log-axis limits at whole decades around the positive finite ``values``: a value is read
    against full decades, never against an axis cut off just below the smallest one. Exponents
    are kept within ±300 (10**309 overflows; a value beyond is drawn outside the frame)."""
    pos = [v for v in values if math.isfinite(v) and v > 0]
    lo = max(math.floor(math.log10(min(pos))), -300)
    hi = min(math.ceil(math.log10(max(pos))), 300)
    return 10.0 ** lo, 10.0 ** (hi + 1 if hi <= lo else hi)


@dataclass
class Scale:
    """Axis limits; ``log`` for a base-10 axis (then ``0 < lo < hi``)."""

    lo: float
    hi: float
    log: bool = False

    def frac(self, v: float) -> float:
        """Where ``v`` sits between the limits, 0 to 1."""
        if self.log:
            a, b = math.log10(self.lo), math.log10(self.hi)
            return (math.log10(v) - a) / (b - a)
        return (v - self.lo) / (self.hi - self.lo)

    def ticks(self, *, integer: bool = False, minor_labels: bool = False):
        """``(value, label, major)`` of every tick within the limits (label "" for none)."""
        return _log_ticks(self, minor_labels) if self.log else _linear_ticks(self, integer)


def log_scale(values) -> Scale:
    return Scale(*decade_limits(values), log=True)


def linear(values, pad: float = 0.05) -> Scale:
    """Limits around finite ``values`` with ``pad`` of their span on each side."""
    lo, hi = min(values), max(values)
    span = hi - lo if hi > lo else max(abs(lo) * 0.2, 1.0)
    if not math.isfinite(span):  # e.g. -1e308 to 1e308: no padding
        return Scale(lo, hi)
    return Scale(lo - pad * span, hi + pad * span) if hi > lo else Scale(lo - span, hi + span)


def _linear_ticks(s: Scale, integer: bool):
    raw = (s.hi - s.lo) / 5
    if not (math.isfinite(raw) and raw > 0):
        return [(s.lo, compact(s.lo), True), (s.hi, compact(s.hi), True)]
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))
    if integer:  # counts: whole steps of 1, 2, 5, 10, ...
        step = 1.0 if raw <= 1 else next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    # enough significant digits to tell neighbouring ticks apart at any magnitude
    top = max(abs(s.lo), abs(s.hi))
    digits = min(15, max(1, math.floor(math.log10(top)) - math.floor(math.log10(step)) + 2))
    k, out = math.ceil(s.lo / step), []
    while k * step <= s.hi and len(out) < 50:
        v = 0.0 if abs(k * step) < 1e-9 * step else k * step
        out.append((v, str(int(v)) if integer else f"{v:.{digits}g}", True))
        k += 1
    return out


def _log_ticks(s: Scale, minor_labels: bool):
    a, b = math.log10(s.lo), math.log10(s.hi)
    k0, k1 = math.ceil(a - 1e-9), math.floor(b + 1e-9)
    every = max(1, math.ceil((k1 - k0 + 1) / 8))  # at most 8 labelled decades
    # the 2s and 5s labelled when asked and up to 3 decades (more would crowd), and always
    # within a single decade (else its only labels would be the two limits)
    minor_labels = (minor_labels and b - a <= 3) or b - a <= 1 + 1e-9
    out = []
    for k in range(k0 - 1, k1 + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** k
            if not a - 1e-9 <= math.log10(v) <= b + 1e-9:
                continue
            label = ((k - k0) % every == 0) if m == 1 else minor_labels
            out.append((v, compact(v) if label else "", m == 1))
    return out


def _num(v: float) -> str:
    return f"{v:.1f}"


def circle(x, y, r, color, edge=None) -> str:
    stroke = f' stroke="{edge}" stroke-width="0.6"' if edge else ""
    return f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{r}" fill="{color}"{stroke}/>'


def star(x, y, r, color, edge="black") -> str:
    """A five-pointed star of outer radius ``r`` centred on (x, y)."""
    pts = []
    for i in range(10):
        rad, ang = (r if i % 2 == 0 else 0.42 * r), math.pi * (0.5 + i / 5)
        pts.append(f"{_num(x + rad * math.cos(ang))},{_num(y - rad * math.sin(ang))}")
    return (f'<polygon points="{" ".join(pts)}" fill="{color}" stroke="{edge}" '
            'stroke-width="0.7"/>')


def path(pts, color, width=1.4, dash=None, step=False) -> str:
    """A line through pixel points; ``step``: horizontal then vertical ("post" steps)."""
    d = f"M{_num(pts[0][0])} {_num(pts[0][1])}"
    for x, y in pts[1:]:
        d += f" H{_num(x)} V{_num(y)}" if step else f" L{_num(x)} {_num(y)}"
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}"{dashes}/>'


def text(x, y, words, *, size=SIZE, anchor="start", rotate=0, cls="", limit=LABEL) -> str:
    """``words`` (untrusted) on one line, cut to ``limit`` characters, escaped, at (x, y)."""
    turn = f' transform="rotate({rotate} {_num(x)} {_num(y)})"' if rotate else ""
    kind = f' class="{cls}"' if cls else ""
    return (f'<text x="{_num(x)}" y="{_num(y)}" font-size="{size}" text-anchor="{anchor}"'
            f'{turn}{kind}>{xml_text(words, limit)}</text>')


class Plot:
    """A frame of ``width`` x ``height`` px with scales ``x`` and ``y``, margins sized for its
    tick labels, axis labels and title, and a legend column to the right of the frame (outside
    it, so the legend never covers a point). ``xticks``: (value, label) pairs instead of the
    scale's ticks (round names), drawn rotated by ``xrotate`` degrees. The limits sit ``pad`` px
    inside the frame, so a point at a limit is not cut by the frame's edge."""

    def __init__(self, x: Scale, y: Scale, *, title: str, xlabel: str, ylabel: str,
                 width: int = 520, height: int = 280, integer_x: bool = False,
                 minor_labels: bool = False, xticks=None, xrotate: int = 0,
                 grid_x: bool = True, pad: float = 8.0):
        self.x, self.y, self.w, self.h, self.pad = x, y, width, height, pad
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.yticks = y.ticks(minor_labels=minor_labels)
        self.xticks = ([(v, lab, True) for v, lab in xticks] if xticks is not None
                       else x.ticks(integer=integer_x, minor_labels=minor_labels))
        self.xrotate, self.grid_x = xrotate, grid_x
        widest = max((width_of(lab) for _, lab, _ in self.yticks), default=0)
        self.left = 26 + widest + 6
        self.top = 34
        longest = max((width_of(str(lab)) for _, lab, _ in self.xticks), default=0)
        drop = longest * math.sin(math.radians(abs(xrotate))) if xrotate else 0
        self.bottom = 16 + drop + SIZE + 22
        self.body: list[str] = []
        self.legend: list[tuple[str, str]] = []  # (label, swatch markup centred at 0, 0)

    def px(self, x: float, y: float) -> tuple[float, float]:
        """The pixel position of data point (x, y)."""
        p = self.pad
        return (self.left + p + self.x.frac(x) * (self.w - 2 * p),
                self.top + p + (1 - self.y.frac(y)) * (self.h - 2 * p))

    def line(self, xs, ys, *, color, width=1.4, step=False, dash=None, marker=0.0,
             label=None) -> None:
        pts = [self.px(x, y) for x, y in zip(xs, ys)]
        self.body.append(path(pts, color, width, dash, step))
        self.body += [circle(x, y, marker, color) for x, y in pts] if marker else []
        if label is not None:
            swatch = path([(-10, 0), (10, 0)], color, width, dash)
            self._key(label, swatch + (circle(0, 0, marker, color) if marker else ""))

    def points(self, xs, ys, *, color, r=3.0, shape="circle", label=None) -> None:
        draw = star if shape == "star" else circle
        edge = {"edge": "black"} if shape == "star" else {}
        self.body += [draw(*self.px(x, y), r, color, **edge) for x, y in zip(xs, ys)]
        if label is not None:
            self._key(label, draw(0, 0, min(r, 7.0), color, **edge))

    def hline(self, y, *, color, dash="5 3", label=None) -> None:
        """A horizontal reference line across the frame, under every point."""
        py = self.px(self.x.lo, y)[1]
        self.body.insert(0, path([(self.left, py), (self.left + self.w, py)], color, 1, dash))
        if label is not None:
            self._key(label, path([(-10, 0), (10, 0)], color, 1, dash))

    def note(self, x, y, words) -> None:
        """A small label beside point (x, y); to its left in the frame's right quarter, so it
        stays inside the frame, clear of the legend."""
        px, py = self.px(x, y)
        right = px > self.left + 0.75 * self.w
        self.body.append(text(px - 5 if right else px + 5, py - 5, words, size=8,
                              anchor="end" if right else "start", cls="note"))

    def _key(self, label: str, swatch: str) -> None:
        self.legend.append((str(label), swatch))

    def svg(self) -> bytes:
        x0, y0, x1, y1 = self.left, self.top, self.left + self.w, self.top + self.h
        width, height = x1 + 16, y1 + self.bottom
        parts = []
        for v, lab, major in self.yticks:
            py = self.px(self.x.lo, v)[1]
            parts.append(path([(x0, py), (x1, py)], "#d0d0d0" if major else "#ececec", 0.6))
            if lab:
                parts.append(text(x0 - 5, py + 3.5, lab, anchor="end", cls="ytick"))
        for v, lab, major in self.xticks:
            px = self.px(v, self.y.lo)[0]
            if self.grid_x:
                parts.append(path([(px, y0), (px, y1)], "#d0d0d0" if major else "#ececec", 0.6))
            parts.append(path([(px, y1), (px, y1 + 4)], "#444", 0.8))
            if lab and self.xrotate:
                parts.append(text(px + 3, y1 + 14, lab, anchor="end", rotate=-self.xrotate,
                                  cls="xtick"))
            elif lab:
                parts.append(text(px, y1 + 15, lab, anchor="middle", cls="xtick"))
        parts += self.body
        parts.append(f'<rect class="frame" x="{_num(x0)}" y="{y0}" width="{self.w}" '
                     f'height="{self.h}" fill="none" stroke="#444" stroke-width="0.8"/>')
        parts.append(text((x0 + x1) / 2, y0 - 12, self.title, size=12, anchor="middle",
                          cls="title", limit=2 * LABEL))
        parts.append(text((x0 + x1) / 2, y1 + self.bottom - 8, self.xlabel, anchor="middle",
                          cls="xlabel", limit=2 * LABEL))
        parts.append(text(14, (y0 + y1) / 2, self.ylabel, anchor="middle", rotate=-90,
                          cls="ylabel", limit=2 * LABEL))
        if self.legend:
            box, extent = self._legend(x1 + 14, y0)
            parts.append(box)
            width, height = max(width, extent[0] + 8), max(height, extent[1] + 8)
        head = ('<?xml version="1.0" encoding="utf-8"?>\n'
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
                f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
                f'font-family="{FONT}">\n'
                f'<rect width="100%" height="100%" fill="white"/>\n')
        return (head + "\n".join(parts) + "\n</svg>\n").encode("utf-8")

    def _legend(self, lx: float, ly: float) -> tuple[str, tuple[float, float]]:
        """The legend's group (a framed box, one row per key) and its lower right corner."""
        bw = 40 + max(width_of(label) for label, _ in self.legend)
        bh = 8 + 18 * len(self.legend)
        rows = [(f'<rect x="{_num(lx)}" y="{_num(ly)}" width="{_num(bw)}" height="{bh}" '
                 'fill="white" stroke="#bbb" stroke-width="0.8"/>')]
        for i, (label, swatch) in enumerate(self.legend):
            cy = ly + 13 + 18 * i
            rows.append(f'<g transform="translate({_num(lx + 18)} {_num(cy)})">{swatch}</g>')
            rows.append(text(lx + 34, cy + 3.5, label))
        return '<g class="legend">' + "".join(rows) + "</g>", (lx + bw, ly + bh)
