"""The built-in catalogue: one module per scheme family, each owning its design axes, when it
applies and how its designs rank, its stability rule and the code it renders.

=========  ==========================================================================
exact      linear constant-coefficient systems: exp(L(k) t) per Fourier / sine / cosine mode
split      scalar law with constant diffusion: exact diffusion / source / explicit flux
spectral   periodic, smooth: pseudo-spectral with an exponential integrator (KdV, KS...)
wall_spectral  sine/cosine (and Fourier) pseudo-spectral between homogeneous Dirichlet/Neumann
           walls, matrix linear parts (Gross-Pitaevskii), ETDRK4
mol        any walls (Dirichlet/Neumann/Robin, time- and side-dependent data), smooth problems:
           order 2-6 finite differences, IMEX Runge-Kutta with an implicit sparse linear part
fv         finite volumes: systems, x/t-dependent terms, walls on cell centres, 1D and 2D
elliptic   steady 1D/2D: finite-volume stencil, any boundary kind, Newton if nonlinear,
           finer internal grids and Richardson extrapolation
chebyshev  steady 1D/2D given by formulas (no coefficient field): spectral collocation
collocation_system  steady systems of several unknowns (Stokes, beams, boundary layers):
           Chebyshev collocation, Newton, coupled side conditions
constrained  systems with constraints (no dt: elliptic ones solved, incompressibility
           projected per mode) in Fourier or sine/cosine modes, ETDRK4
=========  ==========================================================================
"""

from __future__ import annotations

from pdesharp.builtin.design import Design, Family, Problem, rank_score
from pdesharp.builtin.families.collocation import ChebyshevFamily
from pdesharp.builtin.families.collocation_system import CollocationSystemFamily
from pdesharp.builtin.families.constrained import ConstrainedFamily
from pdesharp.builtin.families.elliptic import EllipticFamily
from pdesharp.builtin.families.exact import ExactFamily
from pdesharp.builtin.families.fv import FiniteVolumeFamily
from pdesharp.builtin.families.mol import MolFamily
from pdesharp.builtin.families.spectral import SpectralFamily
from pdesharp.builtin.families.split import SplitFamily
from pdesharp.builtin.families.wall_spectral import WallSpectralFamily

# the order breaks ties of the predicted ranking (the more specialised family first)
FAMILIES: dict[str, Family] = {f.name: f for f in (
    ExactFamily(), SplitFamily(), SpectralFamily(), WallSpectralFamily(), MolFamily(),
    FiniteVolumeFamily(), ChebyshevFamily(), EllipticFamily(), ConstrainedFamily(),
    CollocationSystemFamily())}


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"no scheme family {name!r}; the catalogue has {sorted(FAMILIES)}") from None


def applicable(p: Problem) -> list[Family]:
    return [f for f in FAMILIES.values() if f.applies(p)]


def design_key(d: Design, p: Problem) -> tuple:
    return family(d.family).key(d, p)


def first_family(p: Problem) -> str | None:
    """The family the analysis' route asks for first: the exact propagator on the analytical
    route; the splitting on the hybrid route when every split part is exact (diffusion and a
    local source, no flux), so that only the O(dt^2) splitting error remains. Otherwise designs
    rank by formal order and cost alone."""
    route = p.facts.get("route")
    if route == "analytical":
        return "exact"
    if route == "hybrid" and not getattr(p.struct, "has_flux", True):
        return "split"
    return None


def candidate_designs(p: Problem) -> list[Design]:
    """Every family's designs for ``p``, best predicted first, identical computations once."""
    seen, out = set(), []
    for fam in applicable(p):
        for d in fam.candidates(p):
            k = fam.key(d, p)
            if k not in seen:
                seen.add(k)
                out.append(d)
    first = first_family(p)
    return sorted(out, key=lambda d: (d.family != first, rank_score(family(d.family), d, p)))


__all__ = ["FAMILIES", "applicable", "candidate_designs", "design_key", "family"]
