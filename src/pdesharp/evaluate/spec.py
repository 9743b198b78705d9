"""The slice of a :class:`~pdesharp.task.Task` that running a solver needs (no SymPy, no data).

``ChildSpec.arg_refs()`` gives the solver's positional arguments in the sealed child's form:
``("array", key)`` for an input array (``initial:<f>``, ``coefficient:<f>``, ``time``, and a 1D
``grid``: ``grid:x``), ``("arrays", [key, ...])`` for a tuple of arrays (a 2D ``grid``:
``(x, y)``) or ``("scalar", value)`` for a parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pdesharp.grid import GRID_KEY


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str
    field: str | None = None


@dataclass
class ChildSpec:
    name: str
    steady: bool
    solver_name: str
    args: list[Arg]
    returns: list[str]
    parameters: dict[str, float]
    domain: dict[str, list[float]]
    grid: str
    space: list[str]
    convergence: dict = field(default_factory=dict)
    batched: bool = True  # False: one problem, the solver returns its fields without a batch axis

    @classmethod
    def from_task(cls, task) -> "ChildSpec":
        return cls(
            name=task.name, steady=task.steady, solver_name=task.solver.name,
            args=[Arg(a.name, a.kind, a.field) for a in task.solver.args],
            returns=list(task.solver.returns), parameters=dict(task.parameters),
            domain={k: list(v) for k, v in task.domain.items()}, grid=task.grid,
            space=list(task.equation.space),
            convergence=task.evaluation.convergence.model_dump(mode="json"),
            batched=task.batched,
        )

    def arg_refs(self) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = []
        for a in self.args:
            if a.kind in ("initial", "coefficient"):
                out.append(("array", f"{a.kind}:{a.field}"))
            elif a.kind == "time":
                out.append(("array", "time"))
            elif a.kind == "grid":
                keys = [GRID_KEY.format(axis=ax) for ax in self.space]
                out.append(("array", keys[0]) if len(keys) == 1 else ("arrays", keys))
            else:
                out.append(("scalar", self.parameters[a.field or a.name]))
        return out
