"""From a symbolic balance law to NumPy source: fluxes, wave speeds, viscous fluxes, sources,
boundary data and the exact local source step.

Everything is derived from the equation with SymPy; nothing depends on which task it is. The
emitted functions take the primitive state ``W`` (a sequence of arrays, unknown order), the
coordinates ``X`` (a tuple of arrays broadcastable against ``W[0]``), the time ``t`` and a dict
``prm`` of parameter values, and return lists of arrays shaped like ``W[0]``.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass

import sympy as sp
from sympy.printing.numpy import SciPyPrinter

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.jets import almost_everywhere as ae
from pdesharp.builtin.refusal import UnsupportedTask
from pdesharp.builtin.source_step import exact_source_step, freeze_space, hoisted
from pdesharp.clock import time_limit

# names the generated code uses for itself: symbols with these names are renamed (name + "_")
RESERVED = {"np", "W", "U", "X", "G", "T", "prm", "axis", "fields", "lam", "A", "out", "math",
            "scipy"} | set(keyword.kwlist) | set(dir(__builtins__))


class _Printer(SciPyPrinter):
    """NumPy printer that writes ``np.`` for ``numpy.``, special functions (erf, gamma, Bessel
    functions...) as ``scipy.special`` ufuncs (SymPy's NumPy printer writes ``math.erf``, which
    takes no arrays), and Min/Max as nested ``np.minimum``/``np.maximum`` (elementwise, no
    ``functools``; Numba compiles them too). The solver imports ``scipy.special`` only when its
    code names it (:func:`pdesharp.builtin.author.render`)."""

    def __init__(self):
        super().__init__({"fully_qualified_modules": True})

    def _module_format(self, fqn, register=True):
        return super()._module_format(fqn, register).replace("numpy.", "np.")

    # SciPy's printer takes these from scipy.constants, which the solvers do not import
    def _print_Pi(self, expr):
        return "np.pi"

    def _print_GoldenRatio(self, expr):
        return repr(float(expr))

    def _nested(self, fn, args):
        out = self._print(args[0])
        for a in args[1:]:
            out = f"{fn}({out}, {self._print(a)})"
        return out

    def _print_Max(self, expr):
        return self._nested("np.maximum", expr.args)

    def _print_Min(self, expr):
        return self._nested("np.minimum", expr.args)

    products = False  # u**3, u**4 as products (NumPy's u**3 calls pow: 30x u*u*u on 1e5 points)

    def _print_Pow(self, expr, rational=False):
        n = expr.exp
        if self.products and n.is_Integer and 3 <= n <= 4:
            base = self.parenthesize(expr.base, 100)  # any base but a symbol in parentheses
            return "(" + "*".join([base] * int(n)) + ")"
        return super()._print_Pow(expr, rational=rational)


def unprintable(expr) -> str | None:
    """The first function in ``expr`` the generated code cannot evaluate (no NumPy or SciPy
    equivalent), in the task's notation; None when every one prints."""
    from sympy.core.function import AppliedUndef
    from sympy.printing.codeprinter import PrintMethodNotImplementedError

    expr = sp.sympify(expr)
    # the unknowns, coefficient fields and their derivatives are the solver's own arrays
    plain = {d: sp.Symbol(f"_d{k}", real=True)
             for k, d in enumerate(sorted(expr.atoms(sp.Derivative), key=str))}
    expr = expr.xreplace(plain)
    plain = {f: sp.Symbol(f"_f{k}", real=True)
             for k, f in enumerate(sorted(expr.atoms(AppliedUndef), key=str))}
    expr = expr.xreplace(plain)
    for f in sorted(expr.atoms(sp.Function), key=str):
        try:  # each function with its own arguments (Piecewise's are (value, condition) pairs)
            _Printer().doprint(f)
        except PrintMethodNotImplementedError:
            return str(f.func)
    return None


def safe(name: str) -> str:
    return name + "_" if name in RESERVED else name


