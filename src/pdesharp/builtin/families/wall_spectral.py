"""Pseudo-spectral method in the walls' eigenbasis: sines and cosines between homogeneous
Dirichlet/Neumann walls, Fourier modes on periodic axes, with an exponential integrator.

``dt w = L w + N(w, x, t)``: L collects the linear constant-coefficient terms (diffusion,
dispersion, a constant linear reaction; a matrix per mode when they couple unknowns, as the
Schroedinger part of Gross-Pitaevskii does), integrated exactly by ETDRK4 or the integrating
factor; N is the rest of the source (nonlinear, x- and t-dependent terms), evaluated pointwise on
an internal grid ``REFINE`` times finer and projected back with the 2/3 rule. Every unknown is
expanded in the parity :func:`~.bases.wall_bases` gives it, so the odd/even extension across a
wall is what the series represents: spectrally accurate when the equation maps that extension into
itself (Allen-Cahn's u - u**3 with Neumann walls, a cubic nonlinearity with Dirichlet walls), and
still convergent (algebraically) when it does not. The output is the series evaluated at the data
points (never a truncated field), node grids included.

Terms the flux form does not take (:attr:`BalanceLaw.extra`: Cahn-Hilliard's
``dx(u**3 - u - eps**2*dx(u, 2), 2)``, products of derivatives, non-conservative products) are
split by :mod:`.jet_form`: their linear constant-coefficient part joins L (semi-implicit: the
stiff linear part exact), the rest joins N with its derivatives taken spectrally. A Sobolev-type
``dt(u - dx(u, 2))`` is inverted per mode: L and N are multiplied by ``(1 + k^2)^-1``.

Stability rule: dt <= CFL / max|dN/dw| (the linear part is exact). With derivatives in N, per
mode: N's rate at wavenumber k is r(k) = max|dN/dw| + the spectral radius of the matrix
R_ij(k) = sum over the jets of unknown j of max|dN_i/d(jet)| |k|^order (times the mass
operator's inverse): a one-way coupling has no feedback at that rate (Zakharov's (|E|^2)_xx
drives n, whose feedback on E goes through values; summing every entry took ~400x smaller
steps on zakharov_walls1d, ~760 s per sample instead of 2 s); a mode where r(k) <= |Re L(k)| / 2
is held by the exactly integrated linear part (the explicit part is a fraction of its damping:
Cahn-Hilliard's 3u^2 k^2 against eps^2 k^4), every other mode bounds the step: dt <= CFL / max
r(k) over those. Matrix exponentials and the
phi functions come from one augmented exponential per step size (Al-Mohy and Higham's block
form: exp([[hL, I, 0, 0], [0, 0, I, 0], [0, 0, 0, I], 0]) carries phi_1..phi_3 in its first row).
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.bases import (
    BASES,
    basis_title,
    emit_bases,
    has_walls,
    parity_compatible,
    wall_bases,
)
from pdesharp.builtin.families.common import (
    EVOLVE,
    GRID,
    exponential_moves,
    fixed_axes,
    lighter_repair,
    problem_constants,
    smallest_dealiased_grid,
)
from pdesharp.builtin.families.exact import EXPM, linear_system
from pdesharp.builtin.families.jet_form import (
    JetSplit,
    coupled,
    jet_split,
    matrices_source,
    remainder_source,
    stabilisable,
)
from pdesharp.builtin.families.spectral import GridRatio, SpectralFamily
from pdesharp.builtin.families.wall_spectral_block import BLOCK

_SPLIT_CACHE: dict[str, object] = {}


def split_linear(law: BalanceLaw) -> JetSplit | None:
    """dt w = sum_o C_o d^o w + rest(w, x, t) with constant matrices C_o and a local remainder
    (no derivatives); None when a flux or viscous term is not linear with constant coefficients
    in w (those need derivatives of nonlinear expressions). A law with terms kept as written
    (or a Sobolev-type dt) is split in jets instead (:func:`~.jet_form.jet_split`: its remainder
    may use derivatives). Cached per law (families ask for it repeatedly while ranking)."""
    return law.derive("split_linear", _cached_split_linear)


def _cached_split_linear(law: BalanceLaw) -> JetSplit | None:
    if not law.flux_form:
        return jet_split(law)
    key = repr((law.prims, law.q, law.flux, law.viscous, law.source, law.high, law.params,
                law.coords))
    if key not in _SPLIT_CACHE:
        got = _split_linear(law)
        if got is not None:
            _SPLIT_CACHE[key] = JetSplit(got[0], got[1], [], [])
        elif law.flux_is_linear():
            # a nonlinear second-order term with no nonlinear flux to steepen into shocks
            # (Zakharov's dx(|E|**2, 2)): its remainder in jets, differentiated spectrally
            _SPLIT_CACHE[key] = jet_split(law)
        else:
            _SPLIT_CACHE[key] = None
    return _SPLIT_CACHE[key]


def _split_linear(law: BalanceLaw):
    n, w = law.nvar, sp.Matrix(law.prims)
    free = list(law.prims) + list(law.coords) + [law.t]
    const = lambda m: not any(sp.sympify(e).has(*free) for e in m)  # noqa: E731
    M = sp.Matrix(law.q).jacobian(law.prims)
    if not const(M) or any(sp.expand(e) != 0 for e in sp.Matrix(law.q) - M * w):
        return None
    terms: dict[tuple, sp.Matrix] = defaultdict(lambda: sp.zeros(n, n))
    rest = sp.zeros(n, 1)
    for a in range(law.dim):
        e_a = tuple(int(b == a) for b in range(law.dim))
        F = sp.Matrix(law.flux[a])
        A = F.jacobian(law.prims)
        if not const(A) or any(e.has(*law.prims) for e in F - A * w):
            return None
        terms[e_a] += -A
        rest += -(F - A * w).diff(law.coords[a])
        V = sp.Matrix(law.viscous[a])
        D = V.jacobian(law.grads[a])
        if not const(D) or any(sp.expand(e) != 0 for e in V - D * sp.Matrix(law.grads[a])):
            return None
        terms[tuple(2 * x for x in e_a)] += D
    S = sp.Matrix(law.source)
    B = S.jacobian(law.prims).xreplace({p: 0 for p in law.prims})
    B = B.applyfunc(lambda e: e if const([e]) and not e.has(sp.zoo, sp.oo, -sp.oo, sp.nan)
                    else sp.Integer(0))
    terms[(0,) * law.dim] += B
    rest += S - B * w
    for i, row in enumerate(law.high):
        for c, j, orders in row:
            m = sp.zeros(n, n)
            m[i, j] = c
            terms[tuple(orders)] += m
    Minv = M.inv()
    out = [(o, (Minv * m).applyfunc(sp.nsimplify)) for o, m in terms.items()
           if any(e != 0 for e in m)]
    return out, [sp.expand(e) for e in Minv * rest]


class WallSpectralFamily(Family):
    name = "wall_spectral"
    axes = (
        Axis("INTEGRATOR", "etdrk4", ("etdrk4", "if_rk4"),
             "etdrk4 (exponential time differencing) | if_rk4 (integrating factor)"),
        Axis("CFL", 0.2, (), "step as a fraction of 1/max|dN/dw| (the explicit part's rate)"),
        GridRatio("REFINE", 1, (), "internal grid = REFINE x data grid (series interpolation);"
                                   " > 1 keeps every data mode under the 2/3 rule"),
    )

    def _parts(self, p: Problem):
        law = p.struct
        if not isinstance(law, BalanceLaw) or p.steady:
            return None
        bases = wall_bases(law)
        if bases is None:
            return None
        split = split_linear(law)
        if split is None or all(e == 0 for e in split.rest):
            return None
        return bases, split

    def applies(self, p: Problem) -> bool:
        parts = self._parts(p)
        if parts is None or linear_system(p.struct) is not None:  # exact is strictly better
            return False
        bases, _ = parts
        # periodic boxes the FFT family takes are its own (spectral.py)
        return has_walls(bases) or not SpectralFamily().applies(p)

    def smooth(self, p: Problem) -> bool:
        """Spectral accuracy: the equation maps the walls' odd/even extension into itself."""
        bases, split = self._parts(p)
        dom = tuple(tuple(p.task.domain[str(c)]) for c in p.struct.coords)
        # asked per design while ranking (SymPy: ~25 ms each); the law belongs to one task
        return p.struct.derive(("parity_compatible", dom),
                               lambda law: parity_compatible(law, bases, split.rest, list(dom)))

    def candidates(self, p: Problem) -> list[Design]:
        # the step first: the explicit part's rate rarely resolves an output interval finely
        return [self.design(), self.design(CFL=0.05), self.design(REFINE=2, CFL=0.1)]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        return exponential_moves(d, strategy, failed, max_cfl=self.max_cfl(d, p))

    def max_cfl(self, d: Design, p: Problem) -> float:
        return 2.0  # RK4 is stable to about 2.8 / the explicit part's rate: with a margin

    def speed_moves(self, d: Design, p: Problem):
        return smallest_dealiased_grid(d)

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        return lighter_repair(d, status)

    def title(self, d: Design, p: Problem) -> str:
        bases, split = self._parts(p)
        integ = "ETDRK4" if d["INTEGRATOR"] == "etdrk4" else "integrating-factor RK4"
        lin = "matrix exponential per mode" if coupled(split) else "exact linear part"
        if split.mass:
            lin += ", Sobolev operator inverted per mode"
        r = d["REFINE"]
        ref = f", {Fraction(r).limit_denominator(64)}x internal grid" if r != 1 else ""
        return (f"pseudo-spectral in the {basis_title(bases, p.struct.names)} basis, {integ}"
                f" ({lin}), 2/3 dealiasing, CFL {d['CFL']}{ref}")

    def orders(self, d: Design, p: Problem):
        return (8 if self.smooth(p) else 2, 4)

    def cost(self, d: Design, p: Problem) -> float:
        # dense transforms: O(n) per point and axis, against the FFT's log n
        return 3.0 * (0.2 / d["CFL"]) * d["REFINE"] ** (p.dim + 1)

    def libraries(self, d: Design, p: Problem) -> tuple[str, ...]:
        # the inner grid's DCT/DST (bases._fast; a node grid keeps the dense transforms)
        return ("scipy.fft",) if p.task.grid != "nodes" else ()

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        bases, split = self._parts(p)
        flags = {"NVAR": law.nvar, "COUPLED": coupled(split), "STABILIZE": stabilisable(split)}
        code = problem_constants(p, flags) + fixed_axes(self, d, p) + emit_bases(bases) + "\n\n"
        code += matrices_source("linear_terms", "(orders, C) of the linear constant-coefficient"
                                " part: dt w = sum C d^orders w + N.", law, split.terms)
        code += matrices_source("mass_terms", "(orders, C): dt(w + sum C d^orders w) = ...: the"
                                " Sobolev-type operator, inverted per mode.", law, split.mass)
        code += remainder_source(law, split.rest, split.jets)
        return code + GRID + BASES + EXPM + BLOCK + EVOLVE
