"""What every method of the audit returns (:mod:`.solutions` picks the method): the converged
solution (:class:`Converged`) and its convergence record (:func:`check_record`), with the
nRMSE they share. Kept apart from the choice of method so that the methods (:mod:`.spectral`,
:mod:`.translation`, ...) and the dispatcher that imports them do not import each other."""

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
