"""Converged solutions by the generic generator's Fourier spectral method of lines.

Every periodic time-dependent task the generic generator covers (built-in Burgers and
reaction–diffusion, users' tasks) is solved from the stored initial conditions with
:func:`pdesharp.data.generate.generic.simulate_task`: float64, an internal grid ``oversample``
times finer than the data's, 2/3 dealiasing, ETDRK4 with step doubling to a relative Richardson
error ``tol`` (or DOP853 at ``rtol`` for non-stiff problems). The convergence check repeats the
computation on a grid half as fine with a 10x looser tolerance; since the primary run is at least
as accurate, the difference over-estimates its error (spectral convergence makes the primary's
own error far smaller, and the Hopf–Cole check below confirms it for Burgers).

The initial data are the trigonometric interpolant of the stored samples. For the PDEBench sets
with a small jump of the periodic continuation at the boundary, the diffusion in Burgers and
reaction–diffusion damps the resulting high modes within a few output steps (ν k² ≥ 10⁴ at the
grid scale), and frame 0 is the stored initial condition itself.

When the task's equation is viscous Burgers, u_t + (u²/2)_x = ν u_xx in 1D, the exact Hopf–Cole
solution of the same initial data (:mod:`.hopf_cole`) is evaluated at a few frames of every
sample as an independent cross-check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from pdesharp.audit.converged import (
    AuditUnavailable,
    Converged,
    Progress,
    check_record,
    is_builtin,
    nrmse_pair,
)
from pdesharp.audit.records import CrossCheck
from pdesharp.data.reference import ReferenceData
from pdesharp.grid import axis_points, refined_points
from pdesharp.task import Task

CHUNK_BYTES = 256 * 2**20  # internal-grid frames held at once (samples are run in batches)
PROGRESS_BATCHES = 4  # batches at least, each reported as it starts ("samples 3-4 of 8")
HOPF_COLE_FRAMES = 5


@dataclass(frozen=True)
class Plan:
    oversample: int  # internal grid = oversample x data grid (primary run)
    method: str = "auto"
    tol: float = 1e-10  # ETDRK4 Richardson tolerance (relative)
    rtol: float = 1e-12  # DOP853 tolerance

    def coarser(self) -> Plan:
        """The convergence check: half the grid refinement, 10x (ETDRK4) / 100x (DOP853) looser."""
        return Plan(max(1, self.oversample // 2), self.method, self.tol * 10, self.rtol * 100)

    def describe(self, n: int) -> str:
        tol = f"ETDRK4 tolerance {self.tol:g}" if self.method == "etdrk4" else \
            f"ETDRK4 tolerance {self.tol:g} / DOP853 rtol {self.rtol:g} ({self.method})"
        return f"a {self.oversample * n}-point grid ({self.oversample}x the data's), {tol}"


# Measured on the shared dev files (docs/data.md, "Reference audit"): the primary Burgers run
# agrees with a 4096-point run at tolerance 1e-8 to nRMSE 1e-9, and with Hopf–Cole to 1e-10.
PLANS = {
    "burgers": Plan(oversample=2, method="etdrk4", tol=1e-6),
    "reacdiff1d": Plan(oversample=2, method="etdrk4", tol=1e-10),
}
DEFAULT_PLAN = Plan(oversample=4, method="auto", tol=1e-10, rtol=1e-12)


def plan_for(task: Task) -> Plan:
    for name, plan in PLANS.items():
        if is_builtin(task, name):
            return plan
    oversample = max(4, task.generator.oversample if task.generator else 4)
    return Plan(oversample=oversample, method=DEFAULT_PLAN.method, tol=DEFAULT_PLAN.tol,
                rtol=DEFAULT_PLAN.rtol)


def _run(task: Task, initial: dict[str, np.ndarray], times: np.ndarray, plan: Plan,
         progress: Progress, label: str) -> dict[str, np.ndarray]:
    from pdesharp.data.generate.generic import simulate_task

    first = next(iter(initial.values()))
    b, spatial = first.shape[0], first.shape[1:]
    n_unknowns = len(initial)
    fine_points = int(np.prod(spatial)) * plan.oversample ** len(spatial)
    per_sample = 8 * len(times) * n_unknowns * fine_points
    # at least PROGRESS_BATCHES batches, so that k of N moves while the audit works (the
    # work per step is array work beyond a sample or two: smaller batches cost little)
    batch = max(1, min(b, CHUNK_BYTES // max(per_sample, 1), -(-b // PROGRESS_BATCHES)))
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, b, batch):
        stop = min(b, start + batch)
        progress(f"{label}: samples {start + 1}-{stop} of {b}")
        chunk = {k: v[start:stop] for k, v in initial.items()}
        parts.append(simulate_task(task, chunk, times, nx=plan.oversample * spatial[0],
                                   method=plan.method, rtol=plan.rtol, tol=plan.tol))
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def fourier_refine(arr: np.ndarray, factor: int, n_axes: int) -> np.ndarray:
    """Trigonometric interpolation of ``arr`` [..., N(, N)] onto a grid ``factor`` times finer on
    its last ``n_axes`` axes, same origin (every ``factor``-th point is an original one). The
    Nyquist mode of an even grid is dropped."""
    out = np.asarray(arr, dtype=np.float64)
    for axis in range(out.ndim - n_axes, out.ndim):
        n = out.shape[axis]
        spec = np.fft.fft(out, axis=axis)
        m = np.fft.fftfreq(n, 1.0 / n).astype(int)
        keep = np.nonzero(2 * np.abs(m) < n)[0]
        shape = list(out.shape)
        shape[axis] = factor * n
        fine = np.zeros(shape, dtype=complex)
        src = [slice(None)] * out.ndim
        dst = [slice(None)] * out.ndim
        src[axis], dst[axis] = keep, m[keep] % (factor * n)
        fine[tuple(dst)] = spec[tuple(src)]
        out = np.real(np.fft.ifft(fine, axis=axis)) * factor
    return out


def optional_rate(task, fields, times, progress, notes: list[str]):
    """:func:`spectral_rate` of a converged solution for the clock fit, or None with a note
    saying why (the fit is optional: an audit without it is still an audit)."""
    try:
        progress("time derivative at the stored frames")
        return spectral_rate(task, fields, times)
    except Exception as exc:  # noqa: BLE001 - the clock fit is optional
        notes.append(f"no time-offset fit: the right-hand side could not be evaluated ({exc})")
        return None


def spectral_rate(task: Task, fields: dict[str, np.ndarray], times: np.ndarray
                  ) -> dict[str, np.ndarray]:
    """u_t at every stored frame from the task's own right-hand side, with spectral derivatives
    on a grid twice as fine as the data's (so the derivatives keep every mode of the data)."""
    from pdesharp.data.generate.generic_symbolic import SpectralGrid, compile_system

    system = compile_system(task)
    dim = system.dim
    first = fields[system.unknowns[0]]
    shape = first.shape[2:]
    points, lengths = [], []
    for axis, n in zip(task.equation.space, shape):
        lo, hi = (float(v) for v in task.domain[axis])
        points.append(refined_points(lo, hi, n, 2, task.grid))  # the data points too
        lengths.append(hi - lo)
    grid = SpectralGrid(tuple(points), tuple(lengths))
    rate = {name: np.empty_like(fields[name]) for name in system.unknowns}
    sub = (slice(None),) + (slice(None, None, 2),) * dim
    for k, t in enumerate(times):
        fine = [fourier_refine(fields[name][:, k], 2, dim) for name in system.unknowns]
        for name, value in zip(system.unknowns, system.rhs(fine, float(t), grid, True)):
            rate[name][:, k] = value[sub]
    return rate


