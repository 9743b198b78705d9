"""A steady system of several unknowns given by formulas: ``F_i(w, dw, d2w, ..., x, y) = 0`` on a
box with conditions on its sides, some of which may couple unknowns (``dx(w) - theta = 0`` at a
beam's end). Coupled elliptic systems, Stokes flow (``-mu*lap(u) + dx(p) = f``, ..., ``dx(u) +
dy(v) = 0``: a pressure with no condition anywhere, fixed to zero mean) and boundary-layer
equations with a marching direction (an unknown with a condition at one end of an axis only: the
equation holds at the other end) are all read this way: every equation in jets of every unknown,
solved by Chebyshev collocation with Newton's method (:mod:`.families.collocation_system`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from pdesharp.boundary import BoundarySpec
from pdesharp.builtin.jets import Jets, jets_of
from pdesharp.builtin.refusal import UnsupportedTask, boundary_or_refuse
from pdesharp.task import Task


@dataclass
class SteadySystem:
    names: list[str]
    coords: list[sp.Symbol]
    params: list[sp.Symbol]
    boundary: BoundarySpec
    jets: Jets
    residual: list[sp.Expr] = field(default_factory=list)  # per equation, in jets
    notes: list[str] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return len(self.coords)

    @property
    def free(self) -> list[str]:
        """Unknowns with no condition on any side (a pressure): fixed to zero mean."""
        return [u for u in self.names if not any(
            c.unknown == u or any(o[0] == u for o in c.others) for c in self.boundary.conditions)]

    def one_end(self) -> list[str]:
        """'u along x' for an unknown with a condition at one end of an axis only (a marching
        direction)."""
        missing = set(self.boundary.missing(self.names))
        return sorted(f"{u} along {a}" for u in self.names for a in map(str, self.coords)
                      if ((u, a, 0) in missing) != ((u, a, 1) in missing))

    @property
    def linear(self) -> bool:
        syms = list(self.jets.table)
        return all(sp.sympify(e).is_polynomial(*syms) and sp.Poly(e, *syms).total_degree() <= 1
                   for e in self.residual if e != 0)


def steady_system(task: Task) -> SteadySystem:
    """Read a steady task of several unknowns, or raise :class:`UnsupportedTask`."""
    system = task.system
    if system.coefficients:
        raise UnsupportedTask(f"coefficient fields {list(system.coefficients)} in a steady system",
                              hint="write the coefficients as formulas of x and y")
    if len(system.exprs) != len(system.unknowns):
        raise UnsupportedTask(f"{len(system.exprs)} equations for {len(system.unknowns)}"
                              " unknowns", hint="give one equation per unknown")
    if len(system.space) not in (1, 2):
        raise UnsupportedTask(f"a steady system in {len(system.space)} space dimensions (the"
                              " collocation family covers 1 and 2)", hint="llm")
    if not any(a.kind == "grid" for a in task.solver.args) or any(
            a.kind in ("initial", "coefficient") for a in task.solver.args):
        raise UnsupportedTask("a steady system whose solver does not take the output grid",
                              hint="give the solver a grid argument (kind: grid)")
    bc = boundary_or_refuse(task, coupled=True)
    if bc.periodic:
        raise UnsupportedTask(f"a steady system periodic in {', '.join(bc.periodic)}",
                              hint="state conditions on every side")
    names = list(system.unknowns)
    coords = list(system.coords)
    jets = jets_of(names, coords, [system.function(n) for n in names])
    law = SteadySystem(names=names, coords=coords,
                       params=[sp.Symbol(p, real=True) for p in system.parameters],
                       boundary=bc, jets=jets)
    for i, expr in enumerate(system.exprs):
        try:
            e = sp.expand(jets.convert(expr))
        except ValueError as exc:
            raise UnsupportedTask(f"equation {i + 1}: {exc}", hint="llm") from None
        if e.atoms(sp.Derivative) or e.atoms(sp.Function) & set(jets.funcs):
            raise UnsupportedTask(f"equation {i + 1}: a term the collocation cannot read",
                                  hint="llm")
        law.residual.append(e)
    one_end = law.one_end()
    if one_end and not law.linear:
        raise UnsupportedTask(
            f"a nonlinear steady system with a marching direction (conditions at one end only"
            f" for {', '.join(one_end)}): Newton's method on the global collocation does not"
            " reliably find the marching solution (linear ones are supported)", hint="llm")
    order = max(jets.order(law.residual), 1)
    if order > 4:
        raise UnsupportedTask(f"derivatives of order {order} in a steady system", hint="llm")
    if law.free:
        law.notes.append(f"{', '.join(law.free)} has no condition on any side: it is determined"
                         " up to a constant, fixed here to zero mean over the domain")
    return law
