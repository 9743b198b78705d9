"""A time-dependent task read as a balance law in one, two or three space dimensions::

    dt(q(w)) + sum_a da(F_a(w, x, t)) = sum_a da(V_a(w, da w, x, t)) + S(w, x, t) + H w

``w`` are the unknowns (primitive variables), ``q`` the conserved quantities, ``F_a`` the
inviscid flux along axis a, ``V_a`` a viscous flux linear in the gradients along the same axis,
``S`` a local source (which may depend on x, y, t and the parameters), and ``H`` linear
constant-coefficient terms of order three and more (dispersion ``dx(u, 3)``,
hyper-diffusion ``dx(u, 4)``), which only the Fourier families can treat.

The reading is by the algebra of the terms, never by a task's name: a coefficient that depends on
x is moved inside the derivative by the product rule (``c(x)*dx(u) = dx(c*u) - c'(x)*u``),
first-order terms whose coefficients depend on the unknowns are integrated into a flux when
they form an exact gradient (``u*dx(u) = dx(u**2/2)``, ``h*dx(v) + v*dx(h) = dx(h*v)``), and
second time derivatives are first rewritten as a first-order system (:mod:`pdesharp.time_order`).
Anything else raises :class:`UnsupportedTask` naming the construct and, where one exists, the
rewrite the catalogue supports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from pdesharp.boundary import BoundarySpec
from pdesharp.builtin.refusal import UnsupportedTask, boundary_or_refuse, notation
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
    def periodic(self) -> bool:
        return self.boundary.all_periodic

    @property
    def conservative_is_primitive(self) -> bool:
        return all(sp.simplify(q - w) == 0 for q, w in zip(self.q, self.prims))

    def depends_on_space(self) -> bool:
        exprs = [e for row in self.flux + self.viscous for e in row] + self.source
        return any(e.has(*self.coords) for e in exprs)

    def depends_on_time(self) -> bool:
        exprs = [e for row in self.flux + self.viscous for e in row] + self.source
        return any(e.has(self.t) for e in exprs) or any(
            c.g.has(self.t) for c in self.boundary.conditions)

    def flux_is_linear(self) -> bool:
        return all(sp.simplify(sp.diff(f, a, b)) == 0 for row in self.flux for f in row
                   for a in self.prims for b in self.prims)

    def scalar_diffusion(self) -> sp.Expr | None:
        """D for a scalar law whose viscous flux is D * da(w) on every axis, D a constant (it may
        depend on the parameters); else None."""
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
    law = BalanceLaw(names=names, prims=prims, coords=coords, t=t, grads=grads, q=[],
                     flux=[[] for _ in coords], viscous=[[] for _ in coords], source=[], high=[],
                     params=params, boundary=bc, introduced=red.introduced,
                     notes=list(red.notes), time_order=written_order)
    ctx = _Ctx(system=system, funcs=funcs, coords=coords, t=t, names=names)
    if len(system.exprs) != len(names):
        raise UnsupportedTask(f"{len(system.exprs)} equations for {len(names)} unknowns",
                              hint="give one equation per unknown")
    for i, expr in enumerate(system.exprs):
        _check_time_derivatives(expr, i, ctx)
        try:
            q, rest = system.split_time_derivative(i)
        except ValueError as exc:
            raise UnsupportedTask(str(exc), hint="") from None
        if q == 0:
            raise UnsupportedTask(
                f"an equation without a time derivative (equation {i + 1}, a constraint)",
                hint="eliminate the constrained unknown, or use a language model")
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
                G, explicit = _integrate_gradient(nonconservative[a], i, a, ctx)
                parts.flux[a] += G
                parts.source += explicit
        qp = q.xreplace(to_plain)
        law.q.append(qp)
        law.high.append(parts.high)
        src = parts.source.xreplace(to_plain)
        for a in range(len(coords)):
            v = sp.expand(parts.viscous[a].doit().xreplace(to_plain))
            f = parts.flux[a].xreplace(to_plain)
            zero = {g: 0 for g in grads[a]}
            v0 = v.xreplace(zero)
            if v0 != 0:  # a gradient-free part of a viscous flux is an ordinary flux
                v, f = sp.expand(v - v0), f - v0
            _check_viscous(v, f, src, qp, i, a, law)
            law.flux[a].append(sp.simplify(f))
            law.viscous[a].append(sp.simplify(v))
        if any(s.has(*[g for row in grads for g in row]) for s in (src,)):
            raise UnsupportedTask(
                f"a gradient outside a flux divergence (in the source {notation(src)} of"
                f" equation {i + 1})",
                hint="write gradient terms as flux divergences, e.g. dx(u**2/2) for u*dx(u)")
        law.source.append(sp.simplify(src))
    jac = sp.Matrix(law.q).jacobian(prims)
    if sp.simplify(jac.det()) == 0:
        raise UnsupportedTask("conserved quantities that do not determine the unknowns (singular"
                              " dq/dw)", hint="")
    return law


def additive_terms(expr: sp.Expr) -> list[sp.Expr]:
    """The terms of ``expr``, products distributed over sums (``-nu*(dx(u, 2) + dy(u, 2))`` is
    two terms) but derivatives' arguments left as written (``dx(u**2/2)`` stays a flux)."""
    out = []
    for term in sp.Add.make_args(sp.expand(expr, deep=False)):
        if isinstance(term, sp.Mul) and any(isinstance(f, sp.Add) for f in term.args):
            out += additive_terms(sp.expand(term, deep=False))
        else:
            out.append(term)
    return out


