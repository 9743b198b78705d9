"""Chebyshev collocation for steady systems of several unknowns (:mod:`..steady_system`), 1D or
2D: every unknown on the tensor Chebyshev-Gauss-Lobatto grid of ``DEGREE`` + 1 points per axis,
every derivative a differentiation matrix (Kronecker products), Newton's method on the residuals
with the Jacobian assembled from the symbolic derivatives dF_i/d(jet) (one sparse direct solve
per step; a least-squares solve where the system is singular, as a pressure's constant makes
it). Side conditions, coupling unknowns or not, replace the equation of the unknown they belong
to on that side's points (a corner takes a Dirichlet condition first); an unknown with no
condition anywhere is fixed to zero mean (Clenshaw-Curtis weights). The solution is evaluated at
the output points by barycentric interpolation: exact to round-off for an analytic solution
once the degree resolves it, which the judges raise.
"""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.common import problem_constants
from pdesharp.builtin.physics import coords_line, npcode, params_lines, safe, unpack
from pdesharp.builtin.steady_system import SteadySystem


class CollocationSystemFamily(Family):
    name = "collocation_system"
    axes = (Axis("DEGREE", 24, (), "polynomial degree per axis (DEGREE + 1 Chebyshev points)"),)

    def applies(self, p: Problem) -> bool:
        return isinstance(p.struct, SteadySystem)

    def candidates(self, p: Problem) -> list[Design]:
        degrees = (32, 48, 64) if p.dim == 1 else (20, 28, 36)
        return [self.design(DEGREE=d) for d in degrees]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        up = ("DEGREE", int(d["DEGREE"] * 1.5), "a higher degree (more Chebyshev points)")
        down = ("DEGREE", max(int(d["DEGREE"] / 1.5), 8), "a lower degree (faster)")
        if failed:
            return [down] if p.dim == 2 else [up]
        return [up] if strategy != "robust" else [up, down]

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        return {"DEGREE": max(int(d["DEGREE"] / 1.5), 8)}

    def title(self, d: Design, p: Problem) -> str:
        return (f"Chebyshev collocation of the {len(p.struct.names)}-unknown system, degree"
                f" {d['DEGREE']}, Newton with a sparse direct solve")

    def orders(self, d: Design, p: Problem):
        return (8, 8)

    def cost(self, d: Design, p: Problem) -> float:
        return (d["DEGREE"] / 24.0) ** (3 * p.dim - 1)

    def render(self, d: Design, p: Problem) -> str:
        law: SteadySystem = p.struct
        n = len(law.names)
        jets = law.jets.used(law.residual)
        base = [law.jets.symbol(j, (0,) * law.dim) for j in range(n)]
        inputs = base + [s for *_, s in jets]
        spec = [(j, (0,) * law.dim) for j in range(n)] + [(j, tuple(o)) for j, o, _ in jets]
        slopes = [[sp.diff(e, s) for s in inputs] for e in law.residual]
        names = [s.name for s in inputs]
        every = list(law.residual) + [e for row in slopes for e in row]
        code = problem_constants(p, {"NVAR": n, "RETURNS": [law.names.index(r) for r in
                                                            p.task.solver.returns]})
        code += f"INPUTS = {spec!r}  # (unknown, derivative orders per axis) the residuals use\n"
        code += f"FREE = {[law.names.index(u) for u in law.free]!r}  # zero-mean unknowns\n"
        code += _conditions(law) + "\n\n"
        head = (unpack(names, "V", every) + params_lines(law.params, every)
                + coords_line(law.coords, every) + "    _zero = np.zeros(np.broadcast_shapes("
                "*[np.shape(v) for v in V], *[np.shape(x) for x in X]))\n")
        code += ("def residual(V, X, prm):\n    \"\"\"F_i at the points (V: the INPUTS).\"\"\"\n"
                 + head + "    return [" + ", ".join(f"({npcode(e)}) + _zero"
                                                  for e in law.residual) + "]\n\n\n")
        code += ("def slopes(V, X, prm):\n    \"\"\"dF_i/d(INPUTS[m]) at the points.\"\"\"\n"
                 + head + "    return [\n" + "".join(
                     "        [" + ", ".join(f"({npcode(e)}) + _zero" for e in row) + "],\n"
                     for row in slopes) + "    ]\n\n\n")
        return code + BLOCK


