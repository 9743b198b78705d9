"""A steady task read as a scalar second-order elliptic problem in one or two dimensions::

    sum_a [ -da(K_a da u) - N_a da(da u) + b_a da u ] + r(u) = f

``K_a`` (divergence form), ``N_a`` (non-divergence form), ``b_a`` (convection) and ``f`` may
depend on x, y, the parameters and coefficient fields given as solver inputs; ``r`` is a local
reaction, linear (``c*u``) or not (``u**3``, solved by Newton's method). Boundary conditions are
Dirichlet, Neumann or Robin on each side (:mod:`pdesharp.boundary`). Anything else raises
:class:`UnsupportedTask` naming the construct.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from pdesharp.boundary import BoundarySpec
from pdesharp.builtin.balance_law import additive_terms
from pdesharp.builtin.refusal import UnsupportedTask, boundary_or_refuse, notation
from pdesharp.task import Task


@dataclass
class EllipticProblem:
    name: str
    unknown: sp.Symbol
    coords: list[sp.Symbol]
    K: list[sp.Expr]  # divergence-form conductivity per axis
    N: list[sp.Expr]  # non-divergence second-order coefficient per axis
    b: list[sp.Expr]  # convection per axis
    reaction: sp.Expr  # r(u, x, fields)
    forcing: sp.Expr  # f(x, fields)
    fields: list[sp.Symbol] = field(default_factory=list)  # coefficient fields (solver inputs)
    params: list[sp.Symbol] = field(default_factory=list)
    boundary: BoundarySpec | None = None

    @property
    def dim(self) -> int:
        return len(self.coords)

    @property
    def linear(self) -> bool:
        return sp.simplify(sp.diff(self.reaction, self.unknown, 2)) == 0

    @property
    def has_convection(self) -> bool:
        return any(b != 0 for b in self.b)

    @property
    def uses_fields(self) -> bool:
        """Does any part of the problem read a coefficient field (data on the output grid)? If
        not, every coefficient is a formula and the problem can be solved on any points."""
        exprs = [*self.K, *self.N, *self.b, self.reaction, self.forcing]
        return bool(self.fields) and any(sp.sympify(e).has(*self.fields) for e in exprs)

    @property
    def field_conductivity(self) -> bool:
        """Does a divergence-form coefficient depend on a coefficient field (data)? Then its face
        values must be averaged from cell values, and the face mean is a real design choice."""
        return any(k.has(*self.fields) for k in self.K) if self.fields else False


def elliptic_problem(task: Task) -> EllipticProblem:
    """Read a steady task, or raise :class:`UnsupportedTask`."""
    system = task.system
    if len(system.unknowns) != 1 or len(system.exprs) != 1:
        raise UnsupportedTask("steady systems of several unknowns", hint="llm")
    if len(system.space) not in (1, 2):
        raise UnsupportedTask(f"steady problems in {len(system.space)} dimensions", hint="llm")
    if not any(a.kind in ("coefficient", "grid") for a in task.solver.args):
        raise UnsupportedTask(
            "a steady task whose solver takes neither a coefficient field nor the grid (it could"
            " not know where to return the solution)",
            hint="add a solver argument of kind 'grid' (the output grid's coordinates: x in 1D,"
                 " (x, y) in 2D), or pass the forcing as a coefficient field")
    bc = boundary_or_refuse(task)
    if bc.periodic:
        raise UnsupportedTask(
            f"periodic boundaries in a steady problem ({task.boundary!r})",
            hint="give Dirichlet, Neumann or Robin conditions on every side")
    missing = bc.missing(system.unknowns)
    if missing:
        u, axis, side = missing[0]
        raise UnsupportedTask(
            f"a steady problem without a condition for {u} at the {'low' if side == 0 else 'high'}"
            f" end of {axis}", hint="give a condition on every side, e.g. 'dirichlet: u = 0'")
    name = system.unknowns[0]
    u = system.function(name)
    coords = list(system.coords)
    fields = [system.function(c) for c in system.coefficients]
    dim = len(coords)
    K, N, b = [sp.Integer(0)] * dim, [sp.Integer(0)] * dim, [sp.Integer(0)] * dim
    reaction, forcing = sp.Integer(0), sp.Integer(0)
    work = additive_terms(system.exprs[0])
    while work:
        term = work.pop()
        if not term.has(u):
            if term.has(sp.Derivative):
                raise UnsupportedTask(f"a differentiated coefficient (the term {notation(term)})",
                                      hint="write the differentiated coefficient out explicitly")
            forcing -= term
            continue
        if not term.has(sp.Derivative):
            reaction += term
            continue
        factors = sp.Mul.make_args(term)
        derivs = [f for f in factors if isinstance(f, sp.Derivative)]
        coeff = sp.Mul(*[f for f in factors if not isinstance(f, sp.Derivative)])
        if len(derivs) != 1 or coeff.has(u) or coeff.has(sp.Derivative):
            raise UnsupportedTask(
                f"the term {notation(term)}, nonlinear in the derivatives of {name} (the"
                " catalogue solves problems linear in the derivatives; the reaction term may be"
                " nonlinear)", hint="llm")
        d = derivs[0]
        if len(d.variable_count) != 1:
            raise UnsupportedTask(f"the mixed derivative {notation(d)}", hint="llm")
        var, n = d.variable_count[0]
        a = coords.index(var)
        inner = d.expr
        on_fields = coeff.has(*fields)
        if int(n) == 2 and inner == u:
            N[a] += -coeff
        elif int(n) > 2:
            raise UnsupportedTask(f"the derivative of order {n} in {notation(term)}", hint="llm")
        elif inner == u:
            b[a] += coeff
        elif isinstance(inner, sp.Add):
            work += [coeff * sp.Derivative(e, var) for e in inner.args]
        else:
            ifac = sp.Mul.make_args(inner)
            ider = [f for f in ifac if isinstance(f, sp.Derivative)]
            k = sp.Mul(*[f for f in ifac if not isinstance(f, sp.Derivative)])
            if k.has(u):
                raise UnsupportedTask(f"the quasilinear term {notation(term)} (a coefficient inside"
                                      f" the derivative depends on {name})", hint="llm")
            if ider == [sp.Derivative(u, var)]:
                if coeff.has(*coords) and on_fields:
                    raise UnsupportedTask(
                        f"a coefficient field multiplying a divergence (the term {notation(term)})",
                        hint="move the coefficient inside the derivative (divergence form)")
                K[a] += -coeff * k  # c*da(k da u) = da(c k da u) - (da c) k da u
                b[a] += -sp.diff(coeff, var) * k
            elif not ider and inner.has(u) and not sp.simplify(inner / u).has(u):
                kk = sp.simplify(inner / u)
                if kk.has(*fields):
                    raise UnsupportedTask(
                        f"the derivative of a coefficient field times {name} (the term"
                        f" {notation(term)})",
                        hint="expand it as k*da(u) + da(k)*u with da(k) written out")
                b[a] += coeff * kk
                reaction += coeff * sp.diff(kk, var) * u
            else:
                raise UnsupportedTask(f"the term {notation(term)} (not of the form da(K*da({name})),"
                                      f" da(b*{name}) or b*da({name}))", hint="llm")
    for a in range(dim):
        if K[a] == 0 and N[a] == 0:
            raise UnsupportedTask(f"a steady equation without a second derivative along"
                                  f" {coords[a]}", hint="llm")
    plain = {f: sp.Symbol(c, real=True) for f, c in zip(fields, system.coefficients)}
    plain[u] = sp.Symbol(name, real=True)
    prob = EllipticProblem(
        name=name, unknown=sp.Symbol(name, real=True), coords=coords,
        K=[sp.simplify(k.xreplace(plain)) for k in K], N=[sp.simplify(k.xreplace(plain)) for k in N],
        b=[sp.simplify(k.xreplace(plain)) for k in b],
        reaction=sp.simplify(reaction.xreplace(plain)), forcing=sp.simplify(forcing.xreplace(plain)),
        fields=[sp.Symbol(c, real=True) for c in system.coefficients],
        params=[sp.Symbol(p, real=True) for p in system.parameters], boundary=bc)
    if prob.reaction.has(sp.Derivative) or prob.forcing.has(sp.Derivative):
        raise UnsupportedTask("a derivative outside the elliptic operator", hint="llm")
    c0 = sp.diff(prob.reaction, prob.unknown).subs(prob.unknown, 0)
    if all(c.a == 0 for c in bc.conditions) and sp.simplify(c0) == 0 and prob.linear:
        raise UnsupportedTask(
            "a pure Neumann problem without a reaction term (its solution is determined only up"
            " to a constant)", hint="fix the value somewhere with a Dirichlet or Robin condition")
    return prob
