"""Converged CNS solutions: Fourier pseudo-spectral in primitive variables, ETDRK4, float64.

The cns1d task's viscous fluxes are weighted by the density, ``(ζ + 4η/3) ρ ∂x v``, so in the
primitive variables (ρ, v, p) the only second derivative is a constant diagonal one, μ ∂xx v
(μ = ζ + 4η/3), which an exponential integrator takes exactly::

    ∂t ρ = −∂x(ρ v)
    ∂t v = −v ∂x v − ∂x p / ρ + μ ∂xx v + μ (∂x ρ / ρ) ∂x v
    ∂t p = −v ∂x p − Γ p ∂x v + (Γ − 1) μ ρ (∂x v)²

(from ``∂t E + ∂x((E + p) v) = ∂x(μ ρ v ∂x v)`` with E = p/(Γ − 1) + ρv²/2: the viscous work
v ∂x(μ ρ ∂x v) goes to the kinetic energy, the rest μ ρ (∂x v)² heats). The remainder is explicit
with spectral derivatives on the 2/3-dealiased field; the step is the acoustic Courant step of
the current state, recomputed every output interval. At η = ζ = 0.1 the viscous length spans many
data cells, so the solution is smooth and the method converges spectrally in space: on the
shared dev file (2 samples, 1024 cells) the data grid and a grid twice as fine agree to 3e-7.

This replaced the float64 run of the project's finite-volume scheme on a 2x grid
(:mod:`.finite_volume`) as the default: that took ~140 s per sample (13 minutes for the two dev
samples on a loaded machine) for an error of ~1e-4 (its own convergence check, 1024 vs 2048 cells:
1.9e-4), where this takes seconds for ~1e-6; the two agree to 9.7e-5, the finite-volume run's own
error (the bench notes in bench/builtin_results.md). So ``--audit auto`` computes it.

The primary run is on the data's own grid (the output points are grid points: nothing is
interpolated at output). The convergence check repeats it on a grid half as fine, at the same
Courant number, so with twice the step: the difference is the coarser run's error in space and
time, an upper bound for the primary's (measured: 9e-6, where the primary is 3e-7 from a run on
twice the data's grid at half its Courant number).
"""

from __future__ import annotations

import math

import numpy as np

from pdesharp.audit.converged import AuditUnavailable, Converged, Progress, check_record
from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task

# the Courant number of the step dt = CFL h / max(|v| + c + |mu rho_x / rho|), taken at the start
# of each output interval: times 2 pi / 3 (the top kept wavenumber on the 2/3-rule grid) that is
# 1.68, against RK4's imaginary-axis limit 2.83, which leaves room for the speed to grow within
# an interval. The check's cells are twice as wide, so its step is twice as long too.
CFL = 0.8


def _grid(lo: float, hi: float, n: int):
    from pdesharp.data.generate.generic_symbolic import SpectralGrid
    from pdesharp.grid import axis_points

    return SpectralGrid((axis_points(lo, hi, n, "cell_centres"),), (hi - lo,))


