"""Finite volumes: reconstruction + approximate Riemann solver + explicit Runge-Kutta.

The general family: scalar laws and systems, fluxes, viscous fluxes and sources that may depend
on x, y and t, periodic boxes in 1D and 2D (dimension by dimension) and Dirichlet, Neumann or
Robin conditions in 1D through ghost cells. A stiff viscous part is not sub-cycled: it is split
off (Strang) and integrated implicitly with TR-BDF2 (:mod:`.viscous_implicit`), so the step is
set by the advective CFL number alone.

Kernels (axis KERNEL): in 1D periodic boxes the solver can run compiled Numba loops
(:mod:`.fv_kernels`, the same formulas in the same order, so both paths agree to round-off);
walls and 2D keep the NumPy array passes (the reason is in fv_kernels' docstring). Genesis writes
KERNEL = "auto": at its first call the solver predicts its work (cells x batch x stages to the last
output time) and compiles only where that saves more than Numba's import and compilation cost
(3-8 s per evaluation on this 2-core machine, counted in the solver's time), which depends on the
batch, unknown when the solver is written (:func:`.fv_kernels.kernel_for`). The judges get no
KERNEL move: it cannot change the nRMSE, and the header line stays editable.

Stability rule: dt <= CFL / sum_a(max|lambda_a| / h_a) for the flux (lambda the eigenvalues of
dF_a/dU), CFL_DIFF / sum_a(2 max D_a / h_a^2) for an explicit viscous part, CFL / max|dS/dU| for
the source, and DT_MAX.
"""

from __future__ import annotations

import math

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.common import (EVOLVE, GRID, KERNEL_AXIS, NUMBA_IMPORT, REFINE,
                                              fixed_axes, problem_constants)
from pdesharp.builtin.families.fv_blocks import FV_BLOCK, FV_DRIVER, NO_IMPLICIT
from pdesharp.builtin.families.fv_kernels import compiled_block, compiled_supported, kernel_for
from pdesharp.builtin.families.viscous_implicit import IMPLICIT_BLOCK, compiled_implicit
from pdesharp.builtin.physics import physics_source

SPACE_ORDER = {"first": 1, "muscl": 2, "weno5": 5}
TIME_ORDER = {"euler": 1, "rk2mid": 2, "ssprk2": 2, "ssprk3": 3, "rk4": 4}
STAGES = {"euler": 1, "rk2mid": 2, "ssprk2": 2, "ssprk3": 3, "rk4": 4}
ORDER_UP = {"euler": "ssprk2", "ssprk2": "ssprk3", "rk2mid": "ssprk3", "ssprk3": "rk4"}
ORDER_DOWN = {"rk4": "ssprk3", "ssprk3": "ssprk2", "ssprk2": "rk2mid", "rk2mid": "euler"}
SHARPER = {"minmod": "van_leer", "van_leer": "mc", "mc": "van_leer", "none": "mc"}
SAFER = {"mc": "van_leer", "van_leer": "minmod", "none": "minmod", "minmod": "mc"}

FLUX_AXES = (
    Axis("RECONSTRUCTION", "muscl", ("first", "muscl", "weno5"), "first | muscl | weno5"),
    Axis("LIMITER", "mc", ("minmod", "van_leer", "mc", "none"),
         "minmod | van_leer | mc | none (MUSCL only)"),
    Axis("RIEMANN", "rusanov", ("rusanov", "hll"), "rusanov | hll"),
)
TIME_AXES = (
    Axis("INTEGRATOR", "ssprk3", tuple(TIME_ORDER), "euler | rk2mid | ssprk2 | ssprk3 | rk4"),
    Axis("CFL", 0.4, (), "Courant number of the explicit step (and source step factor)"),
)


# the largest CFL a move offers: under 1 (the explicit integrators' limit for the upwind and
# central fluxes), with room for the wave speed's growth within an output interval
MAX_CFL = 0.9


