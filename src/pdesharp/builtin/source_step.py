"""The exact step of a scalar law's local source ODE dq/dt = S(q) (for splitting schemes)."""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair

from pdesharp.equation import array_function


def freeze_space(S: sp.Expr, w: sp.Symbol, coords) -> tuple[sp.Expr, dict]:
    """S with every largest subexpression that depends on the coordinates but not on w replaced
    by a plain symbol (the ODE at a point sees it as a constant): SymPy's dsolve is fast on
    r*c*u*(1 - u) and can take minutes on r*(1 + sin(pi*x)/2)*u*(1 - u)."""
    back: dict = {}

    def walk(e):
        # (only expressions: a Piecewise's (value, condition) pairs and conditions stay as such)
        if isinstance(e, sp.Expr) and not isinstance(e, ExprCondPair) and e.has(*coords) \
                and not e.has(w):
            key = next((k for k, v in back.items() if v == e), None)
            if key is None:
                key = sp.Symbol(f"_c{len(back)}", real=True)
                back[key] = e
            return key
        return e.func(*[walk(a) for a in e.args]) if e.args else e

    return walk(S), back


def exact_source_step(S: sp.Expr, w: sp.Symbol, tau, q0, params) -> sp.Expr | None:
    """Closed-form solution of dw/dt = S(w) from w(0) = q0 at t = tau, in a form that stays
    finite for large tau and at q0 = 0 (chosen among equivalent rewritings by evaluation).
    ``params`` (parameters and coordinates) are held fixed."""
    expr = _bernoulli(S, w, tau, q0)
    if expr is None:
        poly = sp.Poly(S, w) if S.is_polynomial(w) else None
        if poly is None or poly.degree() > 2:
            # dsolve answers a cubic (Allen-Cahn's u - u**3 when not in Bernoulli form) or a
            # transcendental source with implicit solutions after tens of seconds, if at all
            return None
        f = sp.Function("w")
        s = sp.Symbol("s", real=True)
        try:
            sol = sp.dsolve(sp.Eq(f(s).diff(s), S.subs(w, f(s))), f(s), ics={f(0): q0})
        except Exception:  # no closed form, or SymPy cannot impose the initial condition
            return None
        if isinstance(sol, list):
            return None
        expr = sol.rhs.subs(s, tau)
    base = [expr, sp.simplify(expr)]
    candidates = []
    for e in base:  # dividing through by a growing exponential keeps the form finite
        num, den = sp.fraction(sp.together(e))
        for ex in num.atoms(sp.exp) | den.atoms(sp.exp):
            candidates.append(sp.expand(num / ex) / sp.expand(den / ex))
    candidates += base
    rng = np.random.default_rng(0)
    values = {p: float(v) for p, v in zip(params, rng.uniform(0.5, 2.0, len(params)))}
    probes = [(q, t) for q in (0.0, 0.3, 1.0, 1.7) for t in (1e-6, 0.1, 50.0)]
    probes += [(q, 1e3) for q in (0.3, 1.0, 1.7)]  # overflow check of growing exponentials
    for cand in candidates:
        try:
            fn = array_function((q0, tau), cand.subs(values))
            with np.errstate(all="ignore"):
                ok = all(np.isfinite(complex(fn(q, t))) and abs(complex(fn(q, t)).imag) < 1e-12
                         for q, t in probes)
        except Exception:  # a rewriting that does not evaluate is simply not chosen
            ok = False
        if ok:
            # check it really solves the ODE (guards against a wrong branch)
            resid = sp.diff(cand, tau) - S.subs(w, cand)
            r = array_function((q0, tau), resid.subs(values))
            with np.errstate(all="ignore"):
                if all(abs(complex(r(q, t))) < 1e-6 for q, t in probes if t < 10):
                    return cand
    return None


