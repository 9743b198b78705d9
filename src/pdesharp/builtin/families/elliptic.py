"""Steady elliptic problems in 1D and 2D: a three- (five-) point finite-volume stencil and a sparse
direct solve, Newton's method for a nonlinear reaction.

``sum_a [-da(K_a da u) - N_a da(da u) + b_a da u] + r(u) = f`` with coefficients that may depend
on x, y, parameters and coefficient fields, and Dirichlet, Neumann or Robin conditions on each
side. Unknowns sit at the data points: cell centres (a wall half a cell away, ghost values
``u_g = alpha u_edge + beta`` that satisfy ``a u + b du/dn = g`` at the wall), or nodes (the
wall on the boundary node: Dirichlet rows, centred ghost nodes for Neumann and Robin). For
cell-centred data, ``GRID = "nodes"`` solves on a node grid and moves coefficients and solution
with cubic splines. ``SOLVER = "cg"`` (2D, divergence form, no convection) solves the symmetric
system by conjugate gradients to ``CG_TOL``, preconditioned by the exact inverse of the
constant-coefficient operator (geometric-mean conductivity per axis; a sine or cosine transform
per axis after the side types), so the iteration count follows max K / min K, not the grid:
~30 iterations at 1e-10 for a 12/3 coefficient on 421^2, against a sparse LU whose fill grows
faster than the unknowns. Where the matrix is not symmetric and definite, it solves directly.

Stability rule: none (no time stepping); with K > 0 the matrix is an M-matrix (central
convection keeps it one while the cell Peclet number |b| h / K < 2; ``CONVECTION = "upwind"``
keeps it one always).
"""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.elliptic_problem import EllipticProblem
from pdesharp.builtin.families.common import fixed_axes, problem_constants
from pdesharp.builtin.physics import npcode, params_lines, safe


