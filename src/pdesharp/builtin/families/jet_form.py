"""A balance law's right-hand side in jets (the unknowns and their derivatives as symbols), for
the families that evaluate derivatives pointwise: the sine/cosine/Fourier pseudo-spectral family
and the method of lines take the terms the flux form does not (:attr:`BalanceLaw.extra`) this
way.

``M0 dt w + sum_o C_o d^o dt w = R(w, d w, ..., x, t)``: the time derivative of a constant
linear operator (``M0``, a Sobolev-type ``C_o``: ``dt(u - dx(u, 2))``) and the rate ``R`` (every
flux and viscous flux differentiated by the chain rule, the source, the linear terms and the
terms kept as written). :func:`jet_split` separates ``M0^-1 R`` into a linear constant-coefficient
part ``sum_o L_o d^o w`` (integrated exactly or implicitly) and a remainder ``N`` (explicit).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.jets import linear_constant_part
from pdesharp.builtin.physics import coords_line, npcode, params_lines, unpack


@dataclass
class JetSplit:
    terms: list  # (orders, Matrix L_o): the linear constant-coefficient part of M0^-1 R
    rest: list[sp.Expr]  # N_i: the remainder of M0^-1 R, in jets
    mass: list  # (orders, Matrix M0^-1 C_o): dt(w + sum_o ... d^o w)
    jets: list  # (j, orders, symbol): the derivatives N uses, in a fixed order


def rate_in_jets(law: BalanceLaw) -> list[sp.Expr] | None:
    """``M0^-1 R`` in jets, each entry expanded; None unless dq/dw is a constant matrix and q is
    linear in w."""
    w = sp.Matrix(law.prims)
    M = sp.Matrix(law.q).jacobian(law.prims)
    if M.has(*law.prims, *law.coords, law.t) or any(
            sp.expand(e) != 0 for e in sp.Matrix(law.q) - M * w):
        return None
    jets = law.jets
    rhs = []
    for i in range(law.nvar):
        r = law.source[i] + law.extra[i]
        for a in range(law.dim):
            r += -jets.total(law.flux[a][i], a) + jets.total(law.viscous[a][i], a)
        for c, j, orders in law.high[i]:
            r += c * jets.symbol(j, orders)
        rhs.append(r)
    return [sp.expand(e) for e in M.inv() * sp.Matrix(rhs)]


_CACHE: dict[str, JetSplit | None] = {}


def jet_split(law: BalanceLaw) -> JetSplit | None:
    """The split of :func:`rate_in_jets` (cached per law), None when it does not exist."""
    return law.derive("jet_split", _cached_split)


def _cached_split(law: BalanceLaw) -> JetSplit | None:
    key = repr((law.prims, law.q, law.flux, law.viscous, law.source, law.high, law.extra,
                law.mass, law.params, law.coords))
    if key not in _CACHE:
        _CACHE[key] = _split(law)
    return _CACHE[key]


def _split(law: BalanceLaw) -> JetSplit | None:
    rhs = rate_in_jets(law)
    if rhs is None:
        return None
    n = law.nvar
    terms: dict[tuple, sp.Matrix] = defaultdict(lambda: sp.zeros(n, n))
    rest = []
    for i, r in enumerate(rhs):
        lin, other = linear_constant_part(r, law.jets, [*law.coords, law.t])
        for c, j, orders in lin:
            terms[tuple(orders)][i, j] += c
        rest.append(other)
    Minv = sp.Matrix(law.q).jacobian(law.prims).inv()
    mass: dict[tuple, sp.Matrix] = defaultdict(lambda: sp.zeros(n, n))
    for i, row in enumerate(law.mass):
        for c, j, orders in row:
            mass[tuple(orders)][i, j] += c
    mass_out = [(o, (Minv * m).applyfunc(sp.nsimplify)) for o, m in mass.items()
                if any(e != 0 for e in m)]
    out = [(o, m.applyfunc(sp.nsimplify)) for o, m in terms.items() if any(e != 0 for e in m)]
    return JetSplit(terms=out, rest=rest, mass=mass_out, jets=law.jets.used(rest))


def stabilisable(split: JetSplit) -> list[tuple[int, int, int, int]]:
    """(i, m, p, a): the derivatives of the remainder that a linear term can stabilise: an even
    order p >= 2 of w_i along one axis a in equation i (m: its index in ``split.jets``)."""
    out = []
    for m, (j, orders, s) in enumerate(split.jets):
        axes = [a for a, o in enumerate(orders) if o]
        if len(axes) == 1 and orders[axes[0]] % 2 == 0 and split.rest[j].has(s):
            out.append((j, m, orders[axes[0]], axes[0]))
    return out


def coupled(split: JetSplit) -> bool:
    """Do the linear part or the mass operator couple unknowns (a matrix per mode)?"""
    return any(m[i, j] != 0 for _, m in split.terms + split.mass
               for i in range(m.rows) for j in range(m.cols) if i != j)


def matrices_source(fn: str, doc: str, law: BalanceLaw, pairs) -> str:
    """``def fn(prm)`` returning [(orders, matrix)] of constant matrices."""
    code = (f"def {fn}(prm):\n    \"\"\"{doc}\"\"\"\n"
            + params_lines(law.params, [e for _, m in pairs for e in m]) + "    return [\n")
    for orders, m in pairs:
        rows = ", ".join("[" + ", ".join(npcode(m[i, j]) for j in range(law.nvar)) + "]"
                         for i in range(law.nvar))
        code += f"        ({tuple(orders)!r}, [{rows}]),\n"
    return code + "    ]\n\n\n"


def remainder_source(law: BalanceLaw, rest, jets) -> str:
    """``remainder(W, J, X, t, prm)``: N evaluated pointwise, J the arrays of ``JETS`` (the
    derivatives it uses, in that order), and the constant ``JETS``."""
    names = [w.name for w in law.prims]
    jet_names = [s.name for _, _, s in jets]
    spec = [(j, tuple(o)) for j, o, _ in jets]
    return (f"JETS = {spec!r}  # (unknown, derivative orders per axis) the remainder uses\n\n\n"
            "def remainder(W, J, X, t, prm):\n    \"\"\"N(w, derivatives, x, t): what the linear"
            " part leaves of dt w, evaluated pointwise\n    (J: the derivatives listed in"
            " JETS).\"\"\"\n" + unpack(names, "W", rest)
            + (unpack(jet_names, "J", rest) if jet_names else "")
            + "    _zero = np.zeros(np.broadcast_shapes(np.shape(W[0]), *[np.shape(x) for x in"
            " X]))\n" + params_lines(law.params, rest) + coords_line(law.coords, rest, law.t)
            + "    return [" + ", ".join(f"({npcode(e, products=True)}) + _zero" for e in rest)
            + "]\n\n\n")
