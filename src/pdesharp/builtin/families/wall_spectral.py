"""Pseudo-spectral method in the walls' eigenbasis: sines and cosines between homogeneous
Dirichlet/Neumann walls, Fourier modes on periodic axes, with an exponential integrator.

``dt w = L w + N(w, x, t)``: L collects the linear constant-coefficient terms (diffusion,
dispersion, a constant linear reaction; a matrix per mode when they couple unknowns, as the
Schroedinger part of Gross-Pitaevskii does), integrated exactly by ETDRK4 or the integrating
factor; N is the rest of the source (nonlinear, x- and t-dependent terms), evaluated pointwise on
an internal grid ``REFINE`` times finer and projected back with the 2/3 rule. Every unknown is
expanded in the parity :func:`~.bases.wall_bases` gives it, so the odd/even extension across a
wall is what the series represents: spectrally accurate when the equation maps that extension into
itself (Allen-Cahn's u - u**3 with Neumann walls, a cubic nonlinearity with Dirichlet walls), and
still convergent (algebraically) when it does not. The output is the series evaluated at the data
points (never a truncated field), node grids included.

Stability rule: dt <= CFL / max|dN/dw| (the linear part is exact). Matrix exponentials and the
phi functions come from one augmented exponential per step size (Al-Mohy and Higham's block
form: exp([[hL, I, 0, 0], [0, 0, I, 0], [0, 0, 0, I], 0]) carries phi_1..phi_3 in its first row).
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.bases import (BASES, basis_title, emit_bases, has_walls,
                                             parity_compatible, wall_bases)
from pdesharp.builtin.families.common import EVOLVE, GRID, fixed_axes, problem_constants
from pdesharp.builtin.families.exact import EXPM, linear_system
from pdesharp.builtin.families.spectral import GridRatio, linear_parts
from pdesharp.builtin.physics import coords_line, npcode, params_lines, unpack


_SPLIT_CACHE: dict[str, object] = {}


def split_linear(law: BalanceLaw):
    """``(terms, rest)``: dt w = sum_o C_o d^o w + rest(w, x, t) with constant matrices C_o and a
    local remainder (no derivatives); None when a flux or viscous term is not linear with
    constant coefficients in w (those need derivatives of nonlinear expressions). Cached per law
    (families ask for it repeatedly while ranking)."""
    key = repr((law.prims, law.q, law.flux, law.viscous, law.source, law.high, law.params,
                law.coords))
    if key not in _SPLIT_CACHE:
        _SPLIT_CACHE[key] = _split_linear(law)
    return _SPLIT_CACHE[key]


def _split_linear(law: BalanceLaw):
    n, w = law.nvar, sp.Matrix(law.prims)
    free = list(law.prims) + list(law.coords) + [law.t]
    const = lambda m: not any(sp.sympify(e).has(*free) for e in m)  # noqa: E731
    M = sp.Matrix(law.q).jacobian(law.prims)
    if not const(M) or any(sp.expand(e) != 0 for e in sp.Matrix(law.q) - M * w):
        return None
    terms: dict[tuple, sp.Matrix] = defaultdict(lambda: sp.zeros(n, n))
    rest = sp.zeros(n, 1)
    for a in range(law.dim):
        e_a = tuple(int(b == a) for b in range(law.dim))
        F = sp.Matrix(law.flux[a])
        A = F.jacobian(law.prims)
        if not const(A) or any(e.has(*law.prims) for e in F - A * w):
            return None
        terms[e_a] += -A
        rest += -(F - A * w).diff(law.coords[a])
        V = sp.Matrix(law.viscous[a])
        D = V.jacobian(law.grads[a])
        if not const(D) or any(sp.expand(e) != 0 for e in V - D * sp.Matrix(law.grads[a])):
            return None
        terms[tuple(2 * x for x in e_a)] += D
    S = sp.Matrix(law.source)
    B = S.jacobian(law.prims).xreplace({p: 0 for p in law.prims})
    B = B.applyfunc(lambda e: e if const([e]) else sp.Integer(0))
    terms[(0,) * law.dim] += B
    rest += S - B * w
    for i, row in enumerate(law.high):
        for c, j, orders in row:
            m = sp.zeros(n, n)
            m[i, j] = c
            terms[tuple(orders)] += m
    Minv = M.inv()
    out = [(o, (Minv * m).applyfunc(sp.nsimplify)) for o, m in terms.items()
           if any(e != 0 for e in m)]
    return out, [sp.expand(e) for e in Minv * rest]


def _coupled(terms) -> bool:
    return any(m[i, j] != 0 for _, m in terms for i in range(m.rows) for j in range(m.cols)
               if i != j)


class WallSpectralFamily(Family):
    name = "wall_spectral"
    axes = (
        Axis("INTEGRATOR", "etdrk4", ("etdrk4", "if_rk4"),
             "etdrk4 (exponential time differencing) | if_rk4 (integrating factor)"),
        Axis("CFL", 0.2, (), "step as a fraction of 1/max|dN/dw| (the explicit part's rate)"),
        GridRatio("REFINE", 1, (), "internal grid = REFINE x data grid (series interpolation);"
                                   " > 1 keeps every data mode under the 2/3 rule"),
    )

    def _parts(self, p: Problem):
        law = p.struct
        if not isinstance(law, BalanceLaw) or p.steady:
            return None
        bases = wall_bases(law)
        if bases is None:
            return None
        split = split_linear(law)
        if split is None or all(e == 0 for e in split[1]):
            return None
        return bases, split

    def applies(self, p: Problem) -> bool:
        parts = self._parts(p)
        if parts is None or linear_system(p.struct) is not None:  # exact is strictly better
            return False
        bases, _ = parts
        # periodic boxes with a diagonal linear part belong to the FFT family (spectral.py)
        return has_walls(bases) or linear_parts(p.struct) is None

    def smooth(self, p: Problem) -> bool:
        """Spectral accuracy: the equation maps the walls' odd/even extension into itself."""
        bases, (_, rest) = self._parts(p)
        dom = [tuple(p.task.domain[str(c)]) for c in p.struct.coords]
        return parity_compatible(p.struct, bases, rest, dom)

    def candidates(self, p: Problem) -> list[Design]:
        # the step first: the explicit part's rate rarely resolves an output interval finely
        return [self.design(), self.design(CFL=0.05), self.design(REFINE=2, CFL=0.1)]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        other = "if_rk4" if d["INTEGRATOR"] == "etdrk4" else "etdrk4"
        smaller = ("CFL", round(d["CFL"] * 0.5, 4), "a twice smaller step")
        larger = ("CFL", round(min(d["CFL"] * 1.5, 2.0), 4), "a larger step (faster)")
        finer = ("REFINE", int(2 * d["REFINE"]) if float(2 * d["REFINE"]).is_integer()
                 else 2 * d["REFINE"], "a twice finer internal grid (more retained modes)")
        if failed:
            return [smaller, ("INTEGRATOR", other, "the other exponential integrator")]
        if strategy == "accuracy":
            return [smaller, finer, ("INTEGRATOR", other, "the other exponential integrator")]
        return [("INTEGRATOR", other, "the other exponential integrator"), larger, smaller]

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        if status in ("memory", "timeout") and d["REFINE"] > 1:
            return {"REFINE": 1}
        return {"CFL": round(d["CFL"] / 2, 5)}

    def title(self, d: Design, p: Problem) -> str:
        bases, (terms, _) = self._parts(p)
        integ = "ETDRK4" if d["INTEGRATOR"] == "etdrk4" else "integrating-factor RK4"
        lin = "matrix exponential per mode" if _coupled(terms) else "exact linear part"
        r = d["REFINE"]
        ref = f", {Fraction(r).limit_denominator(64)}x internal grid" if r != 1 else ""
        return (f"pseudo-spectral in the {basis_title(bases, p.struct.names)} basis, {integ}"
                f" ({lin}), 2/3 dealiasing, CFL {d['CFL']}{ref}")

    def orders(self, d: Design, p: Problem):
        return (8 if self.smooth(p) else 2, 4)

    def cost(self, d: Design, p: Problem) -> float:
        # dense transforms: O(n) per point and axis, against the FFT's log n
        return 3.0 * (0.2 / d["CFL"]) * d["REFINE"] ** (p.dim + 1)

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        bases, (terms, rest) = self._parts(p)
        flags = {"NVAR": law.nvar, "COUPLED": _coupled(terms)}
        code = problem_constants(p, flags) + fixed_axes(self, d, p) + emit_bases(bases) + "\n\n"
        code += ("def linear_terms(prm):\n    \"\"\"(orders, C) of the linear constant-coefficient"
                 " part: dt w = sum C d^orders w + N.\"\"\"\n"
                 + params_lines(law.params, [e for _, m in terms for e in m]) + "    return [\n")
        for orders, m in terms:
            rows = ", ".join("[" + ", ".join(npcode(m[i, j]) for j in range(law.nvar)) + "]"
                             for i in range(law.nvar))
            code += f"        ({tuple(orders)!r}, [{rows}]),\n"
        code += "    ]\n\n\n"
        names = [w.name for w in law.prims]
        code += ("def remainder(W, X, t, prm):\n    \"\"\"N(w, x, t): what the linear part leaves of"
                 " dt w, evaluated pointwise.\"\"\"\n" + unpack(names, "W", rest)
                 + "    _zero = np.zeros(np.broadcast_shapes(np.shape(W[0]), *[np.shape(x) for x in"
                 " X]))\n" + params_lines(law.params, rest) + coords_line(law.coords, rest, law.t)
                 + "    return [" + ", ".join(f"({npcode(e)}) + _zero" for e in rest) + "]\n\n\n")
        return code + GRID + BASES + EXPM + BLOCK + EVOLVE


