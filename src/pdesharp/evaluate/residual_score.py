"""The residual score: the PDE's residual (:mod:`.residual`) plus the prediction's mismatch with
the initial and boundary data the task gives (:mod:`.given_data`). Composed here so that the
two parts, which share the residual's grid evaluator, do not import each other."""

from __future__ import annotations

import numpy as np

from pdesharp.data.reference import ReferenceData
from pdesharp.evaluate.given_data import boundary_mismatch, initial_mismatch
from pdesharp.evaluate.residual import ResidualError, residual_per_equation
from pdesharp.task import Task


def residual(task: Task, fields: dict[str, np.ndarray], ref: ReferenceData) -> float:
    """The residual score: the mean normalised PDE residual over samples and equations plus the
    prediction's mismatch with the given initial and boundary data
    (:mod:`pdesharp.evaluate.given_data`), so that an exact solution of the PDE that ignores
    the given data scores no better than its mismatch (0 = the whole problem holds)."""
    return sum(residual_parts(task, fields, ref).values())


def residual_parts(task: Task, fields: dict[str, np.ndarray], ref: ReferenceData
                   ) -> dict[str, float]:
    """The three terms of :func:`residual`: ``pde``, ``initial`` and ``boundary``."""
    missing = [u for u in task.system.unknowns if u not in fields]
    if missing:
        raise ResidualError(f"the residual needs every unknown; the prediction lacks {missing}")
    return {"pde": float(np.mean(residual_per_equation(task, fields, ref))),
            "initial": initial_mismatch(task, fields, ref),
            "boundary": boundary_mismatch(task, fields, ref)}
