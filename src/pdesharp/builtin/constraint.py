"""A time-dependent system with constraints: equations without a time derivative.

Two kinds of constraint, read by the algebra of the terms (never by a task's name):

* **elliptic**: an equation linear with constant coefficients in unknowns that have no time
  derivative, ``A psi = F(w, dw, x, t)`` (the streamfunction of 2D Navier-Stokes in vorticity form,
  ``dx(psi, 2) + dy(psi, 2) = -w``; the chemical of Keller-Segel, ``dx(c, 2) - c + u = 0``; the
  potential of Vlasov- or drift-Poisson systems; reduced MHD's current ``j = dx(A, 2) + ...``). It
  is solved per mode at every stage: ``psi = A(k)^-1 F``.
* **projection**: an equation linear with constant coefficients in the evolved unknowns only,
  ``D w = 0`` (incompressibility ``dx(u) + dy(v) = 0``), with a multiplier, the pressure, that
  appears in no constraint and linearly with constant coefficients in the evolved equations
  (``G p``: ``-dx(p)``). The rate is projected onto ``D w = 0``: ``p = -(D G)^-1 D rate``.

The evolved equations are ``M dt w = R``: ``M`` constant, ``R`` split into a linear
constant-coefficient part in the evolved unknowns (exact in the modes), the pressure terms and a
remainder evaluated pointwise (jets of every unknown but the pressures).

Bases: Fourier modes on periodic axes, sines and cosines between homogeneous Dirichlet or Neumann
walls (one parity per unknown and axis, propagated along the linear couplings as in
:mod:`.families.bases`); anything else is refused in one line naming the condition.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from pdesharp.boundary import BoundarySpec
from pdesharp.builtin.jets import Jets, jets_of, linear_constant_part
from pdesharp.builtin.parity import propagate
from pdesharp.builtin.refusal import UnsupportedTask, boundary_or_refuse, notation
from pdesharp.task import Task


@dataclass
class ConstrainedLaw:
    names: list[str]  # evolved unknowns, then the elliptic ones, then the pressures
    n_evolved: int
    n_elliptic: int
    n_pressure: int
    coords: list[sp.Symbol]
    t: sp.Symbol
    params: list[sp.Symbol]
    boundary: BoundarySpec
    jets: Jets
    lin: list = field(default_factory=list)  # (orders, Matrix NE x NE): linear part of dt w
    rest: list = field(default_factory=list)  # NE remainders, in jets
    grad: list = field(default_factory=list)  # (orders, Matrix NE x NP): pressure terms G
    elliptic: list = field(default_factory=list)  # (orders, Matrix NC x NC): A
    elliptic_rhs: list = field(default_factory=list)  # NC: F, in jets of the evolved unknowns
    div: list = field(default_factory=list)  # (orders, Matrix NP x NE): D
    kinds: list[str] = field(default_factory=list)  # per axis: fourier | integer | half
    parity: list[tuple[str, ...]] = field(default_factory=list)  # per unknown, then per A row
    notes: list[str] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return len(self.coords)

    @property
    def periodic(self) -> bool:
        return self.boundary.all_periodic

    @property
    def evolved(self) -> list[str]:
        return self.names[:self.n_evolved]

    @property
    def constrained(self) -> list[str]:
        return self.names[self.n_evolved:]

    def kind(self) -> str:
        parts = (["elliptic"] if self.n_elliptic else []) + (
            ["projection"] if self.n_pressure else [])
        return " and ".join(parts)


def has_constraints(task: Task) -> bool:
    """A time-dependent task in which some equations have a time derivative (of any order, in
    any position) and others none."""
    if task.steady:
        return False
    t = task.system.t
    timed = [any(t in d.variables for d in e.atoms(sp.Derivative)) for e in task.system.exprs]
    return any(timed) and not all(timed)


def constrained_law(task: Task) -> ConstrainedLaw:
    """Read ``task`` (which :func:`has_constraints`), or raise :class:`UnsupportedTask`."""
    system = task.system
    if len(system.exprs) != len(system.unknowns):
        raise UnsupportedTask(f"{len(system.exprs)} equations for {len(system.unknowns)}"
                              " unknowns", hint="give one equation per unknown")
    if system.coefficients:
        raise UnsupportedTask("coefficient fields in a time-dependent problem",
                              hint="write the coefficient as an expression of x")
    bc = boundary_or_refuse(task)
    funcs = {n: system.function(n) for n in system.unknowns}
    dynamic, static, inside = [], [], []
    for i in range(len(system.exprs)):
        q, rest = system.split_time_derivative(i)
        if q == 0 and any(system.t in d.variables for d in rest.atoms(sp.Derivative)):
            raise UnsupportedTask(f"a time derivative of order 2 or more, or inside another"
                                  f" expression, in equation {i + 1} (with constraints or in 3D)",
                                  hint="write it as a first-order system in time")
        if q == 0:
            static.append((i, rest))
            continue
        if any(system.t in d.variables for d in rest.atoms(sp.Derivative)):
            raise UnsupportedTask(f"a time derivative left in equation {i + 1} besides dt(...)",
                                  hint="llm")
        dynamic.append((i, q, rest))
        inside += [n for n in system.unknowns if q.has(funcs[n]) and n not in inside]
    evolved = [n for n in system.unknowns if n in inside]
    others = [n for n in system.unknowns if n not in inside]
    if len(evolved) != len(dynamic):
        raise UnsupportedTask(f"{len(dynamic)} equations with a time derivative for the"
                              f" {len(evolved)} unknowns inside dt(...)", hint="llm")
    in_static = {n for _, e in static for n in others if e.has(funcs[n])}
    elliptic = [n for n in others if n in in_static]
    pressure = [n for n in others if n not in in_static]
    names = evolved + elliptic + pressure
    coords, t = list(system.coords), system.t
    jets = jets_of(names, coords, [funcs[n] for n in names])
    ne, nc, npr = len(evolved), len(elliptic), len(pressure)
    law = ConstrainedLaw(names=names, n_evolved=ne, n_elliptic=nc, n_pressure=npr,
                         coords=coords, t=t,
                         params=[sp.Symbol(p, real=True) for p in system.parameters],
                         boundary=bc, jets=jets)
    syms = {n: jets.symbol(j, (0,) * len(coords)) for j, n in enumerate(names)}
    free = [*coords, t]
    # evolved equations: M dt w = -rest
    qs = sp.Matrix([jets.convert(q) for _, q, _ in dynamic])
    M = qs.jacobian([syms[n] for n in evolved])
    if M.has(*jets.table, *free) or any(sp.expand(e) != 0 for e in
                                        qs - M * sp.Matrix([syms[n] for n in evolved])):
        raise UnsupportedTask("a time derivative of a nonlinear or space-dependent expression in"
                              " a system with constraints", hint="write dt(u) of each unknown")
    if M.det() == 0:
        raise UnsupportedTask("time derivatives that do not determine the evolved unknowns",
                              hint="")
    rates = M.inv() * sp.Matrix([-jets.convert(r) for _, _, r in dynamic])
    lin: dict[tuple, sp.Matrix] = {}
    grad: dict[tuple, sp.Matrix] = {}
    for i in range(ne):
        terms, other = linear_constant_part(sp.expand(rates[i]), jets, free)
        for c, j, orders in terms:
            if j < ne:
                lin.setdefault(tuple(orders), sp.zeros(ne, ne))[i, j] += c
            elif j >= ne + nc:
                grad.setdefault(tuple(orders), sp.zeros(ne, npr))[i, j - ne - nc] += c
            else:  # a linear term in an elliptic unknown (beta*dx(psi)): pointwise, explicit
                other += c * jets.symbol(j, orders)
        if _uses(other, jets, range(ne + nc, ne + nc + npr)):
            raise UnsupportedTask(
                f"the pressure-like unknown(s) {pressure} inside a nonlinear or variable"
                f" coefficient term of equation {dynamic[i][0] + 1}: a multiplier of a"
                " constraint must enter linearly with constant coefficients", hint="llm")
        law.rest.append(other)
    law.lin = [(o, m) for o, m in lin.items() if any(e != 0 for e in m)]
    law.grad = [(o, m) for o, m in grad.items() if any(e != 0 for e in m)]
    if npr and not law.grad:
        raise UnsupportedTask(f"the unknown(s) {pressure} that appear in no equation with a"
                              " derivative (nothing determines them)", hint="")
    # constraints
    ell: dict[tuple, sp.Matrix] = {}
    div: dict[tuple, sp.Matrix] = {}
    rows_e = rows_d = 0
    for i, expr in static:
        e = sp.expand(jets.convert(expr))
        terms, other = linear_constant_part(e, jets, free)
        mine = [(c, j, o) for c, j, o in terms if ne <= j < ne + nc]
        if mine or _uses(e, jets, range(ne, ne + nc)):
            if rows_e >= nc:
                raise UnsupportedTask("more elliptic constraints than constrained unknowns",
                                      hint="")
            for c, j, o in mine:
                ell.setdefault(tuple(o), sp.zeros(nc, nc))[rows_e, j - ne] += c
            rhs = -(e - sum((c * jets.symbol(j, o) for c, j, o in mine), sp.Integer(0)))
            if _uses(rhs, jets, range(ne, ne + nc + npr)):
                raise UnsupportedTask(
                    f"the constraint {notation(expr)} = 0 (equation {i + 1}): it is not linear"
                    " with constant coefficients in the unknowns without a time derivative",
                    hint="llm")
            law.elliptic_rhs.append(sp.expand(rhs))
            rows_e += 1
            continue
        if _uses(e, jets, range(ne, ne + nc + npr)) or sp.expand(other) != 0:
            raise UnsupportedTask(
                f"the constraint {notation(expr)} = 0 (equation {i + 1}): a constraint on the"
                " evolved unknowns alone must be linear with constant coefficients and"
                " homogeneous (such as dx(u) + dy(v) = 0)", hint="llm")
        if rows_d >= npr:
            raise UnsupportedTask(f"the constraint {notation(expr)} = 0 (equation {i + 1})"
                                  " without an unknown (a pressure) to enforce it", hint="")
        for c, j, o in terms:
            div.setdefault(tuple(o), sp.zeros(npr, ne))[rows_d, j] += c
        rows_d += 1
    law.elliptic = [(o, m) for o, m in ell.items() if any(x != 0 for x in m)]
    law.div = [(o, m) for o, m in div.items() if any(x != 0 for x in m)]
    if rows_e != nc or rows_d != npr:
        raise UnsupportedTask("constraints that do not determine the unknowns without a time"
                              f" derivative ({rows_e} elliptic constraints for {elliptic},"
                              f" {rows_d} projection constraints for {pressure})", hint="")
    _bases(law, task)
    return law


def _uses(e, jets: Jets, which) -> bool:
    which = set(which)
    return any(jets.of(s) is not None and jets.of(s)[0] in which for s in
               sp.sympify(e).free_symbols)


def _edges(law: ConstrainedLaw) -> list[tuple[int, int, tuple]]:
    """(node, node, orders) of the linear couplings: nodes are the unknowns, then the rows of A
    (an elliptic equation), then the rows of D."""
    n, nc = len(law.names), law.n_elliptic
    ne = law.n_evolved
    out = []
    for o, m in law.lin:
        out += [(i, j, o) for i in range(ne) for j in range(ne) if m[i, j] != 0]
    for o, m in law.grad:
        out += [(i, ne + nc + p, o) for i in range(ne) for p in range(law.n_pressure)
                if m[i, p] != 0]
    for o, m in law.elliptic:
        out += [(n + k, ne + j, o) for k in range(nc) for j in range(nc) if m[k, j] != 0]
    zero = (0,) * law.dim
    for k, rhs in enumerate(law.elliptic_rhs):  # F's linear terms: F = -w pairs psi with w
        terms, _ = linear_constant_part(rhs, law.jets, [*law.coords, law.t])
        out += [(n + k, j, o) for _, j, o in terms]
        if not terms:
            out += [(n + k, j, zero) for j in range(ne) if _uses(rhs, law.jets, [j])]
    for o, m in law.div:
        out += [(n + nc + d, j, o) for d in range(law.n_pressure) for j in range(ne)
                if m[d, j] != 0]
    return out


def _bases(law: ConstrainedLaw, task: Task) -> None:
    """Per axis the basis kind and per unknown (then per elliptic row) the parity; raises
    UnsupportedTask when the walls admit no sine/cosine basis."""
    bc = law.boundary
    nodes = len(law.names) + law.n_elliptic + law.n_pressure
    edges = _edges(law)
    parity: list[list[str]] = [[] for _ in range(nodes)]
    for a, coord in enumerate(law.coords):
        axis = str(coord)
        if axis in bc.periodic:
            law.kinds.append("fourier")
            for p in parity:
                p.append("")
            continue
        got: list[str | None] = [None] * nodes
        kinds = set()
        for j, u in enumerate(law.names):
            sides = [bc.condition(u, axis, s) for s in (0, 1)]
            if all(c is None for c in sides):
                continue
            if any(c is None for c in sides):
                raise UnsupportedTask(f"a condition for {u} at one end of {axis} only (with"
                                      " constraints or in 3D)", hint="state it at both ends")
            kind = []
            for c in sides:
                if c.g != 0 or (c.a != 0 and c.b != 0):
                    raise UnsupportedTask(
                        f"the condition {c.text!r} with constraints or in a 3D box: the catalogue"
                        " takes them in sine/cosine modes, between homogeneous Dirichlet or"
                        " Neumann walls", hint="homogeneous Dirichlet or Neumann walls")
                kind.append("D" if c.b == 0 else "N")
            kinds.add("integer" if kind[0] == kind[1] else "half")
            got[j] = "sin" if kind[0] == "D" else "cos"
        if len(kinds) > 1:
            raise UnsupportedTask("walls where some unknowns have the same kind of condition at"
                                  f" both ends of {axis} and others not", hint="llm")
        j = propagate(got, edges, a)
        if j is not None:
            raise UnsupportedTask(
                f"walls on {axis} whose conditions contradict the couplings of the"
                f" equations ({law.names[min(j, len(law.names) - 1)]}): no common"
                " sine/cosine basis", hint="llm")
        law.kinds.append(kinds.pop() if kinds else "integer")
        for p, g in zip(parity, got):
            p.append(g or "cos")
    law.parity = [tuple(p) for p in parity]