def burgers_viscosity(task: Task) -> float | None:
    """ν if the task's equation is u_t + (u²/2)_x = ν u_xx (1D, one unknown), else None."""
    eq = task.equation
    if len(eq.unknowns) != 1 or len(eq.space) != 1 or task.steady:
        return None
    system = task.system
    u = system.function(eq.unknowns[0])
    t, x = system.t, system.coords[0]
    values = {sp.Symbol(k, real=True): sp.Float(v) for k, v in task.constants.items()}
    expr = system.exprs[0].doit().xreplace(values)
    rest = sp.expand(expr - sp.diff(u, t) - u * sp.diff(u, x))
    nu = sp.Wild("nu", exclude=[u, t, x])
    match = rest.match(nu * sp.diff(u, x, 2))
    if not match or not match[nu].is_number or float(match[nu]) >= 0:
        return None
    return -float(match[nu])


def hopf_cole_check(task: Task, ref: ReferenceData, indices: list[int], values: np.ndarray,
                    nu: float, progress: Progress) -> CrossCheck:
    from pdesharp.audit.hopf_cole import solve as hopf_cole

    name = task.equation.unknowns[0]
    lo, hi = (float(v) for v in task.domain[task.equation.space[0]])
    n = values.shape[2]
    x = axis_points(lo, hi, n, task.grid)
    times = np.asarray(ref.t, dtype=np.float64)
    frames = sorted({int(round(f)) for f in np.linspace(1, len(times) - 1, HOPF_COLE_FRAMES)})
    u0 = ref.initial(name).astype(np.float64)
    diffs = []
    for b in range(u0.shape[0]):
        progress(f"Hopf–Cole cross-check: sample {b + 1} of {u0.shape[0]}")
        exact = hopf_cole(u0[b], x, times[frames], nu, length=hi - lo)
        diffs.append(float(nrmse_pair(values[b:b + 1, frames], exact[None])[0]))
    return CrossCheck(
        name="exact Hopf–Cole solution of the same (trigonometrically interpolated) initial data",
        samples=list(indices), frames=frames, difference=float(np.mean(diffs)),
        max_difference=float(np.max(diffs)),
        note="heat-kernel quadrature in log-sum-exp form, 16384 points per period")


