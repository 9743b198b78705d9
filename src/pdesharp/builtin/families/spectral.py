"""Fourier pseudo-spectral method with an exponential integrator (periodic boxes, 1D or 2D).

``dt w = L w + N(w, x, t)``: the linear, constant-coefficient, diagonal part L (advection,
diffusion, dispersion dx(u, 3), hyper-diffusion dx(u, 4), linear reaction) is integrated exactly
by ETDRK4 (Cox-Matthews, coefficients by the Kassam-Trefethen contour integral) or by the
integrating-factor RK4; the rest (nonlinear fluxes, sources, x- and t-dependent terms) is
evaluated in physical space on the dealiased field, the stages on the kept modes alone. The
dealiasing rule is a design axis (DEALIAS) where the explicit terms are cubic: Orszag's 2/3 rule
or the 1/2 rule, which removes a cubic term's aliasing but keeps fewer modes (see
:meth:`SpectralFamily.dealias`); the tournament measures which pays, per problem. This is
the family for smooth solutions and for the higher-order terms (KdV, Kuramoto-Sivashinsky) no
finite-volume scheme here treats.

Laws whose conserved quantities are not the unknowns (compressible Navier-Stokes in rho, v, p)
are integrated in their primitive-variable form (:mod:`pdesharp.builtin.primitive_form`): the
constant diagonal viscous part (mu dx^2 v) is exact, the rest explicit with spectral derivatives.
Only where the solution is smooth: the cell Peclet number is below 2, else shocks form and the
finite-volume families take the problem.

The internal grid is a design axis: REFINE x the data grid, finer (2, 4...) or coarser (1/4, 3/8,
1/2) where the viscous length spans several coarse cells (internal cell Peclet number <= 0.35,
:meth:`SpectralFamily.coarse_ratio`); the data's high modes are restored by zero padding at
output. With a viscous length of many data cells the solution has next to no content in the
data's top modes, so the coarse grid loses no accuracy the data can show (CNS: 256 points for
1024, 2.3e-4 from the converged solution against the data's own 5.0e-3), and both the step
(~ h / |lambda|) and the transforms shrink with it.

Stability rule: dt <= CFL / sum_a(max|lambda_a| / h_a) for the nonlinear flux and CFL / max|dN/dw|
for the source. Steps per output interval: a power of two (the exponentials computed once) wastes
up to 2x; CNS on 384 points takes 3200 steps so, 1704 with ceil(span / dt) per interval. A fresh
count per interval means a fresh coefficient set, cheap in 1D (3 x 193 modes) but seconds in 2D
(ETDRK4 on 3 x 512 x 257 modes: 4.6 s). So: the exact count below 2^16 modes, else the smallest
count with three significant binary digits (16, 20, 24, 28, 32, 40...): at most 1.25x the steps
needed (CNS: 2000), at most four step sizes per octave of wave speed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.common import (
    EVOLVE,
    FOURIER,
    GRID,
    exponential_moves,
    fixed_axes,
    grid_ratio,
    problem_constants,
    smallest_dealiased_grid,
)
from pdesharp.builtin.families.exact import linear_system
from pdesharp.builtin.families.spectral_blocks import (
    CONSERVATIVE_RHS,
    INTEGRATOR_BLOCK,
    PRIMITIVE_RHS,
)
from pdesharp.builtin.families.spectral_transforms import GRID_TRANSFER, TRANSFORMS
from pdesharp.builtin.physics import coords_line, npcode, params_lines, physics_source, unpack
from pdesharp.builtin.primitive_form import PrimitiveForm, primitive_form, remainder_source


def linear_parts(law: BalanceLaw):
    """Per component: advection A[a][i], diffusion D[a][i], reaction c[i] (constants, taken at
    w = 0) and the high-order terms; None when the viscous or high-order part is not a constant
    diagonal operator (it would be stiff and explicit). Computed once per law: a run asks for
    it once per design key (SymPy's simplify, ~0.1 s on Swift-Hohenberg 2D, was 6 s of a
    16-evaluation run)."""
    return law.derive("linear_parts", _linear_parts)


def _linear_parts(law: BalanceLaw):
    if not law.flux_form:
        return None  # terms kept as written: the sine/cosine/Fourier family takes them
    zero = {w: 0 for w in law.prims} | {g: 0 for row in law.grads for g in row}
    const = lambda e: not sp.sympify(e).has(  # noqa: E731 (finite: cbrt(u)' at u = 0 is not)
        *law.prims, *law.coords, law.t, sp.zoo, sp.oo, -sp.oo, sp.nan)
    A, D = [], []
    for a in range(law.dim):
        arow, drow = [], []
        for i, w in enumerate(law.prims):
            coef = sp.simplify(sp.diff(law.flux[a][i], w).xreplace(zero))
            arow.append(coef if const(coef) else sp.Integer(0))
            v = law.viscous[a][i]
            d = sp.simplify(sp.diff(v, law.grads[a][i]))
            if not const(d) or sp.simplify(v - d * law.grads[a][i]) != 0:
                return None
            drow.append(d)
        A.append(arow)
        D.append(drow)
    c = []
    for i, w in enumerate(law.prims):
        coef = sp.simplify(sp.diff(law.source[i], w).xreplace(zero))
        c.append(coef if const(coef) else sp.Integer(0))
    high = []
    for i, row in enumerate(law.high):
        for coef, j, orders in row:
            if j != i:
                return None
            high.append((i, tuple(orders), coef))
    return A, D, c, high


_PRIMITIVE_CACHE: dict[str, PrimitiveForm | None] = {}


def primitive_split(law: BalanceLaw) -> PrimitiveForm | None:
    """:func:`primitive_form` of a law whose conserved quantities are not the unknowns, cached
    (SymPy takes about a second on compressible Navier-Stokes)."""
    if law.conservative_is_primitive:
        return None
    key = repr((law.prims, law.q, law.flux, law.viscous, law.source, law.params, law.coords))
    if key not in _PRIMITIVE_CACHE:
        _PRIMITIVE_CACHE[key] = primitive_form(law)
    return _PRIMITIVE_CACHE[key]


def source_remainder(law: BalanceLaw, c) -> list:
    """S_i(w) - c_i w_i per unknown (SymPy; a polynomial in the unknowns in Horner form)."""
    exprs = []
    for i, w in enumerate(law.prims):
        e = sp.sympify(law.source[i]) - c[i] * w
        if e.is_polynomial(*law.prims):
            e = sp.expand(e)
            e = sp.horner(e, *law.prims) if e.free_symbols & set(law.prims) else e
        exprs.append(e)
    return exprs


def explicit_source(law: BalanceLaw, exprs: list) -> str:
    """``explicit_source(W, X, t, prm)``: S_i(w) - c_i w_i, the part of the source the stages
    evaluate (c_i w_i is in the exact linear factor). A polynomial in the unknowns is written in
    Horner form with small powers as products: the fewest passes over the arrays (Swift-Hohenberg's
    u (-u^2 + u - 0.3) + 0.3 u is u**2*(1 - u): 3 passes for 9), and never the general power
    NumPy calls for u**3. ``+ _zero`` only where an entry is not already an array of W's shape.
    ``exprs``: :func:`source_remainder`'s."""
    full = [bool(sp.sympify(e).free_symbols & set(law.prims)) for e in exprs]
    body = (unpack([w.name for w in law.prims], "W", exprs) + params_lines(law.params, exprs)
            + coords_line(law.coords, exprs, law.t))
    if not all(full):
        body += "    _zero = np.zeros_like(np.asarray(W[0], dtype=np.float64))\n"
    ret = ", ".join(npcode(e, products=True) if f else f"({npcode(e)}) + _zero"
                    for e, f in zip(exprs, full))
    return ("def explicit_source(W, X, t, prm):\n    \"\"\"The source minus its linear part c w"
            " (integrated exactly): what the stages\n    evaluate.\"\"\"\n" + body
            + f"    return [{ret}]\n\n\n")


