"""Pseudo-spectral method for systems with constraints (:mod:`pdesharp.builtin.constraint`):
Fourier modes on periodic axes, sines and cosines between homogeneous Dirichlet/Neumann walls.

``dt w = L w + N(w, psi, p)``, ``A psi = F(w)``, ``D w = 0``: the linear constant-coefficient part
L (viscosity) is exact (ETDRK4 or the integrating factor), the elliptic unknowns are solved per
mode at every stage (``psi = A(k)^-1 F``: a streamfunction, a chemical concentration, a
potential), and with a projection constraint the explicit part is projected per mode,
``N - G (D G)^-1 D N`` (Leray's projection for incompressibility; the pressure is returned as
``-(D G)^-1 D (L w + N)``, zero mean). N is evaluated on a ``REFINE`` times finer internal grid
with the 2/3 rule, its derivatives taken in the series. Applies when L commutes with the
projection (the same scalar operator on every unknown the constraint involves), which holds
for a viscous term nu*laplacian on every velocity component.

Stability rule: dt <= CFL / max r(k), r(k) the explicit part's rate at wavenumber k (a derivative
of order o of an evolved unknown weighs |k|^o, one of an elliptic unknown |k|^o |A(k)^-1|).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from pdesharp.builtin.constraint import ConstrainedLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.bases import BASES
from pdesharp.builtin.families.common import (
    EVOLVE,
    GRID,
    exponential_moves,
    fixed_axes,
    lighter_repair,
    problem_constants,
)
from pdesharp.builtin.families.constrained_block import BLOCK as CONSTRAINT_BLOCK
from pdesharp.builtin.families.exact import EXPM
from pdesharp.builtin.families.spectral import GridRatio
from pdesharp.builtin.families.wall_spectral_block import BLOCK
from pdesharp.builtin.physics import coords_line, npcode, params_lines, unpack


def projection_commutes(law: ConstrainedLaw) -> bool:
    """L is the same scalar operator on every evolved unknown a projection constraint involves
    (and couples them to nothing), so that the projection commutes with it."""
    if not law.n_pressure:
        return True
    inv = sorted({j for _, m in law.div for d in range(m.rows) for j in range(m.cols)
                  if m[d, j] != 0})
    for _, m in law.lin:
        for i in range(m.rows):
            for j in range(m.cols):
                if i != j and (i in inv or j in inv) and m[i, j] != 0:
                    return False
        if len({sp.simplify(m[i, i]) for i in inv}) > 1:
            return False
    return True


class ConstrainedFamily(Family):
    name = "constrained"
    axes = (
        Axis("INTEGRATOR", "etdrk4", ("etdrk4", "if_rk4"),
             "etdrk4 (exponential time differencing) | if_rk4 (integrating factor)"),
        Axis("CFL", 1.0, (), "step as a fraction of 1/max r(k) (the explicit part's rate; RK4's"
                             " imaginary-axis limit is 2.8)"),
        GridRatio("REFINE", 2, (), "internal grid = REFINE x data grid (series interpolation);"
                                   " >= 3/2 keeps every data mode under the 2/3 rule"),
    )

    def applies(self, p: Problem) -> bool:
        return isinstance(p.struct, ConstrainedLaw) and projection_commutes(p.struct)

    def candidates(self, p: Problem) -> list[Design]:
        return [self.design(), self.design(CFL=0.5), self.design(INTEGRATOR="if_rk4"),
                self.design(REFINE=1), self.design(REFINE=3, CFL=0.5)]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        return exponential_moves(d, strategy, failed, max_cfl=self.max_cfl(d, p))

    def max_cfl(self, d: Design, p: Problem) -> float:
        return 2.0  # RK4 is stable to about 2.8 / the explicit part's rate: with a margin

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        return lighter_repair(d, status)

    def title(self, d: Design, p: Problem) -> str:
        law = p.struct
        basis = " x ".join("Fourier" if k == "fourier" else "sine/cosine" for k in law.kinds)
        integ = "ETDRK4" if d["INTEGRATOR"] == "etdrk4" else "integrating-factor RK4"
        what = " and ".join(
            (["elliptic constraint solved per mode"] if law.n_elliptic else [])
            + (["projection onto the constraint per mode"] if law.n_pressure else []))
        r = d["REFINE"]
        ref = f", {Fraction(r).limit_denominator(64)}x internal grid" if r != 1 else ""
        return (f"pseudo-spectral ({basis}), {what}, {integ} (exact linear part), 2/3"
                f" dealiasing, CFL {d['CFL']}{ref}")

    def orders(self, d: Design, p: Problem):
        # below 3/2 the 2/3 rule drops the data's top third of modes: the error is then that
        # of the truncated field, not a formal order (ranked after the grids that keep them)
        return (8 if d["REFINE"] >= 1.5 else 3, 4)

    def cost(self, d: Design, p: Problem) -> float:
        return 3.0 * (1.0 / d["CFL"]) * d["REFINE"] ** (p.dim + 1)

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        ne, nc, npr = law.n_evolved, law.n_elliptic, law.n_pressure
        coupled = any(m[i, j] != 0 for _, m in law.lin for i in range(ne) for j in range(ne)
                      if i != j)
        flags = {"NVAR": ne, "NALL": len(law.names), "NELL": nc, "NPRES": npr,
                 "COUPLED": coupled, "STABILIZE": [],
                 "T0": float(p.task.time_span[0]) if p.task.time_span else 0.0}
        code = problem_constants(p, flags) + fixed_axes(self, d, p)
        code += (f"AXIS_KIND = {law.kinds!r}  # per space axis: fourier | integer | half\n"
                 f"PARITY = {[list(x) for x in law.parity]!r}  # per unknown (evolved,"
                 " elliptic, pressures), then per elliptic and projection row\n\n\n")
        code += _matrices("linear_terms", "(orders, C): dt w = sum C d^orders w + N.", law,
                          law.lin, ne, ne)
        code += "def mass_terms(prm):\n    return []\n\n\n"
        code += _matrices("elliptic_terms", "(orders, A): sum A d^orders psi = F(w).", law,
                          law.elliptic, nc, nc)
        code += _matrices("pressure_terms", "(orders, G): the pressures' terms of dt w.", law,
                          law.grad, ne, npr)
        code += _matrices("divergence_terms", "(orders, D): the constraints D w = 0.", law,
                          law.div, npr, ne)
        jets = law.jets.used(law.rest)
        code += _pointwise("remainder", "JETS", "N(w, psi, derivatives, x, t): what the linear"
                           " part leaves of dt w", law, law.names, law.rest, jets)
        fjets = law.jets.used(law.elliptic_rhs)
        code += _pointwise("elliptic_source", "JETS_F", "F(w, derivatives, x, t): the elliptic"
                           " constraints' right-hand sides", law, law.evolved, law.elliptic_rhs,
                           fjets)
        return code + GRID + BASES + EXPM + BLOCK + CONSTRAINT_BLOCK + EVOLVE


def _matrices(fn: str, doc: str, law: ConstrainedLaw, pairs, rows: int, cols: int) -> str:
    code = (f"def {fn}(prm):\n    \"\"\"{doc}\"\"\"\n"
            + params_lines(law.params, [e for _, m in pairs for e in m]) + "    return [\n")
    for orders, m in pairs:
        body = ", ".join("[" + ", ".join(f"float({npcode(m[i, j])})" for j in range(cols)) + "]"
                         for i in range(rows))
        code += f"        ({tuple(orders)!r}, [{body}]),\n"
    return code + "    ]\n\n\n"


def _pointwise(fn: str, const: str, doc: str, law: ConstrainedLaw, names, exprs, jets) -> str:
    """``fn(W, J, X, t, prm)`` and the constant listing the derivatives J holds."""
    spec = [(j, tuple(o)) for j, o, _ in jets]
    jet_names = [s.name for _, _, s in jets]
    return (f"{const} = {spec!r}  # (unknown, derivative orders per axis) {fn} uses\n\n\n"
            f"def {fn}(W, J, X, t, prm):\n    \"\"\"{doc}.\"\"\"\n" + unpack(list(names), "W", exprs)
            + (unpack(jet_names, "J", exprs) if jet_names else "")
            + "    _zero = np.zeros(np.broadcast_shapes(np.shape(W[0]), *[np.shape(x) for x in"
            " X]))\n" + params_lines(law.params, exprs) + coords_line(law.coords, exprs, law.t)
            + "    return [" + ", ".join(f"({npcode(e)}) + _zero" for e in exprs) + "]\n\n\n")
