"""Symbolic structure of a task's PDE: conserved quantities, fluxes, diffusion, sources.

Every time-dependent equation is read as a balance law in one space dimension::

    dt(q(w)) + dx(F(w)) = dx(V(w, w_x)) + S(w)

with ``w`` the unknowns (primitive variables), ``q`` the conserved quantity, ``F`` the
inviscid flux, ``V`` a viscous flux linear in the gradients ``w_x`` and ``S`` a local source.
A steady equation is read as a linear elliptic problem in divergence form::

    -sum_k dk(K_k(x) dk(u)) + c u = f(x)

Anything else (third derivatives, space-dependent coefficients in a time-dependent problem,
non-periodic time-dependent boundaries, non-divergence second-order terms) raises
:class:`UnsupportedTask`, which names the offending term.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from pdesharp.task import Task

LLM_HINT = (
    "The built-in numerical analyst does not cover this; use a language model instead,"
    " e.g. `pdesharp solve TASK --model openai:gpt-4o`."
)


class UnsupportedTask(ValueError):
    """The task lies outside the built-in analyst's class; the message names the reason."""

    def __init__(self, reason: str):
        super().__init__(f"{reason}. {LLM_HINT}")
        self.reason = reason


@dataclass
class BalanceLaw:
    """A 1D periodic system dt(q(w)) + dx(F(w)) = dx(V(w, w_x)) + S(w), in SymPy symbols."""

    prims: list[sp.Symbol]  # primitive unknowns, task order
    grads: list[sp.Symbol]  # their x-derivatives, as plain symbols
    q: list[sp.Expr]  # conserved quantities in terms of prims
    flux: list[sp.Expr]
    viscous: list[sp.Expr]
    source: list[sp.Expr]
    params: list[sp.Symbol]

    @property
    def nvar(self) -> int:
        return len(self.prims)

    @property
    def has_flux(self) -> bool:
        return any(f != 0 for f in self.flux)

    @property
    def has_viscous(self) -> bool:
        return any(v != 0 for v in self.viscous)

    @property
    def has_source(self) -> bool:
        return any(s != 0 for s in self.source)

    @property
    def conservative_is_primitive(self) -> bool:
        return all(sp.simplify(q - w) == 0 for q, w in zip(self.q, self.prims))

    def viscous_is_constant_linear(self) -> dict[sp.Symbol, sp.Expr] | None:
        """For a scalar with V = D * w_x and D free of w: {w: D}; else None."""
        if self.nvar != 1 or not self.has_viscous:
            return None
        v = sp.expand(self.viscous[0])
        d = sp.simplify(sp.diff(v, self.grads[0]))
        if sp.simplify(v - d * self.grads[0]) != 0 or d.has(self.prims[0]):
            return None
        return {self.prims[0]: d}

    def flux_is_linear(self) -> bool:
        return all(
            sp.simplify(sp.diff(f, a, b)) == 0 for f in self.flux for a in self.prims for b in self.prims
        )

    def source_is_linear(self) -> bool:
        return all(
            sp.simplify(sp.diff(s, a, b)) == 0 for s in self.source for a in self.prims for b in self.prims
        )


@dataclass
class EllipticProblem:
    """-sum_k dk(K_k dk u) + c u = f with Dirichlet data; K_k, c, f may depend on coefficients/x."""

    unknown: sp.Symbol
    coords: list[sp.Symbol]
    conductivity: list[sp.Expr]  # K_k, one per axis (in coefficient symbols and coords)
    reaction: sp.Expr  # c
    forcing: sp.Expr  # f
    coefficients: list[sp.Symbol] = field(default_factory=list)
    boundary_value: float = 0.0


