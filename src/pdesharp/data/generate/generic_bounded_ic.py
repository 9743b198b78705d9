"""Initial data between walls that satisfy the boundary conditions *and* stay in their range.

The random trigonometric polynomial F of :mod:`.generic_ic` (scaled into the task's
``generator.ranges``, or to max |F| = 1) does not satisfy the conditions at the walls. It is
blended, near each wall x_s that carries a condition ``a*u + b*du/dx = g(t0)``, into a profile
ℓ_s with the right value and slope::

    u0 = (1 - β_lo - β_hi) F + β_lo ℓ_lo + β_hi ℓ_hi,
    β_lo(ξ) = (1 - ξ)^K (1 + K ξ),   β_hi(ξ) = ξ^K (1 + K (1 - ξ)),   ξ = (x - lo)/L,
    ℓ_s(x)  = v_s + d_s q_s(x),      q_lo = (x - lo)(1 - ξ)^J,   q_hi = (x - hi) ξ^J.

β_s is 1 with zero slope at its wall and vanishes with its first K-1 derivatives at the other
one, and q_s is 0 with unit slope at its wall, so u0(x_s) = v_s and u0'(x_s) = d_s whatever F
is; a side without a condition (an outflow side) keeps F. Everything is a polynomial or a
trigonometric polynomial: analytic, so the Chebyshev collocation resolves it to round-off.

The wall value v_s and slope d_s satisfy the condition: a Dirichlet condition fixes v_s = g/a
(d_s = 0); otherwise v_s is F's own value at the wall and d_s = (g - a v_s)/b. Because the three
weights are non-negative and sum to at most 1, u0 is a convex combination of F and the ℓ_s, so
u0 stays in a range [lo, hi] whenever F and each ℓ_s do: the Dirichlet value must lie in the
range (else the request contradicts itself and the error says so), and when F's wall value would
need a slope that carries ℓ_s out of the range, the wall value closest to it that does not is
taken instead (an error if there is none).

On a rectangle (:func:`meet_walls`) the blend is applied along x, then along y; nonzero
Dirichlet data on all four walls are lifted by their transfinite (Coons) interpolant instead.
"""

from __future__ import annotations

import numpy as np

K_BLEND = 6  # β: degree K + 1; β_lo(1/2) = 1/16, so the middle of the domain is mostly F
J_SLOPE = 6  # q: |q| <= L (1/(J+1)) (J/(J+1))^J ≈ 0.057 L
_RANGE_SLACK = 1e-12


class IncompatibleRange(ValueError):
    """No initial data in the requested range can satisfy a boundary condition."""


def _blend(xi: np.ndarray, side: int) -> np.ndarray:
    k = K_BLEND
    return (1 - xi) ** k * (1 + k * xi) if side == 0 else xi ** k * (1 + k * (1 - xi))


def _slope_profile(x: np.ndarray, xi: np.ndarray, lo: float, hi: float, side: int) -> np.ndarray:
    return (x - lo) * (1 - xi) ** J_SLOPE if side == 0 else (x - hi) * xi ** J_SLOPE


def _q_extent(length: float) -> float:
    """max |q_s| over the interval."""
    j = J_SLOPE
    return length * (1.0 / (j + 1)) * (j / (j + 1)) ** j


