"""Converged CNS solutions: the project's finite-volume CNS scheme in float64 on a finer grid.

The viscosity of the cns1d task (η = ζ = 0.1, density-weighted) is too stiff for the generic
spectral generator (explicit steps of ~10⁻⁸ on a refined grid, and its linear part is not constant
for an exponential integrator), so the converged solution is the generator's own scheme
(:func:`pdesharp.data.generate.cns.simulate`: MUSCL + HLLC, predictor–corrector, operator-split
viscous sub-steps) run in float64 without the float32 rounding emulation, on a grid twice as fine
as the data's, with the output times hit exactly. The convergence check runs the same float64
scheme on the data's own grid: the difference over-estimates the fine solution's error (the
scheme is of order 1.2–1.6 here, so the fine error is about half of it), and it also separates
the reference's float32 arithmetic (reference vs this run) from its discretisation error.

Measured on the shared dev file (2 samples, t ∈ [0, 1]; bench notes in docs/data.md): 1024 vs
2048 cells differ by nRMSE 1.8–1.9e-4, 2048 vs 4096 by 0.6–0.8e-4, against a reference error of
3.2e-3 and 6.9e-3. A 4096-cell converged solution would cost about 8x the 2048 one (~20 minutes
for two samples here), which is why it is not the default.

Grid transfer: initial values are moved to the fine cell centres, and the fine solution back to
the data's centres, by 6-point Lagrange interpolation whose stencils are clipped at the ends of the
interval (the PDEBench initial data jump at the periodic boundary, see :mod:`.translation`).
"""

from __future__ import annotations

import numpy as np

from pdesharp.audit.converged import (
    AuditUnavailable,
    Converged,
    Progress,
    check_record,
    nrmse_pair,
    stacked,
)
from pdesharp.audit.translation import one_sided_interpolate
from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task

REFINE = 2
TRANSFER_POINTS = 6


def to_fine(u: np.ndarray, r: int) -> np.ndarray:
    """[B, N] cell-centre values -> [B, rN] values at the centres of the r-times finer cells."""
    n = u.shape[1]
    s = (np.arange(r * n) + 0.5) / r - 0.5  # fine centres in coarse index units
    return one_sided_interpolate(u, s, TRANSFER_POINTS)[0]


def to_coarse(u: np.ndarray, r: int) -> np.ndarray:
    """[..., rN] fine values -> [..., N] values at the coarse centres."""
    lead = u.shape[:-1]
    flat = u.reshape(-1, u.shape[-1])
    n = flat.shape[1] // r
    s = r * (np.arange(n) + 0.5) - 0.5  # coarse centres in fine index units
    return one_sided_interpolate(flat, s, TRANSFER_POINTS)[0].reshape(lead + (n,))


def _simulate(task: Task, initial: dict[str, np.ndarray], times: np.ndarray, r: int
              ) -> dict[str, np.ndarray]:
    from pdesharp.data.generate import cns

    lo, hi = (float(v) for v in task.domain[task.equation.space[0]])
    gamma = float(task.equation.constants.get("Gamma", 5.0 / 3.0))
    fine = {k: to_fine(v, r) if r > 1 else v for k, v in initial.items()}
    out = cns.simulate(fine, times, {"eta": task.parameters["eta"],
                                     "zeta": task.parameters["zeta"]},
                       x_range=(lo, hi), dtype=np.float64, gamma=gamma, clock="exact",
                       pdebench_rounding=False)
    bad = [k for k, v in out.items() if not np.all(np.isfinite(v))]
    if bad:
        raise AuditUnavailable(f"the float64 CNS run on {r}x the data's grid became non-finite "
                               f"({', '.join(bad)}); no converged solution")
    result = {k: to_coarse(v, r) if r > 1 else v for k, v in out.items()}
    for k in result:
        result[k][:, 0] = initial[k]
    return result


def solve_cns(task: Task, ref: ReferenceData, indices: list[int],
              progress: Progress) -> Converged:
    import warnings

    initial = {k: ref.initial(k).astype(np.float64) for k in ("rho", "v", "p")}
    times = np.asarray(ref.t, dtype=np.float64)
    n = initial["rho"].shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a stalled sample is not "converged"
        try:
            progress(f"float64 finite volumes on {REFINE * n} cells ({REFINE}x the data)")
            fine = _simulate(task, initial, times, REFINE)
            progress(f"convergence check: float64 finite volumes on the data's {n} cells")
            coarse = _simulate(task, initial, times, 1)
        except RuntimeWarning as exc:
            raise AuditUnavailable(f"the float64 CNS run failed: {exc}") from None
    primary_text = (f"pdesharp's CNS finite-volume scheme (MUSCL + HLLC, split viscous "
                    f"sub-steps) in float64 on {REFINE * n} cells ({REFINE}x the data), output "
                    "times hit exactly")
    check = check_record(
        task, fine, coarse, indices, primary_text,
        f"the same float64 scheme on the data's {n} cells",
        note="the difference is the coarser run's error, an upper bound for the primary's "
             "(about twice it at the observed order 1.2-1.6)")
    same_scheme = nrmse_pair(stacked(task, coarse), stacked(task, ref.fields)).mean()
    notes = [f"the reference's own scheme in float64 on its own grid differs from the reference "
             f"by nRMSE {same_scheme:.2e} (float32 arithmetic and clock) and from the converged "
             f"solution by {check.difference:.2e} (discretisation)"]
    from pdesharp.audit.spectral import optional_rate

    rate = optional_rate(task, fine, times, progress, notes)
    return Converged(fields=fine, rate=rate, method=primary_text, convergence=check,
                     notes=notes)
