"""What the sandboxed child does once its limits are set (called by :mod:`.harness`).

The child is deliberately light and deliberately *not trusted with the score*: it receives only
the solver's inputs (``inputs.npz``: initial conditions / coefficients, output times, grid), never
the reference solution or its path, and it returns only the prediction (``prediction.npz``) and
timings. The parent computes nRMSE and the residual from that file, so a solver that patches
NumPy, rewrites ``result.json`` at exit or reads the data folder it was never told about cannot
fake its score. Only the convergence test, which must call the solver again, runs here.

``run(job, result, flush)`` fills ``result`` in place and calls ``flush()`` to persist an interim
copy once the prediction is saved. Exceptions from the solver's main call propagate to the harness
(status error/memory); a failing convergence test is recorded as a note.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np


class OutputError(ValueError):
    """The solver returned something of the wrong kind or shape (status ``shape``)."""


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str
    field: str | None = None


@dataclass
class ChildSpec:
    """The slice of a :class:`~pdesharp.task.Task` the child needs (no SymPy, no pydantic)."""

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

    @classmethod
    def from_task(cls, task) -> "ChildSpec":
        return cls(
            name=task.name, steady=task.steady, solver_name=task.solver.name,
            args=[Arg(a.name, a.kind, a.field) for a in task.solver.args],
            returns=list(task.solver.returns), parameters=dict(task.parameters),
            domain={k: list(v) for k, v in task.domain.items()}, grid=task.grid,
            space=list(task.equation.space),
            convergence=task.evaluation.convergence.model_dump(mode="json"),
        )

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["args"] = [a.__dict__ for a in self.args]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "ChildSpec":
        d = dict(d)
        d["args"] = [Arg(**a) for a in d["args"]]
        return cls(**d)


def load_solver(path: Path, name: str) -> Callable:
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # solvers may import helper modules they ship beside them
    spec = importlib.util.spec_from_file_location("solver", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["solver"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise AttributeError(f"the solver file defines no function {name!r}")
    return fn


def solver_args(spec: ChildSpec, inputs: dict[str, Any]) -> list:
    """Positional arguments in the task's order from ``initial:<f>``, ``coefficient:<f>``, ``time``."""
    out = []
    for a in spec.args:
        if a.kind == "initial":
            out.append(inputs[f"initial:{a.field}"])
        elif a.kind == "coefficient":
            out.append(inputs[f"coefficient:{a.field}"])
        elif a.kind == "time":
            out.append(inputs["time"])
        else:
            out.append(spec.parameters[a.field or a.name])
    return out


def as_outputs(spec: ChildSpec, out: Any) -> list[np.ndarray]:
    """The solver's return value as one real array per ``returns`` entry (lists are converted)."""
    names = spec.returns
    if len(names) == 1:
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        items = [out]
    else:
        if not isinstance(out, (tuple, list)) or len(out) != len(names):
            got = f"a {type(out).__name__}" + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "")
            raise OutputError(f"expected a tuple of {len(names)} arrays ({', '.join(names)}), got {got}")
        items = list(out)
    arrays = []
    for name, item in zip(names, items):
        try:
            arr = np.asarray(item)
        except Exception as exc:  # ragged lists, device arrays without __array__, ...
            raise OutputError(f"output {name!r} cannot be converted to a NumPy array: {exc}") from exc
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise OutputError(f"output {name!r} has non-numeric dtype {arr.dtype}")
        if np.iscomplexobj(arr):
            raise OutputError(f"output {name!r} is complex; return the real solution")
        arrays.append(arr)
    return arrays


def check_shapes(spec: ChildSpec, arrays: list[np.ndarray], expected: tuple[int, ...]) -> None:
    for name, arr in zip(spec.returns, arrays):
        if tuple(arr.shape) != tuple(expected):
            hint = ""
            if not spec.steady and arr.ndim == len(expected) and arr.shape[1] != expected[1]:
                hint = f" (wrong number of frames: expected len(t_coordinate) = {expected[1]})"
            raise OutputError(f"output {name!r} has shape {tuple(arr.shape)}, expected {tuple(expected)}{hint}")


def run(job: dict, result: dict, flush: Callable[[], None]) -> None:
    spec = ChildSpec.from_json(job["spec"])
    scratch = Path.cwd()
    timings = result.setdefault("timings", {})
    t0 = job["t0"]
    with np.load(scratch / job["inputs_file"], allow_pickle=False) as npz:
        inputs = {k: npz[k] for k in npz.files}
    expected = tuple(job["expected_shape"])
    result["n_samples"] = int(expected[0])
    timings["start"] = time.perf_counter() - t0

    result["stage"] = "loading the solver"
    fn = load_solver(scratch / job["solver_file"], spec.solver_name)

    result["stage"] = "the solver call"
    start = time.perf_counter()
    out = fn(*solver_args(spec, inputs))
    seconds = time.perf_counter() - start
    result["solver_seconds"] = seconds
    timings["solve"] = time.perf_counter() - t0
    print(f"Solver finished in {seconds:.2f}s", flush=True)

    result["stage"] = "checking the outputs"
    try:
        arrays = as_outputs(spec, out)
        check_shapes(spec, arrays, expected)
    except OutputError as exc:
        result.update(status="shape", message=str(exc), stage="")
        return
    # each field at the dtype the solver chose: CodePDE subtracts whatever the solver returned
    np.savez(scratch / "prediction.npz", **dict(zip(spec.returns, arrays)))
    result.update(status="ok", stage="")
    timings["saved"] = time.perf_counter() - t0

    if job.get("convergence") and spec.convergence.get("kind", "none") != "none":
        result["stage"] = "the convergence test"
        flush()  # if the test is killed, the parent still has the prediction and this stage
        try:
            from pdesharp.evaluate.convergence import convergence_order

            order, note = convergence_order(spec, fn, inputs, pred_full=arrays)
            result["convergence_order"] = order
            result["convergence_note"] = note
        except BaseException as exc:  # SystemExit from solver code must not void the nRMSE
            traceback.print_exc()
            result["convergence_order"] = None
            result["convergence_note"] = (
                f"the solver failed in the convergence test: {type(exc).__name__}: {exc}")[:1000]
        result["stage"] = ""
        timings["convergence"] = time.perf_counter() - t0
