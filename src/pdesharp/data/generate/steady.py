"""Reference data for steady tasks given by formulas: one problem, solved to round-off.

A steady task whose solver takes no coefficient field (its inputs are the grid and parameters,
see :mod:`pdesharp.grid`) has exactly one solution. It is computed by Chebyshev collocation on
the tensor Chebyshev-Gauss-Lobatto grid, written here from the task's own equation and shared
with no solver of the built-in catalogue: every derivative of the unknown in the expanded
residual (``dx(u)``, ``dx(u, 2)``, ``dx(dy(u))``, ...) is a collocation matrix, the residual and
its derivative with respect to each of them are compiled with SymPy, and Newton's method solves
``F(u) = 0`` with each side's condition ``a u + b du/d(axis) = g`` in place of the equation on
its points (a corner takes the Dirichlet condition where only one of its sides has one). The
linear systems are solved directly in 1D and by GMRES in 2D, preconditioned by the sparse LU of
the same Jacobian with three-point differences in place of the collocation matrices.

The degree grows (16, 24, 32, 48, 64, 96 ...) until two successive solutions agree at the
output points to ``tol`` (default 1e-10) relative to the solution's maximum, and the file
records the degree and that difference (``scheme_degree``, ``scheme_change``). The output:
each ``data.fields`` key ``[n_samples, N(, N)]`` (copies of the one solution: use
``--samples 1``), the coordinates of the task's grid (cell centres or nodes) in ``x_key`` and,
in 2D, ``y-coordinate``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla
import sympy as sp
from sympy.core.function import AppliedUndef

from pdesharp.boundary import BoundaryError, task_boundary
from pdesharp.data.generate.generic_bounded import ChebyshevGrid
from pdesharp.data.generate.generic_symbolic import UnsupportedTask
from pdesharp.equation import array_function
from pdesharp.grid import output_grid
from pdesharp.task import Task

DEFAULT_NX = {1: 256, 2: 64}
DEGREES = {1: (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512), 2: (16, 24, 32, 48, 64, 96)}
ATTRS = {"name": "Chebyshev collocation (steady, generic)", "solve": "Newton; GMRES in 2D"}


def check_steady(task: Task) -> None:
    """Raise :class:`UnsupportedTask` naming why :func:`generate_steady` cannot make ``task``."""
    eq = task.equation
    if not task.steady:
        raise UnsupportedTask(f"task {task.name!r} is time-dependent")
    if eq.coefficients:
        raise UnsupportedTask(
            f"task {task.name!r} has coefficient fields {eq.coefficients}: a steady task's"
            " generator would have to invent them; write the coefficients as formulas of x, y"
            " (the solver then takes the grid), or make the data yourself (docs/tasks.md)")
    if len(eq.unknowns) != 1 or len(eq.equations) != 1:
        raise UnsupportedTask(f"task {task.name!r}: steady systems of several unknowns")
    if len(eq.space) not in (1, 2):
        raise UnsupportedTask(f"task {task.name!r} has {len(eq.space)} space axes; supported: 1, 2")
    try:
        spec = task_boundary(task)
    except BoundaryError as exc:
        raise UnsupportedTask(f"task {task.name!r}: the boundary {task.boundary!r} cannot be"
                              f" read: {exc}") from None
    if spec.periodic:
        raise UnsupportedTask(f"task {task.name!r}: periodic steady problems")
    if spec.missing(eq.unknowns):
        u, axis, side = spec.missing(eq.unknowns)[0]
        raise UnsupportedTask(f"task {task.name!r}: no condition for {u} at the"
                              f" {'low' if side == 0 else 'high'} end of {axis}")


class _Residual:
    """The expanded residual F(x, y, u, its derivatives; parameters) and dF/d(each of them)."""

    def __init__(self, task: Task):
        system = task.system
        u = system.function(system.unknowns[0])
        expr = system.exprs[0].doit()
        coords = list(system.coords)
        self.orders: list[tuple[int, ...]] = []
        subs, syms = {}, []
        atoms = sorted(expr.atoms(sp.Derivative), key=lambda d: -len(d.variables))
        for d in atoms:
            if d.expr != u:
                raise UnsupportedTask(f"task {task.name!r}: the derivative {d} is not of the"
                                      " unknown")
            orders = tuple(sum(int(n) for v, n in d.variable_count if v == c) for c in coords)
            s = sp.Symbol(f"_d{'_'.join(map(str, orders))}")
            subs[d], self.orders = s, self.orders + [orders]
            syms.append(s)
        s0 = sp.Symbol("_u")
        plain = expr.xreplace(subs).xreplace({u: s0})
        if plain.atoms(AppliedUndef):  # a coefficient field (checked before) or a stray call
            raise UnsupportedTask(f"task {task.name!r}: the residual keeps an unknown function")
        self.orders = [(0,) * len(coords)] + self.orders
        syms = [s0] + syms
        values = {sp.Symbol(k, real=True): v for k, v in task.constants.items()}
        args = [*coords, *syms]
        plain = plain.subs(values)
        self.F = array_function(args, plain)
        slopes = [sp.diff(plain, s) for s in syms]
        self.linear = not any(d.has(*syms) for d in slopes)  # one Newton step is the solve
        self.dF = [array_function(args, d) for d in slopes]


def _fd(x: np.ndarray, order: int) -> sps.csr_matrix:
    """Three-point differences of order 1 or 2 on the points x (zero first and last rows)."""
    n = len(x)
    hm, hp = x[1:-1] - x[:-2], x[2:] - x[1:-1]
    i = np.arange(1, n - 1)
    if order == 1:
        w = [-hp / (hm * (hm + hp)), (hp - hm) / (hm * hp), hm / (hp * (hm + hp))]
    else:
        w = [2 / (hm * (hm + hp)), -2 / (hm * hp), 2 / (hp * (hm + hp))]
    return sps.csr_matrix((np.concatenate(w), (np.tile(i, 3), np.concatenate([i - 1, i, i + 1]))),
                          shape=(n, n))


class _Collocation:
    """The tensor Chebyshev grid of one degree, its derivative matrices and the conditions."""

    def __init__(self, task: Task, m: int):
        eq = task.equation
        self.grids = [ChebyshevGrid(*task.domain[a], m) for a in eq.space]
        self.shape = tuple(g.x.size for g in self.grids)
        dim = len(self.shape)
        self.X = [g.x.reshape((-1,) + (1,) * (dim - a - 1)) for a, g in enumerate(self.grids)]
        spec = task_boundary(task)
        values = {sp.Symbol(k, real=True): v for k, v in task.constants.items()}
        self.owner = -np.ones(self.shape, dtype=int)
        self.A, self.B, self.G = (np.zeros(self.shape) for _ in range(3))
        for a, axis in enumerate(eq.space):
            other = [b for b in range(dim) if b != a]
            T = self.grids[other[0]].x if other else np.zeros(1)
            for side in (0, 1):
                c = spec.condition(eq.unknowns[0], axis, side)
                ca, cb = (float(sp.sympify(e).subs(values)) for e in (c.a, c.b))
                tsym = [sp.Symbol(eq.space[b], real=True) for b in other] or [sp.Symbol("_t")]
                g_t = array_function(tsym, sp.sympify(c.g).subs(values))
                g = np.broadcast_to(np.asarray(g_t(T), float), T.shape)
                idx = [slice(None)] * dim
                idx[a] = -1 if side else 0
                idx = tuple(idx)
                if dim == 1:
                    self.owner[idx], self.A[idx], self.B[idx], self.G[idx] = a, ca, cb, g[0]
                    continue
                take = (self.owner[idx] < 0) | ((cb == 0.0) & (self.B[idx] != 0.0))
                for arr, val in ((self.owner, a), (self.A, ca), (self.B, cb), (self.G, g)):
                    view = arr[idx]  # basic slicing: a view, so this writes into arr
                    view[take] = val[take] if np.ndim(val) else val

    def matrix(self, orders: tuple[int, ...], fd: bool = False) -> sps.csr_matrix:
        """The derivative of the given orders per axis (Kronecker product, row-major)."""
        out = None
        for g, k in zip(self.grids, orders):
            m = np.linalg.matrix_power(g.D, k) if k else np.eye(g.x.size)
            if fd and k in (1, 2):
                m = _fd(g.x, k)
            m = sps.csr_matrix(m)
            out = m if out is None else sps.kron(out, m, format="csr")
        return out

    def derivative(self, U: np.ndarray, orders: tuple[int, ...]) -> np.ndarray:
        out = U
        for a, (g, k) in enumerate(zip(self.grids, orders)):
            for _ in range(k):
                out = np.moveaxis(np.tensordot(g.D, out, axes=([1], [a])), 0, a)
        return out


def _newton(res: _Residual, col: _Collocation) -> np.ndarray:
    shape, dim = col.shape, len(col.shape)
    U = np.zeros(shape)
    inner = (col.owner.ravel() < 0).astype(float)
    for _ in range(60):
        ders = [col.derivative(U, o) for o in res.orders]
        ones = np.ones(shape)
        R = np.asarray(res.F(*col.X, *ders), float) * ones
        for a in range(dim):
            on = col.owner == a
            dn = col.derivative(U, tuple(int(b == a) for b in range(dim)))
            R[on] = (col.A * U + col.B * dn - col.G)[on]
        parts = [(np.asarray(f(*col.X, *ders), float) * ones).ravel() for f in res.dF]

        def jac(fd):
            J = sum(sps.diags(inner * c) @ col.matrix(o, fd) for c, o in zip(parts, res.orders))
            for a in range(dim):
                on = (col.owner.ravel() == a).astype(float)
                J = J + sps.diags(on * col.A.ravel()) + sps.diags(on * col.B.ravel()) @ col.matrix(
                    tuple(int(b == a) for b in range(dim)))
            return J.tocsc()
        J = jac(False)
        if dim == 1:
            dU = np.linalg.solve(J.toarray(), -R.ravel())
        else:
            lu = spla.splu(jac(True))
            M = spla.LinearOperator(J.shape, lu.solve)
            try:
                dU, info = spla.gmres(J, -R.ravel(), M=M, rtol=1e-13, atol=0.0, restart=80,
                                      maxiter=20)
            except TypeError:  # SciPy < 1.12
                dU, info = spla.gmres(J, -R.ravel(), M=M, tol=1e-13, atol=0.0, restart=80,
                                      maxiter=20)
            if info != 0:
                dU = spla.spsolve(J, -R.ravel())
        U = U + dU.reshape(shape)
        if res.linear or np.linalg.norm(dU) <= 1e-13 * (1.0 + np.linalg.norm(U)):
            break
    else:
        raise UnsupportedTask("Newton's method did not converge in 60 steps")
    return U


def solve_steady(task: Task, points: list[np.ndarray], *, tol: float = 1e-10,
                 info: dict | None = None) -> np.ndarray:
    """The task's solution at the tensor grid of ``points`` (one array per axis)."""
    check_steady(task)
    res = _Residual(task)
    dim = len(points)
    prev, change = None, np.inf
    for m in DEGREES[dim]:
        col = _Collocation(task, m)
        U = _newton(res, col)
        P = [g.interpolation(np.asarray(p, float)) for g, p in zip(col.grids, points)]
        out = P[0] @ U if dim == 1 else P[0] @ U @ P[1].T
        if prev is not None:
            change = float(np.max(np.abs(out - prev)) / max(np.max(np.abs(out)), 1e-300))
            if change <= tol:
                break
        prev = out
    if info is not None:
        info.update(degree=m, change=change, converged=bool(change <= tol))
    if not np.all(np.isfinite(out)):
        raise UnsupportedTask(f"task {task.name!r}: the collocation solution is not finite")
    return out


def generate_steady(task: Task, n_samples: int, seed: int = 0, nx: int | None = None, *,
                    tol: float = 1e-10, info: dict | None = None, **_: object) -> dict:
    """The HDF5 arrays of a steady formula task (see the module docstring); ``seed`` is not
    used (there is nothing random), every sample is the same solution."""
    check_steady(task)
    dim = len(task.equation.space)
    nx = int(nx or DEFAULT_NX[dim])
    pts = output_grid(task, (nx,) * dim)
    what: dict = {}
    u = solve_steady(task, pts, tol=tol, info=what)
    if info is not None:
        info.update(what, **ATTRS)
    out = {key: np.broadcast_to(u, (n_samples, *u.shape)).copy()
           for key in task.data.fields.values()}
    out[task.data.x_key or "x-coordinate"] = pts[0]
    if dim == 2:
        out["y-coordinate"] = pts[1]
    return out