def dealias_rule(law: BalanceLaw) -> int:
    """Keep |m| < n / rule: products of p kept modes alias only onto dropped ones when rule >=
    p + 1, p the degree of the explicit terms in the unknowns: 3 (Orszag's 2/3 rule) for
    quadratic ones and for non-polynomial ones (no rule is exact for those), 4 (the 1/2 rule,
    exponax's for cubic terms) for cubic ones; not beyond 4. Where it is 4, the family's
    DEALIAS axis offers both rules and the tournament measures which pays
    (:meth:`SpectralFamily.dealias`; under the 1/2 rule the stages run on 0.25 of the 2D
    half-spectrum instead of 0.44). Computed once per law, like :func:`linear_parts`."""
    return law.derive("dealias_rule", _dealias_rule)


def _dealias_rule(law: BalanceLaw) -> int:
    if not law.conservative_is_primitive:
        return 3
    parts = linear_parts(law)
    if parts is None:
        return 3
    c = parts[2]
    terms = [sp.sympify(law.source[i]) - c[i] * w for i, w in enumerate(law.prims)] \
        if law.has_source else []
    if law.has_flux:
        terms += [sp.sympify(e) for row in law.flux for e in row]
    degree = 2
    for e in terms:
        if not e.is_polynomial(*law.prims):
            return 3
        if e.free_symbols & set(law.prims):
            degree = max(degree, sp.Poly(e, *law.prims).total_degree())
    return min(degree + 1, 4)