def npcode(expr, products: bool = False) -> str:
    """NumPy source of ``expr`` with reserved symbol names renamed (``products``: small integer
    powers written as products, for code that runs on arrays many times)."""
    expr = sp.sympify(expr)
    ren = {s: sp.Symbol(safe(s.name), real=True) for s in expr.free_symbols if safe(s.name) != s.name}
    printer = _Printer()
    printer.products = products
    return printer.doprint(expr.xreplace(ren) if ren else expr)


@dataclass
class LawFacts:
    """Derived symbolic facts of a balance law (used by the analysis and by code generation)."""

    to_prim: list[sp.Expr]  # prims in terms of conserved symbols U0..
    cons_symbols: list[sp.Symbol]
    dwdq: sp.Matrix  # dw/dq in prims
    eigenvalues: list[list[sp.Expr] | None]  # per axis, of dF_a/dU (None: no closed form)
    jacobian: list[sp.Matrix]  # per axis, dF_a/dU in prims
    diffusivity: list[list[sp.Expr] | None]  # per axis, eigenvalues of dV_a/dU_a
    diffusion_matrix: list[sp.Matrix]
    source_jacobian: sp.Matrix  # dS/dU in prims
    ode_solution: sp.Expr | None  # scalar: exact solution of dq/dt = S(q, x) at tau from q0
    tau: sp.Symbol
    q0: sp.Symbol
    implicit: list[int]  # unknowns whose gradients the viscous fluxes use (1D)
    # the exact step as the solvers compute it (source_step.hoisted): parts free of q0 bound
    # once a call, then the expression in q0
    ode_steps: tuple[list[tuple[sp.Symbol, sp.Expr]], sp.Expr] | None = None


_FACTS_CACHE: dict[str, LawFacts] = {}


def law_facts(law: BalanceLaw) -> LawFacts:
    """Derived facts, cached by the law's printed form (SymPy eigenvalues can take seconds), and
    on the law itself (the printed form costs ~5 ms, and a run asks hundreds of times)."""
    return law.derive("law_facts", _cached_law_facts)


def _cached_law_facts(law: BalanceLaw) -> LawFacts:
    key = repr((law.prims, law.q, law.flux, law.viscous, law.source, law.params, law.coords))
    if key not in _FACTS_CACHE:
        _FACTS_CACHE[key] = _law_facts(law)
    return _FACTS_CACHE[key]


def _eigen(mat: sp.Matrix, n: int):
    try:
        ev = mat.eigenvals(simplify=True) if n <= 3 else None
        eig = [sp.simplify(e) for e in ev] if ev else None
        if eig is not None and any(e.has(sp.I) or e.has(sp.CRootOf) for e in eig):
            return None
        return eig
    except Exception:  # SymPy can fail on awkward Jacobians: numerical eigenvalues instead
        return None


def _law_facts(law: BalanceLaw) -> LawFacts:
    U = [sp.Symbol(f"U{i}", real=True) for i in range(law.nvar)]
    dqdw = sp.Matrix(law.q).jacobian(law.prims)
    dwdq = sp.simplify(dqdw.inv())
    if law.conservative_is_primitive:
        to_prim = list(U)
    else:
        sols = sp.solve([Ui - q for Ui, q in zip(U, law.q)], law.prims, dict=True)
        if not sols:
            raise UnsupportedTask("conserved quantities that SymPy cannot invert for the unknowns",
                                  hint="write dt(...) of the unknowns themselves")
        to_prim = [sp.simplify(sols[0][w]) for w in law.prims]
    jac, eig, dmat, dif = [], [], [], []
    for a in range(law.dim):
        j = sp.simplify(ae(sp.Matrix(law.flux[a]).jacobian(law.prims)) * dwdq)
        jac.append(j)
        eig.append(_eigen(j, law.nvar))
        d = sp.simplify(ae(sp.Matrix(law.viscous[a]).jacobian(law.grads[a])) * dwdq)
        dmat.append(d)
        dif.append(_eigen(d, law.nvar) if any(e != 0 for e in d) else None)
    sjac = sp.simplify(ae(sp.Matrix(law.source).jacobian(law.prims)) * dwdq)
    tau, q0 = sp.Symbol("_tau", positive=True), sp.Symbol("_q0", real=True)
    ode = steps = None
    if law.nvar == 1 and law.has_source and law.conservative_is_primitive \
            and not law.source[0].has(law.t):
        frozen, back = freeze_space(sp.factor(law.source[0]), law.prims[0], law.coords)
        scale, shape = frozen.as_independent(law.prims[0], as_Add=False)
        if scale != 1:  # dsolve is fast on k*u*(1 - u), slow on -c*r*u*(u - 1)/2
            k = sp.Symbol("_k", real=True)
            probe = scale.subs({v: 1.0 for v in scale.free_symbols})
            if probe.is_number and float(probe) < 0:  # keep k positive at typical values
                scale, shape = -scale, -shape
            back[k], frozen = scale, k * shape
        with time_limit(5.0):  # dsolve can take minutes on awkward sources: then no exact step
            ode = exact_source_step(frozen, law.prims[0], tau, q0, list(law.params) + list(back))
        if ode is not None:
            ode = ode.xreplace(back).xreplace(back)  # _k may stand for an expression in _c0
            with time_limit(2.0):  # (a hostile source's expansion: then the plain form)
                steps = hoisted(ode, q0, tau)
    implicit = sorted({j for row in law.viscous[:1] for v in row for j, g in enumerate(law.grads[0])
                       if v.has(g)}) if law.dim == 1 else []
    return LawFacts(to_prim=to_prim, cons_symbols=U, dwdq=dwdq, eigenvalues=eig, jacobian=jac,
                    diffusivity=dif, diffusion_matrix=dmat, source_jacobian=sjac, ode_solution=ode,
                    tau=tau, q0=q0, implicit=implicit, ode_steps=steps)


