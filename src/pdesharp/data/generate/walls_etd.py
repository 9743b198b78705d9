"""ETDRK4 on a Chebyshev box, for walled problems whose stiff part is linear and separable.

Radau IIA on a 2D Chebyshev grid (:func:`.generic_bounded.integrate_walls`) factors a dense
matrix of (m − 1)² rows per unknown, in complex and in real arithmetic, at every change of step
size: 0.6 s at m = 32 and 6 s at m = 64 on a shared 2-core machine, some 70 times per sample. A
reference converged to 1e-6 needs the larger grids, so this is what made it unaffordable.

Here the stiff part is integrated exactly instead. For unknown k, the constant-coefficient linear
terms of u_t that differentiate along one axis at a time (``CompiledSystem.linear``: diffusion,
hyper-diffusion, advection, linear reaction) act on the interior values as a Kronecker sum
``L_k = A_x ⊕ A_y + c``, where A_a is the axis' operator with the wall values eliminated: on every
line, the two end values are solved from the homogeneous wall conditions, as
:meth:`.walls.WallConditions.fill` does. Each A_a is diagonalised once (A_a = V Λ V⁻¹, an
(m − 1)-row eigenproblem), so exp(hL_k) and the φ-functions are diagonal in the basis V_x ⊗ V_y
and cost two small matrix products per axis. The rest, N(u, t) = F(u) − L u with F the task's
full right-hand side on the walled field (nonlinear terms, and the wall data g(t), which enter
through the wall values), is treated explicitly by Cox–Matthews ETDRK4 with the Kassam–Trefethen
weights of :mod:`.generic_time`. The step is fixed within each frame interval and halved until the
Richardson estimate |u_2n − u_n| / 15 is below ``tol`` relative to each field's size, as in
:func:`.generic_time.etdrk4`; frames are step end points.

:func:`plan` says why not (and the generator keeps Radau) when a side has no condition, a linear
term mixes axes, an axis' eigenbasis is ill-conditioned (cond > :data:`MAX_COND`), or the remainder
N is itself stiff: its Jacobian's spectral radius (a few power iterations) times the frame
interval above :data:`STIFF_REMAINDER` (nonlinear diffusion, a variable diffusivity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdesharp.data.generate.chebyshev import ChebyshevBox, along
from pdesharp.data.generate.generic_time import (IntegrationFailed, _etd_coefficients,
                                                 etdrk4_step)
from pdesharp.data.generate.walls import WallConditions, blas_threads

MAX_COND = 1e6  # condition number of an axis eigenbasis above which the transform loses digits
STIFF_REMAINDER = 2000.0  # ρ(∂N/∂u)·Δt_frame above which the explicit remainder is too stiff
MAX_STEPS = 1 << 15
TINY = 1e-200  # below any field's size x machine epsilon; subnormals are flushed to zero  # steps per frame interval before giving up


@dataclass
class AxisBasis:
    """One axis' interior operator A = V diag(lam) V⁻¹ (walls eliminated)."""

    V: np.ndarray
    Vinv: np.ndarray
    lam: np.ndarray


@dataclass
class Plan:
    """Per unknown, one basis per axis and the Kronecker-sum eigenvalues on the interior grid."""

    bases: list[list[AxisBasis]]
    lhat: np.ndarray  # [n_u, *interior shape], complex

    def to_eig(self, u: np.ndarray) -> np.ndarray:
        """Interior values [B, n_u, *interior] to eigen-coordinates."""
        out = np.empty(u.shape, dtype=complex)
        for k, bases in enumerate(self.bases):
            w = u[:, k]
            for a, basis in enumerate(bases):
                w = _apply(basis.Vinv, w, a + 1)
            out[:, k] = w
        return out

    def from_eig(self, w: np.ndarray) -> np.ndarray:
        out = np.empty(w.shape, dtype=float)
        for k, bases in enumerate(self.bases):
            v = w[:, k]
            for a, basis in enumerate(bases):
                v = _apply(basis.V, v, a + 1)
            out[:, k] = v.real
        return out


def _apply(M: np.ndarray, values: np.ndarray, axis: int) -> np.ndarray:
    """``M`` along array axis ``axis`` (matmul for the last two axes: this runs ~10^4 times)."""
    if axis == values.ndim - 1:
        return values @ M.T
    if axis == values.ndim - 2:
        return M @ values
    return along(M, values, axis)