def flux_moves(d: Design, strategy: str, failed: bool) -> list:
    """Moves of the explicit flux axes, shared with the splitting family."""
    smaller = [("CFL", round(d["CFL"] * 0.625, 4), "a smaller time step (CFL x 0.625)")]
    larger = [("CFL", round(min(d["CFL"] * 1.5, MAX_CFL), 4), "a larger time step (faster)")]
    acc = smaller + [
        ("INTEGRATOR", ORDER_UP.get(d["INTEGRATOR"], "rk4"), "a higher-order time integrator"),
        ("LIMITER", SHARPER[d["LIMITER"]], "a less dissipative limiter"),
        ("RECONSTRUCTION", "weno5" if d["RECONSTRUCTION"] != "weno5" else "muscl",
         "the other reconstruction order"),
        ("RIEMANN", "hll" if d["RIEMANN"] == "rusanov" else "rusanov", "the other Riemann solver"),
    ]
    rob = [
        ("LIMITER", SAFER[d["LIMITER"]], "a more dissipative limiter"),
        ("RIEMANN", "hll" if d["RIEMANN"] == "rusanov" else "rusanov", "the other Riemann solver"),
        ("INTEGRATOR", ORDER_DOWN.get(d["INTEGRATOR"], "ssprk2"), "a cheaper time integrator"),
    ] + larger + smaller
    if failed:
        return smaller + [m for m in rob if m[0] == "LIMITER"] + [
            ("RECONSTRUCTION", "muscl", "a TVD reconstruction")]
    return acc if strategy == "accuracy" else rob


def flux_title(d: Design) -> str:
    recon = d["RECONSTRUCTION"] if d["RECONSTRUCTION"] != "muscl" else f"MUSCL-{d['LIMITER']}"
    if d["RECONSTRUCTION"] == "first":
        recon = "first-order"
    return f"{recon} + {d['RIEMANN']} + {d['INTEGRATOR']}, CFL {d['CFL']}"


def single_wave(law: BalanceLaw) -> bool:
    """A scalar law with a linear flux: one constant wave speed per axis, for which Rusanov and
    HLL are the same upwind flux (so the Riemann solver is not a design choice)."""
    return law.nvar == 1 and law.has_flux and law.flux_is_linear() and not any(
        f.has(*law.coords, law.t) for row in law.flux for f in row)


def stiff_viscous(p: Problem) -> bool:
    return p.facts.get("viscous_stiffness", 0.0) > 10.0 or (
        not p.struct.has_flux and p.facts.get("stiffness", 0.0) > 20.0)