class EllipticFamily(Family):
    name = "elliptic"
    axes = (
        Axis("GRID", "cells", ("cells", "nodes"),
             "cells: unknowns at the cell centres | nodes: node grid + splines back"),
        Axis("FACE_MEAN", "arithmetic", ("arithmetic", "harmonic"),
             "face value of a coefficient-field conductivity from its two cells"),
        Axis("CONVECTION", "central", ("central", "upwind"), "difference of b * du/dx"),
        Axis("NEWTON_TOL", 1e-10, (), "relative Newton step at which the nonlinear solve stops"),
        Axis("SOLVER", "direct", ("direct", "cg"),
             "direct: sparse LU | cg: conjugate gradients, fast-transform preconditioner (2D)"),
        Axis("CG_TOL", 1e-10, (), "relative residual at which conjugate gradients stop"),
    )

    def applies(self, p: Problem) -> bool:
        return isinstance(p.struct, EllipticProblem)

    def relevant(self, p: Problem) -> list[str]:
        prob: EllipticProblem = p.struct
        out = []
        if p.task.grid == "cell_centres":
            out.append("GRID")
        if prob.field_conductivity:
            out.append("FACE_MEAN")
        if prob.has_convection:
            out.append("CONVECTION")
        if not prob.linear:
            out.append("NEWTON_TOL")
        if self._cg_applies(p):
            out += ["SOLVER", "CG_TOL"]
        return out

    @staticmethod
    def _cg_applies(p: Problem) -> bool:
        """A symmetric five-point matrix is possible: 2D, divergence form, no convection (the
        solver still checks symmetry and falls back to the direct solve)."""
        prob: EllipticProblem = p.struct
        return prob.dim == 2 and not prob.has_convection and all(n == 0 for n in prob.N)

    def active(self, d: Design, p: Problem) -> set[str]:
        act = set(self.relevant(p))
        if d["SOLVER"] != "cg":
            act.discard("CG_TOL")
        return act

    def candidates(self, p: Problem) -> list[Design]:
        rel = self.relevant(p)
        grids = ["cells", "nodes"] if "GRID" in rel else ["nodes"]
        means = ["arithmetic", "harmonic"] if "FACE_MEAN" in rel else ["arithmetic"]
        conv = ["central", "upwind"] if "CONVECTION" in rel else ["central"]
        if p.facts.get("cell_peclet", 0.0) >= 2.0:
            conv = conv[::-1]
        # CG first where it applies: the same discrete solution (to CG_TOL) at a fraction of
        # the direct solve's time on large grids
        solver = "cg" if "SOLVER" in rel else "direct"
        return [self.design(GRID=g, FACE_MEAN=m, CONVECTION=c, SOLVER=solver) for m in means
                for g in grids for c in conv]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        rel = self.relevant(p)
        out = []
        if "FACE_MEAN" in rel:
            out.append(("FACE_MEAN", "harmonic" if d["FACE_MEAN"] == "arithmetic" else "arithmetic",
                        "the other face average of the conductivity"))
        if "GRID" in rel:
            out.append(("GRID", "nodes" if d["GRID"] == "cells" else "cells",
                        "the other grid convention"))
        if "CONVECTION" in rel:
            out.append(("CONVECTION", "upwind" if d["CONVECTION"] == "central" else "central",
                        "the other convection difference"))
        if "NEWTON_TOL" in rel:
            out.append(("NEWTON_TOL", d["NEWTON_TOL"] / 100, "a tighter Newton tolerance"))
        if "SOLVER" in rel and d["SOLVER"] == "cg":
            if strategy == "robust":
                out.append(("CG_TOL", d["CG_TOL"] * 100, "a looser CG tolerance (fewer iterations)"))
            elif d["CG_TOL"] > 1e-9:  # at 1e-10 the iteration error is far below the grid's
                out.append(("CG_TOL", d["CG_TOL"] / 100, "a tighter CG tolerance"))
        if "SOLVER" in rel:
            out.append(("SOLVER", "direct" if d["SOLVER"] == "cg" else "cg",
                        "the sparse direct solve" if d["SOLVER"] == "cg" else
                        "preconditioned conjugate gradients (faster on large grids)"))
        return out if strategy != "robust" else out[::-1]

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        rel = self.relevant(p)
        if "SOLVER" in rel and d["SOLVER"] == "cg":
            return {"SOLVER": "direct"}
        if "CONVECTION" in rel and d["CONVECTION"] == "central":
            return {"CONVECTION": "upwind"}
        if "GRID" in rel:
            return {"GRID": "cells" if d["GRID"] == "nodes" else "nodes"}
        return {}

    def title(self, d: Design, p: Problem) -> str:
        rel = self.relevant(p)
        grid = d["GRID"] if "GRID" in rel else "nodes"
        pts = "three-point" if p.dim == 1 else "five-point"
        parts = [f"{pts} finite volumes on the {'cell centres' if grid == 'cells' else 'nodes'}"]
        if grid == "nodes" and "GRID" in rel:
            parts[0] += " (splines to and from the data points)"
        if "FACE_MEAN" in rel:
            parts.append(f"{d['FACE_MEAN']} face means")
        if "CONVECTION" in rel:
            parts.append(f"{d['CONVECTION']} convection")
        if "SOLVER" in rel and d["SOLVER"] == "cg":
            parts.append(f"preconditioned CG (tolerance {d['CG_TOL']:.0e})")
        else:
            parts.append("sparse direct solve")
        if not p.struct.linear:
            parts.append("Newton iteration")
        return ", ".join(parts)

    def orders(self, d: Design, p: Problem):
        upwind = "CONVECTION" in self.relevant(p) and d["CONVECTION"] == "upwind"
        return (1 if upwind else 2, 8)

    def cost(self, d: Design, p: Problem) -> float:
        return 0.02 if "SOLVER" in self.relevant(p) and d["SOLVER"] == "cg" else 0.05

    def render(self, d: Design, p: Problem) -> str:
        prob: EllipticProblem = p.struct
        flags = {"LINEAR": prob.linear, "FIELD_K": prob.field_conductivity,
                 "DATA_ON_NODES": p.task.grid == "nodes"}
        return (problem_constants(p, flags) + fixed_axes(self, d, p) + "\n\n"
                + coefficient_source(prob) + BLOCK)


