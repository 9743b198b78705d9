"""Wall conditions of a task on a Chebyshev box: which collocation values they fix, and their
values at time t.

Each condition reads ``a*u + b*du/d(axis) = g`` on one side of one axis (:mod:`pdesharp.boundary`;
``a``, ``b`` constants, ``g`` a function of time and of the coordinate along the side). The
values of u on a side with a condition are not evolved: at every right-hand-side evaluation they
are solved from the conditions, line by line along each axis in turn (x first, then y: a corner
takes the y conditions, computed from x-wall values that already hold the x conditions). On a
line the two end values solve a 2x2 linear system (1x1 if one side has no condition: an outflow
side, whose end value evolves with the PDE).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from pdesharp.boundary import task_boundary
from pdesharp.data.generate.chebyshev import ChebyshevBox
from pdesharp.equation import array_function
from pdesharp.task import Task


def blas_threads(limit: int | None) -> AbstractContextManager:
    """BLAS/OpenMP threads capped at ``limit`` inside the block (None: the library's own):
    the walled generators' matrices are small, and threads only cost there. threadpoolctl is
    an optional speed-up, not a requirement."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    return nullcontext() if limit is None else threadpool_limits(limit)


@dataclass(frozen=True)
class WallCondition:
    """``a*u + b*du/d(axis) = g(t, coordinate along the side)`` for one unknown on one side."""

    a: float
    b: float
    g_fn: Any  # lambdified g(t, *space coordinates); the side's own coordinate is already fixed
    homogeneous: bool  # g == 0

    def g(self, t: float, coords: list) -> np.ndarray:
        """g at time t and the space coordinates ``coords`` (arrays or numbers, one per axis)."""
        return np.asarray(self.g_fn(t, *coords), dtype=float)


class WallConditions:
    """The conditions of every unknown, ``sides[k][a][s]`` for unknown k, axis a, side s (None
    where the side has none), and their use on a :class:`.chebyshev.ChebyshevBox`."""

    def __init__(self, task: Task, unknowns):
        spec = task_boundary(task)
        space = task.equation.space
        t = sp.Symbol(task.equation.time or "t", real=True)
        xs = [sp.Symbol(a, real=True) for a in space]
        values = {sp.Symbol(k, real=True): v for k, v in task.constants.items()}
        self.dim = len(space)
        self.ends = [tuple(float(v) for v in task.domain[a]) for a in space]
        self.sides: list[list[list[WallCondition | None]]] = []
        for u in unknowns:
            per_axis = []
            for axis in space:
                row: list[WallCondition | None] = []
                for side in (0, 1):
                    c = spec.condition(u, axis, side)
                    if c is None:
                        row.append(None)
                        continue
                    a, b = (float(sp.sympify(e).subs(values)) for e in (c.a, c.b))
                    g = sp.sympify(c.g).subs(values)
                    row.append(WallCondition(a, b, array_function([t, *xs], g),
                                             bool(g == 0)))
                per_axis.append(row)
            self.sides.append(per_axis)

    @property
    def conds(self) -> list[list[tuple | None]]:
        """1D view: per unknown, ``(a, b, g(t))`` or None for the low and the high end."""
        lo, hi = self.ends[0]
        return [[None if c is None else (c.a, c.b, (lambda t, c=c, x=x: c.g(t, [x])))
                 for c, x in zip(per_axis[0], (lo, hi))] for per_axis in self.sides]

    def constrained(self, k: int, axis: int = 0) -> list[int]:
        return [s for s in (0, 1) if self.sides[k][axis][s] is not None]

    def side_values(self, cond: WallCondition, axis: int, side: int, t: float,
                    others: list[np.ndarray]) -> np.ndarray:
        """g on the side at time t, on the tensor grid of the other axes' points ``others``
        (shape ``[len(p) for p in others]``)."""
        coords: list[Any] = []
        rest = iter(range(len(others)))
        for a in range(self.dim):
            if a == axis:
                coords.append(self.ends[a][side])
            else:
                j = next(rest)
                shape = [1] * len(others)
                shape[j] = others[j].size
                coords.append(others[j].reshape(shape))
        return np.broadcast_to(cond.g(t, coords), tuple(p.size for p in others))

    def free_mask(self, box: ChebyshevBox) -> np.ndarray:
        """[n_u, *shape]: True where a value is evolved (not on a side with a condition)."""
        mask = np.ones((len(self.sides),) + box.shape, dtype=bool)
        for k in range(len(self.sides)):
            for a in range(self.dim):
                for s in self.constrained(k, a):
                    index = [k] + [slice(None)] * self.dim
                    index[a + 1] = 0 if s == 0 else -1
                    mask[tuple(index)] = False
        return mask

    def _plan(self, box: ChebyshevBox) -> list:
        """Per unknown and axis with conditions: (k, axis, end indices, inverse of the end
        block, the rows' other entries, the conditions, the other axes' points)."""
        key = id(box)
        if getattr(self, "_plan_for", None) != key:
            plan = []
            for k in range(len(self.sides)):
                for a in range(self.dim):
                    sides = self.constrained(k, a)
                    if not sides:
                        continue
                    D = box.axes[a].D
                    ends = [0 if s == 0 else D.shape[0] - 1 for s in sides]
                    rows = np.stack([self.sides[k][a][s].b * D[e] for s, e in zip(sides, ends)])
                    for r, (s, e) in enumerate(zip(sides, ends)):
                        rows[r, e] += self.sides[k][a][s].a
                    inner = rows.copy()
                    inner[:, ends] = 0.0
                    others = [box.axes[b].x for b in range(self.dim) if b != a]
                    plan.append((k, a, ends, np.linalg.inv(rows[:, ends]), inner,
                                 [self.sides[k][a][s] for s in sides], sides, others))
            self._plan_cache, self._plan_for = plan, key
        return self._plan_cache

    def fill(self, u: np.ndarray, t: float, box: ChebyshevBox) -> None:
        """Set the wall values of u [n_u, *shape] (or a batch [B, n_u, *shape]) from the
        conditions at time t, in place."""
        U = u if u.ndim == self.dim + 2 else u[None]  # a view either way
        for k, a, ends, inverse, inner, conds, sides, others in self._plan(box):
            lines = np.moveaxis(U[:, k], a + 1, 0)  # a view: [n, B, other points]
            rest = lines.shape[1:]
            g = np.stack([np.zeros(rest) if c.homogeneous else
                          np.broadcast_to(self.side_values(c, a, s, t, others), rest)
                          for c, s in zip(conds, sides)])
            vals = inverse @ (g.reshape(len(ends), -1) - inner @ lines.reshape(len(inner[0]), -1))
            for r, e in enumerate(ends):
                lines[e] = vals[r].reshape(rest)

    def residual(self, u: np.ndarray, k: int, t: float, box: ChebyshevBox) -> float:
        """max |a u + b du/d(axis) - g| over the conditions of unknown k, u [B, *shape]."""
        worst = 0.0
        for a in range(self.dim):
            others = [box.axes[b].x for b in range(self.dim) if b != a]
            orders = tuple(int(b == a) for b in range(self.dim))
            du = np.moveaxis(box.derivative(u, orders), a + 1, 1)
            v = np.moveaxis(u, a + 1, 1)
            for s in self.constrained(k, a):
                c = self.sides[k][a][s]
                e = 0 if s == 0 else -1
                g = self.side_values(c, a, s, t, others)
                worst = max(worst, float(np.max(np.abs(c.a * v[:, e] + c.b * du[:, e] - g))))
        return worst
