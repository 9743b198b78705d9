"""Method of lines with high-order finite differences and implicit-explicit Runge-Kutta: any wall
condition (Dirichlet, Neumann, Robin, time- and side-dependent data), cell-centre or node grids.

The equation's right-hand side is derived once with SymPy in terms of the unknowns and their
first and second derivatives along each axis (the total derivative of every flux and viscous
flux, product rule included). Its part that is linear in them with coefficients depending on x
only (diffusion, dispersion, linear advection and reaction) is integrated implicitly, one sparse
LU per step size; the rest (nonlinear, time-dependent) explicitly: ARS(2,2,2) (order 2) or
ARS(4,4,3) (order 3), both L-stable in their implicit part (Ascher, Ruuth and Spiteri 1997).

Space: Fornberg-weight stencils of ``ORDER`` (2, 4, 6) on an internal grid ``REFINE`` times finer
than the data's (data points stay grid points: odd ratios on cell centres, any on nodes), centred
inside, one-sided (one point wider) near a wall. The wall values are eliminated from every
stencil: known (Dirichlet), solved from a one-sided derivative (Neumann, Robin: a*w + b*w' = g), or
extrapolated (no condition: outflow), so the unknowns are the interior values and the wall data
enter as an affine term evaluated at each stage time. Initial data on a finer internal grid come
from local Lagrange interpolation of degree ORDER + 1.

Terms the flux form does not take (non-conservative products, products of derivatives, cross
derivatives ``dx(dy(u))``, :attr:`BalanceLaw.extra`) enter the right-hand side as written
(:mod:`.jet_form`); a cross derivative is taken on the extended grid (walls and corners
included), explicitly. A Sobolev-type ``dt(u - dx(u, 2))`` is a sparse mass matrix M with the
walls eliminated: every stage solves with M (and M - h gamma A), the wall data's rate entering
through M's affine part. Periodic boxes are taken only for such terms (the Fourier families are
better otherwise), up to second derivatives (higher ones are stiff and explicit here).

Stability rule: dt <= CFL / (sum_a rho_a c1 / h_a + rho'_a c2 / h_a^2 + rho_0) over the explicit
part's Jacobian (c1, c2: the largest symbol of the order's first and second differences; c1^2 /
(h_a h_b) for a cross derivative), and DT_MAX; the implicit part has no limit.
"""

from __future__ import annotations

import math

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.bases import has_walls
from pdesharp.builtin.families.common import EVOLVE, GRID, fixed_axes, problem_constants
from pdesharp.builtin.families.jet_form import jet_split, matrices_source, rate_in_jets
from pdesharp.builtin.families.mol_block import MOL_BLOCK
from pdesharp.builtin.jets import almost_everywhere as ae
from pdesharp.builtin.physics import boundary_source, coords_line, npcode, params_lines, unpack

FINER = {"cell_centres": {1: 3, 3: 5, 5: 7, 7: 9}, "nodes": {1: 2, 2: 4, 4: 8},
         "periodic_nodes": {1: 2, 2: 4, 4: 8}}


def _second(law: BalanceLaw) -> list[list[sp.Symbol]]:
    return [[sp.Symbol(f"{n}_{c}{c}", real=True) for n in law.names] for c in law.coords]


_RHS_CACHE: dict[str, tuple] = {}


