"""A time-dependent task read as a balance law in one, two or three space dimensions::

    dt(q(w)) + sum_a da(F_a(w, x, t)) = sum_a da(V_a(w, da w, x, t)) + S(w, x, t) + H w

``w`` are the unknowns (primitive variables), ``q`` the conserved quantities, ``F_a`` the
inviscid flux along axis a, ``V_a`` a viscous flux linear in the gradients along the same axis,
``S`` a local source (which may depend on x, y, t and the parameters), ``H`` linear
constant-coefficient terms the flux form does not take (dispersion ``dx(u, 3)``,
hyper-diffusion ``dx(u, 4)``, a cross derivative ``dx(dy(u))``), and ``E`` (:attr:`extra`) every
other term, kept as an expression in the unknowns and their derivatives (:mod:`.jets`): a
non-conservative product ``s*dx(u)`` that is not an exact gradient, products of derivatives,
nonlinear terms of order three and more (Cahn-Hilliard's ``dx(u**3 - u - dx(u, 2), 2)``). Only
the families that evaluate derivatives pointwise (finite differences, pseudo-spectral) take ``E``.
A time derivative of a linear constant-coefficient differential operator, ``dt(u - dx(u, 2))``
(Benjamin-Bona-Mahony, Camassa-Holm: a Sobolev-type term), is kept as :attr:`mass`: the
families invert ``1 - dx^2`` at every step.

The reading is by the algebra of the terms, never by a task's name: a coefficient that depends on
x is moved inside the derivative by the product rule (``c(x)*dx(u) = dx(c*u) - c'(x)*u``),
first-order terms whose coefficients depend on the unknowns are integrated into a flux when
they form an exact gradient (``u*dx(u) = dx(u**2/2)``, ``h*dx(v) + v*dx(h) = dx(h*v)``; otherwise
they go to ``E``), and second time derivatives are first rewritten as a first-order system
(:mod:`pdesharp.time_order`). What no family can take raises :class:`UnsupportedTask` naming
the construct and, where one exists, the rewrite the catalogue supports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from pdesharp.boundary import BoundarySpec
from pdesharp.builtin.jets import Jets, jets_of
from pdesharp.builtin.refusal import UnsupportedTask, boundary_or_refuse, notation
from pdesharp.equation import distributed_terms
from pdesharp.task import Task
from pdesharp.time_order import TimeOrderError, reduce_time_order


@dataclass
class BalanceLaw:
    names: list[str]  # unknowns, task order, then velocities introduced by the time-order rewrite
    prims: list[sp.Symbol]
    coords: list[sp.Symbol]
    t: sp.Symbol
    grads: list[list[sp.Symbol]]  # grads[a][j]: d w_j / d coord_a, as plain symbols
    q: list[sp.Expr]
    flux: list[list[sp.Expr]]  # flux[a][i]
    viscous: list[list[sp.Expr]]  # viscous[a][i], linear in grads[a]
    source: list[sp.Expr]
    high: list[list[tuple[sp.Expr, int, tuple[int, ...]]]]  # [i]: (c, j, orders), + c d^orders w_j
    params: list[sp.Symbol]
    boundary: BoundarySpec
    introduced: tuple[str, ...] = ()  # velocities that start at zero
    notes: list[str] = field(default_factory=list)
    time_order: int = 1  # of the task as written
    # [i]: the rest of dt q_i in jet symbols (jets); 0 for an equation in flux form
    extra: list[sp.Expr] = field(default_factory=list)
    # [i]: (c, j, orders): dt(q_i + sum c d^orders w_j), constant c (a Sobolev-type term)
    mass: list[list[tuple[sp.Expr, int, tuple[int, ...]]]] = field(default_factory=list)
    jets: Jets | None = None
    # facts derived from the fields above by SymPy simplification, computed once per law (a
    # family asks for its linear system dozens of times per run: 0.3 s each); never compared
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def derive(self, name: str, compute):
        """``compute(self)``, remembered under ``name`` (the law is never changed once read)."""
        if name not in self.derived:
            self.derived[name] = compute(self)
        return self.derived[name]

    @property
    def nvar(self) -> int:
        return len(self.prims)

    @property
    def dim(self) -> int:
        return len(self.coords)

    @property
    def has_flux(self) -> bool:
        return any(f != 0 for row in self.flux for f in row)

    @property
    def has_viscous(self) -> bool:
        return any(v != 0 for row in self.viscous for v in row)

    @property
    def has_source(self) -> bool:
        return any(s != 0 for s in self.source)

    @property
    def has_high(self) -> bool:
        return any(self.high)

    @property
    def has_extra(self) -> bool:
        return any(e != 0 for e in self.extra)

    @property
    def has_mass(self) -> bool:
        return any(self.mass)

    @property
    def flux_form(self) -> bool:
        """Every term is a flux, a viscous flux, a source or a linear constant-coefficient
        term, and dt acts on a function of the unknowns: what the finite-volume, splitting,
        exact and FFT families need."""
        return not (self.has_extra or self.has_mass)

    @property
    def periodic(self) -> bool:
        return self.boundary.all_periodic

    @property
    def conservative_is_primitive(self) -> bool:
        # asked dozens of times per run, a SymPy simplify per unknown each time
        return self.derive("conservative_is_primitive", lambda law: all(
            sp.simplify(q - w) == 0 for q, w in zip(law.q, law.prims)))

    def depends_on_space(self) -> bool:
        exprs = [e for row in self.flux + self.viscous for e in row] + self.source
        return any(e.has(*self.coords) for e in exprs)

    def depends_on_time(self) -> bool:
        exprs = [e for row in self.flux + self.viscous for e in row] + self.source
        return any(e.has(self.t) for e in exprs) or any(
            c.g.has(self.t) for c in self.boundary.conditions)

    def flux_is_linear(self) -> bool:
        # asked per design while ranking (a simplify per second derivative of every flux)
        return self.derive("flux_is_linear", lambda law: all(
            sp.simplify(sp.diff(f, a, b)) == 0 for row in law.flux for f in row
            for a in law.prims for b in law.prims))

    def scalar_diffusion(self) -> sp.Expr | None:
        """D for a scalar law whose viscous flux is D * da(w) on every axis, D a constant (it may
        depend on the parameters); else None."""
        return self.derive("scalar_diffusion", BalanceLaw._scalar_diffusion)

    def _scalar_diffusion(self) -> sp.Expr | None:
        if self.nvar != 1 or not self.has_viscous:
            return None
        ds = []
        for a in range(self.dim):
            v = sp.expand(self.viscous[a][0])
            d = sp.simplify(sp.diff(v, self.grads[a][0]))
            if sp.simplify(v - d * self.grads[a][0]) != 0 or d.has(self.prims[0], *self.coords,
                                                                    self.t):
                return None
            ds.append(d)
        return ds[0] if all(sp.simplify(d - ds[0]) == 0 for d in ds) else None


def balance_law(task: Task) -> BalanceLaw:
    """Read a time-dependent task, or raise :class:`UnsupportedTask` naming why not."""
    try:
        red = reduce_time_order(task.system)
    except TimeOrderError as exc:
        raise UnsupportedTask(f"these time derivatives ({exc})", hint="llm") from None
    system = red.system
    if len(system.space) not in (1, 2, 3):
        raise UnsupportedTask(f"{len(system.space)} space dimensions (the catalogue covers 1, 2"
                              " and 3)", hint="llm")
    if system.coefficients:
        raise UnsupportedTask(
            f"coefficient fields {list(system.coefficients)} given as solver inputs in a"
            " time-dependent problem",
            hint="write the coefficient as an expression of x (and y, t), e.g."
                 " a: 1 + 0.5*sin(2*pi*x), which the built-in analyst supports")
    bc = boundary_or_refuse(task)
    names = list(system.unknowns)
    coords = list(system.coords)
    t = system.t
    prims = [sp.Symbol(n, real=True) for n in names]
    grads = [[sp.Symbol(f"{n}_{a}", real=True) for n in names] for a in system.space]
    funcs = [system.function(n) for n in names]
    params = [sp.Symbol(p, real=True) for p in system.parameters]
    to_plain = {f: w for f, w in zip(funcs, prims)}
    for a, c in enumerate(coords):
        to_plain.update({sp.Derivative(f, c): grads[a][j] for j, f in enumerate(funcs)})
    written_order = max((sum(int(n) for v, n in d.variable_count if v == t)
                         for e in task.system.exprs for d in e.atoms(sp.Derivative)), default=1)
    jets = jets_of(names, coords, funcs)
    law = BalanceLaw(names=names, prims=prims, coords=coords, t=t, grads=grads, q=[],
                     flux=[[] for _ in coords], viscous=[[] for _ in coords], source=[], high=[],
                     params=params, boundary=bc, introduced=red.introduced,
                     notes=list(red.notes), time_order=written_order, jets=jets)
    ctx = _Ctx(system=system, funcs=funcs, coords=coords, t=t, names=names, jets=jets)
    if len(system.exprs) != len(names):
        raise UnsupportedTask(f"{len(system.exprs)} equations for {len(names)} unknowns",
                              hint="give one equation per unknown")
    for i, expr in enumerate(system.exprs):
        _check_time_derivatives(expr, i, ctx)
        try:
            q, rest = system.split_time_derivative(i)
        except ValueError as exc:
            raise UnsupportedTask(str(exc), hint="") from None
        _time_derivative_left(rest, i, ctx)
        if q == 0:
            raise UnsupportedTask(
                f"an equation without a time derivative (equation {i + 1}, a constraint)",
                hint="eliminate the constrained unknown, or use a language model")
        q, mass = _mass_terms(q, i, ctx)
        if q.xreplace(to_plain).has(*coords, t):
            raise UnsupportedTask(
                f"a time derivative whose coefficient depends on space (dt({notation(q)}) in"
                f" equation {i + 1})", hint="divide the equation by that coefficient")
        parts = _Parts(len(coords))
        nonconservative: list[list[tuple[sp.Expr, int]]] = [[] for _ in coords]
        for term in additive_terms(rest):
            _term(term, i, ctx, parts, nonconservative)
        for a in range(len(coords)):
            if nonconservative[a]:
                got = _integrate_gradient(nonconservative[a], a, ctx)
                if got is None:  # not the derivative of a flux: kept as written
                    parts.extra -= sum((c * sp.Derivative(funcs[j], coords[a])
                                        for c, j in nonconservative[a]), sp.Integer(0))
                    continue
                parts.flux[a] += got[0]
                parts.source += got[1]
        qp = q.xreplace(to_plain)
        law.q.append(qp)
        law.high.append(parts.high)
        law.mass.append(mass)
        src = parts.source.xreplace(to_plain)
        extra = jets.convert(parts.extra)
        for a in range(len(coords)):
            v = sp.expand(parts.viscous[a].doit().xreplace(to_plain))
            f = parts.flux[a].xreplace(to_plain)
            zero = {g: 0 for g in grads[a]}
            v0 = v.xreplace(zero)
            if v0 != 0:  # a gradient-free part of a viscous flux is an ordinary flux
                v, f = sp.expand(v - v0), f - v0
            if _has_derivatives(v, jets) and not _viscous_form(v, a, law):
                extra += jets.total(v, a)  # cross-diffusion, nonlinear in the gradients
                v = sp.Integer(0)
            if _has_derivatives(f, jets):
                extra -= jets.total(f, a)
                f = sp.Integer(0)
            law.flux[a].append(sp.simplify(f))
            law.viscous[a].append(sp.simplify(v))
        if _has_derivatives(src, jets):
            extra, src = extra + src, sp.Integer(0)
        if _has_derivatives(qp, jets):
            raise UnsupportedTask(f"a gradient inside the time derivative dt({notation(q)}) of"
                                  f" equation {i + 1}", hint="llm")
        law.source.append(sp.simplify(src))
        law.extra.append(sp.expand(extra))
    jac = sp.Matrix(law.q).jacobian(prims)
    if sp.simplify(jac.det()) == 0:
        raise UnsupportedTask("conserved quantities that do not determine the unknowns (singular"
                              " dq/dw)", hint="")
    return law


def additive_terms(expr: sp.Expr) -> list[sp.Expr]:
    """The terms of ``expr``, products distributed over sums (``-nu*(dx(u, 2) + dy(u, 2))`` is
    two terms) but derivatives' arguments left as written (``dx(u**2/2)`` stays a flux)."""
    return distributed_terms(expr)


