"""The primitive-variable (quasi-linear) form of a balance law, split for an exponential integrator,
and the NumPy source of its explicit remainder.

From ``dt q(w) + sum_a da F_a(w, x, t) = sum_a da V_a(w, da w, x, t) + S(w, x, t)`` the chain rule
gives ``M(w) dt w = b(w, da w, da^2 w, x, t)`` with ``M = dq/dw``, so

    dt w_i = R_i = (M^-1 b)_i = -A_i . da w_i + D_i da^2 w_i + c_i w_i + N_i(w, da w, x, t).

The linear part (A, D, c constant, diagonal) is what a Fourier exponential integrator treats
exactly; the remainder N is evaluated explicitly with spectral derivatives. The split is accepted
only when N contains no second derivative: every ``da^2 w_j`` coefficient of R_i is the constant
D_i for j = i and zero for j != i. Why that strict rule: an explicit second-derivative term with
coefficient delta limits the step to ~1/(delta k_max^2), the stiffness the exponential integrator
exists to remove, and at design time we have no bound on delta over the solution; laws that fail
it (textbook viscosity mu*dx(v) divided by rho in dt v) go to the finite-volume families with an
implicit viscous step. Compressible Navier-Stokes with the density-weighted viscous flux
``mu*rho*dx(v)`` passes (dt v gets mu dx^2 v + mu rho_x v_x / rho), and so does viscous shallow
water with ``nu*h*dx(v)``.

Terms of order three and more (dispersion) are left to the conservative path: with q != w they
would be multiplied by M^-1(w) and stop being constant-coefficient.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.physics import coords_line, npcode, params_lines, safe, unpack


@dataclass(frozen=True)
class PrimitiveForm:
    """``dt w = L w + N``: L's constant diagonal coefficients and N as SymPy expressions."""

    advection: list[list[sp.Expr]]  # A[a][i]: dt w_i contains -A[a][i] * da w_i
    diffusion: list[list[sp.Expr]]  # D[a][i]: dt w_i contains +D[a][i] * da^2 w_i
    reaction: list[sp.Expr]  # c[i]: dt w_i contains +c[i] * w_i
    remainder: list[sp.Expr]  # N_i(w, da w, x, t): no second derivatives


def _constant(law: BalanceLaw, e) -> bool:
    return not sp.sympify(e).has(*law.prims, *law.coords, law.t,
                                 *[g for row in law.grads for g in row])


def _constant_multiple(law: BalanceLaw, expr: sp.Expr, sym: sp.Symbol) -> sp.Expr:
    """Sum of the constants c of the additive terms c*sym of ``expr`` (expanded)."""
    out = sp.Integer(0)
    for term in sp.Add.make_args(expr):
        ratio = term / sym
        if not ratio.has(sym) and _constant(law, ratio):
            out += ratio
    return out


def _collect(law: BalanceLaw, expr: sp.Expr) -> sp.Expr:
    """``expr`` with the constant factors of equal monomials in (w, da w, x, t) summed and
    simplified (the emitted remainder then does a few array operations per term, not dozens)."""
    groups: dict = {}
    for term in sp.Add.make_args(expr):
        const, dep = term.as_independent(*law.prims, *law.coords, law.t,
                                         *[g for row in law.grads for g in row], as_Add=False)
        groups[dep] = groups.get(dep, sp.Integer(0)) + const
    return sp.Add(*[sp.simplify(k) * dep for dep, k in groups.items()])


