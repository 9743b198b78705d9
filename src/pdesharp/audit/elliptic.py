"""Converged Darcy solutions: −∇·(a∇u) = 1 on (0,1)², u = 0 on the boundary, with the stored
piecewise-constant coefficient (one value per cell of the N × N grid whose centres carry it).

Method: cell-centred finite volumes with harmonic face means (the flux-continuous discretisation
for a coefficient that jumps across cell faces, exact for layered media), u = 0 imposed at the
boundary faces half a cell from the outermost centres. Each stored cell is split into r × r
cells of the same value (r = 1, 2, and r = 4 once to measure the convergence order); u at the
original centre, a corner shared by four fine cells of the same coefficient, is their mean plus
h²/(8a) (the 4-point average of u equals u + (h²/8)Δu + O(h⁴), and Δu = −1/a inside a cell). The
cross points where four cells of two values meet make u singular there, so the order is not 2:
it is measured on one sample from r = 1, 2, 4, and the converged solution is the Richardson
extrapolation u₂ + (u₂ − u₁)/(2^p − 1) for every sample. Its error is checked on that sample
against the extrapolation from r = 2 and 4.

This is the PDE with the coefficient as stored. The FNO reference data instead smooth the
coefficient with a bicubic spline onto a node grid (with overshoots at the jumps) before a
5-point solve, so part of the reference error is that smoothing, not round-off.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve

from pdesharp.audit.converged import Converged, Progress, check_record, nrmse_pair
from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task

ORDER_REFINEMENT = 4  # the third level, solved once, for the measured order
FORCING = 1.0


def harmonic_fv(a: np.ndarray, forcing: float = FORCING) -> np.ndarray:
    """Cell-centred solve of −∇·(a∇u) = f on the unit square, u = 0 on its boundary; a [n, n]."""
    n = a.shape[0]
    h = 1.0 / n
    tx = 2.0 * a[:-1, :] * a[1:, :] / (a[:-1, :] + a[1:, :])  # faces between (i, j), (i+1, j)
    ty = 2.0 * a[:, :-1] * a[:, 1:] / (a[:, :-1] + a[:, 1:])
    diag = np.zeros((n, n))
    diag[:-1, :] += tx
    diag[1:, :] += tx
    diag[:, :-1] += ty
    diag[:, 1:] += ty
    # boundary faces: u = 0 half a cell away, so the face carries 2a (the cell's own value)
    diag[0, :] += 2 * a[0, :]
    diag[-1, :] += 2 * a[-1, :]
    diag[:, 0] += 2 * a[:, 0]
    diag[:, -1] += 2 * a[:, -1]
    idx = np.arange(n * n).reshape(n, n)
    rows = np.concatenate([idx.ravel(), idx[:-1, :].ravel(), idx[1:, :].ravel(),
                           idx[:, :-1].ravel(), idx[:, 1:].ravel()])
    cols = np.concatenate([idx.ravel(), idx[1:, :].ravel(), idx[:-1, :].ravel(),
                           idx[:, 1:].ravel(), idx[:, :-1].ravel()])
    vals = np.concatenate([diag.ravel(), -tx.ravel(), -tx.ravel(), -ty.ravel(), -ty.ravel()])
    matrix = sparse.csc_matrix((vals, (rows, cols)), shape=(n * n, n * n))
    u = spsolve(matrix, np.full(n * n, forcing * h * h), permc_spec="MMD_AT_PLUS_A")
    return u.reshape(n, n)


def at_centres(a: np.ndarray, r: int, forcing: float = FORCING) -> np.ndarray:
    """Solve with every cell split r × r; u at the original cell centres [n, n]."""
    n = a.shape[0]
    u = harmonic_fv(np.repeat(np.repeat(a, r, axis=0), r, axis=1), forcing)
    m = r // 2
    if r % 2:
        return u[m::r, m::r]
    mean = 0.25 * (u[m - 1::r, m - 1::r] + u[m::r, m - 1::r] + u[m - 1::r, m::r] + u[m::r, m::r])
    h = 1.0 / (n * r)
    return mean + forcing * h * h / (8.0 * a)


def richardson(coarse: np.ndarray, fine: np.ndarray, order: float) -> np.ndarray:
    return fine + (fine - coarse) / (2.0 ** order - 1.0)


def solve_darcy(task: Task, ref: ReferenceData, indices: list[int],
                progress: Progress) -> Converged:
    name = task.equation.unknowns[0]
    coeff_name = task.equation.coefficients[0]
    a = np.asarray(ref.coefficients[coeff_name], dtype=np.float64)
    b, n = a.shape[0], a.shape[1]
    levels = {1: [], 2: []}
    for k in range(b):
        progress(f"finite-volume solves (cells split 1x1 and 2x2): sample {k + 1} of {b}")
        for r in levels:
            levels[r].append(at_centres(a[k], r))
    u1, u2 = np.stack(levels[1]), np.stack(levels[2])
    progress(f"order measurement: cells split 4x4 ({(ORDER_REFINEMENT * n) ** 2} unknowns), "
             f"sample {indices[0]}")
    u4 = at_centres(a[0], ORDER_REFINEMENT)
    d12 = float(nrmse_pair(u1[:1], u2[:1])[0])
    d24 = float(nrmse_pair(u2[:1], u4[None])[0])
    order = float(np.log2(d12 / d24)) if d24 > 0 and d12 > d24 else 1.0
    converged = richardson(u1, u2, order)
    check_fine = richardson(u2[:1], u4[None], order)
    primary_text = (f"Richardson extrapolation (order {order:.2f}) of harmonic-mean finite-volume "
                    f"solves with each of the {n}x{n} cells split 1x1 and 2x2")
    check = check_record(
        task, {name: converged[:1]}, {name: check_fine}, indices[:1], primary_text,
        f"the same extrapolation from cells split 2x2 and 4x4 (sample {indices[0]})",
        note=f"order measured on sample {indices[0]}: nRMSE 1x1 vs 2x2 {d12:.2e}, 2x2 vs 4x4 "
             f"{d24:.2e}; the check is the finer one, so the difference estimates the "
             "converged solution's error")
    plain = float(nrmse_pair(u2[:1], check_fine)[0])
    notes = [f"without extrapolation the 2x2 solve is {plain:.1e} from the converged value on "
             f"sample {indices[0]} (order {order:.2f}: the cross points of the coefficient make "
             "u singular)"]
    return Converged(fields={name: converged}, method=primary_text, convergence=check,
                     notes=notes)
