"""Steady elliptic problems in 1D and 2D: a three- (five-) point finite-volume stencil and a sparse
direct solve, Newton's method for a nonlinear reaction.

``sum_a [-da(K_a da u) - N_a da(da u) + b_a da u] + r(u) = f`` with coefficients that may depend
on x, y, parameters and coefficient fields, and Dirichlet, Neumann or Robin conditions on each
side. Unknowns sit at the data points: cell centres (a wall half a cell away, ghost values
``u_g = alpha u_edge + beta`` that satisfy ``a u + b du/dn = g`` at the wall), or nodes (the
wall on the boundary node: Dirichlet rows, centred ghost nodes for Neumann and Robin). For
cell-centred data, ``GRID = "nodes"`` solves on a node grid and moves coefficients and solution
with cubic splines. ``SOLVER = "cg"`` (2D, divergence form, no convection) solves the symmetric
system by conjugate gradients to ``CG_TOL``, preconditioned by the exact inverse of the
constant-coefficient operator (geometric-mean conductivity per axis; a sine or cosine transform
per axis after the side types), so the iteration count follows max K / min K, not the grid:
~30 iterations at 1e-10 for a 12/3 coefficient on 421^2, against a sparse LU whose fill grows
faster than the unknowns. Where the matrix is not symmetric and definite, it solves directly.

Beyond the data grid's O(h^2) (:mod:`.elliptic_fv`): ``REFINE`` (odd) solves on a grid that many
times finer, every data point one of its points; ``EXTRAPOLATE = "richardson"`` combines the
REFINE - 2 and REFINE solutions to cancel the h^2 term (order 4 for a smooth solution, also with
a conductivity that jumps across a face of the data grid: the face means are exact there);
``FIELD_INTERP`` moves coefficient fields onto the finer grid (cubic spline, or piecewise
constant for a field with jumps). Where the data are point values of a field, the field's own
interpolation error bounds what any grid can reach (O(h^4) for a smooth field; a jump's position
is known only to within a data spacing).

Stability rule: none (no time stepping); with K > 0 the matrix is an M-matrix (central
convection keeps it one while the cell Peclet number |b| h / K < 2; ``CONVECTION = "upwind"``
keeps it one always).
"""

from __future__ import annotations

import math

from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.elliptic_problem import EllipticProblem
from pdesharp.builtin.families.common import fixed_axes, problem_constants
from pdesharp.builtin.families.elliptic_fv import BLOCK
from pdesharp.builtin.families.elliptic_source import DRIVER, coefficient_source

# the largest internal grid the moves propose (points; the solver lowers REFINE to stay within
# its own MAX_POINTS on larger inputs)
MAX_REFINED = {1: 1_000_000, 2: 250_000}


def max_refine(p: Problem) -> int:
    """The largest odd REFINE whose grid stays within MAX_REFINED on the data grid."""
    n = p.facts.get("n") or []
    if not n:
        return 1
    nodes = p.task.grid == "nodes"
    r = 1
    while math.prod((m - 1) * (r + 2) + 1 if nodes else m * (r + 2) for m in n) \
            <= MAX_REFINED.get(len(n), MAX_REFINED[2]):
        r += 2
    return r


