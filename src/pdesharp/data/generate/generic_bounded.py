"""Reference data for 1D time-dependent tasks with Dirichlet, Neumann or Robin boundaries.

Method of lines on Chebyshev-Gauss-Lobatto points (spectral accuracy for smooth solutions, the
end points on the walls): the task's equations are compiled exactly as for the Fourier generator
(:mod:`.generic_symbolic`, conservation form kept), with derivatives taken by the Chebyshev
differentiation matrix. Boundary values are not evolved: at every right-hand-side evaluation
they are solved from the conditions ``a*u + b*du/dx = g(t)`` (a 2x2 linear system per unknown;
a side without a condition is an outflow side whose end value evolves with the PDE). Time
integration is SciPy's Radau IIA (implicit, order 5, L-stable: Chebyshev diffusion is too stiff
for an explicit method), restarted at every frame time, with rtol 1e-10. Frames are evaluated at
the output cell centres by barycentric interpolation, which is exact for the collocation
polynomial.

Initial data are the generic generator's random trigonometric polynomials, evaluated
analytically at the collocation points and at the output points, blended near each wall into a
profile that satisfies the boundary condition at t = 0 (so no boundary layer is created at the
start) without leaving the task's ``generator.ranges`` (:mod:`.generic_bounded_ic`). Measured against exact solutions (tests/data_generate_generic): heat
equation with Dirichlet, Neumann and time-dependent Robin data, errors ~1e-10.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

from pdesharp.equation import ARRAY_MODULES
from pdesharp.boundary import task_boundary
from pdesharp.data.generate.generic_bounded_ic import blend_into_walls
from pdesharp.data.generate.generic_ic import random_fields
from pdesharp.data.generate.generic_symbolic import UnsupportedTask, compile_system
from pdesharp.data.generate.generic_time import IntegrationFailed
from pdesharp.grid import axis_points
from pdesharp.task import Task

DEFAULT_NX = 128
DEFAULT_FRAMES = 101


class ChebyshevGrid:
    """Chebyshev-Gauss-Lobatto points on [lo, hi] (increasing) with their differentiation
    matrix; the interface of :class:`~.generic_symbolic.SpectralGrid` the compiled system uses."""

    def __init__(self, lo: float, hi: float, m: int):
        self.lo, self.hi = float(lo), float(hi)
        xi = -np.cos(np.pi * np.arange(m + 1) / m)
        self.x = self.lo + (self.hi - self.lo) * (xi + 1.0) / 2.0
        w = (-1.0) ** np.arange(m + 1)
        w[0] *= 0.5
        w[-1] *= 0.5
        self.weights = w
        diff = self.x[:, None] - self.x[None, :]
        np.fill_diagonal(diff, 1.0)
        D = (w[None, :] / w[:, None]) / diff
        np.fill_diagonal(D, 0.0)
        np.fill_diagonal(D, -D.sum(axis=1))
        self.D = D

    dim = 1

    @property
    def shape(self) -> tuple[int]:
        return (self.x.size,)

    def coords(self) -> list[np.ndarray]:
        return [self.x.reshape(1, -1)]

    def full(self, value) -> np.ndarray:
        arr = np.asarray(value, dtype=float)
        if arr.ndim < 2:
            arr = arr.reshape((1,) * (2 - arr.ndim) + arr.shape)
        return np.broadcast_to(arr, arr.shape[:1] + self.shape)

    def derivative(self, value, orders: tuple[int, ...]) -> np.ndarray:
        out = self.full(value)
        for _ in range(orders[0]):
            out = out @ self.D.T
        return out

    def dealias(self, value) -> np.ndarray:
        return self.full(value)

    def interpolation(self, points: np.ndarray) -> np.ndarray:
        """Matrix P with P @ u = the collocation polynomial at ``points`` (barycentric form)."""
        diff = points[:, None] - self.x[None, :]
        exact = np.isclose(diff, 0.0, atol=1e-14 * max(1.0, abs(self.hi)))
        diff[exact] = 1.0
        P = self.weights[None, :] / diff
        P /= P.sum(axis=1, keepdims=True)
        rows = exact.any(axis=1)
        P[rows] = exact[rows].astype(float)
        return P


class _Boundary:
    """The conditions of each unknown at x = lo (side 0) and x = hi (side 1), evaluable at t."""

    def __init__(self, task: Task, unknowns):
        spec = task_boundary(task)
        axis = task.equation.space[0]
        t = sp.Symbol(task.equation.time or "t", real=True)
        values = {sp.Symbol(k, real=True): v for k, v in task.constants.items()}
        self.conds = []
        for u in unknowns:
            row = []
            for side in (0, 1):
                c = spec.condition(u, axis, side)
                if c is None:
                    row.append(None)
                    continue
                a, b = (float(sp.sympify(e).subs(values)) for e in (c.a, c.b))
                g = sp.lambdify(t, sp.sympify(c.g).subs(values), ARRAY_MODULES)
                row.append((a, b, g))
            self.conds.append(row)

    def constrained(self, k: int) -> list[int]:
        return [s for s in (0, 1) if self.conds[k][s] is not None]


def _free_mask(bc: _Boundary, n_u: int, n: int) -> np.ndarray:
    mask = np.ones((n_u, n), dtype=bool)
    for k in range(n_u):
        for s in bc.constrained(k):
            mask[k, 0 if s == 0 else -1] = False
    return mask


def _fill_boundary(u: np.ndarray, t: float, bc: _Boundary, D: np.ndarray) -> None:
    """Set the constrained end values of u [n_u, n] from the conditions, in place."""
    ends = (0, u.shape[1] - 1)
    for k in range(u.shape[0]):
        sides = bc.constrained(k)
        if not sides:
            continue
        A = np.zeros((len(sides), len(sides)))
        rhs = np.zeros(len(sides))
        for r, s in enumerate(sides):
            a, b, g = bc.conds[k][s]
            i = ends[s]
            row = b * D[i].copy()
            row[i] += a
            known = row @ u[k] - sum(row[ends[q]] * u[k, ends[q]] for q in sides)
            rhs[r] = float(g(t)) - known
            for c, q in enumerate(sides):
                A[r, c] = row[ends[q]]
        vals = np.linalg.solve(A, rhs)
        for c, q in enumerate(sides):
            u[k, ends[q]] = vals[c]


def _integrate(task: Task, u0: np.ndarray, t_out: np.ndarray, grid: ChebyshevGrid, *,
               rtol: float) -> tuple[np.ndarray, dict]:
    """Frames [B, T, n_u, m+1] from u0 [B, n_u, m+1] (boundary values are re-imposed)."""
    system = compile_system(task, bounded=True)
    bc = _Boundary(task, system.unknowns)
    n_u, n = u0.shape[1], u0.shape[2]
    free = _free_mask(bc, n_u, n)
    out = np.empty((u0.shape[0], len(t_out), n_u, n))
    nfev = 0
    for s in range(u0.shape[0]):
        full = u0[s].copy()
        _fill_boundary(full, float(t_out[0]), bc, grid.D)
        scale = np.maximum(np.abs(full).max(axis=1, keepdims=True), 1e-6 * np.abs(full).max() + 1e-300)
        atol = (rtol * np.broadcast_to(scale, full.shape))[free]

        def fun(t, y):
            u = full.copy()
            u[free] = y
            _fill_boundary(u, t, bc, grid.D)
            ut = system.rhs([u[k][None] for k in range(n_u)], t, grid, False)
            return np.stack([np.asarray(v).reshape(-1) for v in ut])[free]

        out[s, 0] = full
        y = full[free]
        with np.errstate(all="ignore"):
            for j in range(len(t_out) - 1):
                t0, t1 = float(t_out[j]), float(t_out[j + 1])
                sol = solve_ivp(fun, (t0, t1), y, method="Radau", rtol=rtol, atol=atol)
                nfev += int(sol.nfev)
                if sol.status != 0 or not np.all(np.isfinite(sol.y[:, -1])):
                    raise IntegrationFailed(
                        f"Radau failed between t = {t0:.6g} and {t1:.6g}: {sol.message}. The"
                        " solution may blow up, or the boundary data may be incompatible with"
                        " the initial data")
                y = sol.y[:, -1]
                u = full.copy()
                u[free] = y
                _fill_boundary(u, t1, bc, grid.D)
                out[s, j + 1] = u
    return out, {"method": "chebyshev collocation + radau", "rtol": rtol,
                 "rhs_evaluations": nfev, "collocation_points": n}


def _points(task: Task, nx: int) -> tuple[float, float, np.ndarray]:
    axis = task.equation.space[0]
    lo, hi = (float(v) for v in task.domain[axis])
    return lo, hi, axis_points(lo, hi, nx, task.grid)


def _m(task: Task, nx: int) -> int:
    spec = task.generator
    return int(min(256, max(48, (spec.oversample if spec else 4) * 16, nx)))


def wall_initial_data(task: Task, unknowns, introduced, grid: ChebyshevGrid, points: np.ndarray,
                      n_samples: int, seed: int, *, first: int = 0, redraws=None
                      ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{unknown: (values at the collocation points, values at ``points``)} of the random
    initial data, satisfying the conditions at the initial time and within
    ``generator.ranges`` (:mod:`.generic_bounded_ic`)."""
    spec = task.generator
    ranges = spec.ranges if spec else {}
    lo, hi = grid.lo, grid.hi
    drawn = [u for u in unknowns if u not in introduced]
    kw = dict(modes=spec.modes if spec else 4, decay=spec.decay if spec else 2.0, ranges=ranges,
              first=first, redraws=redraws)
    at_nodes = random_fields([grid.x], [lo], [hi - lo], drawn, n_samples, seed, **kw)
    at_points = random_fields([points], [lo], [hi - lo], drawn, n_samples, seed, **kw)
    bc = _Boundary(task, unknowns)
    t0 = float(task.time_span[0])  # type: ignore[index]
    fields = {}
    for u in drawn:
        conds = bc.conds[list(unknowns).index(u)]
        fields[u] = tuple(blend_into_walls([at_nodes[u], at_points[u]], [grid.x, points], lo, hi,
                                           conds, t0, tuple(ranges[u]) if u in ranges else None,
                                           u))
    return fields