# ---- emission helpers -------------------------------------------------------------------------
def unpack(names: list[str], var: str, exprs=None, indent: str = "    ") -> str:
    """``a, b = W`` for the names ``exprs`` use (``_`` for the others; nothing if none is)."""
    if exprs is not None:
        used = {s.name for e in exprs for s in sp.sympify(e).free_symbols}
        names = [n if n in used else "_" for n in names]
        if all(n == "_" for n in names):
            return ""
    names = [safe(n) if n != "_" else n for n in names]
    if len(names) == 1:
        return f"{indent}{names[0]} = {var}[0]\n"
    return f"{indent}{', '.join(names)} = {var}\n"


def params_lines(params, exprs=None, indent: str = "    ") -> str:
    """``name = prm['name']`` for the parameters ``exprs`` use (all of them if not given)."""
    if exprs is not None:
        used = set().union(*[sp.sympify(e).free_symbols for e in exprs]) if exprs else set()
        params = [p for p in params if p in used]
    return "".join(f"{indent}{safe(p.name)} = prm[{p.name!r}]\n" for p in params)


def coords_line(law_coords, exprs, time=None, indent: str = "    ") -> str:
    """Unpack X when an expression uses a coordinate (and name the time ``t`` argument after the
    task's time variable when that is not ``t``)."""
    used = set().union(*[sp.sympify(e).free_symbols for e in exprs]) if exprs else set()
    out = ""
    if time is not None and time in used and time.name != "t":
        out += f"{indent}{safe(time.name)} = t\n"
    if any(c in used for c in law_coords):
        names = [safe(c.name) for c in law_coords]
        out += f"{indent}{', '.join(names)}{',' if len(names) == 1 else ''} = X\n"
    return out


def needs_zero(e, arrays) -> bool:
    """Whether an entry needs ``+ _zero`` (:func:`ret`): one that computes on one of ``arrays``
    (symbols bound to whole [B, N...] arrays: the unknowns, their gradients) is a new array of
    their shape already; a bare symbol must not come back as the caller's own array, and a
    constant or a function of x alone is no such array."""
    e = sp.sympify(e)
    return e.is_Symbol or not (e.free_symbols & set(arrays))


def ret(exprs, arrays=()) -> str:
    """``return [...]`` with every entry broadcast to the shape of the unknowns where it needs
    it (:func:`needs_zero`: ``+ _zero`` on the others would be one more pass, 1.8 us of a 15 us
    stage on 1D Kuramoto-Sivashinsky); cubes and fourth powers as products (these functions run
    on whole arrays every stage: NumPy's u**3 is a general power, ~50x u*u*u on [8, 48, 48];
    Allen-Cahn's wall-spectral winner 1.5x faster)."""
    return "    return [" + ", ".join(
        f"({npcode(e, products=True)})" + (" + _zero" if needs_zero(e, arrays) else "")
        for e in exprs) + "]\n"


