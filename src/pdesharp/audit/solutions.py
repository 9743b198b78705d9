"""How the audit obtains a converged solution for a task: one solver per method family.

Each solver takes the task, the reference data of the audited samples (their stored initial
conditions, coefficients and times) and returns a :class:`Converged`: float64 fields shaped like
the reference, the time derivative at the stored frames when it has it (for the clock fit), and
its convergence check. Which solver a task gets (:func:`solver_for`):

* ``advection`` (built-in): the exact solution, translation of the initial data
  (:mod:`.translation`);
* ``cns1d`` (built-in): the Fourier pseudo-spectral method in primitive variables with the
  viscous term exact (:mod:`.cns_spectral`; the project's finite-volume CNS scheme in float64 on a
  refined grid, :mod:`.finite_volume`, is the slower independent check it replaced);
* ``darcy`` (built-in): refined finite-volume elliptic solves with Richardson extrapolation
  (:mod:`.elliptic`);
* everything the generic generator covers (periodic, time-dependent, 1D/2D: built-in Burgers and
  reaction–diffusion, and users' tasks): the Fourier spectral method of lines at a finer grid and
  tighter tolerance (:mod:`.spectral`), with an exact Hopf–Cole cross-check when the equation is
  viscous Burgers;
* a file ``pdesharp data generate`` wrote for a task none of these cover (walls, 1D or 2D):
  its own generator run again from the same analytic initial data, two resolution levels finer
  (:mod:`.regenerate`; needs the file, so only when :func:`solver_for` is given its path);
* anything else: :class:`AuditUnavailable`, whose message says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from pdesharp.audit.records import ConvergenceCheck, CrossCheck
from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task

Progress = Callable[[str], None]


class AuditUnavailable(ValueError):
    """No converged solution can be computed for this task; the message says why."""


@dataclass
class Converged:
    fields: dict[str, np.ndarray]  # unknown -> float64 array shaped like the reference field
    method: str  # one sentence: what was computed, at which resolution and tolerance
    convergence: ConvergenceCheck
    rate: dict[str, np.ndarray] | None = None  # ∂t of each field at the stored frames
    cross_checks: list[CrossCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class ConvergedSolver(Protocol):
    def __call__(self, task: Task, ref: ReferenceData, indices: list[int],
                 progress: Progress) -> Converged: ...


def is_builtin(task: Task, name: str) -> bool:
    """``task`` is the built-in task ``name`` itself (a user YAML reusing the name is not)."""
    from pdesharp.task import builtin_task_names, load_task

    return task.name == name and name in builtin_task_names() and task == load_task(name)


def solver_for(task: Task, path=None) -> ConvergedSolver:
    """The converged-solution method for ``task`` (and its data file ``path``, when given: a
    generated file may be audited by regeneration); :class:`AuditUnavailable` names why not."""
    try:
        return _task_solver(task)
    except AuditUnavailable as exc:
        if path is None:
            raise
        from pdesharp.audit import regenerate

        ok, why = regenerate.regenerable(task, path)
        if not ok:
            raise AuditUnavailable(f"{exc}. Nor can the file be audited by regenerating it: "
                                   f"{why}") from None
        return regenerate.solver(path)


def _task_solver(task: Task) -> ConvergedSolver:
    if is_builtin(task, "advection"):
        from pdesharp.audit.translation import solve_advection
        return solve_advection
    if is_builtin(task, "cns1d"):
        from pdesharp.audit.cns_spectral import solve_cns
        return solve_cns
    if is_builtin(task, "darcy"):
        from pdesharp.audit.elliptic import solve_darcy
        return solve_darcy
    from pdesharp.data.generate.generic import UnsupportedTask, check_supported

    try:
        check_supported(task)
    except UnsupportedTask as exc:
        raise AuditUnavailable(
            f"no converged solution can be computed for task {task.name!r}: {exc}. The audit "
            "covers the five built-in tasks and the generic spectral generator's class "
            "(periodic, time-dependent, 1D or 2D, no coefficient fields)") from None
    from pdesharp.audit.spectral import solve_spectral
    return solve_spectral


def nrmse_pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-sample nRMSE of ``a`` against ``b`` (CodePDE's formula, ``b`` the normaliser)."""
    axes = tuple(range(1, b.ndim))
    return np.sqrt(np.mean((a - b) ** 2, axis=axes)) / np.sqrt(np.mean(b ** 2, axis=axes))


def stacked(task: Task, fields: dict[str, np.ndarray]) -> np.ndarray:
    """Fields stacked as the evaluator scores them (the solver's return order)."""
    names = task.solver.returns
    if len(names) == 1:
        return fields[names[0]]
    return np.stack([fields[n] for n in names], axis=-1)


def check_record(task: Task, primary: dict[str, np.ndarray], other: dict[str, np.ndarray],
                 indices: list[int], primary_text: str, other_text: str, *,
                 order_ratio: float | None = None, note: str = "") -> ConvergenceCheck:
    """The convergence record of the converged solution ``primary`` against a second
    computation ``other`` of the same samples at another resolution.

    The difference estimates the error of the less accurate of the two, so it bounds the
    primary's error when ``other`` is the coarser run and estimates it when ``other`` is finer.
    ``order_ratio`` (2^p − 1 for a factor-2 refinement of observed order p, ``other`` coarser)
    sharpens the estimate to difference / (2^p − 1).
    """
    diff = nrmse_pair(stacked(task, other), stacked(task, primary))
    mean = float(diff.mean())
    estimate = mean / order_ratio if order_ratio and order_ratio > 1 else mean
    return ConvergenceCheck(primary=primary_text, check=other_text, samples=list(indices),
                            difference=mean, max_difference=float(diff.max()),
                            estimated_error=float(estimate), note=note)