@dataclass
class _Ctx:
    system: object
    funcs: list
    coords: list
    t: sp.Symbol
    names: list
    jets: Jets


class _Parts:
    def __init__(self, dim: int):
        zero = sp.Integer(0)
        self.flux = [zero] * dim
        self.viscous = [zero] * dim
        self.source = zero
        self.extra = zero  # in the task's notation (functions, derivatives); rate form
        self.high: list[tuple[sp.Expr, int, tuple[int, ...]]] = []


def _has_derivatives(e, jets: Jets) -> bool:
    """Does ``e`` (in plain symbols) use a derivative of an unknown?"""
    return any(jets.of(s) is not None and any(jets.of(s)[1]) for s in sp.sympify(e).free_symbols)


def _check_time_derivatives(expr, i, ctx):
    """Time derivatives of order one are read by split_time_derivative (those that also act in
    space are Sobolev-type terms); the time-order rewrite has removed the others."""
    for d in expr.atoms(sp.Derivative):
        n = sum(int(k) for v, k in d.variable_count if v == ctx.t)
        if n > 1:
            raise UnsupportedTask(f"the time derivative {notation(d)} of order {n} in equation"
                                  f" {i + 1}", hint="llm")


def _time_derivative_left(rest, i, ctx):
    """A time derivative that is not ``c*dt(q)`` (inside a function, a product of two) has no
    conserved quantity: refused by name."""
    for term in additive_terms(rest):
        if any(ctx.t in d.variables for d in term.atoms(sp.Derivative)):
            raise UnsupportedTask(
                f"the time derivative inside {notation(term)} in equation {i + 1} (not a"
                " coefficient times dt(q))", hint="write the equation as dt(q) + rest = 0, the"
                " coefficient of dt free of the unknowns, e.g. dt(u**2/2) for u*dt(u)")


