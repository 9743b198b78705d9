"""From a symbolic balance law to NumPy source: flux, wave speeds, viscous flux, source, ODE step.

Everything here is derived from the equation with SymPy; nothing depends on which task it is.
The emitted functions take the primitive state ``W`` (a sequence of arrays, task unknown order)
and a dict ``prm`` of parameter values, and return lists of arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from pdesharp.builtin.structure import BalanceLaw


class _Printer(NumPyPrinter):
    """NumPy printer that writes ``np.`` instead of ``numpy.``."""

    def __init__(self):
        super().__init__({"fully_qualified_modules": True})

    def _module_format(self, fqn, register=True):
        out = super()._module_format(fqn, register)
        return out.replace("numpy.", "np.")


def npcode(expr: sp.Expr) -> str:
    return _Printer().doprint(sp.sympify(expr))


@dataclass
class LawFacts:
    """Derived symbolic facts of a balance law (used by the analysis and by code generation)."""

    to_prim: list[sp.Expr]  # prims in terms of conserved symbols U0..
    cons_symbols: list[sp.Symbol]
    eigenvalues: list[sp.Expr] | None  # of dF/dU, in prims; None if SymPy found no closed form
    jacobian: sp.Matrix  # dF/dU in prims
    diffusivity: list[sp.Expr] | None  # eigenvalues of dV/dU_x
    diffusion_matrix: sp.Matrix
    source_jacobian: sp.Matrix  # dS/dU in prims
    ode_solution: sp.Expr | None  # scalar: exact solution of dq/dt = S(q) at time tau from q0
    tau: sp.Symbol
    q0: sp.Symbol


_FACTS_CACHE: dict[str, LawFacts] = {}


def law_facts(law: BalanceLaw) -> LawFacts:
    """Derived facts, cached by the law's printed form (SymPy eigenvalues can take seconds)."""
    key = repr((law.prims, law.q, law.flux, law.viscous, law.source, law.params))
    if key not in _FACTS_CACHE:
        _FACTS_CACHE[key] = _law_facts(law)
    return _FACTS_CACHE[key]


def _law_facts(law: BalanceLaw) -> LawFacts:
    U = [sp.Symbol(f"U{i}", real=True) for i in range(law.nvar)]
    dqdw = sp.Matrix(law.q).jacobian(law.prims)
    dwdq = dqdw.inv()
    if law.conservative_is_primitive:
        to_prim = list(U)
    else:
        sols = sp.solve([Ui - q for Ui, q in zip(U, law.q)], law.prims, dict=True)
        if not sols:
            from pdesharp.builtin.structure import UnsupportedTask
            raise UnsupportedTask("SymPy cannot invert the conserved quantities for the unknowns")
        to_prim = [sp.simplify(sols[0][w]) for w in law.prims]
    jac = sp.simplify(sp.Matrix(law.flux).jacobian(law.prims) * dwdq)
    eig: list[sp.Expr] | None
    try:
        ev = jac.eigenvals(simplify=True) if law.nvar <= 3 else None
        eig = [sp.simplify(e) for e in ev] if ev else None
        if eig is not None and any(e.has(sp.I) or e.has(sp.CRootOf) for e in eig):
            eig = None
    except Exception:  # SymPy can fail on awkward Jacobians: fall back to numerical eigenvalues
        eig = None
    dmat = sp.simplify(sp.Matrix(law.viscous).jacobian(law.grads) * dwdq)
    try:
        dv = dmat.eigenvals() if law.nvar <= 3 else None
        diffusivity = [sp.simplify(e) for e in dv] if dv else None
    except Exception:
        diffusivity = None
    sjac = sp.simplify(sp.Matrix(law.source).jacobian(law.prims) * dwdq)
    tau, q0 = sp.Symbol("tau", positive=True), sp.Symbol("q0", real=True)
    ode = None
    if law.nvar == 1 and law.has_source and law.conservative_is_primitive:
        ode = exact_source_step(law.source[0], law.prims[0], tau, q0, law.params)
    return LawFacts(to_prim=to_prim, cons_symbols=U, eigenvalues=eig, jacobian=jac,
                    diffusivity=diffusivity, diffusion_matrix=dmat, source_jacobian=sjac,
                    ode_solution=ode, tau=tau, q0=q0)


def exact_source_step(S: sp.Expr, w: sp.Symbol, tau, q0, params) -> sp.Expr | None:
    """Closed-form solution of dw/dt = S(w) from w(0) = q0 at t = tau, in a form that stays
    finite for large tau and at q0 = 0 (chosen among equivalent rewritings by evaluation)."""
    if S.has(sp.Symbol("x", real=True)):
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
            fn = sp.lambdify((q0, tau), cand.subs(values), "numpy")
            with np.errstate(all="ignore"):
                ok = all(np.isfinite(complex(fn(q, t))) and abs(complex(fn(q, t)).imag) < 1e-12
                         for q, t in probes)
        except Exception:  # a rewriting that does not evaluate is simply not chosen
            ok = False
        if ok:
            # check it really solves the ODE (guards against a wrong branch)
            resid = sp.diff(cand, tau) - S.subs(w, cand)
            r = sp.lambdify((q0, tau), resid.subs(values), "numpy")
            with np.errstate(all="ignore"):
                if all(abs(complex(r(q, t))) < 1e-6 for q, t in probes if t < 10):
                    return cand
    return None


def _unpack(names: list[str], var: str) -> str:
    if len(names) == 1:
        return f"    {names[0]} = {var}[0]\n"
    return f"    {', '.join(names)} = {var}\n"


