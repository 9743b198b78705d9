"""Steady elliptic problems given by formulas: Chebyshev collocation (spectral accuracy).

Applies where every coefficient, the reaction and the forcing are formulas of x, y and the
parameters (no coefficient field): the solution can then be computed on any points, here the
tensor Chebyshev-Gauss-Lobatto grid of ``DEGREE`` + 1 points per axis, and evaluated at the
output points by barycentric interpolation, exact for the collocation polynomial. An analytic
solution converges geometrically in DEGREE; boundary layers of width ~1/Pe are resolved by the
points' clustering at the walls (Pe = 100 with DEGREE 48: ~1e-10). A coefficient with a jump
(or a kink in the solution) converges only algebraically: the finite-volume family with a
finer grid and face means is the design for it.

``-d(K du) = -K u'' - K' u'`` is collocated in non-divergence form (K' derived with SymPy). Each
side's condition ``a u + b du/d(axis) = g`` replaces the equation on its points; a corner takes
the Dirichlet condition where only one of its two sides has one. In 1D the dense system is
solved directly; in 2D by GMRES, preconditioned by the three-point finite-difference operator
on the same points (Orszag: its inverse bounds the collocation operator's spectrum, ~20
iterations at any DEGREE) factorised once by a sparse LU; Newton's method for a nonlinear
reaction. No time stepping, so no stability rule.
"""

from __future__ import annotations

from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.elliptic_problem import EllipticProblem
from pdesharp.builtin.families.common import fixed_axes, problem_constants
from pdesharp.builtin.families.elliptic_source import DRIVER, coefficient_source

MAX_DEGREE = {1: 1024, 2: 128}
FIRST_DEGREE = {1: 64, 2: 32}  # dense 1D solve; 2D preconditioner LU on (DEGREE + 1)^2 points


