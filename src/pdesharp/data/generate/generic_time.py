"""Time integrators of the generic generator (method of lines on a Fourier grid).

``dop853``: scipy's adaptive 8th-order Dormand–Prince with tight tolerances (rtol 1e-12, atol
1e-12·max|u0| per unknown: scipy's error norm is an RMS over all grid values, so the max-norm
error is some 10× larger; measured ~1e-10 on smooth problems), restarted at every frame time so
that frames are step end points, not dense-output interpolants. The default: the most accurate
per right-hand-side evaluation for non-stiff problems, and its step control needs no knowledge of
the PDE.

``etdrk4``: Cox–Matthews exponential time differencing RK4 in Fourier space, coefficients by the
Kassam–Trefethen contour integral. The constant-coefficient diagonal linear part L (diffusion,
hyper-diffusion, dispersion) is integrated exactly, so the step is limited by the nonlinear part
only; an explicit method would need Δt ≲ 3/max|L| on the 4×-refined grid (10⁴–10⁵ steps for a
small viscosity), and an implicit one (Radau) would need a Jacobian that is dense in physical
space. The step is fixed within each frame interval and chosen by step doubling: the run with n
steps per interval is accepted when the Richardson estimate |u_2n − u_n|/15 (4th order) is below
the tolerance relative to the field scale; the finer run is returned.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.integrate import solve_ivp

from pdesharp.data.generate.generic_symbolic import SpectralGrid

Rhs = Callable[[list[np.ndarray], float, bool], list[np.ndarray]]

MAX_ETD_STEPS = 200_000  # total steps per run before giving up (per run, not per sample)


class IntegrationFailed(RuntimeError, ValueError):
    """The time integration broke down; the message says where and what to try."""


def _scales(u0: np.ndarray) -> np.ndarray:
    """Per-unknown size max|u0|, used for absolute tolerances and error norms.

    Floored at 1e-6 of the largest unknown's size (and 1 when all data are zero), so that a field
    starting at zero does not ask for an absolute error of 1e-24.
    """
    axes = (0,) + tuple(range(2, u0.ndim))
    s = np.abs(u0).max(axis=axes)
    top = float(s.max(initial=0.0))
    return np.maximum(s, 1e-6 * top) if top > 0 else np.ones_like(s)


def dop853(rhs: Rhs, u0: np.ndarray, t_out: np.ndarray, *,
           rtol: float = 1e-12) -> tuple[np.ndarray, dict]:
    """Integrate ``u0`` [B, n_u, *grid] to the times ``t_out``; frames [B, T, n_u, *grid]."""
    shape = u0.shape
    n_u = shape[1]
    scale = _scales(u0)
    atol = np.broadcast_to((rtol * scale).reshape((1, n_u) + (1,) * (u0.ndim - 2)), shape).ravel()

    def fun(t: float, y: np.ndarray) -> np.ndarray:
        u = y.reshape(shape)
        return np.stack(rhs([u[:, j] for j in range(n_u)], t, True), axis=1).ravel()

    # One solve_ivp call per frame interval, landing on each frame time exactly: the dense output
    # (t_eval) was measured to be far less accurate than the step end points (1.6e-5 against
    # 1e-11 for 2D advection-diffusion at rtol 1e-10), so frames are never interpolated.
    frames = [u0.copy()]
    y = u0.ravel()
    nfev, step = 0, None
    with np.errstate(all="ignore"):
        for k in range(len(t_out) - 1):
            t0, t1 = float(t_out[k]), float(t_out[k + 1])
            kw = {"first_step": min(step, t1 - t0)} if step else {}
            sol = solve_ivp(fun, (t0, t1), y, method="DOP853", rtol=rtol, atol=atol, **kw)
            nfev += int(sol.nfev)
            if sol.status != 0 or not np.all(np.isfinite(sol.y[:, -1])):
                raise IntegrationFailed(
                    f"DOP853 failed between t = {t0:.6g} and {t1:.6g}: {sol.message}. The solution "
                    "may blow up (unphysical initial data, e.g. a negative density: set "
                    "generator.ranges) or the problem may be too stiff (try method='etdrk4')")
            y = sol.y[:, -1]
            if sol.t.size > 2:  # the last step is cut to land on t1; the one before is typical
                step = float(sol.t[-2] - sol.t[-3])
            frames.append(y.reshape(shape))
    return np.stack(frames, axis=1), {"method": "dop853", "rtol": rtol, "rhs_evaluations": nfev}


def _etd_coefficients(lhat: np.ndarray, h: float, n_contour: int = 64):
    """exp(hL), exp(hL/2) and the ETDRK4 weights Q, f1, f2, f3 (Kassam & Trefethen 2005).

    The φ-functions are averaged over a circle of radius 1 around each hL, which avoids the
    cancellation of their closed forms for small |hL|; a full circle (not the half circle of the
    paper) because L may be complex (dispersion).
    """
    # evaluated once per distinct value of hL (isotropic or masked symbols repeat a lot), which
    # keeps the contour temporaries small on 2D grids
    uniq, inverse = np.unique((h * lhat).ravel(), return_inverse=True)
    coefficients = _etd_weights(uniq, h, n_contour)
    return tuple(c[inverse].reshape(lhat.shape) for c in coefficients)


def etdrk4_step(coefficients: tuple, v: np.ndarray, t: float, h: float, nonlinear) -> np.ndarray:
    """One ETDRK4 step (Cox & Matthews 2002) of v' = Lv + N(v, t) from time ``t`` to ``t + h``,
    with :func:`_etd_coefficients` of this ``h``; ``nonlinear(v, t)`` is N. The one copy of the
    stage formulas (the generators and the CNS audit call it)."""
    e, e2, q, f1, f2, f3 = coefficients
    nv = nonlinear(v, t)
    a = e2 * v + q * nv
    na = nonlinear(a, t + h / 2)
    b = e2 * v + q * na
    nb = nonlinear(b, t + h / 2)
    c = e2 * a + q * (2.0 * nb - nv)
    nc = nonlinear(c, t + h)
    return e * v + f1 * nv + 2.0 * f2 * (na + nb) + f3 * nc


def _etd_weights(z: np.ndarray, h: float, n_contour: int):
    r = np.exp(2j * np.pi * (np.arange(n_contour) + 0.5) / n_contour)
    lr = z[..., None] + r
    ez = np.exp(lr)
    q = h * np.mean((np.exp(lr / 2) - 1.0) / lr, axis=-1)
    f1 = h * np.mean((-4.0 - lr + ez * (4.0 - 3.0 * lr + lr ** 2)) / lr ** 3, axis=-1)
    f2 = h * np.mean((2.0 + lr + ez * (lr - 2.0)) / lr ** 3, axis=-1)
    f3 = h * np.mean((-4.0 - 3.0 * lr - lr ** 2 + ez * (4.0 - lr)) / lr ** 3, axis=-1)
    return np.exp(z), np.exp(z / 2), q, f1, f2, f3


def _etd_run(rhs: Rhs, grid: SpectralGrid, lhat: np.ndarray, u0: np.ndarray, t_out: np.ndarray,
             n_sub: int) -> np.ndarray:
    n_u = u0.shape[1]
    mask = grid.mask

    def nonlinear(v: np.ndarray, t: float) -> np.ndarray:
        u = grid.ifft(v)
        ut = rhs([u[:, j] for j in range(n_u)], t, False)
        return grid.fft(np.stack(ut, axis=1)) * mask - lhat * v

    v = grid.fft(u0) * mask
    frames = [grid.ifft(v)]
    cache: dict[float, tuple] = {}
    for k in range(len(t_out) - 1):
        t0, t1 = float(t_out[k]), float(t_out[k + 1])
        h = (t1 - t0) / n_sub
        key = round(h, 15)
        if key not in cache:
            cache[key] = _etd_coefficients(lhat, h)
        for s in range(n_sub):
            v = etdrk4_step(cache[key], v, t0 + s * h, h, nonlinear)
        frames.append(grid.ifft(v))
    return np.stack(frames, axis=1)


def etdrk4(rhs: Rhs, grid: SpectralGrid, lhat: np.ndarray, u0: np.ndarray, t_out: np.ndarray, *,
           tol: float = 1e-9, n_start: int = 1) -> tuple[np.ndarray, dict]:
    """ETDRK4 with step doubling until the Richardson error estimate is below ``tol`` (relative).

    ``lhat`` [n_u, *rfft shape] is the linear symbol; returns frames [B, T, n_u, *grid] and info
    with the accepted steps per frame interval and the error estimate.
    """
    scale = _scales(u0).reshape((1, 1, -1) + (1,) * (u0.ndim - 2))
    n = max(1, int(n_start))
    with np.errstate(all="ignore"):
        coarse = _etd_run(rhs, grid, lhat, u0, t_out, n)
        while True:
            if 2 * n * (len(t_out) - 1) > MAX_ETD_STEPS:
                raise IntegrationFailed(
                    f"ETDRK4 did not reach the tolerance {tol:g} within {MAX_ETD_STEPS} steps; "
                    "the nonlinear part may be stiff or the solution may blow up "
                    "(try method='dop853', or a looser tolerance)")
            fine = _etd_run(rhs, grid, lhat, u0, t_out, 2 * n)
            err = float(np.max(np.abs(fine - coarse) / scale)) / 15.0
            if np.isfinite(err) and err <= tol:
                break
            coarse, n = fine, 2 * n
    if not np.all(np.isfinite(fine)):
        raise IntegrationFailed("ETDRK4 produced non-finite values")
    return fine, {"method": "etdrk4", "tol": tol, "steps_per_frame": 2 * n,
                  "error_estimate": err}