def _params_lines(law: BalanceLaw) -> str:
    return "".join(f"    {p.name} = prm[{p.name!r}]\n" for p in law.params)


def _ret(exprs, like: str) -> str:
    parts = []
    for e in exprs:
        code = npcode(e)
        if not sp.sympify(e).free_symbols:
            code = f"np.full_like({like}, {code})"
        elif sp.sympify(e).is_number:
            code = f"np.full_like({like}, {code})"
        parts.append(code)
    return "    return [" + ", ".join(parts) + "]\n"


def physics_source(law: BalanceLaw, facts: LawFacts) -> str:
    """NumPy source of the physics functions used by the finite-volume/spectral blocks."""
    prims = [w.name for w in law.prims]
    grads = [g.name for g in law.grads]
    cons = [u.name for u in facts.cons_symbols]
    first = prims[0]
    out = ["# ---- physics, generated from the equation with SymPy ----\n"]
    out.append("NVAR = %d\n\n" % law.nvar)
    out.append("def to_conservative(W, prm):\n" + _unpack(prims, "W") + _params_lines(law)
               + _ret(law.q, first) + "\n\n")
    out.append("def to_primitive(U, prm):\n" + _unpack(cons, "U") + _params_lines(law)
               + _ret(facts.to_prim, cons[0]) + "\n\n")
    out.append("def flux(W, prm):\n" + _unpack(prims, "W") + _params_lines(law)
               + _ret(law.flux, first) + "\n\n")
    body = "def wave_speeds(W, prm):\n    \"\"\"Smallest and largest eigenvalue of dF/dU.\"\"\"\n"
    body += _unpack(prims, "W") + _params_lines(law)
    if facts.eigenvalues is not None:
        lam = ", ".join(
            npcode(e) if sp.sympify(e).free_symbols else f"np.full_like({first}, {npcode(e)})"
            for e in facts.eigenvalues)
        body += f"    lam = np.array(np.broadcast_arrays({lam}))\n"
    else:
        rows = ", ".join(
            "[" + ", ".join(f"np.broadcast_to({npcode(facts.jacobian[i, j])}, {first}.shape)"
                            for j in range(law.nvar)) + "]"
            for i in range(law.nvar))
        body += (f"    A = np.moveaxis(np.array([{rows}], dtype=float), (0, 1), (-2, -1))\n"
                 "    lam = np.moveaxis(np.real(np.linalg.eigvals(A)), -1, 0)\n")
    body += "    return lam.min(axis=0), lam.max(axis=0)\n\n\n"
    out.append(body)
    if law.has_viscous:
        out.append("def viscous_flux(W, Wx, prm):\n" + _unpack(prims, "W") + _unpack(grads, "Wx")
                   + _params_lines(law) + _ret(law.viscous, first) + "\n\n")
        dif = facts.diffusivity or [sp.Abs(e) for e in facts.diffusion_matrix]
        terms = ", ".join(f"np.abs({npcode(e)})" for e in dif)
        out.append("def max_diffusivity(W, prm):\n" + _unpack(prims, "W") + _params_lines(law)
                   + f"    return max(float(np.max(np.broadcast_to(d, {first}.shape)))"
                   f" for d in ({terms},))\n\n\n")
    if law.has_source:
        out.append("def source(W, prm):\n" + _unpack(prims, "W") + _params_lines(law)
                   + _ret(law.source, first) + "\n\n")
    if facts.ode_solution is not None:
        out.append("def source_exact(q0, tau, prm):\n    \"\"\"Exact solution of the local source"
                   " ODE dq/dt = S(q) after time tau.\"\"\"\n" + _params_lines(law)
                   + f"    return {npcode(facts.ode_solution)}\n\n\n")
    return "".join(out)


def linear_symbol_source(law: BalanceLaw) -> str | None:
    """For a scalar linear constant-coefficient law, the Fourier symbol L(k) of u_t = L u.

    Returns NumPy source of ``def symbol(k, dx, prm)`` using SYMBOL to choose the exact spectral
    derivative (i k) or the second-order finite-difference one, or None when not applicable.
    """
    if law.nvar != 1 or not law.conservative_is_primitive:
        return None
    w, g = law.prims[0], law.grads[0]
    f, v, s = law.flux[0], law.viscous[0], law.source[0]
    a = sp.diff(f, w)
    d = sp.diff(v, g)
    c = sp.diff(s, w)
    if any(e.has(w) or e.has(g) for e in (a, d, c)):
        return None
    if sp.simplify(f - a * w) != 0 or sp.simplify(v - d * g) != 0 or sp.simplify(s - c * w) != 0:
        return None
    return ("def symbol(k, dx, prm):\n    \"\"\"Fourier symbol of the linear operator: u_t = L u.\"\"\"\n"
            + _params_lines(law)
            + f"    a, d, c = {npcode(a)}, {npcode(d)}, {npcode(c)}\n"
            + "    if SYMBOL == 'fd2':\n"
            + "        ik = 1j * np.sin(k * dx) / dx\n"
            + "        k2 = (2.0 - 2.0 * np.cos(k * dx)) / dx**2\n"
            + "    else:\n"
            + "        ik, k2 = 1j * k, k**2\n"
            + "    return -a * ik - d * k2 + c\n\n\n")


def diffusion_constant(law: BalanceLaw) -> sp.Expr | None:
    """D for a scalar law whose viscous flux is D * w_x with constant D; else None."""
    got = law.viscous_is_constant_linear()
    return None if got is None else got[law.prims[0]]
