"""The structure of a task's PDE, read symbolically: a balance law (time-dependent) or an
elliptic problem (steady); :class:`UnsupportedTask` names what is outside the catalogue."""

from __future__ import annotations

from pdesharp.builtin.balance_law import BalanceLaw, balance_law
from pdesharp.builtin.elliptic_problem import EllipticProblem, elliptic_problem
from pdesharp.builtin.refusal import LLM_HINT, UnsupportedTask
from pdesharp.task import Task

__all__ = ["BalanceLaw", "EllipticProblem", "LLM_HINT", "UnsupportedTask", "structure"]

_CACHE: dict[str, BalanceLaw | EllipticProblem | UnsupportedTask] = {}


def structure(task: Task) -> BalanceLaw | EllipticProblem:
    """The task's structure (cached per task spec), or UnsupportedTask naming why not."""
    key = task.model_dump_json()
    if key not in _CACHE:
        try:
            _refuse_unprintable(task)
            _CACHE[key] = elliptic_problem(task) if task.steady else balance_law(task)
        except UnsupportedTask as exc:
            _CACHE[key] = exc
    got = _CACHE[key]
    if isinstance(got, UnsupportedTask):
        raise UnsupportedTask(got.reason, got.hint)
    return got


def _refuse_unprintable(task: Task) -> None:
    """A function the generated NumPy/SciPy code cannot evaluate is refused before any design."""
    from pdesharp.builtin.physics import unprintable

    for expr in task.system.exprs:
        name = unprintable(expr)
        if name:
            raise UnsupportedTask(f"the function {name}(...) in the equation: the generated "
                                  "solvers evaluate NumPy and scipy.special functions only")