def _elimination(bc: WallConditions, k: int, a: int, box: ChebyshevBox) -> np.ndarray:
    """E [n, n − 2]: a line's full values from its interior values under the homogeneous
    conditions of unknown k on axis a (rows a·u + b·(D u) = 0 at both ends)."""
    D = box.axes[a].D
    n = D.shape[0]
    ends = [0, n - 1]
    rows = np.stack([bc.sides[k][a][s].b * D[e] for s, e in zip((0, 1), ends)])
    for r, (s, e) in enumerate(zip((0, 1), ends)):
        rows[r, e] += bc.sides[k][a][s].a
    E = np.zeros((n, n - 2))
    E[1:-1] = np.eye(n - 2)
    E[ends] = -np.linalg.solve(rows[:, ends], rows[:, 1:-1])
    return E


def plan(system, bc: WallConditions, box: ChebyshevBox) -> tuple[Plan | None, str]:
    """The diagonalised linear part, or (None, why ETDRK4 does not apply)."""
    dim = box.dim
    bases: list[list[AxisBasis]] = []
    lhats = []
    for k, terms in enumerate(system.linear[:len(bc.sides)]):
        if any(c is None for row in bc.sides[k] for c in row):
            return None, "a side without a wall condition (its end value evolves)"
        shift = 0.0
        ops = [np.zeros_like(g.D) for g in box.axes]
        for c, orders in terms:
            moving = [a for a, o in enumerate(orders) if o]
            if not moving:
                shift += c
            elif len(moving) > 1:
                return None, "a linear term mixes derivatives along two axes"
            else:
                a = moving[0]
                ops[a] += c * box.matrix(a, orders[a])
        per_axis = []
        lhat = np.full(tuple(g.x.size - 2 for g in box.axes), shift, dtype=complex)
        for a in range(dim):
            A = ops[a][1:-1] @ _elimination(bc, k, a, box)
            lam, V = np.linalg.eig(A)
            if not np.all(np.isfinite(lam)) or np.linalg.cond(V) > MAX_COND:
                return None, f"the interior operator along axis {a} has an ill-conditioned " \
                             "eigenbasis"
            per_axis.append(AxisBasis(V, np.linalg.inv(V), lam))
            shape = [1] * dim
            shape[a] = lam.size
            lhat = lhat + lam.reshape(shape)
        bases.append(per_axis)
        lhats.append(lhat)
    if len(bases) != len(system.unknowns):
        return None, "unknowns without wall conditions"
    return Plan(bases, np.stack(lhats)), ""


class _Remainder:
    """N(w, t) in eigen-coordinates for one sample: F(walled field) − L u."""

    def __init__(self, system, bc: WallConditions, box: ChebyshevBox, p: Plan,
                 template: np.ndarray):
        self.system, self.bc, self.box, self.plan = system, bc, box, p
        self.template = template  # [n_u, *shape]: any full field (wall values are overwritten)
        self.inner = (slice(None),) + tuple(slice(1, -1) for _ in range(box.dim))
        self.evaluations = 0

    def full(self, u: np.ndarray, t: float) -> np.ndarray:
        """Interior values [n_u, *interior] -> the walled field [n_u, *shape] at time t."""
        field = self.template.copy()
        field[self.inner] = u
        self.bc.fill(field, t, self.box)
        return field

    def physical(self, u: np.ndarray, t: float) -> np.ndarray:
        """F on the interior, [n_u, *interior], from interior values."""
        field = self.full(u, t)
        n_u = field.shape[0]
        ut = self.system.rhs([field[k][None] for k in range(n_u)], t, self.box, False)
        self.evaluations += 1
        return np.stack([np.asarray(v).reshape(self.box.shape) for v in ut])[self.inner]

    def __call__(self, w: np.ndarray, t: float) -> np.ndarray:
        u = self.plan.from_eig(w[None])[0]
        return self.plan.to_eig(self.physical(u, t)[None])[0] - self.plan.lhat * w


def remainder_stiffness(rem: _Remainder, u: np.ndarray, t: float, iterations: int = 12) -> float:
    """Spectral radius of ∂N/∂u at u (interior values) by power iteration on finite
    differences; N's linear part L is subtracted in physical space."""
    p = rem.plan

    def n_phys(v):
        return rem.physical(v, t) - p.from_eig((p.lhat * p.to_eig(v[None])[0])[None])[0]

    base = n_phys(u)
    size = max(float(np.abs(u).max()), 1e-3)
    x = np.random.default_rng(0).standard_normal(u.shape)
    rho = 0.0
    for _ in range(iterations):
        x /= np.linalg.norm(x)
        delta = 1e-6 * size
        y = (n_phys(u + delta * x) - base) / delta
        rho = float(np.linalg.norm(y))
        if not np.isfinite(rho) or rho == 0.0:
            return rho
        x = y
    return rho