class FiniteVolumeFamily(Family):
    name = "fv"
    axes = FLUX_AXES + TIME_AXES + (
        Axis("VISCOUS", "explicit", ("explicit", "trbdf2"),
             "explicit (in the RHS) | trbdf2 (split off, implicit TR-BDF2, no step limit)"),
        Axis("CFL_DIFF", 0.4, (), "explicit viscous step as a fraction of h^2/(2D)"),
        Axis("DT_MAX", math.inf, (), "largest step (when no CFL number limits it)"),
        Axis("REFINE", 1, (), "internal grid = REFINE x output grid, averaged back"),
        KERNEL_AXIS,
    )

    def applies(self, p: Problem) -> bool:
        law = p.struct
        # cells need walls between data points (cell centres) and at most two axes
        return (isinstance(law, BalanceLaw) and not law.has_high and law.flux_form and law.dim <= 2
                and (law.periodic or p.task.grid == "cell_centres"))

    def relevant(self, p: Problem) -> list[str]:
        law: BalanceLaw = p.struct
        out = []
        if law.has_flux:
            out += ["RECONSTRUCTION", "LIMITER", "RIEMANN"]
        if law.has_flux or law.has_source or law.has_viscous:
            out += ["INTEGRATOR", "CFL"]
        if law.has_viscous:
            out += ["CFL_DIFF"]
            if law.dim == 1:
                out += ["VISCOUS"]
        if not law.has_flux:
            out += ["DT_MAX"]
        if law.dim == 1:
            out += ["REFINE"]
        if compiled_supported(law, p.law_facts):
            out += ["KERNEL"]
        return out

    def active(self, d: Design, p: Problem) -> set[str]:
        law: BalanceLaw = p.struct
        act = set(self.relevant(p))
        if d["RECONSTRUCTION"] != "muscl":
            act.discard("LIMITER")
        if single_wave(law):
            act.discard("RIEMANN")
        implicit = law.has_viscous and d["VISCOUS"] != "explicit" and "VISCOUS" in act
        if implicit:
            act.discard("CFL_DIFF")
            if not (law.has_flux or law.has_source):
                act -= {"INTEGRATOR", "CFL"}  # nothing explicit left to integrate
        elif not (law.has_flux or law.has_source):
            act.discard("CFL")
        if math.isinf(d["DT_MAX"]) and not implicit and "DT_MAX" in act:
            pass  # an explicit step limits dt anyway; DT_MAX still caps it
        return act

    def candidates(self, p: Problem) -> list[Design]:
        law: BalanceLaw = p.struct
        base = [
            self.design(RECONSTRUCTION="muscl", LIMITER="mc", RIEMANN="rusanov", INTEGRATOR="rk2mid"),
            self.design(RECONSTRUCTION="weno5", RIEMANN="rusanov", INTEGRATOR="ssprk3"),
            self.design(RECONSTRUCTION="muscl", LIMITER="van_leer", RIEMANN="hll",
                        INTEGRATOR="ssprk2"),
            self.design(RECONSTRUCTION="muscl", LIMITER="minmod", INTEGRATOR="ssprk3", CFL=0.5),
            self.design(RECONSTRUCTION="first", LIMITER="minmod", INTEGRATOR="euler", CFL=0.5),
        ]
        if not law.has_flux:
            dt = p.dt_output or 0.01
            wave = p.facts.get("dt_wave", math.inf)  # central second differences coupling waves
            base = [self.design(INTEGRATOR="ssprk3", DT_MAX=min(dt / 4, 0.5 * wave)),
                    self.design(INTEGRATOR="rk4", DT_MAX=min(dt / 16, 0.5 * wave))]
        if law.has_viscous and law.dim == 1 and stiff_viscous(p):
            base = [b.with_(VISCOUS="trbdf2") for b in base] + [base[0]]
        return [b.with_(KERNEL=kernel_for(p)) for b in base]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        law: BalanceLaw = p.struct
        out = flux_moves(d, strategy, failed) if law.has_flux else [
            ("CFL", round(d["CFL"] * 0.625, 4), "a smaller time step (CFL x 0.625)"),
            ("INTEGRATOR", ORDER_UP.get(d["INTEGRATOR"], "rk4"), "a higher-order integrator")]
        if not law.has_flux:
            dt = d["DT_MAX"] if math.isfinite(d["DT_MAX"]) else (p.dt_output or 0.01)
            out.insert(0, ("DT_MAX", dt / 4, "a four times smaller step (O(dt^2) error)"))
        if law.has_viscous and law.dim == 1:
            other = "explicit" if d["VISCOUS"] != "explicit" else "trbdf2"
            out.append(("VISCOUS", other, "the other treatment of the viscous terms"))
        if law.dim == 1 and not failed and self.shocks(p):
            # a discontinuity is resolved only by cells, its error falls as h whatever the step
            # or the order: every judge refines first (issue 26: refinement until the budget
            # ends), the robust one by a 4x leap off the output grid so that a budget of a few
            # rounds reaches 8x (the leap costs 16x the base's time: only from the data grid)
            leap = 4 if strategy == "robust" and d["REFINE"] == 1 else 2
            out.insert(0, ("REFINE", d["REFINE"] * leap, f"a {leap}x finer internal grid"
                           " (averaged back to the output cells)"))
        elif law.dim == 1 and strategy == "accuracy" and not failed:
            out.append(("REFINE", d["REFINE"] * 2, "a twice finer internal grid (averaged back"
                        " to the output cells)"))
        return out

    def max_cfl(self, d: Design, p: Problem) -> float:
        return MAX_CFL

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        if d["REFINE"] > 1 and status in ("memory", "timeout"):
            return {"REFINE": max(1, d["REFINE"] // 2)}
        if status == "timeout" and p.struct.has_viscous and p.struct.dim == 1 \
                and d["VISCOUS"] == "explicit":
            return {"VISCOUS": "trbdf2"}
        out = {"CFL": round(d["CFL"] / 2, 5)}
        if p.struct.has_flux and d["RECONSTRUCTION"] == "muscl" and d["LIMITER"] != "minmod":
            out["LIMITER"] = "minmod"
        if p.struct.has_flux and d["RECONSTRUCTION"] == "weno5":
            out["RECONSTRUCTION"] = "muscl"
        if not p.struct.has_flux:
            dt = d["DT_MAX"] if math.isfinite(d["DT_MAX"]) else (p.dt_output or 0.01)
            out["DT_MAX"] = dt / 4
        return out

    def title(self, d: Design, p: Problem) -> str:
        law: BalanceLaw = p.struct
        parts = [flux_title(d)] if law.has_flux else [f"{d['INTEGRATOR']} in time"]
        if not law.has_flux and math.isfinite(d["DT_MAX"]):
            parts.append(f"step <= {d['DT_MAX']:.3g}")
        if law.has_viscous:
            parts.append("implicit TR-BDF2 viscous step" if d["VISCOUS"] != "explicit" and
                         law.dim == 1 else "explicit viscous terms")
        if not law.periodic:
            parts.append("ghost-cell boundary conditions")
        if law.dim == 1 and d["REFINE"] > 1:
            parts.append(f"{d['REFINE']}x internal grid")
        return "finite volume: " + ", ".join(parts)

    @staticmethod
    def shocks(p: Problem) -> bool:
        """A nonlinear flux with no viscosity to speak of (cell Peclet number above 2):
        discontinuities form or are present, and errors there shrink with the cell size only."""
        law: BalanceLaw = p.struct
        return law.has_flux and not law.flux_is_linear() and (
            not law.has_viscous or p.facts.get("cell_peclet", math.inf) > 2.0)

    def orders(self, d: Design, p: Problem):
        law: BalanceLaw = p.struct
        if not law.has_flux:
            return (2, min(TIME_ORDER[d["INTEGRATOR"]], 2))
        space = 2 if d["RECONSTRUCTION"] == "muscl" and d["LIMITER"] == "none" else \
            SPACE_ORDER[d["RECONSTRUCTION"]]
        time = TIME_ORDER[d["INTEGRATOR"]]
        if law.has_viscous and d["VISCOUS"] != "explicit" and law.dim == 1:
            time = min(time, 2)
        return (space, time)

    def cost(self, d: Design, p: Problem) -> float:
        recon = 2.5 if d["RECONSTRUCTION"] == "weno5" else 1.0
        c = STAGES[d["INTEGRATOR"]] / 2 * recon * (0.4 / d["CFL"]) * d["REFINE"] ** p.dim
        if p.struct.has_viscous and d["VISCOUS"] == "explicit":
            c *= max(1.0, p.facts.get("viscous_stiffness", 1.0) * 0.4 / d["CFL_DIFF"])
        return c

    def render(self, d: Design, p: Problem) -> str:
        law: BalanceLaw = p.struct
        implicit = law.has_viscous and law.dim == 1
        compiled = compiled_supported(law, p.law_facts)
        flags = {"PERIODIC": law.periodic, "HAS_FLUX": law.has_flux,
                 "HAS_VISCOUS": law.has_viscous, "HAS_SOURCE": law.has_source,
                 "SOURCE_SPLIT": False, "SOURCE_EXACT": False, "COMPILED": compiled}
        if compiled:
            imports = NUMBA_IMPORT
            kernels = compiled_block(law, p.law_facts, STAGES, compiled_implicit(law, p.law_facts)
                                     if law.has_viscous else "")
        else:  # NumPy only (fv_kernels says why): numba is not even imported
            d = d.with_(KERNEL="numpy")
            imports = ("\nUSE_NUMBA = False  # no compiled path for this problem (walls, 2D,"
                       " numerical eigenvalues)\nKERNEL_USED = \"numpy\"\n")
            kernels = ""
        return (problem_constants(p, flags) + fixed_axes(self, d, p) + imports + "\n\n"
                + physics_source(law, p.law_facts, implicit=implicit) + GRID + REFINE
                + FV_BLOCK + FV_DRIVER + (IMPLICIT_BLOCK if implicit else NO_IMPLICIT)
                + kernels + EVOLVE)

