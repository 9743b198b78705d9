"""Solver designs: points in the catalogue's design space, chosen from the equation's structure.

A :class:`Design` fixes every design axis (method family, reconstruction, limiter, Riemann
solver, time integrator, CFL numbers, internal resolution, diffusion symbol, grid convention of
an elliptic solve). :func:`candidate_designs` lists the designs that suit a structure, best
predicted first; nothing here looks at a task's name.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from pdesharp.builtin.structure import BalanceLaw, EllipticProblem

FAMILIES = ("exact", "split", "spectral", "fv", "elliptic")
LIMITERS = ("minmod", "van_leer", "mc", "none")
RECONSTRUCTIONS = ("first", "muscl", "weno5")
INTEGRATORS = ("euler", "rk2mid", "ssprk2", "ssprk3", "rk4")
RIEMANN = ("rusanov", "hll")

# formal order in space of each reconstruction, in time of each integrator
SPACE_ORDER = {"first": 1, "muscl": 2, "weno5": 5}
TIME_ORDER = {"euler": 1, "rk2mid": 2, "ssprk2": 2, "ssprk3": 3, "rk4": 4}
STAGES = {"euler": 1, "rk2mid": 2, "ssprk2": 2, "ssprk3": 3, "rk4": 4}


@dataclass(frozen=True)
class Design:
    family: str
    reconstruction: str = "muscl"
    limiter: str = "mc"
    riemann: str = "rusanov"
    integrator: str = "ssprk3"
    cfl: float = 0.4
    cfl_diff: float = 0.4
    refine: int = 1
    symbol: str = "spectral"  # Fourier symbol of exact diffusion: spectral or fd2
    split_dt: float = math.inf  # upper bound on a splitting step
    grid: str = "cells"  # elliptic: unknowns at cell centres, or at nodes + spline back
    face_mean: str = "arithmetic"
    viscous: str = "explicit"  # explicit (in the RHS) | subcycle (split, cheap viscous sub-steps)
    has_flux: bool = True  # not a design axis: a flux-free law needs no reconstruction or CFL

    def key(self) -> tuple:
        return tuple(asdict(self).values())

    def with_(self, **kw) -> "Design":
        return replace(self, **kw)

    @property
    def title(self) -> str:
        f = self.family
        if f == "exact":
            return f"exact Fourier propagator ({self.symbol} symbol)"
        if f == "elliptic":
            return f"five-point {self.grid} grid, {self.face_mean} face means, sparse direct solve"
        ref = f", {self.refine}x internal grid" if self.refine > 1 else ""
        if f == "spectral":
            return f"pseudo-spectral, 2/3 dealiasing, integrating-factor RK4, CFL {self.cfl}{ref}"
        recon = self.reconstruction if self.reconstruction != "muscl" else f"MUSCL-{self.limiter}"
        fv = f"{recon} + {self.riemann} + {self.integrator}, CFL {self.cfl}"
        if f == "split":
            dt = "" if math.isinf(self.split_dt) else f", step <= {self.split_dt:.3g}"
            if not self.has_flux:
                return f"Strang splitting: exact diffusion ({self.symbol}), exact source step{dt}{ref}"
            return f"Strang splitting: exact diffusion ({self.symbol}), exact source, {fv}{dt}{ref}"
        vis = ", viscous sub-cycling" if self.viscous == "subcycle" else ""
        return f"finite volume: {fv}{vis}{ref}"

    @property
    def space_order(self) -> int:
        if self.family in ("exact", "spectral"):
            return 8  # spectral accuracy, counted as "high"
        if self.family == "elliptic":
            return 2
        if self.reconstruction == "muscl" and self.limiter == "none":
            return 2
        return SPACE_ORDER[self.reconstruction]

    @property
    def time_order(self) -> int:
        if self.family == "exact":
            return 8
        if self.family == "spectral":
            return 4
        order = TIME_ORDER[self.integrator]
        return min(order, 2) if self.family == "split" else order

    @property
    def relative_cost(self) -> float:
        """Work per unit time relative to MUSCL + SSP-RK2 at CFL 0.4 on the output grid."""
        if self.family in ("exact", "elliptic"):
            return 0.05
        stages = 4 if self.family == "spectral" else STAGES[self.integrator]
        recon = 2.5 if self.reconstruction == "weno5" else 1.0
        return stages / 2 * recon * (0.4 / self.cfl) * self.refine**2


def candidate_designs(struct, facts: dict) -> list[Design]:
    """Designs that suit the structure, best predicted first (duplicates removed).

    ``facts`` carries the analysis' numbers: ``linear_symbol`` (bool), ``diffusion_constant``
    (bool), ``stiffness`` (explicit diffusion step / advective step), ``source_exact`` (bool),
    ``cell_peclet`` (max |f'| dx / D).
    """
    if isinstance(struct, EllipticProblem):
        out = [Design("elliptic", grid="cells", face_mean="arithmetic"),
               Design("elliptic", grid="nodes", face_mean="arithmetic"),
               Design("elliptic", grid="cells", face_mean="harmonic"),
               Design("elliptic", grid="nodes", face_mean="harmonic")]
        return out
    assert isinstance(struct, BalanceLaw)
    out: list[Design] = []
    scalar = struct.nvar == 1
    stiff = facts.get("stiffness", 0.0) > 20.0
    if scalar and facts.get("linear_symbol"):
        out.append(Design("exact", symbol="spectral"))
    if scalar and facts.get("diffusion_constant") and (stiff or struct.has_source):
        hf = struct.has_flux
        out.append(Design("split", symbol="fd2", integrator="ssprk3", cfl=0.4, has_flux=hf))
        out.append(Design("split", symbol="spectral", integrator="ssprk3", cfl=0.4, has_flux=hf))
        if not hf:
            # no flux: only the splitting step and the diffusion symbol matter
            dt_out = facts.get("dt_output", 0.01)
            for frac in (4, 16):
                out.append(Design("split", symbol="fd2", split_dt=dt_out / frac, has_flux=hf))
                out.append(Design("split", symbol="spectral", split_dt=dt_out / frac, has_flux=hf))
    fv = [
        Design("fv", "muscl", "mc", "rusanov", "rk2mid", 0.4),
        Design("fv", "weno5", "mc", "rusanov", "ssprk3", 0.4),
        Design("fv", "muscl", "van_leer", "hll", "ssprk2", 0.4),
        Design("fv", "muscl", "minmod", "rusanov", "ssprk3", 0.5),
        Design("fv", "first", "minmod", "rusanov", "euler", 0.5),
    ]
    smooth = facts.get("cell_peclet", math.inf) < 2.0
    if scalar and struct.has_flux and facts.get("diffusion_constant") and smooth:
        out.append(Design("spectral", cfl=0.4))
    if facts.get("viscous_stiffness", 0.0) > 10.0:
        # the explicit viscous step is far below the advective one: sub-cycle the viscous part
        fv = [d.with_(viscous="subcycle", cfl_diff=0.9) for d in fv] + [fv[0]]
    if not stiff:
        out.extend(fv)
    elif not scalar or not facts.get("diffusion_constant"):
        out.extend(fv)  # stiff but nothing better in the catalogue: explicit, slow, still valid
    if scalar and struct.has_flux and facts.get("diffusion_constant") and not smooth:
        out.append(Design("spectral", cfl=0.4))
    out = [d.with_(has_flux=struct.has_flux) for d in out]
    seen, unique = set(), []
    for d in out:
        if d.key() not in seen:
            seen.add(d.key())
            unique.append(d)
    return unique


def predicted_rank_score(d: Design, margin: float = 1.0) -> float:
    """Lower is better: favour high formal order, a stability margin, and low cost."""
    order = min(d.space_order, d.time_order)
    return -2.0 * order + 0.5 * math.log10(d.relative_cost + 1e-9) - 0.5 * min(margin, 2.0)