def zero_line(exprs, arrays, var: str = "W") -> str:
    """The ``_zero`` that ``+ _zero`` adds (:func:`ret`): none where no entry needs it; zeros
    shaped like ``var[0]`` where an entry may be no [B, N...] array (a constant, a function of
    x alone); else (bare unknowns) a float64 zero, which still gives a new array without
    allocating the zeros first (the flux and the source run at every stage: on 1D
    Kuramoto-Sivashinsky, 320 points, the zeros were 8% of a step)."""
    need = [e for e in exprs if needs_zero(e, arrays)]
    if not need:
        return ""
    if all(sp.sympify(e).free_symbols & set(arrays) for e in need):
        return "    _zero = np.float64(0.0)  # every such entry is an array of the unknowns\n"
    return f"    _zero = np.zeros_like(np.asarray({var}[0], dtype=np.float64))\n"


def _fn(head: str, doc: str, law: BalanceLaw, exprs, body_unpack: str, returns: str) -> str:
    return (f"def {head}:\n    \"\"\"{doc}\"\"\"\n" + body_unpack + params_lines(law.params, exprs)
            + coords_line(law.coords, exprs, law.t) + returns + "\n\n")


def physics_source(law: BalanceLaw, facts: LawFacts, *, implicit: bool = False) -> str:
    """NumPy source of the physics functions the time-dependent families use."""
    prims = [w.name for w in law.prims]
    cons = [u.name for u in facts.cons_symbols]
    out = ["# ---- physics, generated from the equation with SymPy ----\n",
           f"NVAR = {law.nvar}\nUNKNOWNS = {prims!r}\n\n"]
    z = "    _zero = np.zeros_like(np.asarray(W[0], dtype=np.float64))\n"
    zu = "    _zero = np.zeros_like(np.asarray(U[0], dtype=np.float64))\n"
    out.append(_fn("to_conservative(W, prm)", "Conserved quantities from the unknowns.", law,
                   law.q, unpack(prims, "W", law.q) + z, ret(law.q)))
    out.append(_fn("to_primitive(U, prm)", "The unknowns from the conserved quantities.", law,
                   facts.to_prim, unpack(cons, "U", facts.to_prim) + zu, ret(facts.to_prim)))
    if law.has_flux:
        flux = [e for r in law.flux for e in r]
        out.append(_by_axis("flux(W, X, t, prm, axis)", "Inviscid flux F_axis(W).", law,
                            law.flux, unpack(prims, "W", flux) + zero_line(flux, law.prims),
                            arrays=law.prims))
        out.append(_wave_speeds(law, facts, prims))
    if law.has_viscous:
        grads = [[g.name for g in row] for row in law.grads]
        visc = [e for r in law.viscous for e in r]
        arrays = list(law.prims) + [g for row in law.grads for g in row]
        body = unpack(prims, "W", visc) + zero_line(visc, arrays)
        out.append(_by_axis("viscous_flux(W, G, X, t, prm, axis)",
                            "Viscous flux V_axis(W, G), G the gradients of W along the axis.",
                            law, law.viscous, body, grads=grads, arrays=arrays))
        out.append(_diffusivity(law, facts, prims))
        if implicit and law.dim == 1:
            out.append(_implicit_parts(law, facts, prims))
    if law.has_source:
        out.append(_fn("source(W, X, t, prm)", "Local source S(W, x, t).", law, law.source,
                       unpack(prims, "W", law.source) + zero_line(law.source, law.prims),
                       ret(law.source, law.prims)))
    if facts.ode_solution is not None:
        binds, e = facts.ode_steps or ([], facts.ode_solution)
        exprs = [e] + [v for _, v in binds]
        out.append("def source_exact(_q0, _tau, X, prm):\n    \"\"\"Exact solution of the local source"
                   " ODE dq/dt = S(q) after time tau.\"\"\"\n" + params_lines(law.params, exprs)
                   + coords_line(law.coords, exprs, law.t)
                   + "".join(f"    {n} = {npcode(v)}\n" for n, v in binds)
                   + f"    return {npcode(e, products=True)}\n\n\n")
    if not law.periodic:
        out.append(boundary_source(law))
    absent = {"flux": not law.has_flux, "wave_speeds": not law.has_flux,
              "viscous_flux": not law.has_viscous, "diffusivity": not law.has_viscous,
              "source": not law.has_source, "source_exact": facts.ode_solution is None,
              "boundary_conditions": law.periodic}
    for name in (n for n, missing in absent.items() if missing):
        out.append(f"def {name}(*args):  # the equation has none: never called\n"
                   "    raise NotImplementedError\n\n\n")
    return "".join(out)


