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

from pdesharp.audit.converged import (  # noqa: F401 - re-exported: the audit's public names
    AuditUnavailable,
    Converged,
    ConvergedSolver,
    Progress,
    check_record,
    is_builtin,
    nrmse_pair,
    stacked,
)
from pdesharp.task import Task


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