def mol_rhs(law: BalanceLaw):
    """(implicit, explicit): implicit[i] lists (j, kind, axis, coefficient) with kind 0 (w_j),
    1 (d w_j/d x_axis), 2 (second derivative), the coefficient depending on x only; explicit[i]
    is the rest of dt w_i in w, the derivative symbols, x and t. None unless dq/dw is constant.
    Laws with terms kept as written, linear terms of higher or mixed order or a Sobolev-type dt
    are read in jets (:func:`~.jet_form.rate_in_jets`; the mass operator is separate)."""
    key = repr((law.prims, law.q, law.flux, law.viscous, law.source, law.params, law.coords,
                law.high, law.extra))
    if key in _RHS_CACHE:
        return _RHS_CACHE[key]
    if not law.flux_form or law.has_high:
        rhs = rate_in_jets(law)
        _RHS_CACHE[key] = None if rhs is None else _separate(law, rhs)
        return _RHS_CACHE[key]
    w = sp.Matrix(law.prims)
    M = sp.Matrix(law.q).jacobian(law.prims)
    if M.has(*law.prims, *law.coords, law.t) or any(
            sp.expand(e) != 0 for e in sp.Matrix(law.q) - M * w):
        _RHS_CACHE[key] = None
        return None
    sec = _second(law)

    def total(e, a):
        out = sp.diff(e, law.coords[a])
        for j, wj in enumerate(law.prims):
            out += sp.diff(e, wj) * law.grads[a][j] + sp.diff(e, law.grads[a][j]) * sec[a][j]
        return ae(out)

    rhs = []
    for i in range(law.nvar):
        r = law.source[i]
        for a in range(law.dim):
            r += -total(law.flux[a][i], a) + total(law.viscous[a][i], a)
        rhs.append(r)
    rhs = list(M.inv() * sp.Matrix(rhs))
    _RHS_CACHE[key] = _separate(law, rhs)
    return _RHS_CACHE[key]


def _separate(law: BalanceLaw, rhs):
    """(implicit, explicit) of the rates ``rhs`` (in w, first and second derivatives and, for
    terms kept as written, other jets: those stay explicit)."""
    sec = _second(law)
    symbols = [(j, 0, 0, wj) for j, wj in enumerate(law.prims)]
    for a in range(law.dim):
        symbols += [(j, 1, a, g) for j, g in enumerate(law.grads[a])]
        symbols += [(j, 2, a, s) for j, s in enumerate(sec[a])]
    every = [s for *_, s in symbols] + (list(law.jets.table) if law.jets else [])
    implicit, explicit = [], []
    for r in rhs:  # expanded, not simplified: simplify costs seconds per term on trig sources
        r = sp.expand(r)
        terms, lin = [], sp.Integer(0)
        for j, kind, a, s in symbols:
            c = sp.expand(sp.diff(r, s))
            if c != 0 and not c.has(*every, law.t):
                terms.append((j, kind, a, c))
                lin += c * s
        implicit.append(terms)
        explicit.append(sp.expand(r - lin))
    return implicit, explicit


def extra_jets(law: BalanceLaw, explicit) -> list:
    """(j, orders, symbol) of the derivatives the explicit part uses beyond w, the first and
    the second derivative along one axis (cross derivatives, higher orders)."""
    if law.jets is None:
        return []
    return [(j, o, s) for j, o, s in law.jets.used(explicit)
            if not (sum(o) <= 2 and max(o) == sum(o))]


def _fits(law: BalanceLaw) -> bool:
    """Derivatives up to second order (cross derivatives included), a mass operator of one
    second derivative at most per term: what the stencils with the walls eliminated take."""
    got = mol_rhs(law)
    if got is None:
        return False
    implicit, explicit = got
    if any(sum(o) > 2 for _, o, _ in extra_jets(law, explicit)):
        return False
    split = jet_split(law) if law.has_mass else None
    if law.has_mass and (split is None or any(sum(o) > 2 or max(o) != sum(o)
                                              for o, _ in split.mass)):
        return False
    return True


C1 = {2: 1.0, 4: 1.372, 6: 1.586}  # max |symbol| * h of the centred first difference
C2 = {2: 4.0, 4: 5.334, 6: 6.044}  # max |symbol| * h^2 of the centred second difference


