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


def blend_into_walls(values: list[np.ndarray], xs: list[np.ndarray], lo: float, hi: float,
                     conds: list, t0: float, rng: tuple[float, float] | None,
                     unknown: str) -> list[np.ndarray]:
    """Make F (``values[i]`` [B, n_i] at the points ``xs[i]``; ``xs[0]`` must contain both
    walls as its first and last point) satisfy the conditions ``conds`` = [(a, b, g) or None
    for the low and the high wall] at time ``t0``. Returns the blended arrays, same shapes."""
    length = hi - lo
    if not (np.isclose(xs[0][0], lo) and np.isclose(xs[0][-1], hi)):
        raise ValueError("the first point set must start at lo and end at hi")
    walls = (values[0][:, 0], values[0][:, -1])
    out = [v.astype(float, copy=True) for v in values]
    for side in (0, 1):
        cond = conds[side]
        if cond is None:
            continue
        a, b, g = cond
        g0 = float(g(t0))
        where = f"{unknown} at x = {(lo, hi)[side]:g} ({'low' if side == 0 else 'high'} wall)"
        for i, x in enumerate(xs):
            xi = (x - lo) / length
            beta = _blend(xi, side)
            q = _slope_profile(x, xi, lo, hi, side)
            for s in range(out[i].shape[0]):
                v, d = wall_value_and_slope(a, b, g0, float(walls[side][s]), side, length, rng,
                                            where)
                out[i][s] += beta * (v + d * q - values[i][s])
    return out