def generate_bounded(task: Task, n_samples: int, seed: int, nx: int | None = None,
                     n_frames: int | None = None, *, rtol: float = 1e-10,
                     info: dict | None = None, first: int = 0,
                     redraws=None) -> dict[str, np.ndarray]:
    """Random initial data (seeded) simulated to ``n_frames`` times: the task's HDF5 layout.

    Samples ``first .. first + n_samples - 1`` of the seed (``redraws``: see
    :func:`.generic_ic.draw_coefficients`); each is integrated on its own, so a sample does not
    depend on which others are generated with it."""
    system = compile_system(task, bounded=True)
    nx = int(nx or DEFAULT_NX)
    spec = task.generator
    modes = spec.modes if spec else 4
    if 3 * modes >= nx:
        raise ValueError(f"nx={nx} is too coarse for initial data with {modes} modes")
    n_frames = int(n_frames or task.n_frames or DEFAULT_FRAMES)
    t0, t1 = task.time_span  # type: ignore[misc]
    t_out = np.linspace(float(t0), float(t1), n_frames)
    lo, hi, points = _points(task, nx)
    grid = ChebyshevGrid(lo, hi, _m(task, nx))
    fields = wall_initial_data(task, system.unknowns, system.introduced, grid, points,
                               n_samples, seed, first=first, redraws=redraws)
    zero = np.zeros((n_samples, grid.x.size))
    u0 = np.stack([fields[u][0] if u in fields else zero for u in system.unknowns], axis=1)
    frames, what = _integrate(task, u0, t_out, grid, rtol=rtol)
    P = grid.interpolation(points)
    if info is not None:
        info.update(what, nx=nx, ic_modes=modes)
    out: dict[str, np.ndarray] = {}
    for j, name in enumerate(system.unknowns):
        if name in task.data.fields:
            f = frames[:, :, j] @ P.T
            f[:, 0] = fields[name][1]  # frame 0: the initial function itself at the points
            out[task.data.fields[name]] = np.ascontiguousarray(f)
    if task.data.t_key:
        out[task.data.t_key] = t_out
    if task.data.x_key:
        out[task.data.x_key] = points
    return out


