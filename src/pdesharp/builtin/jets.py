"""Derivatives of the unknowns as plain symbols ("jets"): ``u_x``, ``u_xx``, ``u_xy``, ``u_xxxx``.

A term the flux form does not take (a non-conservative product ``s*dx(u)``, a product of
derivatives ``dx(u)**2``, a cross derivative ``dx(omega*dy(phi))``, a nonlinear fourth-order
term ``dx(u**3 - u - dx(u, 2), 2)``) is kept as an expression in the unknowns and their
derivatives, each derivative a real symbol named by the unknown and the axes it differentiates
along (``u_x`` is the symbol the balance law already uses for ``dx(u)``). Derivatives of
expressions are expanded by the chain rule on these symbols (:func:`Jets.total`), never by
SymPy's ``diff`` of the unknown functions, which treats them as complex (``dx(Abs(u))`` would
come out in ``re`` and ``im``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy.core.function import AppliedUndef


_STEPS = (sp.floor, sp.ceiling, sp.sign, sp.Heaviside)


def almost_everywhere(e):
    """``e`` with the derivatives of piecewise-constant functions taken almost everywhere: a
    Dirac delta (of sign, Heaviside, a Piecewise jump) is 0 away from its point, and so is the
    derivative SymPy leaves unevaluated for floor or ceiling."""
    e = sp.sympify(e)
    if not (e.has(sp.DiracDelta) or e.has(sp.Derivative)):
        return e
    e = e.replace(lambda x: isinstance(x, sp.DiracDelta), lambda x: sp.Integer(0))
    return e.replace(lambda x: isinstance(x, sp.Derivative) and isinstance(x.expr, _STEPS),
                     lambda x: sp.Integer(0))


@dataclass
class Jets:
    """The jet symbols of a set of unknowns over some space axes."""

    names: list[str]
    coords: list[sp.Symbol]
    funcs: list[sp.Expr] = field(default_factory=list)  # u(t, x, ...), per name
    table: dict[sp.Symbol, tuple[int, tuple[int, ...]]] = field(default_factory=dict)

    def symbol(self, j: int, orders: tuple[int, ...]) -> sp.Symbol:
        """The symbol of d^orders w_j (``u`` itself for orders 0)."""
        orders = tuple(int(o) for o in orders)
        suffix = "".join(str(c) * o for c, o in zip(self.coords, orders))
        s = sp.Symbol(f"{self.names[j]}_{suffix}" if suffix else self.names[j], real=True)
        self.table.setdefault(s, (j, orders))
        return s

    def of(self, s: sp.Symbol) -> tuple[int, tuple[int, ...]] | None:
        """(unknown index, orders) of a jet symbol, None for any other symbol."""
        return self.table.get(s)

    def total(self, e: sp.Expr, a: int) -> sp.Expr:
        """The total derivative of ``e`` (in jets, coordinates, t) along axis a."""
        for j in range(len(self.names)):
            self.symbol(j, (0,) * len(self.coords))
        out = sp.diff(e, self.coords[a])
        for s in sorted(e.free_symbols, key=str):
            hit = self.table.get(s)
            if hit is None:
                continue
            j, orders = hit
            up = tuple(o + (b == a) for b, o in enumerate(orders))
            out += sp.diff(e, s) * self.symbol(j, up)
        return almost_everywhere(out)

    def convert(self, e: sp.Expr) -> sp.Expr:
        """``e`` (unknowns as functions, unevaluated derivatives) in jet symbols."""
        if isinstance(e, AppliedUndef) and e in self.funcs:
            return self.symbol(self.funcs.index(e), (0,) * len(self.coords))
        if isinstance(e, sp.Derivative):
            inner = e.expr
            counts = [(v, int(n)) for v, n in e.variable_count]
            if inner in self.funcs and all(v in self.coords for v, _ in counts):
                orders = [0] * len(self.coords)
                for v, n in counts:
                    orders[self.coords.index(v)] += n
                return self.symbol(self.funcs.index(inner), tuple(orders))
            out = self.convert(inner)
            for v, n in counts:
                if v not in self.coords:
                    raise ValueError(f"a derivative in {v} inside a space term")
                for _ in range(n):
                    out = self.total(out, self.coords.index(v))
            return out
        if not e.args:
            return e
        return e.func(*[self.convert(a) for a in e.args])

    def used(self, exprs) -> list[tuple[int, tuple[int, ...], sp.Symbol]]:
        """(j, orders, symbol) of every jet the expressions use, derivatives only, sorted."""
        out = set()
        for e in exprs:
            for s in sp.sympify(e).free_symbols:
                hit = self.table.get(s)
                if hit is not None and any(hit[1]):
                    out.add((hit[0], hit[1], s))
        return sorted(out, key=lambda x: (x[0], sum(x[1]), x[1]))

    def notation(self, e) -> str:
        """``e`` in the task's notation (``u*dx(u, 3)`` for u*u_xxx), for messages."""
        from pdesharp.builtin.refusal import notation

        back = {}
        for s, (j, orders) in self.table.items():
            f = self.funcs[j] if self.funcs else sp.Function(self.names[j])(*self.coords)
            counts = [(c, o) for c, o in zip(self.coords, orders) if o]
            back[s] = sp.Derivative(f, *counts) if counts else f
        return notation(sp.sympify(e).xreplace(back))

    def order(self, exprs) -> int:
        """The highest total derivative order among the jets the expressions use."""
        return max((sum(o) for _, o, _ in self.used(exprs)), default=0)


def jets_of(names, coords, funcs=()) -> Jets:
    jets = Jets(names=list(names), coords=list(coords), funcs=list(funcs))
    for j in range(len(jets.names)):
        jets.symbol(j, (0,) * len(jets.coords))
        for a in range(len(jets.coords)):
            jets.symbol(j, tuple(int(b == a) for b in range(len(jets.coords))))
    return jets


def linear_constant_part(e: sp.Expr, jets: Jets, free) -> tuple[list, sp.Expr]:
    """``e = sum c * jet + rest``: the terms linear in a jet with a coefficient free of ``free``
    (the unknowns, jets, coordinates, t), as (c, j, orders), and the rest."""
    every = [s for s in jets.table]
    small = sp.count_ops(e) < 400  # expanding a large chain-rule expansion can take minutes
    if small:
        e = sp.expand(e)
    terms, lin = [], sp.Integer(0)
    for s in sorted(e.free_symbols & set(every), key=str):
        c = sp.diff(e, s)
        if c != 0 and not c.has(*every, *free):
            c = sp.expand(c)
            j, orders = jets.table[s]
            terms.append((c, j, orders))
            lin += c * s
    return terms, (sp.expand(e - lin) if small else e - lin)
