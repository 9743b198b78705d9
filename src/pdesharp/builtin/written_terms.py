"""The analysis of terms kept as written (:attr:`BalanceLaw.extra`): what kind of PDE they make,
how they read, and how small an explicit step they force.

The families that take them treat their linear constant-coefficient part exactly or implicitly
and the rest explicitly (:mod:`.families.jet_form`); a dissipative even-order derivative with a
variable coefficient (``u**2*dx(u, 2)``) is stabilised: its largest coefficient sigma is also
integrated exactly, and taken out of the rest. The rest's rate at wavenumber k is
``r(k) = sum_jets max|dN/d(jet)| |k|^order``; a mode whose r(k) is at most the linear part's
damping ``|Re L(k)|`` is held by it (ETDRK4 is stable then: Cahn-Hilliard's 3u^2 k^2 beside
eps^2 k^4), the others bound the step: ``dt <= 1 / max r(k)`` over them, on the data grid's
wavenumbers. A term that
makes this step absurdly small (``u*dx(u, 3)``: a nonlinear third derivative nothing implicit
holds) is refused by name rather than accepted and never finished.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.jets import almost_everywhere
from pdesharp.builtin.refusal import UnsupportedTask

# more explicit steps than this over the time span (at the data's grid) is no solver a user
# waits for: about an hour of pseudo-spectral steps on a 1D grid of 1024 points
STEP_LIMIT = 2e6


def pde_type(law: BalanceLaw) -> str | None:
    """"parabolic" when the highest-order term kept as written is dissipative (a fourth-order
    gradient flow), "dispersive" for an odd highest order, None to leave the type to the
    flux-form reading."""
    from pdesharp.builtin.families.jet_form import jet_split

    split = jet_split(law) if law.has_extra else None
    if split is None:
        return None
    top = max((sum(o) for o, _ in split.terms), default=0)
    top = max(top, law.jets.order(split.rest))
    if top % 2:
        return "dispersive"
    sign = [m[i, i] * (-1) ** (top // 2 + 1) for o, m in split.terms if sum(o) == top
            for i in range(m.rows)]
    if top >= 2 and sign and all(sp.sympify(s).is_number and float(s) > 0 for s in sign):
        return "parabolic"
    return None


def describe(law: BalanceLaw) -> str:
    """One sentence on the terms kept as written and the Sobolev-type time derivative."""
    out = ""
    if law.has_extra:
        terms = [sp.sstr(e) for e in law.extra]
        out += (f" Terms kept as written (not a flux, a viscous flux or a local source; u_x,"
                f" u_xx... are derivatives, evaluated pointwise): {terms}.")
    if law.has_mass:
        rows = [" + ".join(f"{sp.sstr(c)}*d^{o}({law.names[j]})" for c, j, o in row) or "0"
                for row in law.mass]
        out += f" Time derivative of a differential operator (Sobolev-type): dt(q + {rows})."
    return out



def _real_symbol(terms, i: int, direction, values: dict, k: np.ndarray) -> np.ndarray:
    """Re of equation i's diagonal Fourier symbol along ``direction`` at wavenumbers ``k``:
    sum of Re(c (ik)^p) over the constant-coefficient terms c d^p that act along it."""
    out = np.zeros_like(k)
    for orders, m in terms:
        if any(o and not d for o, d in zip(orders, direction)):
            continue
        p = sum(orders)
        out += float(sp.re(sp.sympify(m[i, i]).subs(values) * sp.I ** p)) * k**p
    return out

def explicit_step(law: BalanceLaw, values: dict, h: list[float], pts: dict) -> tuple[float, str]:
    """(dt, term): the step the explicit remainder allows on the data grid (the rule above,
    its coefficients at the sampled states with zero derivatives) and the term that sets it."""
    from pdesharp.builtin.families.jet_form import jet_split
    from pdesharp.equation import array_function

    from pdesharp.builtin.families.jet_form import stabilisable

    split = jet_split(law)
    if split is None or not split.jets:
        return math.inf, ""
    stab = {m: (i, p) for i, m, p, _ in stabilisable(split)}
    args = list(pts)
    zero = {s: sp.Integer(0) for s in law.jets.table if any(law.jets.of(s)[1])}
    rates, sigma = [], {}  # sigma: the stabilising coefficient per (equation, axis, order)
    npts = len(next(iter(pts.values())))
    for m, (j, orders, s) in enumerate(split.jets):
        best = 0.0
        for i, e in enumerate(split.rest):
            d = almost_everywhere(sp.diff(e, s)).xreplace(zero).subs(values)
            fn = array_function(args, d.xreplace({sp.zoo: sp.oo}))
            with np.errstate(all="ignore"):
                v = np.real(np.asarray(fn(*[pts[a] for a in args]), dtype=complex)) * np.ones(npts)
            v = v[np.isfinite(v)]
            if not v.size:
                continue
            if m in stab and stab[m][0] == i:  # stabilised: |d - sigma| left, sigma in L
                p = stab[m][1]
                dis = v * (-1.0) ** (p // 2 + 1)
                sig = 1.1 * max(float(np.max(dis)), 0.0)
                a = next(b for b, o in enumerate(orders) if o)
                sigma[(i, a, p)] = sig
                v = dis - sig
            best = max(best, float(np.max(np.abs(v))))
        rates.append((best, orders, s))
    dim = law.dim
    worst, which = 0.0, ""
    for direction in [tuple(int(b == a) for b in range(dim)) for a in range(dim)] + [(1,) * dim]:
        kmax = min(math.pi / h[a] for a in range(dim) if direction[a])
        k = np.linspace(0.0, kmax, 512)
        damp = np.full(k.shape, np.inf)
        size = np.zeros_like(k)  # max over the equations of 1/|mass symbol|
        for i in range(law.nvar):
            re = _real_symbol(split.terms, i, direction, values, k)
            mass = np.abs(1.0 + _real_symbol(split.mass, i, direction, values, k))
            for (ii, a, p), sig in sigma.items():
                if ii == i and direction[a]:
                    re -= sig * k**p
            damp = np.minimum(damp, np.maximum(-re, 0.0) / np.maximum(mass, 1e-300))
            size = np.maximum(size, 1.0 / np.maximum(mass, 1e-300))
        r = np.zeros_like(k)
        parts = []
        for rate, orders, s in rates:
            if any(o and not d for o, d in zip(orders, direction)):
                continue
            part = rate * k ** sum(orders) * size
            parts.append((part, s))
            r += part
        loose = r > (1.0 + 1e-3) * damp
        if np.any(loose) and float(np.max(r[loose])) > worst:
            idx = int(np.argmax(np.where(loose, r, -1.0)))
            worst = float(r[idx])
            which = max(parts, key=lambda ps: ps[0][idx])[1].name if parts else ""
    return (1.0 / worst if worst > 0 else math.inf), which


def refuse_if_too_stiff(law: BalanceLaw, task, dt: float, jet: str) -> None:
    """UnsupportedTask naming the term whose explicit step makes the run too long."""
    span = task.time_span[1] - task.time_span[0]
    steps = span / dt if dt > 0 else math.inf
    if steps <= STEP_LIMIT:
        return
    s = sp.Symbol(jet, real=True)
    i, e = next(((i, e) for i, e in enumerate(law.extra) if s in e.free_symbols), (0, s))
    term = law.jets.notation(sum(t for t in sp.Add.make_args(sp.expand(e)) if t.has(s)))
    deriv = law.jets.notation(s)
    raise UnsupportedTask(
        f"the term {term} in dt({law.names[i]}) as it stands: the derivative {deriv} enters"
        f" nonlinearly (or with a variable coefficient) and nothing implicit holds it, so the"
        f" explicit step is {dt:.1e} on the output grid, {steps:.1e} steps to"
        f" t = {task.time_span[1]:g}", hint="llm")
