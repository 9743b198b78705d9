"""The structure of a task's PDE, read symbolically: a balance law (time-dependent) or an
elliptic problem (steady); :class:`UnsupportedTask` names what is outside the catalogue."""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw, balance_law
from pdesharp.builtin.constraint import ConstrainedLaw, constrained_law, has_constraints
from pdesharp.builtin.steady_system import SteadySystem, steady_system
from pdesharp.builtin.elliptic_problem import EllipticProblem, elliptic_problem
from pdesharp.builtin.refusal import LLM_HINT, UnsupportedTask
from pdesharp.task import Task

__all__ = ["BalanceLaw", "ConstrainedLaw", "EllipticProblem", "SteadySystem", "LLM_HINT", "UnsupportedTask", "structure"]

_CACHE: dict[str, BalanceLaw | EllipticProblem | ConstrainedLaw | SteadySystem
             | UnsupportedTask] = {}


def structure(task: Task) -> BalanceLaw | EllipticProblem | ConstrainedLaw | SteadySystem:
    """The task's structure (cached per task spec), or UnsupportedTask naming why not."""
    key = task.model_dump_json()
    if key not in _CACHE:
        try:
            _refuse_unprintable(task)
            if has_constraints(task):  # equations without dt: solved or projected per mode
                got = constrained_law(task)
            elif task.steady and len(task.system.unknowns) > 1:
                got = steady_system(task)
            else:
                got = elliptic_problem(task) if task.steady else balance_law(task)
            if not task.steady and isinstance(got, BalanceLaw):
                _refuse_unprintable_law(got)
            _CACHE[key] = got
        except UnsupportedTask as exc:
            _CACHE[key] = exc
    got = _CACHE[key]
    if isinstance(got, UnsupportedTask):
        raise UnsupportedTask.said(str(got))
    return got


def _refuse_unprintable(task: Task) -> None:
    """A function the generated NumPy/SciPy code cannot evaluate is refused before any design."""
    from pdesharp.builtin.physics import unprintable

    for i, expr in enumerate(task.system.exprs):
        if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise UnsupportedTask(f"an infinite or undefined constant in equation {i + 1} (such as"
                                  " cot(pi) or 1/0, which evaluate to complex infinity)",
                                  hint="write finite numbers")
        name = unprintable(expr)
        if name:
            raise UnsupportedTask(f"the function {name}(...) in the equation: the generated "
                                  "solvers evaluate NumPy and scipy.special functions only")


def _refuse_unprintable_law(law: BalanceLaw) -> None:
    """Differentiating a term by the chain rule can make what no array code evaluates: the
    derivative of sign(...), Heaviside(...) or of a Piecewise jump is a Dirac delta."""
    from pdesharp.builtin.physics import unprintable

    from pdesharp.builtin.jets import almost_everywhere

    exprs = [e for row in law.flux + law.viscous for e in row] + law.source + law.extra
    # and their derivatives in the unknowns (wave speeds, source rates: a.e. derivatives)
    exprs += [almost_everywhere(sp.diff(e, w)) for e in exprs[:] for w in law.prims]
    for e in exprs:
        name = unprintable(e)
        if name:
            raise UnsupportedTask(
                f"a term whose derivative is {name}(...) (the derivative of sign, Heaviside or"
                " a Piecewise jump taken inside a derivative): the generated solvers evaluate"
                " functions, not distributions", hint="llm")
