"""Exact Fourier propagator: linear constant-coefficient systems on periodic boxes.

When ``dt w = sum_alpha C_alpha d^alpha w + f(x, t)`` with constant matrices C_alpha (scalar or
system, 1D or 2D, any derivative order), every Fourier mode evolves by the matrix exponential
``exp(L(k) h)`` of the symbol ``L(k) = sum_alpha C_alpha (i k)^alpha``: no time-step error at all.
A forcing ``f(x, t)`` enters through Duhamel's integral, evaluated exactly for a polynomial in
time (an augmented matrix exponential), the polynomial interpolating ``f`` at ``FORCING_NODES``
Chebyshev points of each output interval (exact when f does not depend on t).
"""

from __future__ import annotations

from collections import defaultdict

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.common import EVOLVE, FOURIER, GRID, fixed_axes, problem_constants
from pdesharp.builtin.physics import coords_line, npcode, params_lines


def basis(law: BalanceLaw) -> str | None:
    """The eigenbasis of the derivatives for the law's boundaries: Fourier modes on a periodic
    box; in 1D, sines when every unknown is 0 at both walls, cosines when every unknown has a zero
    derivative there (cell-centred DST-II / DCT-II); None otherwise."""
    if law.periodic:
        return "fourier"
    if law.dim != 1 or law.boundary.missing(law.names):
        return None
    conds = law.boundary.conditions
    if any(c.g != 0 for c in conds):
        return None
    if all(c.b == 0 for c in conds):
        return "sine"
    if all(c.a == 0 for c in conds):
        return "cosine"
    return None


def linear_system(law: BalanceLaw):
    """``(terms, forcing)`` with terms a list of (orders, Matrix) such that
    dt w = sum Matrix d^orders w + forcing(x, t); None unless linear with constant coefficients
    and the boundaries have an eigenbasis (:func:`basis`; sines and cosines need even orders)."""
    if not isinstance(law, BalanceLaw) or basis(law) is None:
        return None
    out = _linear_terms(law)
    if out is not None and basis(law) != "fourier" and any(o[0] % 2 for o, _ in out[0]):
        return None  # an odd derivative maps sines to cosines: no common eigenbasis
    return out


def _linear_terms(law: BalanceLaw):
    n, w = law.nvar, sp.Matrix(law.prims)
    const = lambda m: not any(e.has(*law.prims, *law.coords, law.t) for e in m)  # noqa: E731
    M = sp.Matrix(law.q).jacobian(law.prims)
    if not const(M) or any(sp.simplify(e) != 0 for e in sp.Matrix(law.q) - M * w):
        return None
    terms: dict[tuple, sp.Matrix] = defaultdict(lambda: sp.zeros(n, n))
    forcing = sp.zeros(n, 1)
    zero_w = {p: 0 for p in law.prims}
    for a in range(law.dim):
        e_a = tuple(int(b == a) for b in range(law.dim))
        F = sp.Matrix(law.flux[a])
        A = F.jacobian(law.prims)
        if not const(A):
            return None
        F0 = F - A * w
        if any(e.has(*law.prims) for e in F0):
            return None
        terms[e_a] += -A
        forcing += -F0.diff(law.coords[a])
        V = sp.Matrix(law.viscous[a])
        D = V.jacobian(law.grads[a])
        if not const(D) or any(sp.simplify(e) != 0 for e in V - D * sp.Matrix(law.grads[a])):
            return None
        terms[tuple(2 * x for x in e_a)] += D
    S = sp.Matrix(law.source)
    Bm = S.jacobian(law.prims)
    if not const(Bm):
        return None
    S0 = S.xreplace(zero_w)
    if any(sp.simplify(e) != 0 for e in S - Bm * w - S0):
        return None
    terms[(0,) * law.dim] += Bm
    forcing += S0
    for i, row in enumerate(law.high):
        for c, j, orders in row:
            m = sp.zeros(n, n)
            m[i, j] = c
            terms[tuple(orders)] += m
    Minv = M.inv()
    out = [(o, sp.simplify(Minv * m)) for o, m in terms.items() if any(e != 0 for e in m)]
    return out, sp.simplify(Minv * forcing)