def wall_value_and_slope(a: float, b: float, g: float, own: float, side: int, length: float,
                         rng: tuple[float, float] | None, where: str) -> tuple[float, float]:
    """(v, d) with a*v + b*d = g for the wall ``side``, v as close to ``own`` (F's value there)
    as the range allows; ``where`` names the condition in errors."""
    if b == 0:
        if a == 0:
            raise IncompatibleRange(f"{where}: the condition has neither a value nor a slope term")
        v = g / a
        if rng is not None and not (rng[0] - _RANGE_SLACK <= v <= rng[1] + _RANGE_SLACK):
            raise IncompatibleRange(
                f"{where}: the boundary value {v:.6g} at the initial time lies outside "
                f"generator.ranges [{rng[0]:g}, {rng[1]:g}]; widen the range to include it")
        return v, 0.0
    if rng is None:
        return own, (g - a * own) / b
    low, high = rng
    extent = _q_extent(length)

    def feasible(v):
        d = (g - a * v) / b
        # q_lo >= 0 and q_hi <= 0 inside, so ℓ moves from v in the direction sign(d) (lo wall)
        # or -sign(d) (hi wall), by at most |d| * extent
        up = d > 0 if side == 0 else d < 0
        room = (high - v) if up else (v - low)
        return abs(d) * extent <= room + _RANGE_SLACK * max(1.0, abs(high - low))

    own = min(max(own, low), high)
    if feasible(own):
        return own, (g - a * own) / b
    candidates = np.linspace(low, high, 4001)
    ok = [v for v in candidates if feasible(v)]
    if not ok:
        raise IncompatibleRange(
            f"{where}: the condition needs a slope at the wall that initial data within "
            f"generator.ranges [{low:g}, {high:g}] cannot have; widen the range")
    v = float(min(ok, key=lambda c: abs(c - own)))
    return v, (g - a * v) / b


