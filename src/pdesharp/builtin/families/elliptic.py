"""Steady elliptic problems in 1D and 2D: a three- (five-) point finite-volume stencil and a sparse
direct solve, Newton's method for a nonlinear reaction.

``sum_a [-da(K_a da u) - N_a da(da u) + b_a da u] + r(u) = f`` with coefficients that may depend
on x, y, parameters and coefficient fields, and Dirichlet, Neumann or Robin conditions on each
side. Unknowns sit at the data points: cell centres (a wall half a cell away, ghost values
``u_g = alpha u_edge + beta`` that satisfy ``a u + b du/dn = g`` at the wall), or nodes (the
wall on the boundary node: Dirichlet rows, centred ghost nodes for Neumann and Robin). For
cell-centred data, ``GRID = "nodes"`` solves on a node grid and moves coefficients and solution
with cubic splines.

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
        return out

    def candidates(self, p: Problem) -> list[Design]:
        rel = self.relevant(p)
        grids = ["cells", "nodes"] if "GRID" in rel else ["nodes"]
        means = ["arithmetic", "harmonic"] if "FACE_MEAN" in rel else ["arithmetic"]
        conv = ["central", "upwind"] if "CONVECTION" in rel else ["central"]
        if p.facts.get("cell_peclet", 0.0) >= 2.0:
            conv = conv[::-1]
        return [self.design(GRID=g, FACE_MEAN=m, CONVECTION=c) for m in means for g in grids
                for c in conv]

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
        return out if strategy != "robust" else out[::-1]

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        rel = self.relevant(p)
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
        parts.append("sparse direct solve" if p.struct.linear else "Newton iteration")
        return ", ".join(parts)

    def orders(self, d: Design, p: Problem):
        upwind = "CONVECTION" in self.relevant(p) and d["CONVECTION"] == "upwind"
        return (1 if upwind else 2, 8)

    def cost(self, d: Design, p: Problem) -> float:
        return 0.05

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
        J = (A + _sps.diags(keep * dr.ravel()) + one).tocsc()
        du = _spla.spsolve(J, -res)
        u = u + du
        if not LINEAR and np.linalg.norm(du) <= NEWTON_TOL * (1.0 + np.linalg.norm(u)):
            break
    return u.reshape(grid["shape"])


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