class ExactFamily(Family):
    name = "exact"
    axes = (
        Axis("SYMBOL", "spectral", ("spectral", "fd2"),
             "Fourier symbol of d/dx: exact spectral, or the 2nd-order central difference one"),
        Axis("FORCING_NODES", 6, (), "Chebyshev points per output interval interpolating f(t)"),
    )

    def _system(self, p: Problem):
        return linear_system(p.struct)

    def applies(self, p: Problem) -> bool:
        return not p.steady and self._system(p) is not None

    def relevant(self, p: Problem) -> list[str]:
        terms, f = self._system(p)
        out = []
        if all(max(o) <= 2 for o, _ in terms) and any(max(o) > 0 for o, _ in terms):
            out.append("SYMBOL")
        if any(e.has(p.struct.t) for e in f):
            out.append("FORCING_NODES")
        return out

    def candidates(self, p: Problem) -> list[Design]:
        out = [self.design(SYMBOL="spectral")]
        if "SYMBOL" in self.relevant(p):
            out.append(self.design(SYMBOL="fd2"))
        return out

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        rel = self.relevant(p)
        out = []
        if "SYMBOL" in rel:
            out.append(("SYMBOL", "fd2" if d["SYMBOL"] == "spectral" else "spectral",
                        "the other Fourier symbol of the linear operator"))
        if "FORCING_NODES" in rel:
            out.append(("FORCING_NODES", min(2 * d["FORCING_NODES"], 16),
                        "a higher-degree interpolation of the forcing in time"))
        return out

    def title(self, d: Design, p: Problem) -> str:
        terms, f = self._system(p)
        sym = d["SYMBOL"] if "SYMBOL" in self.relevant(p) else "spectral"
        kind = "matrix exponential per wavenumber" if p.struct.nvar > 1 else "exp(L(k) t) per mode"
        where = {"fourier": "Fourier", "sine": "sine-series (DST)",
                 "cosine": "cosine-series (DCT)"}[basis(p.struct)]
        text = f"exact {where} propagator ({sym} symbol, {kind})"
        if any(e != 0 for e in f):
            text += (", forcing integrated exactly" if "FORCING_NODES" not in self.relevant(p) else
                     f", forcing interpolated in time at {d['FORCING_NODES']} nodes")
        return text

    def orders(self, d: Design, p: Problem):
        return (2 if d["SYMBOL"] == "fd2" and "SYMBOL" in self.relevant(p) else 8, 8)

    def cost(self, d: Design, p: Problem) -> float:
        return 0.05

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        terms, f = self._system(p)
        has_f = any(e != 0 for e in f)
        flags = {"NVAR": law.nvar, "BASIS": basis(law), "HAS_FORCING": has_f,
                 "FORCING_IN_TIME": any(e.has(law.t) for e in f)}
        code = problem_constants(p, flags) + fixed_axes(self, d, p) + "\n\n"
        code += ("def linear_terms(prm):\n    \"\"\"(orders, C) of dt w = sum C d^orders w + f, from the"
                 " equation.\"\"\"\n" + params_lines(law.params, [e for _, m in terms for e in m])
                 + "    return [\n")
        for orders, m in terms:
            rows = ", ".join("[" + ", ".join(npcode(m[i, j]) for j in range(law.nvar)) + "]"
                             for i in range(law.nvar))
            code += f"        ({tuple(orders)!r}, [{rows}]),\n"
        code += "    ]\n\n\n"
        if has_f:
            code += ("def forcing(X, t, prm):\n    \"\"\"The part of dt w that does not depend on w."
                     "\"\"\"\n    _zero = np.zeros(np.broadcast(*X).shape)\n"
                     + params_lines(law.params, list(f)) + coords_line(law.coords, list(f), law.t)
                     + "    return [" + ", ".join(f"({npcode(e)}) + _zero" for e in f) + "]\n\n\n")
        if not has_f:
            code += ("def forcing(*args):  # the equation has none: never called\n"
                     "    raise NotImplementedError\n\n\n")
        return code + GRID + FOURIER + BLOCK + EVOLVE