def solve_spectral(task: Task, ref: ReferenceData, indices: list[int],
                   progress: Progress) -> Converged:
    plan = plan_for(task)
    unknowns = task.equation.unknowns
    missing = [u for u in unknowns if u not in ref.fields]
    if missing:
        raise AuditUnavailable(f"the data stores no initial values of {missing}, which the "
                               "task's equations evolve")
    initial = {u: ref.initial(u).astype(np.float64) for u in unknowns}
    times = np.asarray(ref.t, dtype=np.float64)
    n = next(iter(initial.values())).shape[1]
    check_plan = plan.coarser()
    try:
        primary = _run(task, initial, times, plan, progress, "converged solution")
        coarse = _run(task, initial, times, check_plan, progress, "convergence check")
    except ValueError as exc:  # UnsupportedTask, IntegrationFailed: the generator says why
        raise AuditUnavailable(f"the spectral method of lines cannot solve this task from "
                               f"these data: {exc}") from None
    convergence = check_record(
        task, primary, coarse, indices, plan.describe(n), check_plan.describe(n),
        note="the primary run is the finer one; the difference over-estimates its error")
    progress("time derivative at the stored frames")
    rate = spectral_rate(task, primary, times)
    cross = []
    nu = burgers_viscosity(task)
    if nu is not None:
        cross.append(hopf_cole_check(task, ref, indices, primary[unknowns[0]], nu, progress))
    method = (f"Fourier pseudo-spectral method of lines (pdesharp's generic generator) in "
              f"float64 on {plan.describe(n)}")
    return Converged(fields=primary, rate=rate, method=method, convergence=convergence,
                     cross_checks=cross)