BLOCK = '''
# ---- block: pseudo-spectral exponential integrator in the walls' eigenbasis ----


def _operator(space, prm):
    """L [Mtot, NVAR, NVAR]: the symbols of the linear terms, in each source unknown's parity."""
    L = np.zeros(space.mshape + (NVAR, NVAR), dtype=complex)
    for orders, matrix in linear_terms(prm):
        matrix = np.asarray(matrix, dtype=float)
        for i in range(NVAR):
            for j in range(NVAR):
                if matrix[i, j] == 0.0:
                    continue
                s = np.ones(space.mshape, dtype=complex)
                for a, o in enumerate(orders):
                    if o:
                        shape = [1] * space.dim
                        shape[a] = space.mshape[a]
                        s = s * _deriv_symbol(a, space.k[a], o, PARITY[j][a]).reshape(shape)
                L[..., i, j] += matrix[i, j] * s
    return L.reshape(-1, NVAR, NVAR)


def _dealias(space):
    """Keep modes below 2/3 of each axis' top mode number (Orszag's rule)."""
    mask = np.ones(space.mshape, bool)
    for a, m in enumerate(space.m):
        top = np.max(np.abs(m))
        shape = [1] * space.dim
        shape[a] = len(m)
        mask = mask & (3 * np.abs(m) < 2 * top + 2).reshape(shape)
    return mask.reshape(-1)


def _init_state(W0, prm):
    data_shape = W0[0].shape[1:]
    data = _Space(data_shape, NODES, NVAR)
    inner_shape = tuple(max(int(round(REFINE * n)), 4) for n in data_shape)
    inner = _Space(inner_shape, False, NVAR, fast=True)  # every stage transforms: the FFT
    grid = {"data": data, "inner": inner, "cache": {}, "B": W0[0].shape[0]}
    grid["X"] = tuple(_axis_points(a, n, False).reshape((-1,) + (1,) * (len(inner_shape) - a - 1))
                      for a, n in enumerate(inner_shape))
    grid["out"] = {(a, p): _basis_matrix(a, p, _axis_points(a, n, NODES), inner.k[a])
                   for a, n in enumerate(data_shape) for p in {PARITY[i][a] for i in range(NVAR)}}
    L = _operator(inner, prm)
    grid["L"] = L if inner.complex else L.real  # sines and cosines alone: real arithmetic
    grid["mask"] = _dealias(inner)
    c = np.stack([_embed(data.forward(w, i), data, inner) for i, w in enumerate(W0)])
    return c.reshape(NVAR, c.shape[1], -1), grid


def _output(c, grid, prm):
    inner = grid["inner"]
    out = []
    for i in range(NVAR):
        v = c[i].reshape((c.shape[1],) + inner.mshape)
        for a in range(inner.dim):
            v = _apply(grid["out"][a, PARITY[i][a]], v, 1 + a)
        out.append(v.real)
    return out


def _physical(c, grid):
    inner = grid["inner"]
    return [inner.evaluate(c[i].reshape((c.shape[1],) + inner.mshape), i) for i in range(NVAR)]


def _nonlinear(c, t, grid, prm):
    inner = grid["inner"]
    R = remainder(_physical(c, grid), grid["X"], t, prm)
    out = np.stack([inner.forward(np.broadcast_to(r, (c.shape[1],) + inner.shape), i)
                    for i, r in enumerate(R)]).astype(c.dtype, copy=False)
    return out.reshape(NVAR, c.shape[1], -1) * grid["mask"]


def _mul(A, c):
    """Per-mode matrices A [Mtot, n, n] (or diagonals [n, 1, Mtot]) times c [n, B, Mtot]."""
    if not COUPLED:
        return A * c
    return np.einsum("mij,jbm->ibm", A, c)


def _phi(z):
    """exp(z), phi_1(z), phi_2(z), phi_3(z) per mode (COUPLED: augmented exponential of
    [Mtot, n, n] stacks; else the Kassam-Trefethen contour mean on a circle around each z)."""
    if COUPLED:
        n = z.shape[-1]
        A = np.zeros(z.shape[:1] + (4 * n, 4 * n), dtype=complex)
        A[:, :n, :n] = z
        for j in range(3):
            A[:, j * n:(j + 1) * n, (j + 1) * n:(j + 2) * n] = np.eye(n)
        E = _expm(A)
        return [E[:, :n, j * n:(j + 1) * n] for j in range(4)]
    r = np.exp(2j * np.pi * (np.arange(32) + 0.5) / 32)
    lr = z[..., None] + r
    ex = np.exp(lr)
    p1 = np.mean((ex - 1.0) / lr, axis=-1)
    p2 = np.mean((ex - 1.0 - lr) / lr**2, axis=-1)
    p3 = np.mean((ex - 1.0 - lr - lr**2 / 2) / lr**3, axis=-1)
    return [np.exp(z), p1, p2, p3]


def _coefficients(grid, h):
    key = round(h, 14)
    if key in grid["cache"]:
        return grid["cache"][key]
    L = grid["L"] if COUPLED else np.moveaxis(np.diagonal(grid["L"], axis1=1, axis2=2), 0, -1)
    if not COUPLED:
        L = L[:, None, :]  # [NVAR, 1, Mtot]
    e, p1, p2, p3 = _phi(h * L)
    e2, q1, _, _ = _phi(0.5 * h * L)
    out = (e, e2, 0.5 * h * q1, h * (p1 - 3 * p2 + 4 * p3), h * (p2 - 2 * p3), h * (4 * p3 - p2))
    if not grid["inner"].complex:  # real symbols: the contour means' round-off imaginary parts
        out = tuple(np.real(v) for v in out)
    grid["cache"][key] = out
    return grid["cache"][key]


def _step(c, t, h, grid, prm):
    N = lambda v, s: _nonlinear(v, t + s * h, grid, prm)  # noqa: E731
    e, e2, q, f1, f2, f3 = _coefficients(grid, h)
    if INTEGRATOR == "etdrk4":
        nv = N(c, 0.0)
        a = _mul(e2, c) + _mul(q, nv)
        na = N(a, 0.5)
        b = _mul(e2, c) + _mul(q, na)
        nb = N(b, 0.5)
        cc = _mul(e2, a) + _mul(q, 2.0 * nb - nv)
        nc = N(cc, 1.0)
        return _mul(e, c) + _mul(f1, nv) + 2.0 * _mul(f2, na + nb) + _mul(f3, nc)
    a = N(c, 0.0)
    b = N(_mul(e2, c + 0.5 * h * a), 0.5)
    cc = N(_mul(e2, c) + 0.5 * h * b, 0.5)
    d = N(_mul(e, c) + h * _mul(e2, cc), 1.0)
    return _mul(e, c) + h / 6.0 * (_mul(e, a) + 2.0 * _mul(e2, b + cc) + d)


def _rate(c, t, grid, prm):
    """max |dN/dw| by a one-sided difference (the explicit part's stiffness)."""
    W = np.array(_physical(c, grid))
    eps = 1e-6 * (1.0 + np.abs(W))
    f = lambda V: np.array(remainder(list(V), grid["X"], t, prm))  # noqa: E731
    with np.errstate(all="ignore"):
        return float(np.max(np.abs((f(W + eps) - f(W)) / eps), initial=0.0))


def _advance_to(c, t0, t1, grid, prm):
    span = t1 - t0
    rate = _rate(c, t0, grid, prm)
    if not np.all(np.isfinite(c)) or not np.isfinite(rate):
        return np.full_like(c, np.nan)
    n = 1 if rate <= 0 else max(int(np.ceil(span * rate / CFL)), 1)
    if n > 2**20:
        return np.full_like(c, np.nan)  # the step collapsed: the solution is blowing up
    h = span / n
    for m in range(n):
        c = _step(c, t0 + m * h, h, grid, prm)
    return c
'''