class EllipticFamily(Family):
    name = "elliptic"
    axes = (
        Axis("GRID", "cells", ("cells", "nodes"),
             "cells: unknowns at the cell centres | nodes: node grid + splines back"),
        Axis("FACE_MEAN", "arithmetic", ("arithmetic", "harmonic"),
             "face value of a coefficient-field conductivity from its two cells"),
        Axis("CONVECTION", "central", ("central", "upwind"), "difference of b * du/dx"),
        Axis("NEWTON_TOL", 1e-10, (), "relative Newton step at which the nonlinear solve stops"),
        Axis("SOLVER", "direct", ("direct", "cg"),
             "direct: sparse LU | cg: conjugate gradients, fast-transform preconditioner (2D)"),
        Axis("CG_TOL", 1e-10, (), "relative residual at which conjugate gradients stop"),
        Axis("REFINE", 1, (), "internal grid REFINE (odd) times finer than the data's"),
        Axis("EXTRAPOLATE", "none", ("none", "richardson"),
             "richardson: combine the REFINE - 2 and REFINE solutions (cancels the h^2 error)"),
        Axis("FIELD_INTERP", "auto", ("auto", "spline", "clamped", "constant"),
             "coefficient fields on another grid: cubic spline | clamped (constant beyond the"
             " data) | piecewise constant (keeps a jump on a face) | auto (per field)"),
    )

    def applies(self, p: Problem) -> bool:
        return isinstance(p.struct, EllipticProblem)

    def relevant(self, p: Problem) -> list[str]:
        prob: EllipticProblem = p.struct
        out = []
        if p.task.grid == "cell_centres":
            out.append("GRID")
        if prob.field_conductivity:
            out.append("FACE_MEAN")
        if prob.has_convection:
            out.append("CONVECTION")
        if not prob.linear:
            out.append("NEWTON_TOL")
        if self._cg_applies(p):
            out += ["SOLVER", "CG_TOL"]
        out += ["REFINE", "EXTRAPOLATE"]
        if prob.uses_fields:
            out.append("FIELD_INTERP")
        return out

    @staticmethod
    def _cg_applies(p: Problem) -> bool:
        """A symmetric five-point matrix is possible: 2D, divergence form, no convection (the
        solver still checks symmetry and falls back to the direct solve)."""
        prob: EllipticProblem = p.struct
        return prob.dim == 2 and not prob.has_convection and all(n == 0 for n in prob.N)

    def key(self, d: Design, p: Problem) -> tuple:
        """REFINE as the solver uses it (at least 1, odd): 0 or 2 is not a new computation."""
        r = max(int(d["REFINE"]), 1)
        return super().key(d.with_(REFINE=r + 1 - r % 2), p)

    def active(self, d: Design, p: Problem) -> set[str]:
        act = set(self.relevant(p))
        if d["SOLVER"] != "cg":
            act.discard("CG_TOL")
        if d["REFINE"] <= 1:
            act.discard("EXTRAPOLATE")
            if not ("GRID" in act and d["GRID"] == "nodes"):  # fields stay where they are
                act.discard("FIELD_INTERP")
        return act

    @staticmethod
    def smooth(p: Problem) -> bool:
        """Can the formal order be claimed? Not where the conductivity is a data field: its
        jumps (Darcy's) leave the solution with kinks that no extrapolation removes."""
        return not p.struct.field_conductivity

    def candidates(self, p: Problem) -> list[Design]:
        rel = self.relevant(p)
        grids = ["cells", "nodes"] if "GRID" in rel else ["nodes"]
        means = ["arithmetic", "harmonic"] if "FACE_MEAN" in rel else ["arithmetic"]
        conv = ["central", "upwind"] if "CONVECTION" in rel else ["central"]
        if p.facts.get("cell_peclet", 0.0) >= 2.0:
            conv = conv[::-1]
        # CG first where it applies: the same discrete solution (to CG_TOL) at a fraction of
        # the direct solve's time on large grids
        solver = "cg" if "SOLVER" in rel else "direct"
        out = [self.design(GRID=g, FACE_MEAN=m, CONVECTION=c, SOLVER=solver) for m in means
               for g in grids for c in conv]
        if self.smooth(p) and max_refine(p) >= 3:  # beyond the data grid's h^2: order 4
            out += [d.with_(REFINE=3, EXTRAPOLATE="richardson") for d in out
                    if d["CONVECTION"] == "central"]
        return out

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        rel = self.relevant(p)
        out = []
        finer = []  # the accuracy axis: a finer grid, then the h^2 term cancelled
        r = max(int(d["REFINE"]), 1)
        r += 1 - r % 2  # as the solver uses it
        if strategy != "robust" and not failed:
            if r >= 3 and d["EXTRAPOLATE"] == "none" and d["CONVECTION"] == "central":
                finer.append(("EXTRAPOLATE", "richardson",
                              "Richardson extrapolation from two internal grids (order 4)"))
            nxt = 3 if r <= 1 else 2 * r - 1  # 1, 3, 5, 9, 17: the error falls ~(r'/r)^2
            if nxt <= max_refine(p):
                finer.append(("REFINE", nxt, f"a {nxt}x finer internal grid"))
        if "FACE_MEAN" in rel:
            out.append(("FACE_MEAN", "harmonic" if d["FACE_MEAN"] == "arithmetic" else "arithmetic",
                        "the other face average of the conductivity"))
        if "GRID" in rel:
            out.append(("GRID", "nodes" if d["GRID"] == "cells" else "cells",
                        "the other grid convention"))
        if "CONVECTION" in rel:
            out.append(("CONVECTION", "upwind" if d["CONVECTION"] == "central" else "central",
                        "the other convection difference"))
        if "NEWTON_TOL" in rel:
            out.append(("NEWTON_TOL", d["NEWTON_TOL"] / 100, "a tighter Newton tolerance"))
        if "SOLVER" in rel and d["SOLVER"] == "cg":
            if strategy == "robust":
                out.append(("CG_TOL", d["CG_TOL"] * 100, "a looser CG tolerance (fewer iterations)"))
            elif d["CG_TOL"] > 1e-9:  # at 1e-10 the iteration error is far below the grid's
                out.append(("CG_TOL", d["CG_TOL"] / 100, "a tighter CG tolerance"))
        if "SOLVER" in rel:
            out.append(("SOLVER", "direct" if d["SOLVER"] == "cg" else "cg",
                        "the sparse direct solve" if d["SOLVER"] == "cg" else
                        "preconditioned conjugate gradients (faster on large grids)"))
        # last in every strategy: "auto" already picks per field (a spline across a jump
        # overshoots it; piecewise constant costs a smooth field its order)
        fields = [("FIELD_INTERP", v, f"{v} interpolation of the coefficient fields")
                  for v in ("constant", "spline") if v != d["FIELD_INTERP"]] \
            if "FIELD_INTERP" in self.active(d, p) else []
        if strategy == "robust":
            if r > 1:  # cheaper: the next coarser internal grid
                out.append(("REFINE", max(1, (r + 1) // 2 | 1) if r > 3 else 1,
                            "a coarser internal grid (cheaper)"))
            return out[::-1] + fields
        return finer + out + fields

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        rel = self.relevant(p)
        if d["REFINE"] > 1 and status in ("timeout", "memory"):
            return {"REFINE": 1, "EXTRAPOLATE": "none"}
        if "SOLVER" in rel and d["SOLVER"] == "cg":
            return {"SOLVER": "direct"}
        if "CONVECTION" in rel and d["CONVECTION"] == "central":
            return {"CONVECTION": "upwind"}
        if "GRID" in rel:
            return {"GRID": "cells" if d["GRID"] == "nodes" else "nodes"}
        return {}

    def title(self, d: Design, p: Problem) -> str:
        rel = self.relevant(p)
        act = self.active(d, p)
        grid = d["GRID"] if "GRID" in rel else "nodes"
        pts = "three-point" if p.dim == 1 else "five-point"
        parts = [f"{pts} finite volumes on the {'cell centres' if grid == 'cells' else 'nodes'}"
                 + (f" of a {d['REFINE']}x finer grid" if d["REFINE"] > 1 else "")
                 + (" (splines to and from the data points)" if grid == "nodes" and "GRID" in rel
                    else "")]
        if "EXTRAPOLATE" in act and d["EXTRAPOLATE"] == "richardson":
            parts.append(f"Richardson extrapolation from the {d['REFINE'] - 2}x and"
                         f" {d['REFINE']}x grids")
        if "FACE_MEAN" in rel:
            parts.append(f"{d['FACE_MEAN']} face means")
        if "FIELD_INTERP" in act:
            parts.append({"spline": "spline", "clamped": "clamped-spline",
                          "constant": "piecewise-constant",
                          "auto": "spline (or, with jumps, piecewise-constant)"}[d["FIELD_INTERP"]]
                         + " coefficient fields")
        if "CONVECTION" in rel:
            parts.append(f"{d['CONVECTION']} convection")
        if "SOLVER" in rel and d["SOLVER"] == "cg":
            parts.append(f"preconditioned CG (tolerance {d['CG_TOL']:.0e})")
        else:
            parts.append("sparse direct solve")
        if not p.struct.linear:
            parts.append("Newton iteration")
        return ", ".join(parts)

    def orders(self, d: Design, p: Problem):
        upwind = "CONVECTION" in self.relevant(p) and d["CONVECTION"] == "upwind"
        order = 1 if upwind else 2
        if "EXTRAPOLATE" in self.active(d, p) and d["EXTRAPOLATE"] == "richardson" \
                and self.smooth(p):
            order *= 2
        return (order, 8)

    def cost(self, d: Design, p: Problem) -> float:
        base = 0.02 if "SOLVER" in self.relevant(p) and d["SOLVER"] == "cg" else 0.05
        r, dim = d["REFINE"], p.dim
        work = r**dim + ((r - 2) ** dim if "EXTRAPOLATE" in self.active(d, p)
                         and d["EXTRAPOLATE"] == "richardson" else 0)
        return base * work

    def render(self, d: Design, p: Problem) -> str:
        prob: EllipticProblem = p.struct
        flags = {"LINEAR": prob.linear, "FIELD_K": prob.field_conductivity,
                 "DATA_ON_NODES": p.task.grid == "nodes"}
        return (problem_constants(p, flags) + fixed_axes(self, d, p) + "\n\n"
                + coefficient_source(prob) + BLOCK + DRIVER)