def simulate_bounded(task: Task, initial: Mapping[str, np.ndarray], t_out, *, rtol: float = 1e-10,
                     info: dict | None = None) -> dict[str, np.ndarray]:
    """Evolve ``initial`` ({unknown: [B, N]} at the output cell centres) to ``t_out``. The data
    are moved to the collocation points by cubic splines (an O(h^4) step)."""
    system = compile_system(task, bounded=True)
    missing = [u for u in system.unknowns if u not in initial and u not in system.introduced]
    if missing:
        raise ValueError(f"initial data lacks unknowns {missing} of task {task.name!r}")
    first = np.asarray(next(iter(initial.values())), dtype=float)
    if first.ndim != 2:
        raise UnsupportedTask("the bounded generator is 1D: initial fields must be [B, N]")
    lo, hi, points = _points(task, first.shape[1])
    grid = ChebyshevGrid(lo, hi, _m(task, first.shape[1]))
    u0 = np.stack([CubicSpline(points, np.asarray(initial[u], dtype=float), axis=1)(grid.x)
                   if u in initial else np.zeros((first.shape[0], grid.x.size))
                   for u in system.unknowns], axis=1)
    frames, what = _integrate(task, u0, np.asarray(t_out, dtype=float), grid, rtol=rtol)
    if info is not None:
        info.update(what)
    P = grid.interpolation(points)
    out = {}
    for j, name in enumerate(system.unknowns):
        if name in system.introduced:
            continue
        f = frames[:, :, j] @ P.T
        f[:, 0] = np.asarray(initial[name], dtype=float)
        out[name] = np.ascontiguousarray(f)
    return out