def _conditions(law: SteadySystem) -> str:
    """CONDITIONS: (owner, axis, side) per side condition, and ``condition(k, prm, T)``: its
    terms [(unknown, a, b)] (a w + b dw/d(axis) summed) and its data g at the tangential
    coordinate T."""
    idx = {u: j for j, u in enumerate(law.names)}
    rows, body = [], []
    every = [e for c in law.boundary.conditions
             for e in [c.a, c.b, c.g] + [x for o in c.others for x in o[1:]]]
    for k, c in enumerate(law.boundary.conditions):
        a = law.coords.index(sp.Symbol(c.axis, real=True))
        rows.append(f"    ({idx[c.unknown]}, {a}, {c.side}),")
        terms = [(idx[c.unknown], c.a, c.b)] + [(idx[u], ca, cb) for u, ca, cb in c.others]
        other = [x for x in law.coords if x != law.coords[a]]
        tl = ", ".join(f"({j}, float({npcode(ca)}), float({npcode(cb)}))" for j, ca, cb in terms)
        along = f"        {safe(other[0].name)} = _along\n" if other and c.g.has(other[0]) else ""
        body.append(f"    if _which == {k}:\n{along}        return [{tl}], ({npcode(c.g)})"
                    " + 0.0 * _along\n")
    return ("CONDITIONS = [  # (owner unknown, axis, side)\n" + "\n".join(rows) + "\n]\n\n\n"
            "def condition(_which, prm, _along):\n    \"\"\"Side condition _which: [(unknown, a, b)]"
            " and its data g at the tangential coordinate _along.\"\"\"\n"
            + params_lines(law.params, every) + "".join(body) + "    raise IndexError(_which)\n")