def _by_axis(head, doc, law, table, body, grads=None, arrays=()) -> str:
    text = (f"def {head}:\n    \"\"\"{doc}\"\"\"\n" + body
            + params_lines(law.params, [e for row in table for e in row]))
    for a in range(law.dim):
        exprs = table[a]
        cond = "if" if a == 0 else "elif"
        block = ""
        if grads is not None:
            block += unpack(grads[a], "G", exprs, "        ")
        block += coords_line(law.coords, exprs, law.t, "        ")
        block += "    " + ret(exprs, arrays)
        text += (f"    {cond} axis == {a}:\n" + block) if law.dim > 1 else block.replace(
            "        ", "    ")
    if law.dim > 1:
        text += "    raise ValueError(axis)\n"
    return text + "\n\n"


def _axis_function(head: str, doc: str, law, prims, body, exprs) -> str:
    """A function of (W, X, t, prm, axis) whose per-axis part ``body(a, pad)`` is dispatched on
    ``axis`` (no dispatch in 1D); ``exprs`` are the expressions it evaluates."""
    text = (f"def {head}:\n    \"\"\"{doc}\"\"\"\n" + unpack(prims, "W", exprs)
            + "    _zero = np.zeros_like(np.asarray(W[0], dtype=np.float64))\n"
            + params_lines(law.params, exprs))
    for a in range(law.dim):
        pad = "        " if law.dim > 1 else "    "
        if law.dim > 1:
            text += f"    {'if' if a == 0 else 'elif'} axis == {a}:\n"
        text += body(a, pad)
    if law.dim > 1:
        text += "    raise ValueError(axis)\n"
    return text + "\n\n"


def _wave_speeds(law, facts: LawFacts, prims) -> str:
    def body(a, pad):
        if facts.eigenvalues[a] is not None:
            ev = facts.eigenvalues[a]
            text = coords_line(law.coords, ev, law.t, pad)
            text += pad + "lam = np.array([" + ", ".join(f"({npcode(e)}) + _zero" for e in ev) + "])\n"
        else:  # no closed form: eigenvalues of the Jacobian, numerically at every point
            j = facts.jacobian[a]
            text = coords_line(law.coords, list(j), law.t, pad)
            rows = ", ".join("[" + ", ".join(f"({npcode(j[r, c])}) + _zero" for c in range(law.nvar))
                             + "]" for r in range(law.nvar))
            text += (pad + f"A = np.moveaxis(np.array([{rows}], dtype=float), (0, 1), (-2, -1))\n"
                     + pad + "lam = np.moveaxis(np.real(np.linalg.eigvals(A)), -1, 0)\n")
        return text + pad + "return lam.min(axis=0), lam.max(axis=0)\n"

    exprs = [e for a in range(law.dim) for e in (facts.eigenvalues[a] or list(facts.jacobian[a]))]
    return _axis_function("wave_speeds(W, X, t, prm, axis)",
                          "Smallest and largest eigenvalue of dF_axis/dU.", law, prims, body, exprs)


def _diffusivity(law, facts: LawFacts, prims) -> str:
    def body(a, pad):
        dif = facts.diffusivity[a] or [sp.Abs(e) for e in facts.diffusion_matrix[a]]
        return (coords_line(law.coords, dif, law.t, pad) + pad + "return np.max(np.abs(np.array(["
                + ", ".join(f"({npcode(e)}) + _zero" for e in dif) + "])), axis=0)\n")

    exprs = [e for a in range(law.dim)
             for e in (facts.diffusivity[a] or list(facts.diffusion_matrix[a]))]
    return _axis_function("diffusivity(W, X, t, prm, axis)",
                          "Largest |eigenvalue| of dV_axis/dU_x at every point.", law, prims, body,
                          exprs)