def quasi_linear_rhs(law: BalanceLaw, hess: list[list[sp.Symbol]]) -> list[sp.Expr] | None:
    """R with dt w = R(w, da w, da^2 w, x, t) (the second derivatives as ``hess[a][j]``)."""
    M = sp.Matrix(law.q).jacobian(law.prims)
    if any(not _constant(law, e) and e.has(*law.coords, law.t) for e in M):
        return None
    b = []
    for i in range(law.nvar):
        bi = law.source[i]
        for a, x in enumerate(law.coords):
            g, h = law.grads[a], hess[a]
            F, V = law.flux[a][i], law.viscous[a][i]
            # da F(w(x), x) = sum_j dF/dw_j w_j,a + (partial_a F at fixed w); likewise for V,
            # whose gradient arguments contribute dV/d(w_j,a) * w_j,aa
            bi -= sum((sp.diff(F, w) * g[j] for j, w in enumerate(law.prims)), sp.Integer(0))
            bi -= sp.diff(F, x)
            bi += sum((sp.diff(V, w) * g[j] for j, w in enumerate(law.prims)), sp.Integer(0))
            bi += sum((sp.diff(V, g[j]) * h[j] for j in range(law.nvar)), sp.Integer(0))
            bi += sp.diff(V, x)
        b.append(bi)
    try:
        Minv = sp.simplify(M.inv())
    except (ValueError, ZeroDivisionError):  # singular dq/dw is refused by balance_law already
        return None
    return [sp.expand(sum((Minv[i, j] * b[j] for j in range(law.nvar)), sp.Integer(0)))
            for i in range(law.nvar)]


def primitive_form(law: BalanceLaw) -> PrimitiveForm | None:
    """The split of the quasi-linear form, or None when the remainder would keep a second
    derivative (see the module docstring for why that is the rule) or the law has terms of
    order three and more."""
    if law.has_high:
        return None
    hess = [[sp.Symbol(f"{w.name}_{x.name}{x.name}", real=True) for w in law.prims]
            for x in law.coords]
    R = quasi_linear_rhs(law, hess)
    if R is None:
        return None
    A = [[sp.Integer(0)] * law.nvar for _ in law.coords]
    D = [[sp.Integer(0)] * law.nvar for _ in law.coords]
    c, N = [], []
    for i, w in enumerate(law.prims):
        lin = sp.Integer(0)
        for a in range(law.dim):
            for j in range(law.nvar):
                coef = sp.simplify(sp.diff(R[i], hess[a][j]))
                if j == i and _constant(law, coef):
                    D[a][i] = coef
                elif coef != 0:
                    return None  # an explicit second derivative would stay in the remainder
            A[a][i] = -_constant_multiple(law, R[i], law.grads[a][i])
            lin += -A[a][i] * law.grads[a][i] + D[a][i] * hess[a][i]
        c.append(_constant_multiple(law, R[i], w))
        lin += c[i] * w
        rem = _collect(law, sp.expand(R[i] - lin))
        if rem.has(*[h for row in hess for h in row]):
            return None
        N.append(rem)
    return PrimitiveForm(advection=A, diffusion=D, reaction=c, remainder=N)


def remainder_source(law: BalanceLaw, prim: PrimitiveForm) -> str:
    """``remainder(W, WX, X, t, prm)``: the explicit part N of the primitive form, WX[axis][j] the
    spectral derivative of w_j along the axis; common subexpressions computed once."""
    exprs = prim.remainder
    subs, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_s"))
    used = exprs
    body = unpack([w.name for w in law.prims], "W", used)
    for a, row in enumerate(law.grads):
        body += unpack([g.name for g in row], f"WX[{a}]", used)
    body += params_lines(law.params, used) + coords_line(law.coords, used, law.t)
    body += "".join(f"    {safe(s.name)} = {npcode(e)}\n" for s, e in subs)
    # "+ _zero" broadcasts only the entries that are not already [B, N...] arrays (a constant, 0,
    # a function of x alone)
    arrays = set(law.prims) | {g for row in law.grads for g in row}
    for sym, e in subs:
        if e.free_symbols & arrays:
            arrays.add(sym)
    full = [any(s in arrays for s in e.free_symbols) for e in reduced]
    if not all(full):
        body += "    _zero = np.zeros_like(W[0])\n"
    ret = ", ".join(npcode(e) if f else f"({npcode(e)}) + _zero" for e, f in zip(reduced, full))
    return ("def remainder(W, WX, X, t, prm):\n    \"\"\"dt w minus its constant diagonal linear"
            " part, in primitive variables (derived\n    with SymPy from the conservation law);"
            " WX[axis][j] = d w_j / d axis.\"\"\"\n" + body + f"    return [{ret}]\n\n\n")
