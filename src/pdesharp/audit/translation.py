"""The exact solution of linear advection u_t + β u_x = 0: the initial data, translated.

What "converged" means here. The solution is u(x, t) = u0(x − βt), so the only approximation is
reading the initial *function* from its samples at the cell centres. PDEBench's initial data are
sums of sines whose wavenumbers use x_last − x_first instead of the period, so u0 is smooth on
the open interval but, continued periodically, jumps by about |u0'|·Δx at the boundary (the first
and last samples are equal where their neighbours differ by u0'·Δx). The exact solution carries
that jump along. The converged solution is therefore the exact translation of the smooth
interpolant of the samples on each side of the boundary: 8-point Lagrange interpolation whose
stencil never crosses the boundary (up to half a cell of extrapolation at the ends). Where the
data are smooth and periodic, this is simply a high-order interpolant.

Checks: the 6-point interpolant (convergence in the interpolation order) and, as a cross-check,
the band-limited periodic reading of the samples (trigonometric interpolation, what a Fourier
solver sees): the two readings differ only near the translated jump, and their difference is the
ambiguity of "the" exact solution that the samples leave.
"""

from __future__ import annotations

import numpy as np

from pdesharp.audit.converged import Converged, Progress, check_record, nrmse_pair
from pdesharp.audit.records import CrossCheck
from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task

ORDER, CHECK_ORDER = 8, 6


def _weights(offset: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Lagrange weights and their derivatives for nodes 0..p−1 at positions ``offset`` [M]."""
    nodes = np.arange(p, dtype=float)
    w = np.ones((p, offset.size))
    dw = np.zeros((p, offset.size))
    for a in range(p):
        for b in range(p):
            if b != a:
                w[a] *= (offset - nodes[b]) / (nodes[a] - nodes[b])
        for c in range(p):
            if c == a:
                continue
            term = np.full(offset.size, 1.0 / (nodes[a] - nodes[c]))
            for b in range(p):
                if b not in (a, c):
                    term *= (offset - nodes[b]) / (nodes[a] - nodes[b])
            dw[a] += term
    return w, dw


def one_sided_interpolate(u: np.ndarray, s: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Values and d/ds of the p-point interpolant of ``u`` [B, N] at fractional indices ``s`` [M]
    (node i at s = i); stencils are clipped into 0..N−1, never wrapped around."""
    n = u.shape[1]
    first = np.clip(np.floor(s).astype(int) - p // 2 + 1, 0, n - p)
    w, dw = _weights(s - first, p)
    value = np.zeros((u.shape[0], s.size))
    slope = np.zeros_like(value)
    for a in range(p):
        column = u[:, first + a]
        value += w[a] * column
        slope += dw[a] * column
    return value, slope


def translate(u0: np.ndarray, times: np.ndarray, beta: float, x_lo: float, length: float,
              p: int = ORDER) -> tuple[np.ndarray, np.ndarray]:
    """u0 [B, N] (cell-centre samples) translated by β·t: values and u_t, each [B, T, N]."""
    n = u0.shape[1]
    dx = length / n
    x = x_lo + (np.arange(n) + 0.5) * dx
    values = np.empty((u0.shape[0], len(times), n))
    rates = np.empty_like(values)
    for k, t in enumerate(times):
        y = x_lo + np.mod(x - beta * t - x_lo, length)  # source points in [x_L, x_R)
        v, dv = one_sided_interpolate(u0, (y - x_lo) / dx - 0.5, p)
        values[:, k], rates[:, k] = v, -beta * dv / dx
    return values, rates


def translate_band_limited(u0: np.ndarray, times: np.ndarray, beta: float,
                           length: float) -> np.ndarray:
    """The trigonometric interpolant of u0 translated by β·t (exact in Fourier space)."""
    n = u0.shape[1]
    spec = np.fft.rfft(u0, axis=1)
    k = 2.0 * np.pi * np.fft.rfftfreq(n, length / n)
    if n % 2 == 0:
        spec[:, -1] = 0.0  # the Nyquist mode has no unique translation
    phase = np.exp(-1j * np.outer(times, k) * beta)  # [T, modes]
    return np.fft.irfft(spec[:, None, :] * phase[None], n=n, axis=2)


def boundary_jump(u0: np.ndarray, p: int = ORDER) -> np.ndarray:
    """Per sample: the jump of the periodic continuation at the boundary, |u(x_L⁺) − u(x_R⁻)|,
    each side extrapolated half a cell from its own samples."""
    n = u0.shape[1]
    left, _ = one_sided_interpolate(u0, np.array([-0.5]), p)
    right, _ = one_sided_interpolate(u0, np.array([n - 0.5]), p)
    return np.abs(left - right)[:, 0]


def solve_advection(task: Task, ref: ReferenceData, indices: list[int],
                    progress: Progress) -> Converged:
    name = task.equation.unknowns[0]
    beta = float(task.parameters["beta"])
    lo, hi = (float(v) for v in task.domain[task.equation.space[0]])
    length = hi - lo
    u0 = ref.initial(name).astype(np.float64)
    times = np.asarray(ref.t, dtype=np.float64)
    progress(f"exact translation of {u0.shape[0]} initial conditions to {len(times)} times")
    values, rates = translate(u0, times, beta, lo, length, ORDER)
    coarse, _ = translate(u0, times, beta, lo, length, CHECK_ORDER)
    values[:, 0] = coarse[:, 0] = u0  # frame 0 is the stored initial condition itself
    band = translate_band_limited(u0, times, beta, length)
    band[:, 0] = u0
    primary_text = f"exact translation u0(x − βt), β = {beta:g}, of the {ORDER}-point one-sided " \
                   "Lagrange interpolant of the stored initial condition"
    check = check_record(task, {name: values}, {name: coarse}, indices, primary_text,
                         f"the same with the {CHECK_ORDER}-point interpolant",
                         note="interpolation orders 8 and 6; the difference (a conservative "
                              "estimate) is concentrated at the translated boundary jump")
    diff = nrmse_pair(band, values)
    jump = boundary_jump(u0)
    scale = np.max(np.abs(u0), axis=1)
    cross = CrossCheck(
        name="band-limited periodic reading of the initial data (trigonometric interpolation, "
             "translated exactly)",
        samples=list(indices), frames=list(range(len(times))), difference=float(diff.mean()),
        max_difference=float(diff.max()),
        note="the two readings of the same samples differ near the translated boundary jump: "
             "this is the ambiguity of the exact solution that the stored samples leave")
    notes = [f"the periodic continuation of the stored initial conditions jumps at the "
             f"boundary by up to {float(np.max(jump / np.maximum(scale, 1e-300))):.1e} of "
             f"max|u0| (median {float(np.median(jump / np.maximum(scale, 1e-300))):.1e}); the "
             "exact solution translates that jump"]
    return Converged(fields={name: values}, rate={name: rates}, method=primary_text,
                     convergence=check, cross_checks=[cross], notes=notes)