def _profiles(a: float, b: float, g: np.ndarray, own: np.ndarray, side: int, length: float,
              rng: tuple[float, float] | None, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Wall values v and slopes d (arrays shaped like ``own``) with a*v + b*d = g."""
    g = np.broadcast_to(g, own.shape)
    if b == 0:  # the closed forms of wall_value_and_slope, vectorised
        if a == 0:
            wall_value_and_slope(a, b, 0.0, 0.0, side, length, rng, where)  # raises
        v = np.broadcast_to(g / a, own.shape)
        if rng is not None:
            outside = np.maximum(rng[0] - v, v - rng[1])
            worst = int(np.argmax(outside))
            if outside.flat[worst] > _RANGE_SLACK:  # raises, naming the value
                wall_value_and_slope(a, b, float(g.flat[worst]), 0.0, side, length, rng, where)
        return v, np.zeros(own.shape)
    if rng is None:
        return own, (g - a * own) / b
    pairs = [wall_value_and_slope(a, b, float(gi), float(oi), side, length, rng, where)
             for gi, oi in zip(g.ravel(), own.ravel())]
    v, d = (np.array(c, dtype=float).reshape(own.shape) for c in zip(*pairs))
    return v, d


def blend_axis(values: np.ndarray, x: np.ndarray, axis: int, lo: float, hi: float,
               ends: tuple[int, int], conds: list, rng: tuple[float, float] | None,
               where: str) -> np.ndarray:
    """Blend F (``values`` [B, *grid]) along space axis ``axis`` into wall profiles meeting the
    conditions ``conds`` = [(a, b, g) or None for the low and the high wall], g the data at the
    initial time on every line along the axis (an array over the other axes, or a number).
    ``x`` are the points along the axis, ``x[ends[0]] = lo`` and ``x[ends[1]] = hi``."""
    length = hi - lo
    if not (np.isclose(x[ends[0]], lo) and np.isclose(x[ends[1]], hi)):
        raise ValueError("the point set must contain both walls")
    v = np.moveaxis(np.asarray(values, dtype=float), axis + 1, 1)  # [B, n, other...]
    shape = (-1,) + (1,) * (v.ndim - 2)
    xi = ((x - lo) / length).reshape(shape)
    xs = x.reshape(shape)
    out = v.copy()
    for side in (0, 1):
        if conds[side] is None:
            continue
        a, b, g = conds[side]
        own = v[:, ends[side]]  # [B, other...]
        wall, slope = _profiles(a, b, np.asarray(g, dtype=float), own, side, length, rng,
                                f"{where} at {'xyz'[axis]} = {(lo, hi)[side]:g}"
                                f" ({'low' if side == 0 else 'high'} wall)")
        q = _slope_profile(xs, xi, lo, hi, side)
        out += _blend(xi, side) * (wall[:, None] + slope[:, None] * q - v)
    return np.moveaxis(out, 1, axis + 1)


def dirichlet_lift(data: list, xs: list[np.ndarray], ends: list[tuple[int, int]],
                   boxes: list[tuple[float, float]], where: str) -> np.ndarray:
    """The transfinite (Coons) interpolant H(x, y) of Dirichlet data on the four walls of a
    rectangle: ``data[a][s]`` are the values u = g/a on side s of axis a along the other axis'
    points. H equals the data on every wall when they agree at the corners (checked)."""
    (x, y), (ex, ey) = xs, ends
    (xlo, xhi), (ylo, yhi) = boxes
    phi = [(xhi - x) / (xhi - xlo), (x - xlo) / (xhi - xlo)]
    psi = [(yhi - y) / (yhi - ylo), (y - ylo) / (yhi - ylo)]
    H = np.zeros((x.size, y.size))
    for s in (0, 1):
        H += phi[s][:, None] * data[0][s][None, :] + psi[s][None, :] * data[1][s][:, None]
    for s in (0, 1):
        for r in (0, 1):
            cx, cy = float(data[0][s][ey[r]]), float(data[1][r][ex[s]])
            if abs(cx - cy) > 1e-8 * max(1.0, abs(cx)):
                raise IncompatibleRange(
                    f"{where}: the Dirichlet data disagree at the corner ({(xlo, xhi)[s]:g},"
                    f" {(ylo, yhi)[r]:g}) at the initial time ({cx:.6g} on the x wall, {cy:.6g}"
                    " on the y wall): no continuous initial data meet both")
            H -= phi[s][:, None] * psi[r][None, :] * cx
    return H


def _inside(xi: np.ndarray) -> np.ndarray:
    """1 - β_lo - β_hi: the weight F keeps, zero with zero slope at both walls."""
    return 1.0 - _blend(xi, 0) - _blend(xi, 1)


def meet_walls(values: np.ndarray, xs: list[np.ndarray], ends: list[tuple[int, int]],
               boxes: list[tuple[float, float]], conds: list[list], rng, unknown: str
               ) -> np.ndarray:
    """F (``values`` [B, *grid] on the tensor grid ``xs``, each axis holding its walls at
    ``ends``) made to satisfy the conditions ``conds[a][s]`` = (a, b, g) or None, g the data at
    the initial time along the side (an array over the other axis' points).

    1D: :func:`blend_axis`. 2D: blending along x then along y keeps the x conditions when their
    data are zero (the y profiles are built from values and slopes that already meet them);
    inhomogeneous Dirichlet data on all four walls are lifted instead, u0 = H + W (F - H) with H
    the Coons interpolant of the data and W = (1 - β_lo - β_hi)(x) (1 - β_lo - β_hi)(y), a convex
    combination of F and H. Other inhomogeneous data in 2D are checked by the caller."""
    dim = len(xs)
    if dim == 2 and all(c is not None and c[1] == 0 for row in conds for c in row) \
            and any(np.any(np.asarray(c[2]) != 0) for row in conds for c in row):
        data = [[np.broadcast_to(np.asarray(c[2], dtype=float) / c[0], (xs[1 - a].size,))
                 for c in conds[a]] for a in range(2)]
        H = dirichlet_lift(data, xs, ends, boxes, unknown)
        if rng is not None and (H.min() < rng[0] - _RANGE_SLACK or H.max() > rng[1] + _RANGE_SLACK):
            raise IncompatibleRange(
                f"{unknown}: the Dirichlet data at the initial time span [{H.min():.6g},"
                f" {H.max():.6g}] inside the box, outside generator.ranges [{rng[0]:g},"
                f" {rng[1]:g}]; widen the range")
        W = _inside((xs[0] - boxes[0][0]) / (boxes[0][1] - boxes[0][0]))[:, None] \
            * _inside((xs[1] - boxes[1][0]) / (boxes[1][1] - boxes[1][0]))[None, :]
        return H + W * (values - H)
    out = values
    for a in range(dim):
        out = blend_axis(out, xs[a], a, *boxes[a], ends[a], conds[a], rng, unknown)
    return out