class MolFamily(Family):
    name = "mol"
    axes = (
        Axis("ORDER", 4, (2, 4, 6), "finite-difference order in space: 2 | 4 | 6"),
        Axis("REFINE", 1, (), "internal grid = REFINE x data grid (odd on cell centres)"),
        Axis("INTEGRATOR", "ars443", ("ars222", "ars443"),
             "ars222 (IMEX order 2) | ars443 (IMEX order 3); L-stable implicit part"),
        Axis("CFL", 0.5, (), "explicit part's step as a fraction of its stability bound"),
        Axis("DT_MAX", math.inf, (), "largest step (the implicit part has no step limit)"),
    )

    def applies(self, p: Problem) -> bool:
        law = p.struct
        if not isinstance(law, BalanceLaw) or p.steady or law.dim > 2:
            return False
        if law.periodic and law.flux_form or not _fits(law):
            return False  # periodic boxes: only for terms kept as written (else Fourier)
        return self.smooth(p)

    def smooth(self, p: Problem) -> bool:
        """Central differences need a resolved solution: no inviscid nonlinear flux (shocks)."""
        law = p.struct
        if not law.has_flux or law.flux_is_linear() or law.has_mass:
            return True  # (a Sobolev-type dt(u - dx(u, 2)) smooths the flux's derivative)
        return law.has_viscous and p.facts.get("cell_peclet", math.inf) < 2.0

    def relevant(self, p: Problem) -> list[str]:
        return [a.name for a in self.axes]

    def candidates(self, p: Problem) -> list[Design]:
        dt = p.dt_output or 0.01
        return [self.design(DT_MAX=dt / 4), self.design(ORDER=6, DT_MAX=dt / 16),
                self.design(ORDER=2, INTEGRATOR="ars222", DT_MAX=dt / 4)]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        dt = d["DT_MAX"] if math.isfinite(d["DT_MAX"]) else (p.dt_output or 0.01)
        shorter = ("DT_MAX", dt / 4, "a four times smaller step")
        finer = FINER[p.task.grid].get(d["REFINE"])
        grid = [("REFINE", finer, "a finer internal grid")] if finer else []
        up = [("ORDER", d["ORDER"] + 2, "higher-order differences")] if d["ORDER"] < 6 else []
        integ = ("INTEGRATOR", "ars443" if d["INTEGRATOR"] == "ars222" else "ars222",
                 "the other IMEX integrator")
        if failed:
            return [shorter, ("CFL", round(d["CFL"] / 2, 4), "a smaller explicit step")]
        if strategy == "accuracy":
            return up + grid + [shorter, integ]
        down = [("ORDER", d["ORDER"] - 2, "lower-order differences")] if d["ORDER"] > 2 else []
        return [integ, ("DT_MAX", dt * 2, "a larger step (faster)")] + down + [shorter] + grid

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        if status in ("memory", "timeout") and d["REFINE"] > 1:
            return {"REFINE": 1}
        dt = d["DT_MAX"] if math.isfinite(d["DT_MAX"]) else (p.dt_output or 0.01)
        return {"DT_MAX": dt / 4, "CFL": round(d["CFL"] / 2, 5)}

    def title(self, d: Design, p: Problem) -> str:
        integ = {"ars222": "IMEX ARS(2,2,2)", "ars443": "IMEX ARS(4,4,3)"}[d["INTEGRATOR"]]
        step = "" if math.isinf(d["DT_MAX"]) else f", step <= {d['DT_MAX']:.3g}"
        ref = f", {d['REFINE']}x internal grid" if d["REFINE"] != 1 else ""
        return (f"method of lines: order-{d['ORDER']} finite differences with the walls"
                f" eliminated, {integ} (implicit linear part){step}{ref}")

    def orders(self, d: Design, p: Problem):
        return (d["ORDER"], 3 if d["INTEGRATOR"] == "ars443" else 2)

    def cost(self, d: Design, p: Problem) -> float:
        stages = 5 if d["INTEGRATOR"] == "ars443" else 3
        return stages / 2 * (d["ORDER"] / 4) * d["REFINE"] ** (p.dim + 1) * 2.0

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        implicit, explicit = mol_rhs(law)
        sec = _second(law)
        diffuses = [[bool(law.viscous[a][i].has(law.grads[a][i])) or any(
            e.has(sec[a][i]) for e in explicit) or any(
            j == i and kind == 2 and b == a for row in implicit for j, kind, b, _ in row)
            for a in range(law.dim)] for i in range(law.nvar)]
        extra = extra_jets(law, explicit)
        flags = {"NVAR": law.nvar, "C1": C1, "C2": C2, "DIFFUSES": diffuses,
                 "HAS_EXPLICIT": any(sp.sympify(e) != 0 for e in explicit),
                 "EXTRA_JETS": [(j, tuple(o)) for j, o, _ in extra]}
        code = problem_constants(p, flags) + fixed_axes(self, d, p) + "\n\n"
        code += _implicit_source(law, implicit)
        code += _explicit_source(law, explicit, sec, extra)
        mass = jet_split(law).mass if law.has_mass else []
        code += matrices_source("mass_terms", "(orders, C): dt(w + sum C d^orders w) = ...: the"
                                " Sobolev-type operator, a sparse mass matrix.", law, mass)
        code += boundary_source(law) if not law.periodic else _NO_WALLS
        return code + GRID + MOL_BLOCK + EVOLVE