def _run(rem: _Remainder, w0: np.ndarray, t_out: np.ndarray, n_sub: int, cache: dict) -> list:
    lhat = rem.plan.lhat
    w = w0
    frames = [w0]
    for j in range(len(t_out) - 1):
        t0, t1 = float(t_out[j]), float(t_out[j + 1])
        h = (t1 - t0) / n_sub
        key = round(h, 15)
        if key not in cache:  # exp(hλ) of the fast modes underflows: flush it to zero, as
            # subnormal numbers make every later product some 100x slower on x86
            cache[key] = tuple(np.where(np.abs(c) < TINY, 0.0, c)
                               for c in _etd_coefficients(lhat, h))
        for s in range(n_sub):
            w = etdrk4_step(cache[key], w, t0 + s * h, h, rem)
            w[np.abs(w) < TINY] = 0.0
        frames.append(w)
    return frames


def integrate(system, bc: WallConditions, box: ChebyshevBox, p: Plan, u0: np.ndarray,
              t_out: np.ndarray, *, tol: float) -> tuple[np.ndarray, dict]:
    """Frames [B, T, n_u, *shape] from walled fields u0 [B, n_u, *shape], sample by sample;
    raises :class:`IntegrationFailed` when the remainder is too stiff or the steps run out.

    BLAS runs on one thread here: every product is of matrices below ~100 rows, for which
    threads only cost (measured 12x slower with OpenBLAS's default threads on a busy 2-core
    machine at m = 48)."""
    with blas_threads(1):
        return _integrate(system, bc, box, p, u0, t_out, tol=tol)


def _integrate(system, bc, box, p, u0, t_out, *, tol):
    out = np.empty((u0.shape[0], len(t_out)) + u0.shape[1:])
    inner = (slice(None),) + tuple(slice(1, -1) for _ in range(box.dim))
    worst, steps, evaluations = 0.0, 0, 0
    span = float(np.max(np.diff(t_out)))
    for s in range(u0.shape[0]):
        rem = _Remainder(system, bc, box, p, u0[s])
        interior = u0[s][inner]
        rho = remainder_stiffness(rem, interior, float(t_out[0]))
        if not np.isfinite(rho) or rho * span > STIFF_REMAINDER:
            raise IntegrationFailed(f"the non-linear remainder is stiff (spectral radius "
                                    f"{rho:.3g} over frame intervals of {span:.3g})")
        scale = np.abs(interior).reshape(interior.shape[0], -1).max(axis=1)
        scale = np.maximum(scale, 1e-6 * max(float(scale.max()), 1e-300))
        scale = scale.reshape((-1,) + (1,) * box.dim)
        w0 = p.to_eig(interior[None])[0]
        cache: dict = {}
        n = 1
        with np.errstate(all="ignore"):
            coarse = [p.from_eig(w[None])[0] for w in _run(rem, w0, t_out, n, cache)]
            while True:
                if 2 * n > MAX_STEPS:
                    raise IntegrationFailed(
                        f"ETDRK4 did not reach the tolerance {tol:g} with {MAX_STEPS} steps per "
                        "frame interval")
                fine = [p.from_eig(w[None])[0] for w in _run(rem, w0, t_out, 2 * n, cache)]
                err = max(float(np.max(np.abs(f - c) / scale)) for f, c in zip(fine, coarse))
                err /= 15.0
                if np.isfinite(err) and err <= tol:
                    break
                coarse, n = fine, 2 * n
        if not all(np.all(np.isfinite(f)) for f in fine):
            raise IntegrationFailed("ETDRK4 produced non-finite values")
        for j, (f, t) in enumerate(zip(fine, t_out)):
            out[s, j] = rem.full(f, float(t))
        worst, steps = max(worst, err), max(steps, 2 * n)
        evaluations += rem.evaluations
    return out, {"method": "chebyshev collocation + etdrk4 (separable linear part exact)",
                 "tol": tol, "steps_per_frame": steps, "error_estimate": worst,
                 "rhs_evaluations": evaluations,
                 "collocation_points": list(box.shape) if box.dim > 1 else box.shape[0]}