def _unpack_fields(prob: EllipticProblem, exprs) -> str:
    used = set().union(*[sp.sympify(e).free_symbols for e in exprs])
    out = "".join(f"    {safe(f.name)} = fields[{f.name!r}]\n" for f in prob.fields if f in used)
    if any(c in used for c in prob.coords):
        names = [safe(c.name) for c in prob.coords]
        out += f"    {', '.join(names)}{',' if len(names) == 1 else ''} = X\n"
    return out


def coefficient_source(prob: EllipticProblem) -> str:
    """NumPy source of the operator's coefficients, reaction and boundary data."""
    u = prob.unknown
    one = "    _one = np.ones(np.broadcast(*X, *fields.values()).shape)\n"
    out = ["# ---- the operator, generated from the equation with SymPy ----\n"]
    body = "def conductivity(fields, X, prm, axis):\n    \"\"\"K_axis of -d(K du) at the points X.\"\"\"\n"
    body += one + params_lines(prob.params, prob.K) + _unpack_fields(prob, prob.K)
    body += "    return [" + ", ".join(f"({npcode(k)}) * _one" for k in prob.K) + "][axis]\n\n\n"
    out.append(body)
    terms = list(prob.N) + list(prob.b) + [prob.forcing]
    body = ("def operator_terms(fields, X, prm):\n    \"\"\"Non-divergence coefficients N, convection b"
            " (per axis) and the forcing f at X.\"\"\"\n" + one + params_lines(prob.params, terms)
            + _unpack_fields(prob, terms))
    lst = lambda es: "[" + ", ".join(f"({npcode(e)}) * _one" for e in es) + "]"  # noqa: E731
    body += f"    return {lst(prob.N)}, {lst(prob.b)}, ({npcode(prob.forcing)}) * _one\n\n\n"
    out.append(body)
    r, dr = prob.reaction, sp.diff(prob.reaction, u)
    body = ("def reaction(_u, fields, X, prm):\n    \"\"\"The local reaction r(u) and dr/du.\"\"\"\n"
            "    _one = np.ones(np.broadcast(_u, *X, *fields.values()).shape)\n"
            + params_lines(prob.params, [r, dr]) + _unpack_fields(prob, [r, dr])
            + (f"    {safe(u.name)} = _u\n" if r.has(u) or dr.has(u) else ""))
    body += f"    return ({npcode(r)}) * _one, ({npcode(dr)}) * _one\n\n\n"
    out.append(body)
    body = ("def boundary_data(axis, side, T, prm):\n    \"\"\"(a, b, g) of a*u + b*du/d(axis) = g on a"
            " side; g over the tangential coordinate T.\"\"\"\n"
            + params_lines(prob.params, [e for c in prob.boundary.conditions for e in (c.a, c.b, c.g)]))
    names = [c.name for c in prob.coords]
    for a, axis in enumerate(names):
        for s in (0, 1):
            c = prob.boundary.condition(prob.name, axis, s)
            other = [n for n in names if n != axis]
            body += f"    if (axis, side) == ({a}, {s}):  # {c.text}\n"
            if other and c.g.has(sp.Symbol(other[0], real=True)):
                body += f"        {safe(other[0])} = T\n"
            body += (f"        return {npcode(c.a)}, {npcode(c.b)}, ({npcode(c.g)}) + 0.0 * T\n")
    body += "    raise ValueError((axis, side))\n\n\n"
    out.append(body)
    return "".join(out)