def _mass_terms(q, i, ctx):
    """``q = q0(w) + sum c d^orders w_j`` (``dt(u - dx(u, 2))``): q0 and the derivative terms,
    each with a constant coefficient; anything else in dt(...) with a space derivative is
    refused by name."""
    q0, mass = sp.Integer(0), []
    for term in additive_terms(q.doit() if q.has(sp.Derivative) else q):
        if not term.has(sp.Derivative):
            q0 += term
            continue
        factors = sp.Mul.make_args(term)
        derivs = [f for f in factors if isinstance(f, sp.Derivative)]
        c = sp.Mul(*[f for f in factors if not isinstance(f, sp.Derivative)])
        if (len(derivs) == 1 and derivs[0].expr in ctx.funcs
                and not c.has(*ctx.funcs, *ctx.coords, ctx.t, sp.Derivative)):
            d = derivs[0]
            orders = [0] * len(ctx.coords)
            for v, n in d.variable_count:
                orders[ctx.coords.index(v)] += int(n)
            mass.append((c, ctx.funcs.index(d.expr), tuple(orders)))
            continue
        raise UnsupportedTask(
            f"the time derivative of {notation(term)} in equation {i + 1} (the catalogue takes"
            " a time derivative of a linear constant-coefficient differential operator, such"
            " as dt(u - dx(u, 2)))", hint="llm")
    return q0, mass


