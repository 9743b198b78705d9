"""What the sandboxed child does once its limits are set (called by :mod:`.harness`).

``run(job, result, flush)`` fills ``result`` in place and calls ``flush()`` to persist an interim
copy once the main metrics exist. Exceptions from the solver's main call propagate to the
harness (status error/memory); failures in the convergence test, the residual or the plot are
recorded as notes and never overturn the nRMSE.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pdesharp.data.reference import ReferenceData, load_reference
from pdesharp.evaluate.metrics import frame0_mismatch, nrmse, stack_fields
from pdesharp.task import Task


class OutputError(ValueError):
    """The solver returned something of the wrong kind or shape (status ``shape``)."""


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


def solver_args(task: Task, inputs: dict[str, Any]) -> list:
    """Positional arguments in ``task.solver.args`` order from named inputs.

    ``inputs`` holds ``initial:<field>``, ``coefficient:<field>``, ``time`` and parameters.
    """
    out = []
    for a in task.solver.args:
        if a.kind == "initial":
            out.append(inputs[f"initial:{a.field}"])
        elif a.kind == "coefficient":
            out.append(inputs[f"coefficient:{a.field}"])
        elif a.kind == "time":
            out.append(inputs["time"])
        else:
            out.append(task.parameters[a.field or a.name])
    return out


def reference_inputs(task: Task, ref: ReferenceData) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    for a in task.solver.args:
        if a.kind == "initial":
            inputs[f"initial:{a.field}"] = ref.initial(a.field)
        elif a.kind == "coefficient":
            inputs[f"coefficient:{a.field}"] = ref.coefficients[a.field]
        elif a.kind == "time":
            if ref.t is None:
                raise ValueError(f"{ref.path} has no time coordinate, but the solver takes one")
            inputs["time"] = ref.t
    return inputs


def as_outputs(task: Task, out: Any) -> list[np.ndarray]:
    """The solver's return value as one float array per ``task.solver.returns`` entry."""
    names = task.solver.returns
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


def check_shapes(task: Task, arrays: list[np.ndarray], expected: tuple[int, ...]) -> None:
    for name, arr in zip(task.solver.returns, arrays):
        if arr.shape != expected:
            hint = ""
            if not task.steady and arr.ndim == len(expected) and arr.shape[1] != expected[1]:
                hint = f" (wrong number of frames: expected len(t_coordinate) = {expected[1]})"
            raise OutputError(f"output {name!r} has shape {arr.shape}, expected {expected}{hint}")


def call_solver(fn: Callable, args: list) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def run(job: dict, result: dict, flush: Callable[[], None]) -> None:
    task = Task.model_validate(job["task"])
    scratch = Path.cwd()
    timings = result.setdefault("timings", {})
    timings["imports"] = time.perf_counter() - job.get("t0", time.perf_counter())
    result["stage"] = "loading reference data"
    ref = load_reference(task, job["data_path"], samples=job.get("samples"), limit=job.get("max_samples"))
    result["n_samples"] = ref.n_samples
    print(f"Loaded data from {Path(job['data_path']).name}: {ref.n_samples} samples", flush=True)

    timings["data"] = time.perf_counter() - job["t0"]
    result["stage"] = "loading the solver"
    fn = load_solver(scratch / job["solver_file"], task.solver.name)

    result["stage"] = "the solver call"
    inputs = reference_inputs(task, ref)
    out, seconds = call_solver(fn, solver_args(task, inputs))
    result["solver_seconds"] = seconds
    print(f"Solver finished in {seconds:.2f}s", flush=True)

    result["stage"] = "checking the outputs"
    try:
        arrays = as_outputs(task, out)
        expected = next(iter(ref.fields.values())).shape
        check_shapes(task, arrays, expected)
    except OutputError as exc:
        result.update(status="shape", message=str(exc), stage="")
        return
    notes = []
    bad = [n for n, a in zip(task.solver.returns, arrays) if not np.all(np.isfinite(a))]
    if bad:
        frac = max(float(np.mean(~np.isfinite(a))) for a in arrays)
        result.update(status="nan", stage="",
                      message=f"NaN or Inf in the prediction of {', '.join(bad)} ({frac:.1%} of values)")
        return
    if not task.steady:
        worst = max(frame0_mismatch(a, ref.initial(n)) for n, a in zip(task.solver.returns, arrays))
        result["frame0_mismatch"] = worst
        if worst > 1e-5:
            notes.append(f"frame 0 differs from the initial condition (max rel. {worst:.1e}); "
                         "CodePDE does not check this, but it costs nRMSE")

    result["stage"] = "computing nRMSE"
    pred = stack_fields(arrays)
    refs = stack_fields([ref.fields[n] for n in task.solver.returns])
    mean, per = nrmse(pred, refs)
    result.update(status="ok", nrmse=mean, nrmse_per_sample=[float(v) for v in per], stage="")
    if job.get("save_prediction"):
        np.savez(scratch / "prediction.npz", **dict(zip(task.solver.returns, arrays)))
    result["message"] = "; ".join(notes)
    timings["metrics"] = time.perf_counter() - job["t0"]
    flush()

    if job.get("residual"):
        result["stage"] = "the PDE residual"
        try:
            from pdesharp.evaluate.residual import residual
            result["residual"] = residual(task, dict(zip(task.solver.returns, arrays)), ref)
        except Exception as exc:
            result["residual_note"] = f"{type(exc).__name__}: {exc}"[:500]
        result["stage"] = ""
        timings["residual"] = time.perf_counter() - job["t0"]
        flush()

    if job.get("plot"):
        result["stage"] = "plotting"
        try:
            from pdesharp.evaluate.plot import plot_sample
            plot_sample(task, dict(zip(task.solver.returns, arrays)), ref, scratch / "plot.png")
            result["plot"] = "plot.png"
        except Exception as exc:
            result["plot_note"] = f"{type(exc).__name__}: {exc}"[:500]
        result["stage"] = ""
        flush()

    if job.get("convergence") and task.evaluation.convergence.kind != "none":
        result["stage"] = "the convergence test"
        flush()  # if the test is killed, the parent sees which stage it died in
        try:
            from pdesharp.evaluate.convergence import convergence_order
            order, note = convergence_order(task, fn, ref, pred_full=arrays)
            result["convergence_order"] = order
            result["convergence_note"] = note
        except BaseException as exc:  # SystemExit from solver code must not void the nRMSE
            traceback.print_exc()
            result["convergence_order"] = None
            result["convergence_note"] = f"the solver failed in the convergence test: {type(exc).__name__}: {exc}"[:1000]
        result["stage"] = ""