@dataclass
class _Ctx:
    system: object
    funcs: list
    coords: list
    t: sp.Symbol
    names: list


class _Parts:
    def __init__(self, dim: int):
        zero = sp.Integer(0)
        self.flux = [zero] * dim
        self.viscous = [zero] * dim
        self.source = zero
        self.high: list[tuple[sp.Expr, int, tuple[int, ...]]] = []


def _check_time_derivatives(expr, i, ctx):
    for d in expr.atoms(sp.Derivative):
        if ctx.t in d.variables and d.variables != (ctx.t,):
            raise UnsupportedTask(
                f"the mixed time-space derivative {notation(d)} in equation {i + 1} (a"
                " Sobolev-type term)", hint="llm")


def _term(term, i, ctx: _Ctx, parts: _Parts, nonconservative) -> None:
    """Add one additive term of ``rest`` (dt(q) + rest = 0) to the flux/viscous/source parts."""
    coords, funcs = ctx.coords, ctx.funcs
    if not term.has(sp.Derivative):
        parts.source -= term
        return
    factors = sp.Mul.make_args(term)
    derivs = [f for f in factors if isinstance(f, sp.Derivative)]
    coeff = sp.Mul(*[f for f in factors if not isinstance(f, sp.Derivative)])
    if len(derivs) != 1 or coeff.has(sp.Derivative):
        raise UnsupportedTask(
            f"the product of derivatives {notation(term)} in equation {i + 1}",
            hint="write it as the derivative of a flux (conservation form), e.g."
                 " dx(u*dx(u)) instead of u*dx(u, 2) + dx(u)**2")
    d = derivs[0]
    if len(d.variable_count) != 1:
        raise UnsupportedTask(f"the mixed derivative {notation(d)} in equation {i + 1}"
                              " (cross-derivative terms)", hint="llm")
    var, n = d.variable_count[0]
    n = int(n)
    a = coords.index(var)
    inner = d.expr
    on_unknowns = coeff.has(*funcs)
    if on_unknowns:
        if n == 1 and inner in funcs:
            nonconservative[a].append((coeff, funcs.index(inner)))
            return
        if n >= 3 or any(sum(int(k) for _, k in e.variable_count) > 1
                         for e in inner.atoms(sp.Derivative)):
            _high_or_refuse(term, coeff, d, i, ctx, parts)
        raise UnsupportedTask(
            f"the term {notation(term)} in equation {i + 1} (a coefficient depending on the"
            " unknowns in front of a second derivative or of a derivative of an expression)",
            hint="write it in conservation form, e.g. dx(D(u)*dx(u)) for nonlinear diffusion")
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
        bad = [e for e in inner.atoms(sp.Derivative) if e.variables != (var,)]
        if bad:
            raise UnsupportedTask(
                f"the cross-derivative term {notation(term)} in equation {i + 1} (cross-diffusion)",
                hint="llm")
        if any(sum(int(k) for _, k in e.variable_count) > 1 for e in inner.atoms(sp.Derivative)):
            _high_or_refuse(term, coeff, d, i, ctx, parts)
            return
        parts.viscous[a] += -coeff * inner
        return
    if n == 2 and not inner.has(sp.Derivative):
        parts.viscous[a] += -coeff * sp.diff(inner, var)
        return
    _high_or_refuse(term, coeff, d, i, ctx, parts)