class GridRatio(Axis):
    """REFINE: an integer (finer) or a fraction 1/2, 3/8, 1/4 (coarser); written 1, 2, 0.375..."""

    def literal(self, value) -> str:
        return repr(int(value)) if float(value).is_integer() else repr(float(value))

    def parse(self, text: str):
        v = float(text.strip())
        return int(v) if v.is_integer() else v


# Internal grids coarser than the data's, coarsest first (3/8: 384 points for 1024, an FFT-friendly
# 3 x 2^7). Coarser than 1/4 leaves too few modes on the small grids tests and users run.
COARSE = (0.25, 0.375, 0.5)
# Largest cell Peclet number (the analysis': max|lambda| h / max D) of a coarse internal grid.
# Calibrated on CNS (eta = zeta = 0.1, data Pe 0.074; the data's own float32 error is 5.0e-3):
# error against the converged solution by internal Pe: 0.15 (1/2) 9.8e-5, 0.20 (3/8) 1.1e-4,
# 0.30 (1/4) 2.3e-4, 0.39 (3/16) 5.0e-4, 0.59 (1/8) 1.0e-3. 0.35 keeps the coarse grid's own
# error below a tenth of such data's (5.025e-3 on dev at 1/4 against 5.021e-3 on the data grid).
COARSE_PECLET = 0.35
COARSE_CFL = 0.8  # 60% of RK4's imaginary-axis limit 2.8 / (k_max h) = 1.34 on the 2/3-rule grid
# A viscous front the data grid does not resolve (cell Peclet number >= 2) is smooth all the same:
# on an internal grid whose cell Peclet number is at most this, it spans enough points for
# spectral accuracy, sampled back at the data points. APEBench's 1D Burgers (Pe 2.0 on 160
# nodes): 2.2e-3 on the data grid, 1.5e-5 on 2x (Pe 1.0), where WENO5 stops at 4.4e-3.
RESOLVED_PECLET = 1.0
MAX_RESOLVING = 8  # the finest such grid offered (x the data's)


