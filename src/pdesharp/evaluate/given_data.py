"""How far a prediction is from the data the task gives: the initial condition and the boundary
conditions. Part of the residual score (:func:`pdesharp.evaluate.residual_score.residual`).

The PDE residual alone cannot tell solving the problem from solving *another* problem: every
exact solution of the PDE has residual ~0, so a solver that ignores ``u0`` and returns, say, an
exact travelling wave of its own choosing would beat the honest solver (whose residual carries
its discretisation error). The problem is the PDE *and* its data, so the score adds

* the **initial mismatch**: rms(frame 0 - u0) / rms(u0) per sample and field, where u0 is the
  initial condition the solver was given (time-dependent tasks). A solver that returns the given
  u0 as frame 0, as the template asks, adds exactly 0;
* the **boundary mismatch**, where the task's ``boundary`` follows the grammar of
  :mod:`pdesharp.boundary` and is not periodic: for each condition ``a*w + b*dw/dx = g`` on a
  side, the left side evaluated at the wall (on a node grid the wall is a grid point; on cell
  centres value and slope come from the quadratic through the three cells next to it) against
  ``g`` there, rms over the side, frames and samples, relative to rms(w) + rms(g). What the wall
  value is on a grid is known only to the grid's resolution, so the gap between the quadratic
  and the linear (two-point) estimate, and on cell centres also the gap between the wall value
  and the first cell's, is forgiven point by point: a consistent discretisation of the
  condition adds ~0, a solution of another boundary problem adds its O(1) mismatch.
  Frame 0 is left out (it is the initial condition, checked above).

Both are relative, like the residual, so the sum stays "0 = the problem holds". ``g`` is walked
numerically by the residual's own SymPy evaluator (no code is generated from task text).
"""

from __future__ import annotations

import numpy as np

from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task


def _rel_rms(diff: np.ndarray, scale: np.ndarray) -> float:
    s = float(np.sqrt(np.mean(np.square(scale))))
    d = float(np.sqrt(np.mean(np.square(diff))))
    return d / s if s > 0 else d


def initial_mismatch(task: Task, fields: dict[str, np.ndarray], ref: ReferenceData) -> float:
    """Mean over samples and fields of rms(frame 0 - u0) / rms(u0); 0 for steady tasks."""
    if task.steady:
        return 0.0
    out = []
    for name in task.solver.returns:
        if name not in fields or name not in ref.fields:
            continue
        pred0 = np.asarray(fields[name][:, 0], dtype=float)
        given = np.asarray(ref.initial(name), dtype=float)[: pred0.shape[0]]
        for b in range(pred0.shape[0]):
            out.append(_rel_rms(pred0[b] - given[b], given[b]))
    return float(np.mean(out)) if out else 0.0


def _wall_weights(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights giving the value and the first derivative at 0 of the quadratic through the
    points at ``positions`` (distances from the wall, signed along the axis)."""
    v = np.vander(positions, 3, increasing=True)  # rows: 1, s, s^2
    inv = np.linalg.inv(v)
    return inv[0], inv[1]  # coefficient of 1 (value) and of s (slope)


def boundary_mismatch(task: Task, fields: dict[str, np.ndarray], ref: ReferenceData) -> float:
    """Mean relative mismatch of the prediction with the task's boundary conditions (0 when the
    boundary is periodic, unparsable as a grammar, or has no condition on a returned field)."""
    from pdesharp.boundary import BoundaryError, task_boundary
    from pdesharp.evaluate.residual import ResidualError, _Evaluator

    try:
        spec = task_boundary(task)
    except (BoundaryError, ValueError, TypeError):
        return 0.0
    conds = [c for c in spec.conditions if c.unknown in fields]
    if not conds:
        return 0.0
    try:
        ev = _Evaluator(task, fields, ref)
    except ResidualError:
        return 0.0
    out = []
    for c in conds:
        w = np.asarray(fields[c.unknown], dtype=float)
        ax = ev.axis[c.axis]
        n = w.shape[ax]
        if n < 3:
            continue
        h = ev.h[c.axis]
        idx = [0, 1, 2] if c.side == 0 else [n - 1, n - 2, n - 3]
        # distance of the grid points from the wall, along the axis
        offset = 0.0 if task.grid != "cell_centres" else 0.5
        sign = 1.0 if c.side == 0 else -1.0
        pos = sign * h * (offset + np.arange(3))
        wv, ws = _wall_weights(pos)
        pts = [np.take(w, i, axis=ax) for i in idx]
        value = sum(k * p for k, p in zip(wv, pts))
        slope = sum(k * p for k, p in zip(ws, pts))
        # the same from the two nearest points (linear): the gap between the two estimates is
        # the resolution of "the value at the wall" on this grid, forgiven below
        lin_v = (pos[1] * pts[0] - pos[0] * pts[1]) / (pos[1] - pos[0])
        lin_s = (pts[1] - pts[0]) / (pos[1] - pos[0])
        try:
            a = float(c.a.subs(ev.constants)) if c.a.free_symbols else float(c.a)
            b = float(c.b.subs(ev.constants)) if c.b.free_symbols else float(c.b)
            g_full = ev.full(c.g)
        except (ResidualError, TypeError, ValueError):
            continue
        g = np.take(g_full, idx[0], axis=ax)
        lhs = a * value + b * slope
        slack = np.abs(lhs - (a * lin_v + b * lin_s))
        if offset:  # cell centres: the first cell's value is the wall value to first order
            slack = slack + abs(a) * np.abs(pts[0] - value)
        g = np.broadcast_to(g, lhs.shape)
        if not task.steady:  # frame 0 is the initial condition
            lhs, g, slack = lhs[:, 1:], g[:, 1:], slack[:, 1:]
        scale = float(np.sqrt(np.mean(np.square(w)))) + float(np.sqrt(np.mean(np.square(g))))
        d = float(np.sqrt(np.mean(np.square(np.maximum(np.abs(lhs - g) - slack, 0.0)))))
        out.append(d / scale if scale > 0 else d)
    return float(np.mean(out)) if out else 0.0
