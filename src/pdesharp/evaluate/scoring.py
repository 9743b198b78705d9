"""Parent-side scoring of a saved prediction: trusted checks, nRMSE, residual, plot.

Runs in the evaluating process (in a worker thread), on the ``prediction.npz`` the sandboxed child
wrote, against reference data the child never saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pdesharp.data.reference import ReferenceData
from pdesharp.evaluate.metrics import frame0_mismatch, nrmse, stack_fields
from pdesharp.task import Task

FRAME0_TOL = 1e-5  # relative; float32 storage of the IC is ~6e-8


@dataclass
class Score:
    status: str = "ok"
    message: str = ""
    nrmse: float | None = None
    nrmse_per_sample: list[float] = field(default_factory=list)
    residual: float | None = None
    nrmse_converged: float | None = None  # against a reference audit's converged solution
    notes: list[str] = field(default_factory=list)
    plot_path: Path | None = None


def load_prediction(path: Path, task: Task) -> dict[str, np.ndarray]:
    """Read the child's prediction without unpickling anything (the file is untrusted)."""
    with np.load(path, allow_pickle=False) as npz:
        missing = [n for n in task.solver.returns if n not in npz.files]
        if missing:
            raise ValueError(f"prediction file lacks {missing}")
        return {n: npz[n] for n in task.solver.returns}


def score_prediction(task: Task, ref: ReferenceData, pred: dict[str, np.ndarray], *,
                     residual: bool, plot_path: Path | None) -> Score:
    s = Score()
    expected = next(iter(ref.fields.values())).shape
    for name in task.solver.returns:
        a = pred[name]
        if a.shape != expected:
            s.status, s.message = "shape", f"output {name!r} has shape {a.shape}, expected {expected}"
            return s
        if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
            s.status, s.message = "shape", f"output {name!r} has dtype {a.dtype}, expected real numbers"
            return s
    bad = [n for n in task.solver.returns if not np.all(np.isfinite(pred[n]))]
    if bad:
        frac = max(float(np.mean(~np.isfinite(pred[n]))) for n in bad)
        s.status = "nan"
        s.message = f"NaN or Inf in the prediction of {', '.join(bad)} ({frac:.1%} of values)"
        return s
    if not task.steady:
        worst = max(frame0_mismatch(pred[n], ref.initial(n)) for n in task.solver.returns)
        if worst > FRAME0_TOL:
            s.notes.append(f"frame 0 differs from the initial condition (max rel. {worst:.1e}); "
                           "CodePDE does not check this, but it costs nRMSE")
    arrays = [pred[n] for n in task.solver.returns]
    mean, per = nrmse(stack_fields(arrays), stack_fields([ref.fields[n] for n in task.solver.returns]))
    s.nrmse, s.nrmse_per_sample = mean, [float(v) for v in per]
    if residual:
        try:
            from pdesharp.evaluate.residual import residual as pde_residual

            s.residual = pde_residual(task, pred, ref)
        except Exception as exc:  # an unsupported equation form must not void the nRMSE
            s.notes.append(f"residual: {type(exc).__name__}: {exc}"[:500])
    if plot_path is not None:
        try:
            from pdesharp.evaluate.plot import plot_sample

            s.plot_path = plot_sample(task, pred, ref, plot_path)
        except Exception as exc:
            s.notes.append(f"plot: {type(exc).__name__}: {exc}"[:500])
    return s