def _plain(system, name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


def _to_plain(expr: sp.Expr, system, names: list[str], coeffs: list[str]) -> tuple[sp.Expr, dict]:
    """Replace u(t,x) by u and Derivative(u(t,x), x) by u_x (plain symbols)."""
    x = system.coords[0]
    subs = {}
    for n in names:
        f = system.function(n)
        subs[sp.Derivative(f, x)] = sp.Symbol(f"{n}_x", real=True)
    e = expr.subs(subs)
    subs2 = {system.function(n): sp.Symbol(n, real=True) for n in names}
    subs2.update({system.function(c): sp.Symbol(c, real=True) for c in coeffs})
    return e.subs(subs2), subs


def _max_x_order(expr: sp.Expr, coords) -> int:
    best = 0
    for d in expr.atoms(sp.Derivative):
        order = sum(n for v, n in d.variable_count if v in coords)
        best = max(best, order)
    return best


def balance_law(task: Task) -> BalanceLaw:
    """Read a time-dependent task as a 1D periodic balance law, or raise UnsupportedTask."""
    system = task.system
    if system.t is None:
        raise UnsupportedTask("the task is steady; balance_law() needs a time-dependent task")
    if len(system.space) != 1:
        raise UnsupportedTask(
            f"time-dependent problems in {len(system.space)} space dimensions are not in the built-in"
            " catalogue yet (1D periodic only)")
    if not task.boundary.strip().lower().startswith("periodic"):
        raise UnsupportedTask(f"the time-dependent boundary condition {task.boundary!r} is not periodic")
    if system.coefficients:
        raise UnsupportedTask(
            f"space-dependent coefficients {list(system.coefficients)} in a time-dependent problem")
    if len(system.exprs) != len(system.unknowns):
        raise UnsupportedTask("the number of equations differs from the number of unknowns")
    x = system.coords[0]
    names = list(system.unknowns)
    prims = [sp.Symbol(n, real=True) for n in names]
    grads = [sp.Symbol(f"{n}_x", real=True) for n in names]
    q_list, flux, visc, src = [], [], [], []
    for i, expr in enumerate(system.exprs):
        full = expr.doit()
        if _max_x_order(full, system.coords) > 2:
            raise UnsupportedTask(
                f"equation {i + 1} has a spatial derivative of order {_max_x_order(full, system.coords)}"
                " (e.g. a dispersive u_xxx term)")
        for d in full.atoms(sp.Derivative):
            if system.t in d.variables and d.variables != (system.t,):
                raise UnsupportedTask(f"mixed time-space derivative {d} in equation {i + 1}")
            if system.t in d.variables and d.variable_count[0][1] > 1:
                raise UnsupportedTask(f"second-order time derivative {d} (wave form) in equation {i + 1}")
        q, rest = system.split_time_derivative(i)
        if q == 0:
            raise UnsupportedTask(f"equation {i + 1} has no time derivative (a constraint)")
        F, V, S = sp.Integer(0), sp.Integer(0), sp.Integer(0)
        for term in sp.Add.make_args(sp.expand(rest, deep=False)):
            F_t, V_t, S_t = _classify_term(term, x, system, names, i)
            F, V, S = F + F_t, V + V_t, S + S_t
        plain = lambda e: _to_plain(e, system, names, [])[0]  # noqa: E731
        q_p, F_p, V_p, S_p = plain(q), plain(F), plain(V), plain(S)
        if q_p.has(*grads) or F_p.has(*grads) or S_p.has(*grads):
            raise UnsupportedTask(f"equation {i + 1}: a gradient appears outside a viscous flux")
        if any(sp.diff(V_p, g, 2) != 0 for g in grads):
            raise UnsupportedTask(f"equation {i + 1}: the viscous flux is nonlinear in the gradients")
        q_list.append(q_p)
        flux.append(sp.simplify(F_p))
        visc.append(sp.simplify(V_p))
        src.append(sp.simplify(S_p))
    params = [sp.Symbol(p, real=True) for p in system.parameters]
    law = BalanceLaw(prims=prims, grads=grads, q=q_list, flux=flux, viscous=visc, source=src,
                     params=params)
    jac = sp.Matrix(q_list).jacobian(prims)
    if sp.simplify(jac.det()) == 0:
        raise UnsupportedTask("the conserved quantities do not determine the unknowns (singular dq/dw)")
    return law


def _classify_term(term: sp.Expr, x: sp.Symbol, system, names, i):
    """One additive term of ``rest`` -> (flux part, viscous part, source part) in the
    sign convention dt(q) + dx(F) = dx(V) + S."""
    zero = sp.Integer(0)
    if not term.has(sp.Derivative):
        return zero, zero, -term
    factors = sp.Mul.make_args(term)
    derivs = [f for f in factors if isinstance(f, sp.Derivative)]
    coeff = sp.Mul(*[f for f in factors if not isinstance(f, sp.Derivative)])
    funcs = {system.function(n) for n in names}
    if len(derivs) == 1 and not coeff.has(*funcs) and not coeff.has(x):
        d = derivs[0]
        order = sum(n for v, n in d.variable_count)
        inner = d.expr
        if order == 1 and not inner.has(sp.Derivative):
            return coeff * inner, zero, zero
        if order == 1:
            # dx(G) with G holding first derivatives: a viscous flux
            if _max_x_order(inner.doit(), system.coords) > 1:
                raise UnsupportedTask(f"term {term} in equation {i + 1} is of order > 2")
            return zero, -coeff * inner, zero
        if order == 2 and not inner.has(sp.Derivative):
            return zero, -coeff * sp.diff(inner, x), zero
    # g(u) * dx(u) in a scalar equation is dx(G(u)) with G' = g: rewrite in conservation form
    if len(names) == 1 and len(derivs) == 1 and derivs[0].variable_count == ((x, 1),):
        u = system.function(names[0])
        if derivs[0].expr == u and not coeff.has(x):
            s = sp.Dummy("s")
            G = sp.integrate(coeff.subs(u, s), (s, 0, u))
            return G, zero, zero
    raise UnsupportedTask(
        f"term {sp.sstr(term)} in equation {i + 1} is not a flux divergence, a diffusion term or a"
        " local source (only conservation form with diffusion and sources is supported)")


def elliptic_problem(task: Task) -> EllipticProblem:
    """Read a steady task as a linear divergence-form elliptic problem, or raise."""
    system = task.system
    if system.t is not None:
        raise UnsupportedTask("elliptic_problem() needs a steady task")
    if len(system.unknowns) != 1 or len(system.exprs) != 1:
        raise UnsupportedTask("steady systems of several unknowns are not in the built-in catalogue")
    b = task.boundary.strip().lower()
    if not b.startswith("dirichlet"):
        raise UnsupportedTask(f"steady boundary condition {task.boundary!r}: only Dirichlet is supported")
    bval = 0.0
    if "=" in b:
        try:
            bval = float(b.split("=")[-1])
        except ValueError:
            raise UnsupportedTask(f"Dirichlet data {task.boundary!r} must be a constant") from None
    name = system.unknowns[0]
    u = system.function(name)
    coords = list(system.coords)
    K = [sp.Integer(0)] * len(coords)
    c = sp.Integer(0)
    f = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(system.exprs[0], deep=False)):
        if not term.has(u):
            f += -term
            continue
        if not term.has(sp.Derivative):
            cc = sp.simplify(term / u)
            if cc.has(u):
                raise UnsupportedTask(f"nonlinear term {term} in the steady equation")
            c += cc
            continue
        factors = sp.Mul.make_args(term)
        derivs = [fa for fa in factors if isinstance(fa, sp.Derivative)]
        coeff = sp.Mul(*[fa for fa in factors if not isinstance(fa, sp.Derivative)])
        if len(derivs) != 1 or coeff.has(u) or coeff.has(*coords):
            raise UnsupportedTask(f"term {term} is not in divergence form -d(K d u)")
        d = derivs[0]
        (var, n), = d.variable_count if len(d.variable_count) == 1 else ((None, 0),)
        if var is None:
            raise UnsupportedTask(f"mixed derivative {d} in the steady equation")
        k = coords.index(var)
        if n == 2 and d.expr == u:
            K[k] += -coeff
        elif n == 1 and isinstance(d.expr, sp.Expr):
            inner_f = sp.Mul.make_args(d.expr)
            inner_d = [fa for fa in inner_f if isinstance(fa, sp.Derivative)]
            kk = sp.Mul(*[fa for fa in inner_f if not isinstance(fa, sp.Derivative)])
            if len(inner_d) != 1 or inner_d[0] != sp.Derivative(u, var) or kk.has(u):
                raise UnsupportedTask(f"term {term} is not in divergence form -d(K d u)")
            K[k] += -coeff * kk
        else:
            raise UnsupportedTask(f"term {term} has a derivative the elliptic catalogue lacks")
    if any(k == 0 for k in K):
        raise UnsupportedTask("the steady equation lacks a second derivative along some axis")
    plain = {system.function(cn): sp.Symbol(cn, real=True) for cn in system.coefficients}
    return EllipticProblem(
        unknown=sp.Symbol(name, real=True), coords=coords,
        conductivity=[sp.simplify(k.subs(plain)) for k in K], reaction=sp.simplify(c.subs(plain)),
        forcing=sp.simplify(f.subs(plain)),
        coefficients=[sp.Symbol(cn, real=True) for cn in system.coefficients], boundary_value=bval)


def structure(task: Task) -> BalanceLaw | EllipticProblem:
    """The task's structure, or UnsupportedTask naming why it is outside the catalogue."""
    return elliptic_problem(task) if task.steady else balance_law(task)