def _term(term, i, ctx: _Ctx, parts: _Parts, nonconservative) -> None:
    """Add one additive term of ``rest`` (dt(q) + rest = 0) to the flux/viscous/source parts;
    what they cannot take goes to ``extra`` as written."""
    coords, funcs = ctx.coords, ctx.funcs
    if not term.has(sp.Derivative):
        parts.source -= term
        return
    factors = sp.Mul.make_args(term)
    derivs = [f for f in factors if isinstance(f, sp.Derivative)]
    coeff = sp.Mul(*[f for f in factors if not isinstance(f, sp.Derivative)])
    if len(derivs) != 1 or coeff.has(sp.Derivative):
        parts.extra -= term  # a product of derivatives, a derivative inside a function
        return
    d = derivs[0]
    if len(d.variable_count) != 1:  # a mixed derivative, dx(dy(u))
        _high_or_extra(term, coeff, d, ctx, parts)
        return
    var, n = d.variable_count[0]
    n = int(n)
    a = coords.index(var)
    inner = d.expr
    if coeff.has(*funcs):
        if n == 1 and inner in funcs:
            nonconservative[a].append((coeff, funcs.index(inner)))
        else:
            parts.extra -= term  # u*dx(u, 2), u*dx(v*dx(v)): kept as written
        return
    if coeff.has(*coords):
        # c(x) da^n(e) = da(c da^(n-1)(e)) - (da c) da^(n-1)(e): move the coefficient inside
        lower = sp.Derivative(inner, (var, n - 1)) if n > 1 else inner
        _term(sp.Derivative(coeff * lower, var), i, ctx, parts, nonconservative)
        for t2 in sp.Add.make_args(sp.expand(-sp.diff(coeff, var) * lower)):
            _term(t2, i, ctx, parts, nonconservative)
        return
    if n == 1 and not inner.has(sp.Derivative):
        parts.flux[a] += coeff * inner
        return
    if n == 1:
        inside = inner.atoms(sp.Derivative)
        if any(e.variables != (var,) for e in inside) or any(
                sum(int(k) for _, k in e.variable_count) > 1 for e in inside):
            _high_or_extra(term, coeff, d, ctx, parts)  # cross or higher derivatives inside
            return
        parts.viscous[a] += -coeff * inner
        return
    if n == 2 and not inner.has(sp.Derivative):
        parts.viscous[a] += -coeff * sp.diff(inner, var)
        return
    _high_or_extra(term, coeff, d, ctx, parts)


