"""Is the initial-value problem well posed at the grid's wavenumbers?

A backward heat equation (dt(u) = -dx(u, 2)), an anti-diffusive flux (dt(u) + dx(u**3, 2) = 0)
or the "bad" Boussinesq equation (u_tt = u_xx + u_xxxx) amplifies a mode of wavenumber k like
exp(c k^p t): every solver's round-off at the grid's highest modes grows past any accuracy
before the end of the time span. No scheme solves such a task, so ``tasks check`` says so
instead of accepting it and letting every design blow up.

The test freezes the coefficients: per sampled state (the data's ranges, zero derivatives),
the growth rate of a mode is the largest real part of the eigenvalues of
M(k)^-1 (L(k) + D(k)), with L the linear constant-coefficient part, M the Sobolev-type mass
operator and D the even-order derivatives of each unknown in its own equation taken with their
coefficient at that state. The task is refused when the growth at the grid's highest
wavenumber, over the time span, exceeds round-off's reciprocal at nine states in ten (so a
degenerate diffusion whose sign depends on the state, such as (u**2)_xx over u in [-1, 1], is
not refused on assumed ranges), and grows with k (an instability of a few modes, such as a
reaction's, is a property of the solution, not ill-posedness).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.jets import almost_everywhere
from pdesharp.builtin.refusal import UnsupportedTask

AMPLIFICATION = 40.0  # exp(40) ~ 2e17: round-off (1e-16) grown past the solution's size
SHARE = 0.9  # of the sampled states


def refuse_if_ill_posed(law: BalanceLaw, task, values: dict, h: list[float], pts: dict) -> None:
    """Raise :class:`UnsupportedTask` (a one-line verdict) when the task is ill-posed; a symbol
    the test cannot evaluate leaves the verdict to the rest of the analysis."""
    try:
        growth = _growth(law, task, values, h, pts)
    except (TypeError, ValueError, ZeroDivisionError, np.linalg.LinAlgError):
        return
    span = task.time_span[1] - task.time_span[0]
    for a, (kmax, half, top) in enumerate(growth):
        ill = (top * span > AMPLIFICATION) & (top > 2.0 * np.maximum(half, 0.0))
        if np.mean(ill) >= SHARE:
            raise UnsupportedTask.said(
                "An ill-posed initial-value problem, which no solver (built-in or"
                f" written by a model) can solve: modes of wavenumber k along {law.coords[a]}"
                f" grow without bound as k grows (at the grid's highest, k = {kmax:.3g}, by"
                f" exp({float(np.median(top)) * span:.3g}) over the time span). A backward-"
                "diffusive or anti-diffusive term, or an even derivative of the wrong sign:"
                " check the signs (dt(u) = +nu*dx(u, 2) and dt(u) = -dx(u, 4) diffuse).")


def _growth(law: BalanceLaw, task, values: dict, h: list[float], pts: dict) -> list:
    """Per axis: (k_max, growth at k_max / 2, growth at k_max), growths per sampled state."""
    from pdesharp.builtin.families.jet_form import jet_split
    from pdesharp.equation import array_function

    split = jet_split(law)
    if split is None:
        return []
    n, out = law.nvar, []
    args = list(pts)
    npts = len(next(iter(pts.values())))
    zero = {s: sp.Integer(0) for s in law.jets.table if any(law.jets.of(s)[1])}
    num = lambda m: np.array(sp.Matrix(m).subs(values).evalf(), dtype=complex)  # noqa: E731
    for a in range(law.dim):
        along = lambda orders: all(o == 0 for b, o in enumerate(orders) if b != a)  # noqa: E731
        kmax = math.pi / h[a]
        growth = []
        for k in (kmax / 2, kmax):
            L = sum((num(m) * (1j * k) ** sum(o) for o, m in split.terms if along(o)),
                    np.zeros((n, n), complex))
            M = np.eye(n) + sum((num(m) * (1j * k) ** sum(o) for o, m in split.mass
                                 if along(o)), np.zeros((n, n), complex))
            D = np.zeros((npts, n))
            for j, orders, s in split.jets:
                p = sum(orders)
                if p % 2 or not along(orders) or not split.rest[j].has(s):
                    continue
                c = almost_everywhere(sp.diff(split.rest[j], s)).xreplace(zero).subs(values)
                fn = array_function(args, c.xreplace({sp.zoo: sp.oo}))
                with np.errstate(all="ignore"):
                    v = np.real(np.asarray(fn(*[pts[x] for x in args]), dtype=complex))
                D[:, j] += np.nan_to_num(v * np.ones(npts)) * (-1.0) ** (p // 2) * k**p
            Minv = np.linalg.inv(M)  # M^-1 (L + diag(D)): D scales M^-1's columns
            A = (Minv @ L)[None] + Minv[None] * D[:, None, :]
            if not np.all(np.isfinite(A)):
                return []
            growth.append(np.max(np.linalg.eigvals(A).real, axis=-1))
        out.append((kmax, growth[0], growth[1]))
    return out
