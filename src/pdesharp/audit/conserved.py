"""Quantities a task's PDE conserves, read off its equations.

An equation ``dt(q) + rest = 0`` whose ``rest`` is a sum of constant multiples of space
derivatives (a divergence: ``dx(u**2/2) - nu*dx(u, 2)``, or the CNS fluxes) conserves the domain
integral of q under periodic boundaries. Terms that are not derivatives (a reaction ρu(1 − u), a
damping −γu) break it, and the equation is skipped. This is a syntactic test on the task's own
conservative form: ``u*dx(u)`` is not recognised as the derivative it is, so a quantity may be
missed but never claimed wrongly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy as sp

from pdesharp.equation import EquationError, array_function
from pdesharp.task import Task


@dataclass(frozen=True)
class Conserved:
    name: str  # e.g. "mean of rho*v"
    expression: str  # q as SymPy prints it
    evaluate: Callable[[dict[str, np.ndarray]], np.ndarray]  # fields -> q, same shape


def _is_divergence(rest: sp.Expr, coords: tuple[sp.Symbol, ...], funcs: list[sp.Expr]) -> bool:
    terms = sp.Add.make_args(sp.expand(rest, deep=False, mul=True, multinomial=False))
    for term in terms:
        if term == 0:
            continue
        factors = sp.Mul.make_args(term)
        derivs = [f for f in factors if isinstance(f, sp.Derivative)]
        if len(derivs) != 1 or not all(v in coords for v in derivs[0].variables):
            return False
        others = [f for f in factors if f is not derivs[0]]
        if any(f.has(*coords) or any(f.has(g) for g in funcs) for f in others):
            return False
    return True


def conserved_quantities(task: Task) -> list[Conserved]:
    """The integrals the PDE conserves (periodic, time-dependent tasks only; else none)."""
    if task.steady or not task.boundary.strip().lower().startswith("periodic"):
        return []
    system = task.system
    funcs = [system.function(n) for n in system.unknowns]
    symbols = [sp.Symbol(f"_q_{n}", real=True) for n in system.unknowns]
    values = {sp.Symbol(k, real=True): sp.Float(v) for k, v in task.constants.items()}
    out: list[Conserved] = []
    for i in range(len(system.exprs)):
        try:
            q, rest = system.split_time_derivative(i)
        except EquationError:
            continue
        if q == 0 or not _is_divergence(rest, system.coords, funcs):
            continue
        printable = q.xreplace({f: sp.Symbol(n) for f, n in zip(funcs, system.unknowns)})
        numeric = q.xreplace(dict(zip(funcs, symbols))).xreplace(values)
        if numeric.free_symbols - set(symbols):  # q involves x or t explicitly: not a density
            continue
        fn = array_function(symbols, numeric)
        names = system.unknowns

        def evaluate(fields: dict[str, np.ndarray], fn=fn, names=names) -> np.ndarray:
            args = [np.asarray(fields[n], dtype=np.float64) for n in names]
            return np.broadcast_to(np.asarray(fn(*args), dtype=np.float64), args[0].shape)

        out.append(Conserved(name=f"mean of {printable}", expression=str(printable),
                             evaluate=evaluate))
    return out