def _high_or_extra(term, coeff, d, ctx, parts):
    """A mixed derivative or one of order >= 3: linear constant-coefficient terms go to ``high``
    (exact in Fourier and sine/cosine bases), anything else to ``extra``."""
    from pdesharp.builtin.jets import linear_constant_part

    jets = ctx.jets
    J = jets.convert(-term)
    lin, rest = linear_constant_part(J, jets, [*ctx.coords, ctx.t])
    if rest == 0 and lin and all(any(o) for _, _, o in lin):
        parts.high += lin
    else:
        parts.extra -= term


def _integrate_gradient(terms, a, ctx: _Ctx) -> tuple[sp.Expr, sp.Expr] | None:
    """sum_j g_j(w, x) da(w_j) = da(G(w, x)) - (partial_a G)(w, x) when dG/dw_j = g_j exists:
    returns the flux G and the source part partial_a G (dt q + da G - partial_a G = 0); None
    when the terms are not an exact gradient (a non-conservative product)."""
    n = len(ctx.funcs)
    ws = [sp.Dummy(f"w{j}", real=True) for j in range(n)]
    sub = dict(zip(ctx.funcs, ws))
    g = [sp.Integer(0)] * n
    for coeff, j in terms:
        g[j] += coeff.xreplace(sub)
    if any(e.has(*ctx.funcs) for e in g):
        return None  # a coefficient that is not a function of the unknowns' values
    for j in range(n):
        for k in range(j + 1, n):
            if sp.simplify(sp.diff(g[j], ws[k]) - sp.diff(g[k], ws[j])) != 0:
                return None
    # G by line integration along the coordinate axes of w, from 0
    G = sp.Integer(0)
    s = sp.Dummy("s", real=True)
    for j in range(n):
        path = {ws[k]: 0 for k in range(j + 1, n)}
        G += sp.integrate(g[j].xreplace(path).xreplace({ws[j]: s}), (s, 0, ws[j]))
    if G.has(sp.Integral) or G.has(sp.Piecewise) and not any(e.has(sp.Piecewise) for e in g):
        return None  # no closed form (or one with cases SymPy added): kept as written
    G = sp.simplify(G)
    back = {w: f for w, f in zip(ws, ctx.funcs)}
    # the partial in x at fixed w belongs to the source: taken before w becomes w(t, x)
    return G.xreplace(back), sp.diff(G, ctx.coords[a]).xreplace(back)


def _viscous_form(v, a, law: BalanceLaw) -> bool:
    """A viscous flux along axis a: linear in the gradients along a, none along other axes."""
    grads = law.grads[a]
    jets = law.jets
    derivs = [s for s in v.free_symbols if jets.of(s) and any(jets.of(s)[1])]
    if any(s not in grads for s in derivs):
        return False
    return all(sp.simplify(sp.diff(v, g1, g2)) == 0 for g1 in grads for g2 in grads)
