"""Reference data for 1D and 2D time-dependent tasks with Dirichlet, Neumann or Robin walls.

Method of lines on Chebyshev-Gauss-Lobatto points, an interval or the tensor grid of a rectangle
(:mod:`.chebyshev`: spectral accuracy for smooth solutions, the end points on the walls): the
task's equations are compiled exactly as for the Fourier generator (:mod:`.generic_symbolic`,
conservation form kept), with derivatives taken by the Chebyshev differentiation matrices. Wall
values are not evolved: at every right-hand-side evaluation they are solved from the conditions
``a*u + b*du/dn = g(t, s)`` line by line (:mod:`.walls`; a side without a condition evolves with
the PDE). Time integration is SciPy's Radau IIA (implicit, order 5, L-stable: Chebyshev diffusion
is too stiff for an explicit method), restarted at every frame time, with rtol 1e-10. Frames are
evaluated at the output points (the task's grid convention: cell centres or nodes) by barycentric
interpolation, which is exact for the collocation polynomial.

Initial data are the generic generator's random trigonometric polynomials, evaluated
analytically at the collocation points and at the output points, blended near each wall into a
profile that satisfies the boundary condition at t = 0 (so no boundary layer is created at the
start) without leaving the task's ``generator.ranges`` (:mod:`.generic_bounded_ic`). Measured
against exact solutions (tests/data_generate_generic): heat equation with Dirichlet, Neumann and
time-dependent Robin data, errors ~1e-10 in 1D; in 2D time-dependent Dirichlet data varying along
every wall, Neumann walls and one wall of each kind, below 1e-7.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

from pdesharp.data.generate.chebyshev import ChebyshevBox, ChebyshevGrid
from pdesharp.data.generate.generic_bounded_ic import IncompatibleRange, meet_walls
from pdesharp.data.generate.generic_ic import random_fields
from pdesharp.data.generate.generic_symbolic import UnsupportedTask, compile_system
from pdesharp.data.generate.generic_time import IntegrationFailed
from pdesharp.data.generate.walls import WallConditions, blas_threads
from pdesharp.grid import axis_points
from pdesharp.task import Task

__all__ = ["ChebyshevBox", "ChebyshevGrid", "generate_bounded", "integrate_walls", "make_box",
           "simulate_bounded", "wall_initial_data"]

DEFAULT_NX = {1: 128, 2: 64}
DEFAULT_FRAMES = 101
_Boundary = WallConditions  # the name the 1D generator used


def _box(grid) -> ChebyshevBox:
    return grid if isinstance(grid, ChebyshevBox) else ChebyshevBox([grid])


def integrate_walls(task: Task, u0: np.ndarray, t_out: np.ndarray, box: ChebyshevBox, *,
               rtol: float, method: str = "auto") -> tuple[np.ndarray, dict]:
    """Frames [B, T, n_u, *shape] from u0 [B, n_u, *shape] (wall values are re-imposed).

    ``method``: "radau", "etdrk4" (:mod:`.walls_etd`: the separable linear part exact) or
    "auto": ETDRK4 where it applies (far cheaper, and on a 2D box the only affordable one at
    the degrees a 1e-6 reference needs), else Radau."""
    system = compile_system(task, bounded=True)
    bc = WallConditions(task, system.unknowns)
    if method not in ("auto", "radau", "etdrk4"):
        raise ValueError(f"method must be 'auto', 'radau' or 'etdrk4', got {method!r}")
    if method in ("etdrk4", "auto"):
        from pdesharp.data.generate import walls_etd

        p, why = walls_etd.plan(system, bc, box)
        if p is None and method == "etdrk4":
            raise UnsupportedTask(f"ETDRK4 does not apply to task {task.name!r}: {why}")
        if p is not None:
            try:
                # its Richardson estimate is a max-norm over the frames, sharper than Radau's
                # weighted local error: 1e-10 gave time errors 5e-12 (against Radau at 1e-11,
                # 2D Allen-Cahn), below the space errors of every collocation degree used
                return walls_etd.integrate(system, bc, box, p, u0, t_out,
                                           tol=max(10.0 * rtol, 1e-11))
            except IntegrationFailed:
                if method == "etdrk4":
                    raise
    free = bc.free_mask(box)
    # BLAS on one thread for Radau's LU below ~1000 unknowns, where threads only cost: 3.2x
    # less CPU on the 1D Zakharov example (126 unknowns) on a busy 2-core machine (the same
    # measurement as walls_etd's); larger 2D systems keep the library's threads
    with blas_threads(1 if free.sum() < 1000 else None):
        return _radau(system, bc, box, free, u0, t_out, rtol)


def _radau(system, bc: WallConditions, box: ChebyshevBox, free: np.ndarray, u0: np.ndarray,
           t_out: np.ndarray, rtol: float) -> tuple[np.ndarray, dict]:
    n_u = u0.shape[1]
    out = np.empty((u0.shape[0], len(t_out)) + u0.shape[1:])
    nfev = 0
    for s in range(u0.shape[0]):
        full = u0[s].copy()
        bc.fill(full, float(t_out[0]), box)
        flat = full.reshape(n_u, -1)
        scale = np.maximum(np.abs(flat).max(axis=1), 1e-6 * np.abs(flat).max() + 1e-300)
        atol = (rtol * np.broadcast_to(scale.reshape((n_u,) + (1,) * box.dim), full.shape))[free]

        def fun(t, y):
            # vectorized: Radau's finite-difference Jacobian asks for all its columns in one
            # call (y [n, K]), one batched right-hand side instead of K (1D Zakharov example:
            # 38 Jacobians of 126 columns were 4,800 calls beside Radau's 6,700 others)
            cols = y.reshape(len(y), -1)
            u = np.repeat(full[None], cols.shape[1], axis=0)  # [K, n_u, *shape]
            u[:, free] = cols.T
            bc.fill(u, t, box)
            ut = system.rhs([u[:, k] for k in range(n_u)], t, box, False)
            du = np.stack([np.broadcast_to(v, u.shape[:1] + box.shape) for v in ut], axis=1)
            return du[:, free].T if y.ndim == 2 else du[0, free]

        out[s, 0] = full
        y = full[free]
        with np.errstate(all="ignore"):
            for j in range(len(t_out) - 1):
                t0, t1 = float(t_out[j]), float(t_out[j + 1])
                sol = solve_ivp(fun, (t0, t1), y, method="Radau", rtol=rtol, atol=atol,
                                vectorized=True)
                nfev += int(sol.nfev)
                if sol.status != 0 or not np.all(np.isfinite(sol.y[:, -1])):
                    raise IntegrationFailed(
                        f"Radau failed between t = {t0:.6g} and {t1:.6g}: {sol.message}. The"
                        " solution may blow up, or the boundary data may be incompatible with"
                        " the initial data")
                y = sol.y[:, -1]
                u = full.copy()
                u[free] = y
                bc.fill(u, t1, box)
                out[s, j + 1] = u
    return out, {"method": "chebyshev collocation + radau", "rtol": rtol,
                 "rhs_evaluations": nfev,
                 "collocation_points": list(box.shape) if box.dim > 1 else box.shape[0]}


def _points(task: Task, n: Sequence[int]) -> list[np.ndarray]:
    """The output points of each space axis (the task's grid convention)."""
    return [axis_points(*(float(v) for v in task.domain[a]), int(k), task.grid)
            for a, k in zip(task.equation.space, n)]


def _m(task: Task, nx: int) -> int:
    """Collocation degree per axis. 1D: at least 48 (Radau's dense Jacobian is cheap); 2D: the
    Jacobian has (m - 1)^2 rows per unknown (dense LU), so 7 points per initial mode and axis
    (the shortest initial wave then interpolates to ~1e-9), at least 24 and at most 40: the
    reference scripts of the examples use 28 to 36."""
    spec = task.generator
    if len(task.equation.space) == 1:
        return int(min(256, max(48, (spec.oversample if spec else 4) * 16, nx)))
    modes = spec.modes if spec else 4
    return int(min(40, max(24, 7 * modes + 4)))


LEVELS = 6  # resolution levels: collocation degree +8 (2D) / +16 (1D), tolerance /10 each


def _level(task: Task, nx: int, level: int, rtol: float, m: int | None = None
           ) -> tuple[int, float]:
    """(collocation degree, time tolerance) at a resolution level (0: the defaults)."""
    step = 8 if len(task.equation.space) > 1 else 16
    return int(m or _m(task, nx)) + step * level, max(rtol * 10.0 ** -level, 1e-13)


def resolution_levels(task: Task, nx: int | None = None, *, rtol: float = 1e-12) -> list[str]:
    """What each resolution level is, for :mod:`.accuracy`."""
    dim = len(task.equation.space)
    n = int(nx or DEFAULT_NX[dim])
    out = []
    for k in range(LEVELS):
        m, tol = _level(task, n, k, rtol)
        points = "x".join([str(m + 1)] * dim)
        out.append(f"{points} Chebyshev points, time tolerance {tol:g}")
    return out


def make_box(task: Task, nx: int, m: int | None = None) -> ChebyshevBox:
    """The collocation box of ``task`` for output grids of nx points per axis (degree ``m``
    per axis, default :func:`_m`)."""
    m = int(m or _m(task, nx))
    return ChebyshevBox([ChebyshevGrid(*task.domain[a], m) for a in task.equation.space])


def _meets(bc: WallConditions, k: int, u: np.ndarray, t0: float, box: ChebyshevBox) -> bool:
    """Whether u [B, *shape] satisfies unknown k's conditions at t0 (to 1e-6 of its size)."""
    return bc.residual(u, k, t0, box) <= 1e-6 * max(1.0, float(np.abs(u).max()))


def wall_initial_data(task: Task, unknowns, introduced, grid, points, n_samples: int, seed: int,
                      *, first: int = 0, redraws=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{unknown: (values at the collocation points, values at ``points``)} of the random initial
    data, satisfying the conditions at the initial time and within ``generator.ranges``
    (:mod:`.generic_bounded_ic`). ``grid``: a :class:`ChebyshevGrid` (1D) or a box; ``points``:
    the output points (an array in 1D, one array per axis). F is evaluated analytically on the
    tensor grid of collocation and output points together, so each axis holds its walls."""
    box = _box(grid)
    points = [np.asarray(points)] if isinstance(points, np.ndarray) else list(points)
    spec = task.generator
    ranges = spec.ranges if spec else {}
    boxes = [(g.lo, g.hi) for g in box.axes]
    # 2D: also a degree-64 Chebyshev grid on which the conditions are checked (exact
    # derivatives of the blended analytic function to ~1e-10, whatever the collocation degree)
    check = ChebyshevBox([ChebyshevGrid(g.lo, g.hi, 64) for g in box.axes]) if box.dim > 1 \
        else None
    xs = [np.concatenate([g.x, p] + ([check.axes[a].x] if check else []))
          for a, (g, p) in enumerate(zip(box.axes, points))]
    ends = [(0, g.x.size - 1) for g in box.axes]
    drawn = [u for u in unknowns if u not in introduced]
    values = random_fields(xs, [lo for lo, _ in boxes], [hi - lo for lo, hi in boxes], drawn,
                           n_samples, seed, modes=spec.modes if spec else 4,
                           decay=spec.decay if spec else 2.0, ranges=ranges, first=first,
                           redraws=redraws)
    bc = WallConditions(task, unknowns)
    t0 = float(task.time_span[0])  # type: ignore[index]
    cheb = tuple(slice(0, g.x.size) for g in box.axes)
    out_part = tuple(slice(g.x.size, g.x.size + p.size) for g, p in zip(box.axes, points))
    checked = tuple(slice(g.x.size + p.size, None) for g, p in zip(box.axes, points))
    fields = {}
    for u in drawn:
        k = list(unknowns).index(u)
        conds = [[None if c is None else
                  (c.a, c.b, bc.side_values(c, a, s, t0, [xs[b] for b in range(box.dim) if b != a]))
                  for s, c in enumerate(bc.sides[k][a])] for a in range(box.dim)]
        rng = tuple(ranges[u]) if u in ranges else None
        u0 = meet_walls(values[u], xs, ends, boxes, conds, rng, u)
        if check and rng is not None and not _meets(bc, k, u0[(slice(None),) + checked], t0, check) \
                and rng[0] <= 0.0 <= rng[1] and all(c is None or c.homogeneous
                                                   for row in bc.sides[k] for c in row):
            # the range moved a wall value off F's (a Robin slope that would leave it), which
            # breaks the other axis' conditions at the corners. Zero data are kept by scaling:
            # blend without the range, then shrink towards 0 (inside the range) until it fits
            u0 = meet_walls(values[u], xs, ends, boxes, conds, None, u)
            top, bottom = float(u0.max()), float(u0.min())
            u0 = u0 * min(1.0, rng[1] / top if top > 0 else 1.0,
                          rng[0] / bottom if bottom < 0 else 1.0)
        at_nodes = u0[(slice(None),) + cheb]
        if check and not _meets(bc, k, u0[(slice(None),) + checked], t0, check):
            miss = bc.residual(u0[(slice(None),) + checked], k, t0, check)
            raise IncompatibleRange(
                f"{u}: initial data meeting its wall conditions on both axes could not be built"
                f" (condition residual {miss:.2e} at t = {t0:g}):"
                " in 2D the generator meets zero data of any kind, and nonzero Dirichlet data on"
                " all four walls" + (" within generator.ranges" if rng else ""))
        fields[u] = (at_nodes, u0[(slice(None),) + out_part])
    return fields


def generate_bounded(task: Task, n_samples: int, seed: int, nx: int | None = None,
                     n_frames: int | None = None, *, rtol: float = 1e-10,
                     info: dict | None = None, first: int = 0, redraws=None,
                     collocation: int | None = None, level: int = 0) -> dict[str, np.ndarray]:
    """Random initial data (seeded) simulated to ``n_frames`` times: the task's HDF5 layout
    (fields [B, T, N] in 1D, [B, T, N, N] in 2D, on the task's output grid).

    Samples ``first .. first + n_samples - 1`` of the seed (``redraws``: see
    :func:`.generic_ic.draw_coefficients`); each is integrated on its own, so a sample does not
    depend on which others are generated with it. ``collocation``: the polynomial degree per
    axis (default :func:`_m`; a quick low-accuracy run may take fewer); ``level``: the
    resolution level (:func:`resolution_levels`), which raises the degree and tightens ``rtol``."""
    system = compile_system(task, bounded=True)
    dim = system.dim
    nx = int(nx or DEFAULT_NX[dim])
    spec = task.generator
    modes = spec.modes if spec else 4
    if 3 * modes >= nx:
        raise ValueError(f"nx={nx} is too coarse for initial data with {modes} modes")
    n_frames = int(n_frames or task.n_frames or DEFAULT_FRAMES)
    t0, t1 = task.time_span  # type: ignore[misc]
    t_out = np.linspace(float(t0), float(t1), n_frames)
    points = _points(task, (nx,) * dim)
    m, rtol = _level(task, nx, level, rtol, collocation)
    box = make_box(task, nx, m)
    fields = wall_initial_data(task, system.unknowns, system.introduced, box, points,
                               n_samples, seed, first=first, redraws=redraws)
    zero = np.zeros((n_samples,) + box.shape)
    u0 = np.stack([fields[u][0] if u in fields else zero for u in system.unknowns], axis=1)
    frames, what = integrate_walls(task, u0, t_out, box, rtol=rtol)
    if info is not None:
        info.update(what, nx=nx, ic_modes=modes, level=level)
    out: dict[str, np.ndarray] = {}
    for j, name in enumerate(system.unknowns):
        if name in task.data.fields:
            f = box.interpolate(frames[:, :, j], points)
            f[:, 0] = fields[name][1]  # frame 0: the initial function itself at the points
            out[task.data.fields[name]] = np.ascontiguousarray(f)
    if task.data.t_key:
        out[task.data.t_key] = t_out
    if task.data.x_key:
        out[task.data.x_key] = points[0]
    if dim == 2:
        out["y-coordinate"] = points[1]
    return out


def simulate_bounded(task: Task, initial: Mapping[str, np.ndarray], t_out, *, rtol: float = 1e-10,
                     info: dict | None = None) -> dict[str, np.ndarray]:
    """Evolve ``initial`` ({unknown: [B, N] or [B, N, N]} on the task's output grid) to
    ``t_out``. The data are moved to the collocation points by (tensor) cubic splines, an
    O(h^4) step; frame 0 is the input exactly."""
    system = compile_system(task, bounded=True)
    missing = [u for u in system.unknowns if u not in initial and u not in system.introduced]
    if missing:
        raise ValueError(f"initial data lacks unknowns {missing} of task {task.name!r}")
    first = np.asarray(next(iter(initial.values())), dtype=float)
    if first.ndim != system.dim + 1:
        raise UnsupportedTask(f"task {task.name!r} is {system.dim}D: initial fields must be "
                              f"[B{', N' * system.dim}], got {first.shape}")
    points = _points(task, first.shape[1:])
    box = make_box(task, max(first.shape[1:]))

    def to_nodes(values: np.ndarray) -> np.ndarray:
        for a, (p, g) in enumerate(zip(points, box.axes)):
            values = CubicSpline(p, values, axis=a + 1)(g.x)
        return values

    u0 = np.stack([to_nodes(np.asarray(initial[u], dtype=float)) if u in initial
                   else np.zeros((first.shape[0],) + box.shape) for u in system.unknowns], axis=1)
    frames, what = integrate_walls(task, u0, np.asarray(t_out, dtype=float), box, rtol=rtol)
    if info is not None:
        info.update(what)
    out = {}
    for j, name in enumerate(system.unknowns):
        if name in system.introduced:
            continue
        f = box.interpolate(frames[:, :, j], points)
        f[:, 0] = np.asarray(initial[name], dtype=float)
        out[name] = np.ascontiguousarray(f)
    return out
