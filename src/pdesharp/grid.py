"""The output grid: where a task's N values per space axis sit, and the value a solver argument
of kind ``grid`` receives. One place for the convention (``Task.grid``):

* ``cell_centres``: x_i = lo + (i + 1/2) (hi - lo) / N, i = 0..N-1 (PDEBench's convention);
* ``nodes``: x_i = lo + i (hi - lo) / (N - 1), both ends included.

A ``grid`` argument is the output grid's coordinates, float64: the array ``x`` [N] in 1D, the
tuple ``(x, y)`` of the two axes' 1D arrays ([Nx], [Ny]) in 2D, ``(x, y, z)`` in 3D; a solver
builds its mesh with ``np.meshgrid(x, y, indexing="ij")`` (array axis 0 is x). The evaluator
computes it from the task (domain, convention) and the reference's shape, never from the data
file, so it is the grid the prediction is compared on; a file whose stored coordinates disagree
is rejected (:func:`check_stored_coordinates`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# input keys of the grid's axes in the sealed child's inputs ("grid:x", "grid:y", ...)
GRID_KEY = "grid:{axis}"


def axis_points(lo: float, hi: float, n: int, convention: str) -> np.ndarray:
    """The ``n`` output points of one axis, float64."""
    lo, hi = float(lo), float(hi)
    if convention == "nodes":
        return np.linspace(lo, hi, n) if n > 1 else np.array([lo])
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


def output_grid(task, shape: Sequence[int]) -> list[np.ndarray]:
    """One coordinate array per space axis of ``task`` for a grid of ``shape`` (points per
    axis, in the order of ``equation.space``)."""
    axes = task.equation.space
    if len(shape) != len(axes):
        raise ValueError(f"a grid of shape {tuple(shape)} for the space axes {axes}")
    return [axis_points(*task.domain[a], int(n), task.grid) for a, n in zip(axes, shape)]


def grid_inputs(task, shape: Sequence[int]) -> dict[str, np.ndarray]:
    """The arrays of a ``grid`` argument, keyed as the sealed child receives them."""
    return {GRID_KEY.format(axis=a): p for a, p in zip(task.equation.space,
                                                       output_grid(task, shape))}


def grid_value(task, shape: Sequence[int]):
    """The value a ``grid`` argument receives: ``x`` in 1D, the tuple ``(x, y[, z])`` else."""
    pts = output_grid(task, shape)
    return pts[0] if len(pts) == 1 else tuple(pts)


def space_shape(task, field_shape: Sequence[int]) -> tuple[int, ...]:
    """Points per space axis of a reference field ([B, N...] steady, [B, T, N...] else)."""
    return tuple(int(n) for n in field_shape[(1 if task.steady else 2):])


def check_stored_coordinates(task, stored: dict[str, np.ndarray | None], shape, source) -> None:
    """A data file's stored coordinates (axis -> array or None) must be the task's output grid:
    a solver given the grid would otherwise be scored on other points. Raises ValueError."""
    for axis, pts in zip(task.equation.space, output_grid(task, shape)):
        got = stored.get(axis)
        if got is None:
            continue
        got = np.asarray(got, dtype=np.float64).ravel()
        lo, hi = task.domain[axis]
        # float32 storage: ~1e-7 of the extent
        if got.shape != pts.shape or np.max(np.abs(got - pts)) > 1e-6 * max(abs(hi - lo), 1.0):
            raise ValueError(
                f"{source}: the stored {axis} coordinates are not the task's output grid"
                f" ({len(pts)} {task.grid.replace('_', ' ')} of [{lo:g}, {hi:g}]); the solver's"
                " grid argument would not be where the reference values are")