BLOCK = '''
# ---- block: finite-volume stencil, ghost values from the boundary conditions, sparse solve ----
import scipy.sparse as _sps
import scipy.sparse.linalg as _spla


def _points(n, lo, hi, nodes):
    return np.linspace(lo, hi, n) if nodes else lo + (np.arange(n) + 0.5) * (hi - lo) / n


def _layout(shape, nodes):
    """Coordinates X (broadcastable), spacings h and 1D point arrays of the solver's grid."""
    pts, h, X = [], [], []
    for a, n in enumerate(shape):
        lo, hi = DOMAIN[a]
        p = _points(n, lo, hi, nodes)
        pts.append(p)
        h.append((hi - lo) / (n - 1) if nodes else (hi - lo) / n)
        X.append(p.reshape((n,) + (1,) * (len(shape) - a - 1)))
    return {"shape": tuple(shape), "pts": pts, "h": h, "X": tuple(X), "nodes": nodes}


def _face_mean(k1, k2):
    if FACE_MEAN == "harmonic":
        return 2.0 * k1 * k2 / np.where(k1 + k2 != 0.0, k1 + k2, 1.0)
    return 0.5 * (k1 + k2)


def _faces(fields, grid, prm, a):
    """K on the + and - face of every point along axis a (the outer faces at the walls or the
    ghost points)."""
    if FIELD_K:  # cell values of a field: average the two neighbours
        K = conductivity(fields, grid["X"], prm, a)
        lo, hi = [slice(None)] * K.ndim, [slice(None)] * K.ndim
        lo[a], hi[a] = slice(0, -1), slice(1, None)
        Kf = _face_mean(K[tuple(lo)], K[tuple(hi)])
        first, last = [slice(None)] * K.ndim, [slice(None)] * K.ndim
        first[a], last[a] = slice(0, 1), slice(-1, None)
        return (np.concatenate([Kf, K[tuple(last)]], axis=a),
                np.concatenate([K[tuple(first)], Kf], axis=a))
    shifted = lambda s: tuple(x + s * grid["h"][a] if b == a else x  # noqa: E731
                              for b, x in enumerate(grid["X"]))
    return conductivity({}, shifted(0.5), prm, a), conductivity({}, shifted(-0.5), prm, a)


def _ghost(a, side, grid, prm):
    """u_outside = a0 * u_edge + a1 * u_inner + beta on the given side of axis a, and whether
    the side is a Dirichlet side of a node grid (then the edge value is simply prescribed)."""
    other = [p for b, p in enumerate(grid["pts"]) if b != a]
    T = other[0] if other else np.zeros(())
    ca, cb, g = boundary_data(a, side, T, prm)
    h = grid["h"][a]
    if grid["nodes"]:
        if cb == 0:
            return 0.0, 0.0, 0.0, g / ca
        sign = 1.0 if side == 0 else -1.0  # centred difference across the boundary node
        return sign * 2.0 * h * ca / cb, 1.0, -sign * 2.0 * h * g / cb, None
    inner, outer = (0.5 * ca + cb / h, 0.5 * ca - cb / h) if side == 0 else \\
        (0.5 * ca - cb / h, 0.5 * ca + cb / h)
    return -inner / outer, 0.0, g / outer, None


def _system(fields, grid, prm):
    """Matrix rows (A, rhs) of the linear part and the rows prescribed by Dirichlet nodes."""
    shape = grid["shape"]
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    Ns, bs, f = operator_terms(fields, grid["X"], prm)
    diag = np.zeros(shape)
    rhs = np.array(f, dtype=np.float64) * np.ones(shape)
    fixed = np.zeros(shape, dtype=bool)
    value = np.zeros(shape)
    rows, cols, vals = [], [], []
    for a in range(len(shape)):
        h = grid["h"][a]
        Kp, Km = _faces(fields, grid, prm, a)
        N, b = Ns[a] * np.ones(shape), bs[a] * np.ones(shape)
        cp, cm = -(Kp + N) / h**2, -(Km + N) / h**2
        diag += (Kp + Km + 2.0 * N) / h**2
        if CONVECTION == "upwind":
            cp = cp + np.minimum(b, 0.0) / h
            cm = cm - np.maximum(b, 0.0) / h
            diag += np.abs(b) / h
        else:
            cp, cm = cp + b / (2 * h), cm - b / (2 * h)
        for side, c in ((1, cp), (0, cm)):
            src, dst = [slice(None)] * len(shape), [slice(None)] * len(shape)
            src[a], dst[a] = (slice(0, -1), slice(1, None)) if side else (slice(1, None), slice(0, -1))
            rows.append(idx[tuple(src)].ravel())
            cols.append(idx[tuple(dst)].ravel())
            vals.append(c[tuple(src)].ravel())
            edge, inner = [slice(None)] * len(shape), [slice(None)] * len(shape)
            edge[a], inner[a] = (-1, -2) if side else (0, 1)
            a0, a1, beta, dirichlet = _ghost(a, side, grid, prm)
            if dirichlet is not None:
                fixed[tuple(edge)] = True
                value[tuple(edge)] = dirichlet
                continue
            ce = c[tuple(edge)]
            diag[tuple(edge)] += ce * a0
            rhs[tuple(edge)] -= ce * beta
            if a1:
                rows.append(idx[tuple(edge)].ravel())
                cols.append(idx[tuple(inner)].ravel())
                vals.append((ce * a1).ravel())
    n = idx.size
    A = _sps.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(n, n)) + _sps.diags(diag.ravel())
    keep = _sps.diags((~fixed).ravel().astype(float))
    return keep @ A, rhs.ravel() * (~fixed).ravel(), fixed.ravel(), value.ravel()


def _solve_on(fields, grid, prm):
    A, rhs, fixed, value = _system(fields, grid, prm)
    one = _sps.diags(fixed.astype(float))
    keep = ~fixed
    u = value.copy()
    for _ in range(1 if LINEAR else 50):
        r, dr = reaction(u.reshape(grid["shape"]), fields, grid["X"], prm)
        res = A @ u + keep * (r.ravel() - rhs) + fixed * (u - value)
        J = (A + _sps.diags(keep * dr.ravel()) + one).tocsr()
        du = _pcg(J, -res, fixed, keep * dr.ravel(), grid, prm) if SOLVER == "cg" else None
        if du is None:  # the direct solve (also where CG does not apply or did not converge)
            du = _spla.spsolve(J.tocsc(), -res)
        u = u + du
        if not LINEAR and np.linalg.norm(du) <= NEWTON_TOL * (1.0 + np.linalg.norm(u)):
            break
    return u.reshape(grid["shape"])


def _fast_inverse(grid, prm, scale, shift):
    """The inverse of  sum_a scale[a] * T_a + shift  on the free points of a 2D grid, T_a the
    unit second difference along axis a with the side types of the problem (Dirichlet-like or
    Neumann-like), diagonalised by a sine or cosine transform per axis (O(n log n))."""
    from scipy import fft as _fft

    ops, lam = [], []
    for a, n in enumerate(grid["shape"]):
        if grid["nodes"]:  # node grid: its Dirichlet sides' nodes are fixed, the rest is free
            m = n - 2
            ops.append((_fft.dst, 1))
            lam.append(2.0 - 2.0 * np.cos(np.pi * np.arange(1, m + 1) / (m + 1)))
            continue
        low, high = (_ghost(a, side, grid, prm)[0] < 0 for side in (0, 1))  # ghost -u: Dirichlet
        k = np.arange(n, dtype=float)
        if low and high:
            ops.append((_fft.dst, 2))
            lam.append(2.0 - 2.0 * np.cos(np.pi * (k + 1) / n))
        elif not low and not high:
            ops.append((_fft.dct, 2))
            lam.append(2.0 - 2.0 * np.cos(np.pi * k / n))
        else:
            ops.append((_fft.dst if low else _fft.dct, 4))
            lam.append(2.0 - 2.0 * np.cos(np.pi * (k + 0.5) / n))
    denom = scale[0] * lam[0][:, None] + scale[1] * lam[1][None, :] + shift
    denom = np.where(denom > 0.0, denom, np.max(denom))  # a pure Neumann box: its mean mode
    shape = denom.shape

    inverse = {_fft.dst: _fft.idst, _fft.dct: _fft.idct}
    if ops[0] == ops[1]:  # one call over both axes
        tr, kind = ops[0]
        nd, ind = (_fft.dstn, _fft.idstn) if tr is _fft.dst else (_fft.dctn, _fft.idctn)
        return lambda r: ind(nd(r.reshape(shape), type=kind, norm="ortho") / denom, type=kind,
                             norm="ortho").ravel()

    def apply(r):
        v = r.reshape(shape)
        for a, (tr, kind) in enumerate(ops):
            v = tr(v, type=kind, axis=a, norm="ortho")
        v = v / denom
        for a, (tr, kind) in enumerate(ops):
            v = inverse[tr](v, type=kind, axis=a, norm="ortho")
        return v.ravel()
    return apply


def _pcg(J, b, fixed, dr, grid, prm):
    """Conjugate gradients on the free rows of J, preconditioned by the fast inverse of the
    constant-coefficient operator (the geometric-mean conductivity per axis, the mean reaction):
    its condition number is about max K / min K, whatever the grid size. None where CG does not
    apply (1D, a non-symmetric or indefinite matrix, fixed points other than a node grid's
    boundary ring) or did not reach CG_TOL in 500 iterations: the caller solves directly."""
    shape = grid["shape"]
    if len(shape) != 2:
        return None
    free = np.flatnonzero(~fixed)
    ring = np.zeros(shape, dtype=bool)
    ring[0, :] = ring[-1, :] = ring[:, 0] = ring[:, -1] = True
    if fixed.any() and not (grid["nodes"] and np.array_equal(fixed, ring.ravel())):
        return None
    Jf = J[free][:, free].tocsr() if fixed.any() else J
    if abs(Jf - Jf.T).max() > 1e-12 * abs(Jf).max():
        return None
    bf = b[free]
    strides = (shape[1] - 2 if fixed.any() else shape[1], 1)
    scale = []
    for s in strides:
        off = -Jf.diagonal(s)
        off = off[off > 0]
        if off.size == 0:
            return None
        scale.append(float(np.exp(np.mean(np.log(off)))))
    M = _fast_inverse(grid, prm, scale, max(float(np.mean(dr[free])), 0.0))
    x = np.zeros_like(bf)
    r = bf.copy()
    nb = np.linalg.norm(bf)
    if nb == 0.0:
        out = np.zeros_like(b)
        return out
    z = M(r)
    p = z.copy()
    rz = r @ z
    for _ in range(500):
        Jp = Jf @ p
        pJp = p @ Jp
        if not pJp > 0.0:  # indefinite (or broken down): not a CG problem
            return None
        alpha = rz / pJp
        x += alpha * p
        r -= alpha * Jp
        if np.linalg.norm(r) <= CG_TOL * nb:
            out = np.zeros_like(b)
            out[free] = x
            return out
        z = M(r)
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    return None


def _spline(values, src, dst):
    """Cubic-spline values from the points src to the points dst (1D or 2D tensor grids)."""
    from scipy.interpolate import CubicSpline, RectBivariateSpline

    if len(src) == 1:
        return CubicSpline(src[0], values)(dst[0])
    return RectBivariateSpline(src[0], src[1], values)(dst[0], dst[1])


def _solve_one(fields, prm):
    shape = next(iter(fields.values())).shape
    if DATA_ON_NODES or GRID == "cells":
        return _solve_on(fields, _layout(shape, DATA_ON_NODES), prm)
    cells, nodes = _layout(shape, False), _layout(shape, True)
    at = {k: _spline(v, cells["pts"], nodes["pts"]) for k, v in fields.items()}
    return _spline(_solve_on(at, nodes, prm), nodes["pts"], cells["pts"])


def _solve_batch(fields, prm):
    first = np.asarray(next(iter(fields.values())))
    out = np.empty(first.shape, dtype=np.float64)
    for s in range(first.shape[0]):
        out[s] = _solve_one({k: np.asarray(v[s], dtype=np.float64) for k, v in fields.items()}, prm)
    return out
'''
