"""Parent-side scoring of a prediction: trusted checks, nRMSE, residual, plot.

Runs in the evaluating process (in a worker thread), on the arrays the sealed child returned,
against reference data the child never saw. :func:`load_prediction` reads a saved ``.npz``
(``pdesharp eval --prediction``) without trusting it: every member's declared shape, dtype and
size are checked against the task before a byte is decompressed, and decompression is bounded.
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
    nrmse_per_field: dict[str, float] = field(default_factory=dict)
    residual: float | None = None
    nrmse_converged: float | None = None  # against a reference audit's converged solution
    notes: list[str] = field(default_factory=list)
    plot_path: Path | None = None


def load_prediction(path: Path, task: Task, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """A saved prediction, every field of ``shape`` (see :func:`pdesharp.evaluate.npzcheck`)."""
    from pdesharp.evaluate.npzcheck import load_checked

    return load_checked(path, {n: tuple(shape) for n in task.solver.returns})


def scored_frames(task: Task) -> tuple:
    """The index of the frames the nRMSE compares (``evaluation.score_frames``): every one
    (CodePDE), or the final one alone, kept as a time axis of length 1."""
    if task.steady or task.evaluation.score_frames == "all":
        return (slice(None),)
    return (slice(None), slice(-1, None))


def score_prediction(task: Task, ref: ReferenceData, pred: dict[str, np.ndarray], *,
                     residual: bool, plot_path: Path | None,
                     converged: np.ndarray | None = None) -> Score:
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
                           "CodePDE does not check this, but it costs nRMSE and the residual "
                           "score")
    frames = scored_frames(task)
    arrays = [pred[n][frames] for n in task.solver.returns]
    refs = {n: ref.fields[n][frames] for n in task.solver.returns}
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        mean, per = nrmse(stack_fields(arrays),
                          stack_fields([refs[n] for n in task.solver.returns]))
    s.nrmse, s.nrmse_per_sample = mean, [float(v) for v in per]
    if not np.isfinite(mean):  # finite values whose error overflows (a solver returning 1e308)
        peak = max(float(np.max(np.abs(a))) for a in arrays)
        s.status = "nan"
        s.message = (f"the nRMSE is not finite ({mean}): the prediction overflows (largest "
                     f"|value| {peak:.3g})")
        return s
    if converged is not None:  # a reference audit's converged solution, stacked like the metric
        s.nrmse_converged = float(nrmse(stack_fields(arrays), converged[frames])[0])
    if len(task.solver.returns) > 1:  # each field alone, so a small field's error shows
        s.nrmse_per_field = {n: nrmse(a, refs[n])[0]
                             for n, a in zip(task.solver.returns, arrays)}
    else:
        s.nrmse_per_field = {task.solver.returns[0]: mean}
    if residual:
        try:
            from pdesharp.evaluate.residual_score import residual_parts

            with np.errstate(over="ignore", invalid="ignore"):  # reported below
                parts = residual_parts(task, pred, ref)
            s.residual = sum(parts.values())
            if not np.isfinite(s.residual):
                s.status = "nan"
                s.message = (f"the PDE residual is not finite ({s.residual}): a frame or one "
                             "of its derivatives overflows")
                return s
            if parts["initial"] + parts["boundary"] > 0.1 * parts["pde"]:
                s.notes.append(f"residual {s.residual:.3e} = PDE {parts['pde']:.3e} + mismatch "
                               f"with the given initial data {parts['initial']:.3e} + with the "
                               f"boundary conditions {parts['boundary']:.3e}")
        except Exception as exc:  # an unsupported equation form must not void the nRMSE
            s.notes.append(f"residual: {type(exc).__name__}: {exc}"[:500])
    if plot_path is not None:
        try:
            from pdesharp.evaluate.plot import plot_sample

            s.plot_path = plot_sample(task, pred, ref, plot_path)
        except Exception as exc:
            s.notes.append(f"plot: {type(exc).__name__}: {exc}"[:500])
    return s