def _implicit_source(law: BalanceLaw, implicit) -> str:
    coefs = [c for row in implicit for *_, c in row]
    body = "".join(f"        ({i}, {j}, {kind}, {a}, ({npcode(c)}) + _zero),\n"
                   for i, row in enumerate(implicit) for j, kind, a, c in row)
    return ("def implicit_terms(X, prm):\n    \"\"\"(i, j, kind, axis, coefficient): dt w_i gets"
            " coefficient * D w_j, D the identity (kind 0),\n    d/d(axis) (1) or d^2/d(axis)^2 (2):"
            " the linear part integrated implicitly.\"\"\"\n"
            "    _zero = np.zeros(np.broadcast_shapes(*[np.shape(x) for x in X]))\n"
            + params_lines(law.params, coefs) + coords_line(law.coords, coefs)
            + "    return [\n" + body + "    ]\n\n\n")


_NO_WALLS = ("def boundary_conditions(*args):  # a periodic box: never called\n"
             "    raise NotImplementedError\n\n\n")


def _explicit_source(law: BalanceLaw, explicit, sec, extra) -> str:
    names = [w.name for w in law.prims]
    grads = [[g.name for g in row] for row in law.grads]
    second = [[s.name for s in row] for row in sec]
    jet_names = [s.name for *_, s in extra]
    out = ("def explicit_rhs(W, G, S, J, X, t, prm):\n    \"\"\"The rest of dt w (nonlinear or"
           " time-dependent terms): W the unknowns, G[a] and S[a] their\n    first and second"
           " derivatives along axis a, J the derivatives EXTRA_JETS lists.\"\"\"\n"
           + unpack(names, "W", explicit)
           + "".join(unpack(grads[a], f"G[{a}]", explicit) + unpack(second[a], f"S[{a}]", explicit)
                     for a in range(law.dim))
           + (unpack(jet_names, "J", explicit) if jet_names else "")
           + "    _zero = np.zeros_like(np.asarray(W[0], dtype=np.float64))\n"
           + params_lines(law.params, explicit) + coords_line(law.coords, explicit, law.t)
           + "    return [" + ", ".join(f"({npcode(e)}) + _zero" for e in explicit) + "]\n\n\n")
    # |d explicit / d symbol| summed over the unknowns, per equation: the step bound's rates
    rates = []
    for a in range(law.dim):
        rates.append([sum(sp.Abs(ae(sp.diff(e, g))) for g in law.grads[a]) for e in explicit])
        rates.append([sum(sp.Abs(ae(sp.diff(e, s))) for s in sec[a]) for e in explicit])
    rates.append([sum(sp.Abs(ae(sp.diff(e, w))) for w in law.prims) for e in explicit])
    for *_, s in extra:  # then one rate per extra derivative (EXTRA_JETS order)
        rates.append([sp.Abs(ae(sp.diff(e, s))) for e in explicit])
    flat = [e for row in rates for e in row]
    body = unpack(names, "W", flat)
    for a in range(law.dim):
        body += unpack(grads[a], f"G[{a}]", flat) + unpack(second[a], f"S[{a}]", flat)
    body += unpack(jet_names, "J", flat) if jet_names else ""
    out += ("def explicit_rates(W, G, S, J, X, t, prm):\n    \"\"\"Per axis the first- and"
            " second-derivative rates, then the local rate, then one per EXTRA_JETS entry, of"
            " the explicit part:\n    max over equations of sum_j |d rhs_i / d symbol_j|.\"\"\"\n"
            + body
            + "    _zero = np.zeros_like(np.asarray(W[0], dtype=np.float64))\n"
            + params_lines(law.params, flat) + coords_line(law.coords, flat, law.t)
            + "    return [" + ", ".join(
                "max(" + ", ".join(f"float(np.max(({npcode(e)}) + _zero, initial=0.0))"
                                   for e in row) + ", 0.0)" for row in rates) + "]\n\n\n")
    return out