class SpectralFamily(Family):
    name = "spectral"
    axes = (
        Axis("INTEGRATOR", "etdrk4", ("etdrk4", "if_rk4"),
             "etdrk4 (exponential time differencing) | if_rk4 (integrating factor)"),
        Axis("CFL", 0.4, (), "Courant number of the nonlinear part"),
        GridRatio("REFINE", 1, (), "internal grid = REFINE x data grid (Fourier interpolation);"
                                   " > 1 keeps every data mode under the 2/3 rule, < 1 (1/2,"
                                   " 3/8, 1/4) is coarser where viscosity empties the top modes"),
        Axis("DEALIAS", 3, (3, 4), "keep |m| < n / DEALIAS: 3 (Orszag's 2/3 rule) | 4 (the 1/2"
                                   " rule: cubic terms alias-free, fewer modes, faster stages;"
                                   " used only where 2 REFINE >= 4 keeps every data mode, else 3)"),
    )

    def applies(self, p: Problem) -> bool:
        law = p.struct
        if not (isinstance(law, BalanceLaw) and law.periodic and law.flux_form
                and (law.has_flux or law.has_source or law.has_high)
                and linear_system(law) is None):  # the exact propagator is strictly better
            return False
        if law.conservative_is_primitive:
            return linear_parts(law) is not None
        # the primitive form needs a constant diagonal viscous part, and a smooth solution
        return law.has_viscous and self.smooth(p) and primitive_split(law) is not None

    def smooth(self, p: Problem, d: Design | None = None) -> bool:
        """Will the solution stay resolved (on the data grid, or on ``d``'s internal grid)? Not
        with an inviscid nonlinear flux (shocks), nor a viscous front thinner than two cells."""
        law = p.struct
        if law.has_high or not law.has_flux or law.flux_is_linear():
            return True
        refine = d["REFINE"] if d is not None else 1
        return law.has_viscous and p.facts.get("cell_peclet", float("inf")) / refine < 2.0

    def resolving_ratio(self, p: Problem) -> int | None:
        """The coarsest internal grid (2, 4 or 8 x the data's) with a cell Peclet number at most
        RESOLVED_PECLET, where the data grid's is 2 or more (a viscous nonlinear flux whose
        fronts the data's points alone do not resolve); None otherwise."""
        law = p.struct
        pe = p.facts.get("cell_peclet", math.inf)
        if not (isinstance(law, BalanceLaw) and law.has_viscous and not law.has_high
                and law.has_flux and not law.flux_is_linear() and 2.0 <= pe < math.inf):
            return None
        r = 2
        while pe / r > RESOLVED_PECLET and r < MAX_RESOLVING:
            r *= 2
        return r if pe / r <= RESOLVED_PECLET else None

    def coarse_ratio(self, p: Problem) -> float | None:
        """The coarsest internal grid (a fraction of the data grid) that still resolves the
        solution's smallest length: the viscous length D/|lambda| (cell Peclet number Pe) and,
        with a source of rate r, the reaction-front width sqrt(D/r) (Pe_r = h sqrt(r/D)).
        max(Pe, Pe_r) / REFINE <= COARSE_PECLET: the modes a coarser grid drops are damped by
        exp(-D k^2 t) faster than the flux or the source feed them. None without viscosity,
        with high-order terms (dispersion makes fine scales) or on a rough solution."""
        law = p.struct
        if not (isinstance(law, BalanceLaw) and law.has_viscous and not law.has_high
                and self.smooth(p)):
            return None
        pe = p.facts.get("cell_peclet", float("inf"))
        dt_diff, dt_src = p.facts.get("dt_diffusive", 0.0), p.facts.get("dt_source", math.inf)
        if law.has_source:  # dt_diffusive = h^2 / (2 D), dt_source = 1 / r
            pe = max(pe, math.sqrt(2.0 * dt_diff / dt_src) if dt_src > 0 else math.inf)
        for r in COARSE:
            if pe / r <= COARSE_PECLET:
                return r
        return None

    def relevant(self, p: Problem) -> list[str]:
        # the dealiasing rule is a choice where the explicit terms are cubic; else the 2/3 rule,
        # written as a fixed constant
        return [a.name for a in self.axes if a.name != "DEALIAS" or self._cubic(p)]

    def active(self, d: Design, p: Problem) -> set[str]:
        # DEALIAS = 4 below a 2x grid computes what DEALIAS = 3 does (the 2/3 rule)
        act = set(self.relevant(p))
        return act if self.dealias(d, p) != 3 else act - {"DEALIAS"}

    @staticmethod
    def _cubic(p: Problem) -> bool:
        """Explicit terms of degree 3 (or more) in the unknowns: both rules are candidates."""
        return isinstance(p.struct, BalanceLaw) and dealias_rule(p.struct) == 4

    def candidates(self, p: Problem) -> list[Design]:
        out = [self.design(), self.design(INTEGRATOR="if_rk4"), self.design(REFINE=2)]
        if self._cubic(p) and self._kept(4, p.dim) < 1.0:
            # the 1/2 rule on the 2x grid (the smallest that keeps every data mode under it):
            # measured, not inferred. Resolved data (Swift-Hohenberg): within 2% of the 2/3
            # rule's error and ~1.4x faster; fronts narrower than a data cell
            # (Gray-Scott): 10x less accurate (1.7e-3 vs 1.7e-4), the dropped modes costing
            # more than the aliasing. Not in 1D, where it saves no time (:meth:`_kept`)
            out.append(self.design(REFINE=2, DEALIAS=4))
        fine = self.resolving_ratio(p)
        if fine is not None and fine > 2:
            out.append(self.design(REFINE=fine))
        r = self.coarse_ratio(p)
        # the coarse grid's error is spatial (CNS, 384 points: 1.483e-4 from the converged
        # solution at CFL 0.8 and 1.0, 1.484e-4 at 1.2), so it comes with a larger step
        return ([self.design(REFINE=r, CFL=COARSE_CFL)] if r is not None else []) + out

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        out = exponential_moves(d, strategy, failed, max_cfl=self.max_cfl(d, p),
                                step_in_cells=self.step_in_cells(p))
        r = self.coarse_ratio(p)
        if not failed and strategy != "accuracy" and r is not None and d["REFINE"] / 2 >= r:
            out.insert(2, ("REFINE", grid_ratio(d["REFINE"] / 2),
                           "a twice coarser internal grid (the viscous length stays resolved)"))
        if not failed and strategy == "accuracy" and self.dealias(d, p) == 4:
            # under-resolved data: the modes the 1/2 rule drops cost more than the aliasing
            out.insert(1, ("DEALIAS", 3, "the 2/3 rule (more retained modes)"))
        return out

    @staticmethod
    def _stages_source(p: Problem) -> bool:
        """Do the integrator's stages evaluate a source (HAS_SOURCE)? Not one that is its linear
        part alone, which the exact linear part holds (no transform of zeros per stage)."""
        law = p.struct
        if not law.has_source:
            return False
        if primitive_split(law) is not None:
            return True
        return any(sp.sympify(e) != 0 for e in source_remainder(law, linear_parts(law)[2]))

    def step_in_cells(self, p: Problem) -> bool:
        """Is the step a CFL of the internal grid's cells alone: a flux's rate sum_a
        max|lambda_a| / h_a, and no source's rate (which does not depend on the grid)?"""
        return p.struct.has_flux and not self._stages_source(p)

    def max_cfl(self, d: Design, p: Problem) -> float:
        """The largest CFL a move offers: 90% of RK4's imaginary-axis limit 2.83 / (k_max h) on
        the modes the rule keeps (k_max h = 2 pi / rule): 1.2 under the 2/3 rule, 1.6 under the
        1/2 rule. The step follows max|lambda| at each output time, so the margin covers its
        growth within an interval. APEBench KdV (fastest-below its library's 2.9e-2): 7.0e-5
        at CFL 0.9, 1.5e-4 at 1.2 in 0.74x the time."""
        return round(0.9 * 2.83 * self.dealias(d, p) / (2 * math.pi), 1)

    def speed_moves(self, d: Design, p: Problem):
        out = smallest_dealiased_grid(d)
        if self._cubic(p) and self._kept(4, p.dim) < 1.0 and self.dealias(d, p) == 3 \
                and self.dealias(d.with_(DEALIAS=4), p) == 4:
            out.insert(0, ("DEALIAS", 4, ("the 1/2 rule (cubic terms alias-free, fewer"
                                          " modes: faster stages)")))
        return out

    @staticmethod
    def dealias(d: Design, p: Problem) -> int:
        """The rule the design's solver uses (the rendered ``DEALIAS_RULE``): its DEALIAS where
        the internal grid keeps every data mode under it (3 <= DEALIAS <= 2 REFINE: the 1/2
        rule from a 2x grid on), else the 2/3 rule. The 1/2 rule on the data grid would drop
        the data's upper half of modes; the candidates and moves never propose it there, and a
        judge's edit to it computes the 2/3 rule (its key is then the 2/3 rule's design).
        Which rule pays is measured: dropping modes costs more than a cubic term's aliasing
        where the data under-resolve the solution (Gray-Scott's fronts, narrower than a data
        cell, on a 2x grid: 1.7e-4 from a 4x run under the 2/3 rule, 1.7e-3 under 1/2), little
        on resolved data (Swift-Hohenberg, 2x grid, 270 ETDRK4 steps: 2% apart)."""
        rule = d.get("DEALIAS", 3)
        return rule if 3 <= rule <= 2 * d["REFINE"] else 3

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        return {"CFL": round(d["CFL"] / 2, 5)}

    def title(self, d: Design, p: Problem) -> str:
        integ = "ETDRK4" if d["INTEGRATOR"] == "etdrk4" else "integrating-factor RK4"
        r = d["REFINE"]
        ref = (f", {r}x internal grid" if r > 1 else
               f", internal grid {Fraction(r).limit_denominator(64)} of the data's" if r < 1 else "")
        form = ", primitive variables" if self._primitive(p) else ""
        rule = self.dealias(d, p)
        return (f"pseudo-spectral, {Fraction(2, rule)} dealiasing, {integ} (exact linear part)"
                f"{form}, CFL {d['CFL']}{ref}")

    @staticmethod
    def _primitive(p: Problem) -> bool:
        return isinstance(p.struct, BalanceLaw) and not p.struct.conservative_is_primitive

    def orders(self, d: Design, p: Problem):
        return (8 if self.smooth(p, d) else 1, 4)

    def cost(self, d: Design, p: Problem) -> float:
        # the primitive form transforms w and its gradients (1 + dim inverse FFTs, not 1)
        extra = (1.0 + p.dim) / 2.0 if self._primitive(p) else 1.0
        return (2.0 * extra * (0.4 / d["CFL"]) * d["REFINE"] ** (p.dim + 1)
                * self._kept(self.dealias(d, p), p.dim))

    @staticmethod
    def _kept(rule: int, dim: int) -> float:
        """A step's work under ``rule`` relative to the 2/3 rule: the kept block's share,
        (3 / rule)^dim, from 2D on (Swift-Hohenberg on a 128^2 grid, batch 8: 0.59x the time
        per step under the 1/2 rule); 1 in 1D, where a stage's calls, not its modes, take the
        time (Allen-Cahn, 320 and 2048 points: 0.98x)."""
        return (3.0 / rule) ** dim if dim > 1 else 1.0

    def libraries(self, d: Design, p: Problem) -> tuple[str, ...]:
        return ("scipy.fft",) if p.dim > 1 else ()  # the transforms of _cut (numpy.fft in 1D)

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        prim = primitive_split(law)
        if prim is not None:
            A, D, c, high = prim.advection, prim.diffusion, prim.reaction, []
        else:
            A, D, c, high = linear_parts(law)
        rest = source_remainder(law, c) if prim is None and law.has_source else []
        stages_source = self._stages_source(p)
        flags = {"PERIODIC": True, "HAS_FLUX": law.has_flux, "HAS_VISCOUS": law.has_viscous,
                 "HAS_SOURCE": stages_source, "PRIMITIVE_FORM": prim is not None}
        code = problem_constants(p, flags) + fixed_axes(self, d, p) + "\n\n"
        code += physics_source(law, p.law_facts)
        row = lambda r: "[" + ", ".join(f"float({npcode(e)})" for e in r) + "]"  # noqa: E731
        code += ("def linear_parts(prm):\n    \"\"\"The constant diagonal linear part of dt w: advection"
                 " A[axis][i], diffusion D[axis][i],\n    reaction c[i] and high-order terms (i,"
                 " orders, coefficient).\"\"\"\n"
                 + params_lines(law.params, [e for r in A + D for e in r] + c + [e for *_, e in high])
                 + f"    A = [{', '.join(row(r) for r in A)}]\n"
                 + f"    D = [{', '.join(row(r) for r in D)}]\n"
                 + f"    c = {row(c)}\n"
                 + "    high = [" + ", ".join(f"({i}, {o!r}, float({npcode(e)}))" for i, o, e in high)
                 + "]\n    return A, D, c, high\n\n\n")
        if prim is None and stages_source:
            code += explicit_source(law, rest)
        # 2D and 3D transforms are scipy.fft's: imported with the file (before the clock)
        fft = "\n\nimport scipy.fft\n" if p.dim > 1 else ""
        if prim is not None:
            return (code + remainder_source(law, prim) + GRID + FOURIER + fft + TRANSFORMS
                    + GRID_TRANSFER + PRIMITIVE_RHS + INTEGRATOR_BLOCK + EVOLVE)
        return (code + GRID + FOURIER + fft + TRANSFORMS + GRID_TRANSFER + CONSERVATIVE_RHS
                + INTEGRATOR_BLOCK + EVOLVE)