def _high_or_refuse(term, coeff, d, i, ctx, parts):
    """A derivative of order >= 3: linear constant-coefficient terms are kept for the Fourier
    families; anything else is refused with the construct named."""
    inner, counts = d.expr, d.variable_count
    flat = sp.Derivative(inner, *counts).doit()
    ders = flat.atoms(sp.Derivative) if isinstance(flat, sp.Expr) else set()
    order = max((sum(int(k) for _, k in e.variable_count) for e in ders), default=0)
    ok = (isinstance(flat, sp.Derivative) and flat.expr in ctx.funcs
          and not coeff.has(*ctx.funcs, *ctx.coords, ctx.t))
    if not ok:
        raise UnsupportedTask(
            f"the term {notation(term)} in equation {i + 1} (a derivative of order {order} that is"
            " not linear with a constant coefficient: the catalogue treats derivatives of order 3"
            " and more, such as dispersion or hyper-diffusion, only in that form)", hint="llm")
    orders = [0] * len(ctx.coords)
    for v, k in flat.variable_count:
        orders[ctx.coords.index(v)] += int(k)
    parts.high.append((-coeff, ctx.funcs.index(flat.expr), tuple(orders)))


def _integrate_gradient(terms, i, a, ctx: _Ctx) -> tuple[sp.Expr, sp.Expr]:
    """sum_j g_j(w, x) da(w_j) = da(G(w, x)) - (partial_a G)(w, x) when dG/dw_j = g_j exists:
    returns the flux G and the source part partial_a G (dt q + da G - partial_a G = 0)."""
    n = len(ctx.funcs)
    ws = [sp.Dummy(f"w{j}") for j in range(n)]
    sub = dict(zip(ctx.funcs, ws))
    g = [sp.Integer(0)] * n
    for coeff, j in terms:
        g[j] += coeff.xreplace(sub)
    for j in range(n):
        for k in range(j + 1, n):
            if sp.simplify(sp.diff(g[j], ws[k]) - sp.diff(g[k], ws[j])) != 0:
                shown = " + ".join(f"{notation(c)}*d{ctx.coords[a]}({ctx.names[jj]})"
                                   for c, jj in terms)
                raise UnsupportedTask(
                    f"the non-conservative product {shown} in equation {i + 1} (not the"
                    " derivative of a flux)",
                    hint="write the equation in conservation form, e.g. dx(h*v) for"
                         " h*dx(v) + v*dx(h)")
    # G by line integration along the coordinate axes of w, from 0
    G = sp.Integer(0)
    s = sp.Dummy("s")
    for j in range(n):
        path = {ws[k]: 0 for k in range(j + 1, n)}
        G += sp.integrate(g[j].xreplace(path).xreplace({ws[j]: s}), (s, 0, ws[j]))
    back = {w: f for w, f in zip(ws, ctx.funcs)}
    G = sp.simplify(G.xreplace(back))
    return G, sp.diff(G, ctx.coords[a])  # the partial in x at fixed w belongs to the source


def _check_viscous(v, f, src, q, i, a, law: BalanceLaw) -> None:
    grads = law.grads[a]
    other = [g for b, row in enumerate(law.grads) if b != a for g in row]
    if v.has(*other):
        raise UnsupportedTask(f"a viscous flux along {law.coords[a]} that depends on gradients"
                              f" along another axis (equation {i + 1}, cross-diffusion)", hint="llm")
    if any(sp.simplify(sp.diff(v, g1, g2)) != 0 for g1 in grads for g2 in grads):
        raise UnsupportedTask(f"a viscous flux nonlinear in the gradients ({notation(v)} in"
                              f" equation {i + 1}; the catalogue needs fluxes linear in da(w))",
                              hint="llm")
    allg = [g for row in law.grads for g in row]
    if f.has(*allg) or q.has(*allg):
        raise UnsupportedTask(f"a gradient outside a viscous flux (equation {i + 1})",
                              hint="write gradient terms as flux divergences")