def _implicit_parts(law: BalanceLaw, facts: LawFacts, prims) -> str:
    """dV/d(w_j,x) and dw_g/dU for the unknowns whose gradients the viscous fluxes use (1D)."""
    imp = facts.implicit
    B = [[sp.diff(v, law.grads[0][j]) for j in imp] for v in law.viscous[0]]
    J = [[facts.dwdq[g, i] for i in range(law.nvar)] for g in imp]
    flat_b = [e for row in B for e in row]
    z = "    _zero = np.zeros_like(np.asarray(W[0], dtype=np.float64))\n"
    text = (f"IMPLICIT = {imp!r}  # unknowns whose gradients the viscous fluxes use\n\n\n"
            "def viscous_matrix(W, X, t, prm):\n    \"\"\"B[i][k] = dV_i/d(w_IMPLICIT[k],x): the"
            " viscous flux is linear in these gradients.\"\"\"\n" + unpack(prims, "W", flat_b) + z
            + params_lines(law.params, flat_b) + coords_line(law.coords, flat_b, law.t)
            + "    return [" + ", ".join("[" + ", ".join(f"({npcode(e)}) + _zero" for e in row) + "]"
                                        for row in B) + "]\n\n\n")
    text += ("def primitive_jacobian(W, prm):\n    \"\"\"J[k][i] = d w_IMPLICIT[k] / d U_i.\"\"\"\n"
             + unpack(prims, "W", [e for row in J for e in row]) + z
             + params_lines(law.params, [e for row in J for e in row])
             + "    return [" + ", ".join("[" + ", ".join(f"({npcode(e)}) + _zero" for e in row) + "]"
                                          for row in J) + "]\n\n\n")
    return text


def boundary_source(law: BalanceLaw) -> str:
    """``boundary_conditions(t, prm, axis=0, S=None)``: per unknown, (a, b, g) of
    a*w + b*dw/d(axis) = g at the low and the high end of ``axis`` (None where no condition is
    given: outflow, zero gradient). In 2D, ``g`` may vary along the side: ``S`` is the other
    axis' coordinate array there (g broadcasts against it)."""
    body = ""
    for a, coord in enumerate(law.coords):
        axis = coord.name
        others = [c for c in law.coords if c != coord]
        conds = [c for c in law.boundary.conditions if c.axis == axis]
        rows = []
        for n in law.names:
            sides = []
            for s_ in (0, 1):
                c = law.boundary.condition(n, axis, s_)
                if c is None:
                    sides.append("None")
                else:
                    sides.append(f"({float(c.a) if c.a.is_number else npcode(c.a)},"
                                 f" {float(c.b) if c.b.is_number else npcode(c.b)}, {npcode(c.g)})")
            rows.append("[" + ", ".join(sides) + "]")
        pad = "        " if law.dim > 1 else "    "
        block = params_lines(law.params, [e for c in conds for e in (c.a, c.b, c.g)], pad)
        used = set().union(*[c.g.free_symbols for c in conds]) if conds else set()
        if law.t in used and law.t.name != "t":
            block += f"{pad}{safe(law.t.name)} = t\n"
        if others and any(o in used for o in others):
            block += f"{pad}{safe(others[0].name)} = S\n"
        block += f"{pad}return [" + ", ".join(rows) + "]\n"
        body += (f"    {'if' if a == 0 else 'elif'} axis == {a}:\n" + block) if law.dim > 1 else block
    if law.dim > 1:
        body += "    raise ValueError(axis)\n"
    return ("def boundary_conditions(t, prm, axis=0, S=None):\n    \"\"\"Per unknown, (a, b, g) of"
            " a*w + b*dw/d(axis) = g at the low and the high end of the axis; None: outflow"
            " (zero gradient). S: the coordinate along the side (2D).\"\"\"\n" + body + "\n\n")