class ChebyshevFamily(Family):
    name = "chebyshev"
    axes = (
        Axis("DEGREE", 32, (), "Chebyshev polynomial degree per axis (DEGREE + 1 points)"),
        Axis("NEWTON_TOL", 1e-12, (), "relative Newton step at which the nonlinear solve stops"),
        Axis("GMRES_TOL", 1e-12, (), "relative residual at which GMRES stops (2D)"),
    )

    def applies(self, p: Problem) -> bool:
        return isinstance(p.struct, EllipticProblem) and not p.struct.uses_fields

    def relevant(self, p: Problem) -> list[str]:
        out = ["DEGREE"]
        if not p.struct.linear:
            out.append("NEWTON_TOL")
        if p.dim == 2:
            out.append("GMRES_TOL")
        return out

    def candidates(self, p: Problem) -> list[Design]:
        # the accuracy of collocation follows the solution, not the output grid: a degree that
        # resolves a smooth solution to round-off, then twice it (boundary layers)
        first = FIRST_DEGREE[p.dim]
        return [self.design(DEGREE=first), self.design(DEGREE=2 * first)]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        m, top = d["DEGREE"], MAX_DEGREE[p.dim]
        out = []
        if strategy != "robust" and not failed and m < top:
            out.append(("DEGREE", min(top, (3 * m) // 2), "a higher polynomial degree"))
        if "NEWTON_TOL" in self.relevant(p) and strategy != "robust":
            out.append(("NEWTON_TOL", d["NEWTON_TOL"] / 100, "a tighter Newton tolerance"))
        if "GMRES_TOL" in self.relevant(p) and strategy != "robust" and d["GMRES_TOL"] > 1e-13:
            out.append(("GMRES_TOL", d["GMRES_TOL"] / 10, "a tighter GMRES tolerance"))
        if (strategy == "robust" or failed) and m > 8:
            out.append(("DEGREE", max(8, (2 * m) // 3), "a lower degree (cheaper)"))
        return out

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        if status in ("timeout", "memory") and d["DEGREE"] > 8:
            return {"DEGREE": max(8, d["DEGREE"] // 2)}
        return {}

    def title(self, d: Design, p: Problem) -> str:
        m = d["DEGREE"]
        grid = f"{m + 1} points" if p.dim == 1 else f"{m + 1}x{m + 1} points"
        solve = "dense direct solve" if p.dim == 1 else "GMRES with a finite-difference preconditioner"
        out = (f"Chebyshev collocation of degree {m} ({grid}), barycentric interpolation to the"
               f" output points, {solve}")
        return out + (", Newton iteration" if not p.struct.linear else "")

    def orders(self, d: Design, p: Problem):
        return (8, 8)  # spectral; no time stepping

    def cost(self, d: Design, p: Problem) -> float:
        return 0.01 * (d["DEGREE"] / 32) ** (3 if p.dim == 2 else 1)

    def render(self, d: Design, p: Problem) -> str:
        prob: EllipticProblem = p.struct
        return (problem_constants(p, {"LINEAR": prob.linear,
                                      "DATA_ON_NODES": p.task.grid == "nodes"})
                + fixed_axes(self, d, p) + "\n\n" + coefficient_source(prob, slopes=True)
                + BLOCK + DRIVER)


BLOCK = '''
# ---- block: Chebyshev collocation, barycentric output, FD-preconditioned GMRES ----
import scipy.sparse as _sps
import scipy.sparse.linalg as _spla


def _cheb(m, lo, hi):
    """Chebyshev-Gauss-Lobatto points on [lo, hi] (increasing), the differentiation matrix and
    the barycentric weights."""
    x = lo + (hi - lo) * (1.0 - np.cos(np.pi * np.arange(m + 1) / m)) / 2.0
    w = (-1.0) ** np.arange(m + 1)
    w[0] *= 0.5
    w[-1] *= 0.5
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    D = (w[None, :] / w[:, None]) / diff
    np.fill_diagonal(D, 0.0)
    np.fill_diagonal(D, -D.sum(axis=1))  # exact derivative of constants
    return x, D, w


def _barycentric(x, w, pts):
    """Rows evaluating the interpolant through the points x at pts (exact at a point of x)."""
    d = pts[:, None] - x[None, :]
    hit = np.abs(d) <= 1e-14 * (x[-1] - x[0])
    d[hit] = 1.0
    c = w[None, :] / d
    P = c / c.sum(axis=1, keepdims=True)
    rows = hit.any(axis=1)
    P[rows] = hit[rows].astype(float)
    return P


def _fd(x):
    """Three-point first and second differences on the points x (rows 1..n-2)."""
    n = len(x)
    hm, hp = x[1:-1] - x[:-2], x[2:] - x[1:-1]
    i = np.arange(1, n - 1)
    rows, cols = np.concatenate([i, i, i]), np.concatenate([i - 1, i, i + 1])
    d1 = np.concatenate([-hp / (hm * (hm + hp)), (hp - hm) / (hm * hp), hm / (hp * (hm + hp))])
    d2 = np.concatenate([2 / (hm * (hm + hp)), -2 / (hm * hp), 2 / (hp * (hm + hp))])
    return (_sps.csr_matrix((d1, (rows, cols)), shape=(n, n)),
            _sps.csr_matrix((d2, (rows, cols)), shape=(n, n)))


def _sides(axes, prm):
    """Per point: the axis whose boundary condition holds there (-1: the equation) and the
    condition's a, b, g. Sides of axis 0 take their points first; a corner goes to the side of
    axis 1 when that side is Dirichlet (b = 0) and the other is not."""
    shape = tuple(len(ax[0]) for ax in axes)
    dim = len(shape)
    owner = -np.ones(shape, dtype=int)
    A, B, G = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for a in range(dim):
        T = axes[1 - a][0] if dim == 2 else np.zeros(1)
        for side in (0, 1):
            ca, cb, g = boundary_data(a, side, T, prm)
            g = np.broadcast_to(np.asarray(g, dtype=np.float64), T.shape)
            idx = [slice(None)] * dim
            idx[a] = -1 if side else 0
            idx = tuple(idx)
            if dim == 1:
                owner[idx], A[idx], B[idx], G[idx] = a, ca, cb, g[0]
                continue
            take = (owner[idx] < 0) | ((cb == 0.0) & (B[idx] != 0.0))
            for arr, val in ((owner, a), (A, ca), (B, cb), (G, g)):
                view = arr[idx]  # basic slicing: a view, so this writes into arr
                view[take] = val[take] if np.ndim(val) else val
    return owner, A, B, G


def _residual(U, D, D2, coef, bc, fields, X, prm):
    """Collocation residual: the equation at interior points, the conditions on the sides."""
    A2, A1, f = coef
    owner, A, B, G = bc
    dU = [D[0] @ U] if U.ndim == 1 else [D[0] @ U, U @ D[1].T]
    d2U = [D2[0] @ U] if U.ndim == 1 else [D2[0] @ U, U @ D2[1].T]
    r, _ = reaction(U, fields, X, prm)
    R = sum(A2[a] * d2U[a] + A1[a] * dU[a] for a in range(U.ndim)) + r - f
    for a in range(U.ndim):
        on = owner == a
        R[on] = (A * U + B * dU[a] - G)[on]
    return R


def _operator(points, D, D2, coef, bc, dr, fd=False):
    """The Jacobian as a sparse matrix: collocation, or (``fd``) the three-point differences
    on the same points in the equation's rows (the conditions' rows stay exact)."""
    A2, A1, _ = coef
    owner, A, B, _ = bc
    shape = tuple(len(x) for x in points)
    eye = [_sps.identity(n, format="csr") for n in shape]

    def on_axis(m, a):
        if len(shape) == 1:
            return m
        return _sps.kron(m, eye[1], format="csr") if a == 0 else _sps.kron(eye[0], m, format="csr")

    inner = (owner.ravel() < 0).astype(float)
    L = _sps.diags(inner * dr.ravel())
    for a in range(len(shape)):
        d1, d2 = _fd(points[a]) if fd else (_sps.csr_matrix(D[a]), _sps.csr_matrix(D2[a]))
        exact = on_axis(_sps.csr_matrix(D[a]), a)
        on = (owner.ravel() == a).astype(float)
        L = (L + _sps.diags(inner * A2[a].ravel()) @ on_axis(d2, a)
             + _sps.diags(inner * A1[a].ravel()) @ on_axis(d1, a)
             + _sps.diags(on * A.ravel()) + _sps.diags(on * B.ravel()) @ exact)
    return L.tocsc()


def _solve_one(fields, prm, shape, pts):
    m = max(int(DEGREE), 2)
    axes = [_cheb(m, lo, hi) for lo, hi in DOMAIN]
    points = [ax[0] for ax in axes]
    X = tuple(x.reshape((-1,) + (1,) * (len(axes) - a - 1)) for a, x in enumerate(points))
    full = tuple(len(x) for x in points)
    D = [ax[1] for ax in axes]
    D2 = [d @ d for d in D]
    dK = conductivity_slope(fields, X, prm)
    N, b, f = operator_terms(fields, X, prm)
    bc = _sides(axes, prm)

    def inner(v):  # on the equation's points only: a coefficient that is infinite on a wall
        return np.where(bc[0] < 0, v * np.ones(full), 0.0)  # (log(x)) enters no condition row

    with np.errstate(all="ignore"):
        coef = ([inner(-(conductivity(fields, X, prm, a) + N[a])) for a in range(len(full))],
                [inner(b[a] - dK[a]) for a in range(len(full))], inner(f))
    U = np.zeros(full)
    for _ in range(1 if LINEAR else 50):
        R = _residual(U, D, D2, coef, bc, fields, X, prm)
        with np.errstate(all="ignore"):
            dr = inner(reaction(U, fields, X, prm)[1])
        J = _operator(points, D, D2, coef, bc, dr)
        if len(full) == 1:
            dU = np.linalg.solve(J.toarray(), -R.ravel())
        else:
            dU = _gmres(J, -R.ravel(), _operator(points, D, D2, coef, bc, dr, fd=True))
        U = U + dU.reshape(full)
        if LINEAR or np.linalg.norm(dU) <= NEWTON_TOL * (1.0 + np.linalg.norm(U)):
            break
    if pts is None:
        pts = [_points(n, lo, hi, DATA_ON_NODES) for n, (lo, hi) in zip(shape, DOMAIN)]
    P = [_barycentric(ax[0], ax[2], q) for ax, q in zip(axes, pts)]
    return P[0] @ U if len(P) == 1 else P[0] @ U @ P[1].T


def _gmres(J, rhs, P):
    """J x = rhs by GMRES, preconditioned by the sparse LU of P. Differentiation matrices are
    ill-conditioned (~DEGREE^4), so the residual can stall above GMRES_TOL (the helmholtz2d
    example: 3e-12 against 1e-12): x is kept where its residual is at the size of round-off
    in J x, the backward error a direct solve has too; otherwise a direct solve, dense while
    J is small (its sparse LU fills in almost completely and took 3x longer at 65^2 points)."""
    lu = _spla.splu(P)
    M = _spla.LinearOperator(J.shape, lu.solve)
    try:
        x, info = _spla.gmres(J, rhs, M=M, rtol=GMRES_TOL, atol=0.0, restart=60, maxiter=10)
    except TypeError:  # SciPy < 1.12 calls the tolerance tol
        x, info = _spla.gmres(J, rhs, M=M, tol=GMRES_TOL, atol=0.0, restart=60, maxiter=10)
    r = np.linalg.norm(rhs - J @ x)
    round_off = np.finfo(float).eps * abs(J).sum(axis=1).max() * np.linalg.norm(x)
    if np.isfinite(r) and (info == 0 or r <= round_off):
        return x
    if J.shape[0] <= 5000:
        return np.linalg.solve(J.toarray(), rhs)
    return _spla.spsolve(J.tocsc(), rhs)
'''