def _bernoulli(S: sp.Expr, w: sp.Symbol, tau, q0) -> sp.Expr | None:
    """w' = a w + b w^n (n >= 2, a != 0: logistic, Allen-Cahn's u - u**3) in closed form:
    z = w^(1-n) solves the linear z' = (1-n)(a z + b), so
    w = q0 ((1 + b q0^(n-1)/a) exp((1-n) a tau) - b q0^(n-1)/a)^(1/(1-n))."""
    terms = sp.Add.make_args(sp.expand(S))
    if len(terms) != 2:
        return None
    parts = {}
    for term in terms:
        coeff, power = term.as_independent(w, as_Add=False)
        if power == w:
            parts[1] = coeff
        elif power.is_Pow and power.base == w and power.exp.is_Integer and power.exp >= 2:
            parts[int(power.exp)] = coeff
        else:
            return None
    if 1 not in parts or len(parts) != 2:
        return None
    n = next(k for k in parts if k != 1)
    a, b = parts[1], parts[n]
    r = b * q0 ** (n - 1) / a
    return q0 * ((1 + r) * sp.exp((1 - n) * a * tau) - r) ** sp.Rational(1, 1 - n)


def hoisted(expr: sp.Expr, q0: sp.Symbol,
            tau: sp.Symbol) -> tuple[list[tuple[sp.Symbol, sp.Expr]], sp.Expr]:
    """The exact step written for arrays of q0: every sum that holds q0 expanded and collected
    over its powers, and every largest part free of q0 (a function of tau, the parameters and
    the coordinates) bound once per call, common parts shared. The split schemes call the step
    on whole fields every step, where a scalar's np.exp costs as much as an array operation
    (APEBench Fisher-KPP, 4 x 160 points: q0/(q0 - q0*exp(-20*tau) + exp(-20*tau)) is two exps
    and four array operations; q0/(q0*c1 + c0), c0 and c1 bound once, one exp and three).
    Returns the bindings ``[(name, value), ...]`` in order and the expression in those names;
    the plain ``([], expr)`` when the rewritten form, evaluated in floating point as the solver
    will, does not give the plain form's values where those are finite (probes of q0 and tau
    as :func:`exact_source_step`'s, the other symbols at typical values): the chosen form's
    guard against overflow must survive the rewriting."""
    collected = expr.replace(lambda x: x.is_Add and x.has(q0),
                             lambda x: sp.collect(sp.expand(x), q0))
    parts: dict[sp.Expr, sp.Symbol] = {}

    def walk(e):
        if isinstance(e, sp.Expr) and not isinstance(e, ExprCondPair) and not e.is_Atom \
                and not e.has(q0):
            if e not in parts:
                parts[e] = sp.Symbol(f"_p{len(parts)}", real=True)
            return parts[e]
        return e.func(*[walk(a) for a in e.args]) if e.args else e

    body = walk(collected)
    if not parts:
        return [], expr
    # exp(a) exp(b) as exp(a + b): one exp of an array of x where SymPy had split the rate
    shared, reduced = sp.cse([sp.powsimp(v, combine="exp") for v in parts],
                             symbols=sp.numbered_symbols("_s"), optimizations=None)
    alias = {n: v for n, v in zip(parts.values(), reduced) if v.is_Symbol}  # a shared part
    body = body.xreplace(alias)
    binds = list(shared) + [(n, v) for n, v in zip(parts.values(), reduced) if n not in alias]
    others = sorted(expr.free_symbols - {q0, tau}, key=str)
    rng = np.random.default_rng(0)
    typical = dict(zip(others, rng.uniform(0.5, 2.0, len(others))))
    q = np.repeat([0.0, 0.3, 1.0, 1.7], 4)
    t = np.tile([1e-6, 0.1, 50.0, 1e3], 4)
    try:
        with np.errstate(all="ignore"):
            values = {q0: q, tau: t, **typical}
            want = array_function(list(values), expr)(*values.values())
            for name, value in binds:
                values[name] = array_function(list(values), value)(*values.values())
            got = array_function(list(values), body)(*values.values())
            want, got = np.broadcast_arrays(np.asarray(want, complex), np.asarray(got, complex))
            fine = np.isfinite(want)
            same = np.abs(got - want) <= 1e-12 * np.maximum(1.0, np.abs(want))
    except Exception:  # a rewriting that does not evaluate is not taken
        return [], expr
    return (binds, body) if np.all(same[fine]) else ([], expr)