BLOCK = '''
# ---- block: exact Fourier propagator of a linear constant-coefficient system ----


def _expm(A):
    """exp(A) for a stack of square matrices A[..., n, n]: scaling and squaring with a Taylor
    series of degree 18 on matrices of norm <= 1/2 (error below 1e-21 before squaring),
    vectorised over the stack."""
    if A.shape[-1] == 1:
        return np.exp(A)
    norm = float(np.max(np.sum(np.abs(A), axis=-1), initial=0.0))
    s = max(0, int(np.ceil(np.log2(norm))) + 1) if norm > 0 else 0
    X = A / 2.0**s
    E = np.eye(A.shape[-1]) + X
    term = X
    for j in range(2, 19):
        term = term @ X / j
        E = E + term
    for _ in range(s):
        E = E @ E
    return E


def _symbol(k, order, h):
    """Fourier symbol of the order-th derivative (SYMBOL: spectral, or central differences)."""
    if SYMBOL == "fd2" and order == 1:
        return 1j * np.sin(k * h) / h
    if SYMBOL == "fd2" and order == 2:
        return -(2.0 - 2.0 * np.cos(k * h)) / h**2
    return (1j * k) ** order


def _transform(u, axes):
    """Coefficients in the eigenbasis of the derivatives (BASIS): Fourier, sine or cosine."""
    if BASIS == "fourier":
        return np.fft.rfftn(u, axes=axes)
    from scipy.fft import dct, dst

    return (dst if BASIS == "sine" else dct)(u, type=2, axis=-1, norm="ortho").astype(complex)


def _inverse(uh, shape, axes):
    if BASIS == "fourier":
        return np.fft.irfftn(uh, s=shape, axes=axes)
    from scipy.fft import idct, idst

    return (idst if BASIS == "sine" else idct)(uh.real, type=2, axis=-1, norm="ortho")


def _basis_wavenumbers(shape):
    if BASIS == "fourier":
        return _wavenumbers(shape)
    m = np.arange(1, shape[0] + 1) if BASIS == "sine" else np.arange(shape[0])
    return [np.pi * m / (DOMAIN[0][1] - DOMAIN[0][0])]


def _operator(grid, prm):
    """L(k) [*kshape, NVAR, NVAR]: dt w_hat = L(k) w_hat + f_hat."""
    ks = _basis_wavenumbers(grid["shape"])
    kshape = np.broadcast_shapes(*[k.shape for k in ks])
    L = np.zeros(kshape + (NVAR, NVAR), dtype=complex)
    for orders, matrix in linear_terms(prm):
        s = np.ones(kshape, dtype=complex)
        for a, o in enumerate(orders):
            if o:
                s = s * _symbol(ks[a], o, grid["h"][a])
        L += s[..., None, None] * np.asarray(matrix, dtype=float)
    return L


def _init_state(W0, prm):
    grid = _grid(W0[0].shape[1:])
    axes = tuple(range(1, W0[0].ndim))
    uh = np.stack([_transform(w, axes) for w in W0], axis=-1)  # [B, *kshape, NVAR]
    grid["L"] = _operator(grid, prm)
    grid["cache"] = {}
    return uh, grid


def _output(uh, grid, prm):
    axes = tuple(range(1, uh.ndim - 1))
    return [_inverse(uh[..., i], grid["shape"], axes) for i in range(NVAR)]


def _propagator(grid, h):
    key = ("E", round(h, 14))
    if key not in grid["cache"]:
        grid["cache"][key] = _expm(grid["L"] * h)
    return grid["cache"][key]


def _forced(grid, t0, h, prm):
    """Duhamel's integral int_0^h exp(L (h - s)) f_hat(t0 + s) ds for f interpolated in time by
    a polynomial in sigma = s/h: the augmented exponential integrates each power exactly."""
    nodes = FORCING_NODES if FORCING_IN_TIME else 1
    key = ("F", round(h, 14)) if not FORCING_IN_TIME else None
    if key in grid["cache"]:
        return grid["cache"][key]
    sig = 0.5 - 0.5 * np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    axes = tuple(range(len(grid["shape"])))
    samples = np.stack([np.stack([_transform(np.broadcast_to(f, grid["shape"]), axes)
                                  for f in forcing(grid["X"], t0 + s * h, prm)], axis=-1)
                        for s in sig])  # [P, *kshape, NVAR]
    coef = np.linalg.solve(np.vander(sig, nodes, increasing=True),
                           samples.reshape(nodes, -1)).reshape(samples.shape)
    n = NVAR
    A = np.zeros(grid["L"].shape[:-2] + (n + nodes, n + nodes), dtype=complex)
    A[..., :n, :n] = grid["L"] * h
    A[..., :n, n:] = h * np.moveaxis(coef, 0, -1)
    for j in range(1, nodes):  # d/ds sigma^j = (j/h) sigma^(j-1)
        A[..., n + j, n + j - 1] = j
    out = _expm(A)[..., :n, n]
    if key is not None:
        grid["cache"][key] = out
    return out


def _advance_to(uh, t0, t1, grid, prm):
    h = t1 - t0
    uh = (_propagator(grid, h) @ uh[..., None])[..., 0]
    if HAS_FORCING:
        uh = uh + _forced(grid, t0, h, prm)
    return uh
'''