BLOCK = '''
# ---- block: Chebyshev collocation of a steady system, Newton's method ----
import scipy.sparse as sps
import scipy.sparse.linalg as spla


def _cheb(n, lo, hi):
    """Chebyshev-Gauss-Lobatto points on [lo, hi] (ascending) and the differentiation matrix."""
    j = np.arange(n + 1)
    x = -np.cos(np.pi * j / n)
    c = np.where((j == 0) | (j == n), 2.0, 1.0) * (-1.0) ** j
    dX = x[:, None] - x[None, :]
    D = np.outer(c, 1.0 / c) / (dX + np.eye(n + 1))
    D = D - np.diag(D.sum(axis=1))
    return lo + (x + 1) * (hi - lo) / 2, D * 2 / (hi - lo)


def _weights(n, lo, hi):
    """Clenshaw-Curtis quadrature weights of the points of _cheb."""
    theta = np.pi * np.arange(n + 1) / n
    w = np.zeros(n + 1)
    v = np.ones(n - 1)
    if n % 2 == 0:
        w[0] = w[n] = 1.0 / (n * n - 1)
        for k in range(1, n // 2):
            v -= 2 * np.cos(2 * k * theta[1:-1]) / (4 * k * k - 1)
        v -= np.cos(n * theta[1:-1]) / (n * n - 1)
    else:
        w[0] = w[n] = 1.0 / (n * n)
        for k in range(1, (n - 1) // 2 + 1):
            v -= 2 * np.cos(2 * k * theta[1:-1]) / (4 * k * k - 1)
    w[1:-1] = 2 * v / n
    return w * (hi - lo) / 2


def _interp(x, pts):
    """Barycentric interpolation matrix from the Chebyshev points x to pts."""
    n = len(x) - 1
    w = (-1.0) ** np.arange(n + 1)
    w[0] *= 0.5
    w[-1] *= 0.5
    return _barycentric(x, w, pts, 1 + np.abs(x).max())


def _barycentric(nodes, w, pts, scale):
    """The interpolation matrix from ``nodes`` (barycentric weights ``w``) to ``pts``; a point
    on a node takes that node's value."""
    d = np.asarray(pts, float)[:, None] - nodes[None, :]
    hit = np.isclose(d, 0.0, atol=1e-14 * scale)
    d[hit] = 1.0
    M = w / d
    M = M / M.sum(axis=1, keepdims=True)
    rows = hit.any(axis=1)
    M[rows] = hit[rows].astype(float)
    return M


def _inner_to_all(x):
    """Polynomial interpolation from the interior points x[1:-1] to all of x: a pressure lives
    in degree DEGREE - 2 (the P_N - P_N-2 collocation of Stokes flow, free of spurious modes)."""
    xi = x[1:-1]
    w = np.array([1.0 / np.prod((xk - np.delete(xi, k)) * 2.0 / (x[-1] - x[0]))
                  for k, xk in enumerate(xi)])
    return _barycentric(xi, w, x, 1 + np.abs(x).max())


def _solve_batch(coeffs, prm, pts):
    dim = len(DOMAIN)
    grids = [_cheb(DEGREE, *DOMAIN[a]) for a in range(dim)]
    shape = tuple(len(g[0]) for g in grids)
    X = tuple(g[0].reshape((-1,) + (1,) * (dim - a - 1)) for a, g in enumerate(grids))
    eye = [sps.identity(len(g[0]), format="csr") for g in grids]

    def dmat(orders):
        out = None
        for a, o in enumerate(orders):
            m = sps.csr_matrix(np.linalg.matrix_power(grids[a][1], o)) if o else eye[a]
            out = m if out is None else sps.kron(out, m, format="csr")
        return out

    mats = [dmat(o) for _, o in INPUTS]
    size = int(np.prod(shape))
    # which condition replaces equation i at each point (-1: the equation itself)
    owner = -np.ones((NVAR, size), dtype=int)
    def dirichlet(k):
        return all(b == 0.0 for _, _, b in condition(k, prm, np.zeros(1))[0][:1])

    for k, (i, a, side) in enumerate(CONDITIONS):
        on = np.zeros(shape, bool)
        idx = [slice(None)] * dim
        idx[a] = -1 if side else 0
        on[tuple(idx)] = True
        on = on.ravel()
        free = on & (owner[i] < 0)
        # a corner already taken by a Neumann/Robin condition yields to a Dirichlet one
        taken = on & (owner[i] >= 0)
        if dirichlet(k) and taken.any():
            weak = np.array([not dirichlet(q) for q in owner[i][taken]], bool)
            owner[i][np.flatnonzero(taken)[weak]] = k
        owner[i][free] = k
    # an unknown with no condition anywhere (a pressure) has values U = E q, q at the interior
    # points, and its own equation (the constraint) holds at the interior points only
    E = None
    for a in range(dim):
        m = sps.csr_matrix(_inner_to_all(grids[a][0]))
        E = m if E is None else sps.kron(E, m, format="csr")
    inner = np.ones(shape, bool)
    for a in range(dim):
        idx = [slice(None)] * dim
        idx[a] = [0, -1]
        inner[tuple(idx)] = False
    inner = inner.ravel()
    cols = [sps.identity(size, format="csr") if j not in FREE else E for j in range(NVAR)]
    keep_rows = np.concatenate([inner if i in FREE else np.ones(size, bool) for i in range(NVAR)])
    U = np.zeros((NVAR, size))
    for _ in range(50):
        V = [(mats[m] @ U[j]).reshape(shape) for m, (j, _) in enumerate(INPUTS)]
        R = [np.broadcast_to(np.asarray(r, float), shape).ravel() for r in residual(V, X, prm)]
        S = slopes(V, X, prm)
        blocks = [[None] * NVAR for _ in range(NVAR)]
        for i in range(NVAR):
            keep = (owner[i] < 0).astype(float)
            for m, (j, _) in enumerate(INPUTS):
                c = np.broadcast_to(np.asarray(S[i][m], float), shape).ravel() * keep
                if np.any(c):
                    term = sps.diags(c) @ mats[m]
                    blocks[i][j] = term if blocks[i][j] is None else blocks[i][j] + term
            for k, (_, a, side) in enumerate(CONDITIONS):
                rows = (owner[i] == k).astype(float)
                if not rows.any():
                    continue
                T = np.broadcast_to(X[1 - a], shape).ravel() if dim == 2 else np.zeros(size)
                terms, gv = condition(k, prm, T)
                first = tuple(int(b == a) for b in range(dim))
                val = -np.broadcast_to(np.asarray(gv, float), (size,))
                for j, ca, cb in terms:
                    A = ca * sps.identity(size) + cb * dmat(first)
                    val = val + A @ U[j]
                    term = sps.diags(rows) @ A
                    blocks[i][j] = term if blocks[i][j] is None else blocks[i][j] + term
                R[i] = np.where(rows > 0, val, R[i])
        for i in range(NVAR):
            for j in range(NVAR):
                if blocks[i][j] is None:
                    blocks[i][j] = sps.csr_matrix((size, size))
        J = (sps.bmat(blocks, format="csr") @ sps.block_diag(cols, format="csr"))[keep_rows]
        rhs = -np.concatenate(R)[keep_rows]
        if FREE:  # a pressure's constant: one multiplier row (the sum of its values) fixes it
            C = sps.hstack([sps.csr_matrix((1, size)) if j not in FREE else
                            sps.csr_matrix(np.ones((1, E.shape[1]))) for j in range(NVAR)])
            K = sps.bmat([[J, C.T], [C, None]], format="csc")
            rhs = np.concatenate([rhs, np.zeros(1)])
        else:
            K = J.tocsc()
        with np.errstate(all="ignore"):
            try:
                sol = spla.spsolve(K, rhs)
                ok = np.all(np.isfinite(sol)) and np.linalg.norm(K @ sol - rhs) <= 1e-8 * (
                    1.0 + np.linalg.norm(rhs))
            except RuntimeError:  # an exactly singular factor
                ok = False
            if not ok:  # singular: the least-squares solution
                sol = np.linalg.lstsq(K.toarray(), rhs, rcond=None)[0]
        parts = np.split(sol[:J.shape[1]], np.cumsum([c.shape[1] for c in cols])[:-1])
        dU = np.stack([c @ q for c, q in zip(cols, parts)])
        U = U + dU
        if np.linalg.norm(dU) <= 1e-12 * (1.0 + np.linalg.norm(U)):
            break
    if FREE:
        w = _weights(DEGREE, *DOMAIN[0])
        for a in range(1, dim):
            w = np.multiply.outer(w, _weights(DEGREE, *DOMAIN[a]))
        w = w.ravel() / w.sum()
        for j in FREE:
            U[j] = U[j] - w @ U[j]
    P = [_interp(g[0], p if p is not None else g[0]) for g, p in zip(grids, pts or [None] * dim)]
    out = []
    for j in range(NVAR):
        v = U[j].reshape(shape)
        for a, M in enumerate(P):
            v = np.moveaxis(np.tensordot(M, v, axes=([1], [a])), 0, a)
        out.append(v)
    got = [out[r] for r in RETURNS]
    return got[0] if len(got) == 1 else tuple(got)
'''
