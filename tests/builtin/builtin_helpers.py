"""Helpers for the built-in analyst's tests: run generated solvers in-process on reference data.

In-process execution is acceptable here: the code under test is our own generated code, and the
sandboxed evaluator is tested elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from pdesharp.task import Task

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples" / "tasks"


def nrmse(pred: np.ndarray, ref: np.ndarray) -> float:
    """CodePDE's nRMSE: per sample RMS error / RMS reference over all frames, mean over samples."""
    b = ref.shape[0]
    p, r = pred.reshape(b, -1), ref.reshape(b, -1)
    return float(np.mean(np.sqrt(np.mean((p - r) ** 2, 1)) / np.sqrt(np.mean(r**2, 1))))


def run_solver(code: str, task: Task, ref: dict[str, np.ndarray], t: np.ndarray | None = None,
               ns: dict | None = None):
    """Execute ``code`` (in ``ns`` if given, to look at the solver's globals afterwards) and call
    its solver on the reference's initial data; returns the stacked prediction and reference
    ([B, T, N, fields] or [B, N, N])."""
    ns = {} if ns is None else ns
    exec(compile(code, f"<{task.name} solver>", "exec"), ns)
    kw = {}
    for a in task.solver.args:
        if a.kind == "initial":
            kw[a.name] = ref[task.data.fields[a.field]][:, 0]
        elif a.kind == "coefficient":
            kw[a.name] = ref[task.data.coefficients[a.field]]
        elif a.kind == "time":
            kw[a.name] = t
        elif a.kind == "grid":  # the output grid's coordinates, as the evaluator passes them
            from pdesharp.grid import grid_value, space_shape

            first = ref[next(iter(task.data.fields.values()))]
            kw[a.name] = grid_value(task, space_shape(task, first.shape))
        else:
            kw[a.name] = task.parameters[a.field or a.name]
    out = ns[task.solver.name](**kw)
    out = out if isinstance(out, tuple) else (out,)
    if not task.batched:  # one problem: the fields come without the batch axis
        out = tuple(np.asarray(o)[None] for o in out)
    pred = np.stack([np.asarray(o) for o in out], -1)
    refs = np.stack([ref[task.data.fields[u]] for u in task.solver.returns], -1)
    return pred, refs


def read_h5(path: Path, samples: int, frames: int | None = None) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as h5:
        out = {}
        for k in h5.keys():
            ds = h5[k]
            if ds.ndim == 1:
                out[k] = ds[:frames] if k == "t-coordinate" else ds[:]
            elif ds.ndim >= 3 and k not in ("coeff", "sol", "f"):
                out[k] = ds[:samples, :frames]
            else:
                out[k] = ds[:samples]
    return out
