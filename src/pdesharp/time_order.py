"""Second time derivatives rewritten as a first-order system.

``dt(u, 2) = c**2*dx(u, 2)`` becomes ``dt(u) = u_t, dt(u_t) = c**2*dx(u, 2)``: every time
derivative of ``u`` of order m >= 1 outside the defining equation is replaced by the derivative of
order m - 1 of the velocity (a damping term ``gamma*dt(u)`` becomes ``gamma*u_t``, a Kelvin-Voigt
term ``dt(dx(u, 2))`` becomes ``dx(u_t, 2)``).

The velocity is an unknown the task already declares when one equation reads ``dt(u) = v``
(``dt(u) - v``), so its initial data come from the task; otherwise a new unknown ``u_t`` is
introduced, and since the task then gives no initial velocity, the solution starts at rest
(``u_t = 0`` at t = 0). Both the built-in analyst and the generic data generator use this
rewrite, so they agree on that convention (docs/tasks.md states it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from pdesharp.equation import ParsedSystem


class TimeOrderError(ValueError):
    """The time derivatives cannot be reduced to first order; the message names the term."""


@dataclass(frozen=True)
class Reduction:
    system: ParsedSystem  # first order in time
    velocities: dict  # unknown -> its velocity unknown
    introduced: tuple  # velocity unknowns added by the rewrite (they start at zero)
    notes: tuple = ()

    @property
    def changed(self) -> bool:
        return bool(self.velocities)


def _t_order(d: sp.Derivative, t) -> int:
    return sum(int(n) for v, n in d.variable_count if v == t)


def reduce_time_order(system: ParsedSystem) -> Reduction:
    """The first-order form of ``system`` (``system`` itself when nothing needs rewriting)."""
    t = system.t
    if t is None:
        return Reduction(system, {}, ())
    funcs = {n: system.function(n) for n in system.unknowns}
    order: dict[str, int] = {}
    for i, e in enumerate(system.exprs):
        for d in e.atoms(sp.Derivative):
            m = _t_order(d, t)
            if not m:
                continue
            owner = [n for n, f in funcs.items() if d.expr == f]
            if m > 1 and not owner:
                raise TimeOrderError(
                    f"equation {i + 1}: {d} differentiates an expression twice in time; write the"
                    " second time derivative of a single unknown, e.g. dt(u, 2)")
            for n in owner:
                order[n] = max(order.get(n, 0), m)
    high = [n for n, m in order.items() if m >= 2]
    if not high:
        return Reduction(system, {}, ())
    for n in high:
        if order[n] > 2:
            raise TimeOrderError(f"{n} has a time derivative of order {order[n]}; the rewrite to a"
                                 " first-order system handles order 2")
    names = list(system.unknowns)
    exprs = list(system.exprs)
    velocities, introduced, notes = {}, [], []
    for n in high:
        f = funcs[n]
        found = _declared_velocity(exprs, f, t, funcs)
        if found is not None:
            i, v = found
            velocities[n] = v
            notes.append(f"dt({n}, 2) rewritten with the declared velocity {v} (equation {i + 1}:"
                         f" dt({n}) = {v})")
            defining = i
        else:
            v = f"{n}_t"
            while v in names or v in system.parameters or v in system.coefficients:
                v += "_"
            names.append(v)
            velocities[n] = v
            introduced.append(v)
            exprs.append(sp.Derivative(f, t) - sp.Function(v)(t, *system.coords))
            defining = len(exprs) - 1
            notes.append(f"dt({n}, 2) rewritten as the first-order system dt({n}) = {v},"
                         f" dt({v}) = ...; the task gives no initial velocity, so {v} = 0 at t = 0"
                         f" (declare an unknown v with an equation dt({n}) = v to pass one)")
        fv = sp.Function(v)(t, *system.coords)
        for i, e in enumerate(exprs):
            if i == defining:
                continue
            exprs[i] = e.xreplace({d: _lower(d, fv, t) for d in e.atoms(sp.Derivative)
                                   if d.expr == f and _t_order(d, t) >= 1})
    new = replace(system, unknowns=tuple(names), exprs=tuple(exprs))
    return Reduction(new, velocities, tuple(introduced), tuple(notes))


def _lower(d: sp.Derivative, fv, t) -> sp.Expr:
    """The derivative ``d`` of u with one time derivative taken off and applied to v = u_t."""
    counts = []
    dropped = False
    for var, n in d.variable_count:
        if var == t and not dropped:
            n, dropped = int(n) - 1, True
        if n:
            counts.append((var, n))
    return sp.Derivative(fv, *counts) if counts else fv


def _declared_velocity(exprs, f, t, funcs) -> tuple[int, str] | None:
    """An equation ``c*(dt(u) - v)`` with v another unknown: (its index, v)."""
    dtu = sp.Derivative(f, t)
    for i, e in enumerate(exprs):
        e = sp.expand(e)
        c = e.coeff(dtu)
        if c == 0 or c.has(sp.Derivative) or any(c.has(g) for g in funcs.values()):
            continue
        rest = sp.simplify(-(e - c * dtu) / c)
        for name, g in funcs.items():
            if g != f and rest == g:
                return i, name
    return None
