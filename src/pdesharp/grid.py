"""The output grid: where a task's N values per space axis sit, and the value a solver argument
of kind ``grid`` receives. One place for the convention (``Task.grid``):

* ``cell_centres``: x_i = lo + (i + 1/2) (hi - lo) / N, i = 0..N-1 (PDEBench's convention);
* ``nodes``: x_i = lo + i (hi - lo) / (N - 1), both ends included;
* ``periodic_nodes``: x_i = lo + i (hi - lo) / N, i = 0..N-1, the right end left out (it is
  the left end again on a periodic axis): exponax's and APEBench's grid, numpy's
  ``linspace(lo, hi, N, endpoint=False)``.

A ``grid`` argument is the output grid's coordinates, float64: the array ``x`` [N] in 1D, the
tuple ``(x, y)`` of the two axes' 1D arrays ([Nx], [Ny]) in 2D, ``(x, y, z)`` in 3D; a solver
builds its mesh with ``np.meshgrid(x, y, indexing="ij")`` (array axis 0 is x). The evaluator
computes it from the task (domain, convention) and the reference's shape, never from the data
file, so it is the grid the prediction is compared on; a file whose stored coordinates disagree
is rejected (:func:`check_stored_coordinates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# input keys of the grid's axes in the sealed child's inputs ("grid:x", "grid:y", ...)
GRID_KEY = "grid:{axis}"


@dataclass(frozen=True)
class Convention:
    """Where N points sit on [lo, hi]: x_i = lo + (i + offset) h, h = (hi - lo) / gaps(N)."""

    name: str  # Task.grid
    words: str  # "cell centres", "nodes"
    offset: float  # 1/2 for cell centres, 0 for nodes
    index: str  # the offset as a prompt writes it: "(i + 1/2)", "i"
    ends_included: bool

    def gaps(self, n: int) -> int:
        """How many spacings h the interval holds: N cells, or N - 1 between N nodes."""
        return max(n - 1, 1) if self.ends_included else n

    def spacing(self, lo: float, hi: float, n: int) -> float:
        return (float(hi) - float(lo)) / self.gaps(n)


CONVENTIONS = {
    "cell_centres": Convention("cell_centres", "cell centres", 0.5, "(i + 1/2)", False),
    "nodes": Convention("nodes", "nodes", 0.0, "i", True),
    "periodic_nodes": Convention("periodic_nodes", "nodes (the right end left out)", 0.0, "i",
                                 False),
}


def convention(name: str) -> Convention:
    """The convention of ``Task.grid`` (``cell_centres`` or ``nodes``)."""
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"unknown grid convention {name!r}; use one of "
                         f"{', '.join(CONVENTIONS)}") from None


def axis_points(lo: float, hi: float, n: int, convention_name: str) -> np.ndarray:
    """The ``n`` output points of one axis, float64."""
    c = convention(convention_name)
    lo, hi = float(lo), float(hi)
    if c.ends_included:  # linspace: both ends exactly
        return np.linspace(lo, hi, n) if n > 1 else np.array([lo])
    return lo + (np.arange(n) + c.offset) * c.spacing(lo, hi, n)


def refined_points(lo: float, hi: float, n: int, factor: int, convention_name: str
                   ) -> np.ndarray:
    """``factor * n`` points of spacing h / factor laid so that point ``factor * i`` is output
    point i (a finer grid that contains the output grid, periodic extension past ``hi``)."""
    c = convention(convention_name)
    h = c.spacing(lo, hi, n)
    return float(lo) + c.offset * h + np.arange(factor * n) * h / factor


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