def _run(initial: dict[str, np.ndarray], times: np.ndarray, lo: float, hi: float, mu: float,
         gamma: float, cfl: float) -> dict[str, np.ndarray]:
    """Frames [B, T, n] of rho, v, p from the initial values [B, n] at the n cell centres."""
    from pdesharp.data.generate.generic_time import _etd_coefficients, etdrk4_step

    n = initial["rho"].shape[1]
    grid = _grid(lo, hi, n)
    ik = 1j * grid.k[0]
    mask = grid.mask
    h = (hi - lo) / n
    lhat = np.stack([np.zeros_like(grid.k[0]), -mu * grid.k[0] ** 2, np.zeros_like(grid.k[0])])

    def rate(w: np.ndarray) -> np.ndarray:
        """The explicit remainder N(w) in Fourier space (w: [B, 3, modes], dealiased)."""
        rho, v, p, rx, vx, px = np.moveaxis(
            np.fft.irfft(np.concatenate([w, ik * w], axis=1), n, axis=-1), 1, 0)
        out = np.stack([-(rho * vx + v * rx),
                        -v * vx - px / rho + mu * rx * vx / rho,
                        -v * px - gamma * p * vx + (gamma - 1.0) * mu * rho * vx ** 2], axis=1)
        return np.fft.rfft(out, axis=-1) * mask

    w = np.fft.rfft(np.stack([initial[k] for k in ("rho", "v", "p")], axis=1), axis=-1) * mask
    frames = [np.stack([initial[k] for k in ("rho", "v", "p")], axis=1)]
    cache: dict[float, tuple] = {}
    for k in range(len(times) - 1):
        rho, v, p = (np.fft.irfft(w[:, j], n) for j in range(3))
        rx = np.fft.irfft(ik * w[:, 0], n)
        speed = float(np.max(np.abs(v) + np.sqrt(np.abs(gamma * p / rho)))
                      + np.max(np.abs(mu * rx / rho)))
        if not math.isfinite(speed) or np.any(rho <= 0) or np.any(p <= 0):
            raise AuditUnavailable(f"the spectral CNS run left the physical states (density or "
                                   f"pressure not positive) before t = {times[k]:g}")
        span = float(times[k + 1] - times[k])
        steps = max(1, math.ceil(span * speed / (cfl * h)))
        dt = span / steps
        key = round(dt, 15)
        if key not in cache:
            cache[key] = _etd_coefficients(lhat, dt)
        for _ in range(steps):  # autonomous: the stage times do not matter
            w = etdrk4_step(cache[key], w, 0.0, dt, lambda x, _t: rate(x))
        frames.append(np.fft.irfft(w, n, axis=-1))
    out = np.stack(frames, axis=1)  # [B, T, 3, n]
    if not np.all(np.isfinite(out)):
        raise AuditUnavailable("the spectral CNS run became non-finite")
    return {name: np.ascontiguousarray(out[:, :, j]) for j, name in enumerate(("rho", "v", "p"))}


def _halve(u: np.ndarray) -> np.ndarray:
    """[B, N] values -> [B, N/2] values at every other point, by Fourier truncation (the
    coarse grid's own initial data; a uniform periodic grid's offset does not matter here)."""
    from pdesharp.data.generate.generic import _fourier_resample

    return _fourier_resample(u, (u.shape[1] // 2,))


def _double(u: np.ndarray) -> np.ndarray:
    """The inverse transfer: trigonometric interpolation back onto every point."""
    from pdesharp.audit.spectral import fourier_refine

    return fourier_refine(u, 2, 1)


def solve_cns(task: Task, ref: ReferenceData, indices: list[int],
              progress: Progress) -> Converged:
    lo, hi = (float(v) for v in task.domain[task.equation.space[0]])
    gamma = float(task.equation.constants.get("Gamma", 5.0 / 3.0))
    mu = float(task.parameters["zeta"]) + 4.0 * float(task.parameters["eta"]) / 3.0
    initial = {k: ref.initial(k).astype(np.float64) for k in ("rho", "v", "p")}
    times = np.asarray(ref.t, dtype=np.float64)
    n = initial["rho"].shape[1]
    if n % 2:
        raise AuditUnavailable(f"the spectral CNS audit needs an even number of cells, not {n}")
    with np.errstate(all="ignore"):
        progress(f"float64 pseudo-spectral, primitive variables, on the data's {n} cells")
        primary = _run(initial, times, lo, hi, mu, gamma, CFL)
        progress(f"convergence check: the same on {n // 2} cells")
        half = _run({k: _halve(v) for k, v in initial.items()}, times, lo, hi, mu, gamma, CFL)
    check = {k: _double(v) for k, v in half.items()}
    for fields in (primary, check):
        for k in fields:
            fields[k][:, 0] = initial[k]  # frame 0 is the stored initial condition
    primary_text = (f"Fourier pseudo-spectral method in primitive variables (rho, v, p), 2/3 "
                    f"dealiasing, ETDRK4 with the viscous term mu*v_xx exact, float64, on the "
                    f"data's {n} cells, Courant number {CFL}, output times hit exactly")
    record = check_record(
        task, primary, check, indices, primary_text,
        f"the same method on {n // 2} cells (twice the spacing and the step)",
        note="the difference is the coarser run's error (space and time), an upper bound for "
             "the primary's")
    notes = []
    from pdesharp.audit.spectral import optional_rate

    rate = optional_rate(task, primary, times, progress, notes)
    return Converged(fields=primary, rate=rate, method=primary_text, convergence=record,
                     notes=notes)
