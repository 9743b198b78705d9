"""The Evaluator: "how good is this solver file for this PDE?", answered in a sandbox.

Every call of :meth:`Evaluator.evaluate` is one counted solver execution. The untrusted code runs
in a child process (:mod:`.sandbox`, :mod:`.harness`, :mod:`.run_child`) that sees only the
solver's inputs; this side loads the reference data (once per split), writes the inputs into a
fresh scratch directory, waits (at most ``workers`` children at a time), and scores the saved
prediction itself (:mod:`.scoring`) into an :class:`~pdesharp.records.EvalResult`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

from pdesharp.data.paths import resolve_split
from pdesharp.data.reference import ReferenceData, load_reference
from pdesharp.evaluate.metrics import nrmse, stack_fields
from pdesharp.evaluate.run_child import ChildSpec
from pdesharp.evaluate.sandbox import build_env, run_sandboxed
from pdesharp.evaluate.scoring import Score, load_prediction, score_prediction
from pdesharp.records import EvalResult, Feedback, Split
from pdesharp.task import Task

FSIZE_MB = 1024  # largest file the child may write; a float64 CNS prediction of 100 samples is 250 MB


class Evaluator:
    """Evaluates solver source code for one task (implements ``roles.SolverEvaluator``).

    ``timeout`` / ``memory_mb`` default to the task's (CodePDE's) values; ``residual`` computes
    the PDE residual for every run (it always is with ``feedback="residual"``); ``threads`` caps
    BLAS/OpenMP threads in the child; ``keep_scratch`` keeps each sandbox directory for debugging.
    """

    def __init__(self, task: Task, *, data_dir=None, dev_data=None, test_data=None,
                 workers: int = 1, timeout: float | None = None, memory_mb: int | None = None,
                 convergence: bool = True, scratch_root: Path | None = None,
                 max_samples: int | None = None, residual: bool = True, threads: int = 1,
                 keep_scratch: bool = False):
        self.task = task
        self.data_dir = data_dir
        self.explicit = {"dev": dev_data, "test": test_data}
        self.workers = max(1, int(workers))
        self.timeout = float(timeout if timeout is not None else task.evaluation.timeout)
        self.memory_mb = memory_mb if memory_mb is not None else task.evaluation.memory_mb
        self.convergence = convergence
        self.scratch_root = Path(scratch_root) if scratch_root else None
        self.max_samples = max_samples
        self.residual = residual
        self.threads = threads
        self.keep_scratch = keep_scratch
        self.n_evaluations = 0  # counted solver executions (PDE-SHARP's budget metric)
        # split -> converged solution of a reference audit, stacked like the metric (set by
        # pdesharp.audit.runs); predictions are scored against it too, for the report only
        self.converged: dict[str, np.ndarray] = {}
        self._spec = ChildSpec.from_task(task).to_json()
        self._refs: dict[str, ReferenceData] = {}
        self._refs_lock = threading.Lock()  # concurrent evaluate() calls load a split once
        self._semaphore: asyncio.Semaphore | None = None
        self._loop = None

    def data_path(self, split: Split) -> Path:
        """The reference file for ``split``; raises ``DataNotFound`` with what to do about it."""
        return resolve_split(self.task, split, data_dir_override=self.data_dir,
                             explicit=self.explicit[split])

    def reference(self, split: Split) -> ReferenceData:
        """The split's reference data (cached; ``max_samples`` applied)."""
        with self._refs_lock:
            if split not in self._refs:
                spec = getattr(self.task.data, split)
                self._refs[split] = load_reference(self.task, self.data_path(split),
                                                   samples=spec.samples if spec else None,
                                                   limit=self.max_samples)
            return self._refs[split]

    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.workers), loop
        return self._semaphore

    async def evaluate(self, code: str, *, split: Split, feedback: Feedback, label: str = "",
                       plot_path: Path | None = None,
                       prediction_path: Path | None = None) -> EvalResult:
        """Run ``code`` on ``split`` and score it. Missing data raises before anything runs."""
        self.data_path(split)  # fail fast with DataNotFound, before counting anything
        ref = await asyncio.to_thread(self.reference, split)
        async with self._sem():
            self.n_evaluations += 1
            scratch = Path(tempfile.mkdtemp(prefix=f"pdesharp-eval-{_safe(label)}-",
                                            dir=self.scratch_root))
            try:
                return await self._run(code, scratch, ref, split, feedback, plot_path,
                                       prediction_path)
            finally:
                if not self.keep_scratch:
                    shutil.rmtree(scratch, ignore_errors=True)

    def evaluate_sync(self, code: str, **kw) -> EvalResult:
        """Blocking convenience wrapper around :meth:`evaluate` (not inside a running loop)."""
        return asyncio.run(self.evaluate(code, **kw))

    def _write_inputs(self, scratch: Path, ref: ReferenceData) -> tuple[int, ...]:
        """The solver's inputs only: never the reference solution or the data file's path."""
        arrays: dict[str, np.ndarray] = {}
        for a in self.task.solver.args:
            if a.kind == "initial":
                arrays[f"initial:{a.field}"] = ref.initial(a.field)
            elif a.kind == "coefficient":
                arrays[f"coefficient:{a.field}"] = ref.coefficients[a.field]
            elif a.kind == "time":
                if ref.t is None:
                    raise ValueError(f"{ref.path} has no time coordinate, but the solver takes one")
                arrays["time"] = ref.t
        if ref.x is not None:
            arrays["x"] = ref.x
        np.savez(scratch / "inputs.npz", **arrays)
        return next(iter(ref.fields.values())).shape

    async def _run(self, code, scratch: Path, ref: ReferenceData, split, feedback,
                   plot_path, prediction_path) -> EvalResult:
        (scratch / "solver.py").write_text(code)
        expected = await asyncio.to_thread(self._write_inputs, scratch, ref)
        job = {
            "spec": self._spec,
            "inputs_file": "inputs.npz",
            "expected_shape": list(expected),
            "solver_file": "solver.py",
            "result_path": str(scratch / "result.json"),
            "memory_mb": self.memory_mb,
            "fsize_mb": FSIZE_MB,
            "convergence": self.convergence,
        }
        (scratch / "job.json").write_text(json.dumps(job))
        argv = [sys.executable, "-m", "pdesharp.evaluate.harness", str(scratch / "job.json")]
        run = await run_sandboxed(argv, cwd=scratch, env=build_env(scratch, threads=self.threads),
                                  timeout=self.timeout)
        child = _read_json(scratch / "result.json")
        result = _to_result(child, run, split, feedback, self.timeout, self.memory_mb,
                            n_samples=expected[0])
        pred_file = scratch / "prediction.npz"
        if result.status == "ok":
            plot_tmp = scratch / "plot.png" if plot_path is not None else None
            try:
                score = await asyncio.to_thread(self._score, pred_file, ref, feedback, plot_tmp,
                                                self.converged.get(split))
            except Exception as exc:  # missing, unreadable or forged prediction file
                score = Score(status="error", message=f"cannot read the prediction: {exc}")
            _apply(result, score)
            if score.plot_path is not None:
                Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(score.plot_path, plot_path)
                result.plot_path = str(plot_path)
        if prediction_path is not None and pred_file.is_file():
            Path(prediction_path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pred_file, prediction_path)
        if self.keep_scratch:
            result.message = (result.message + f" [scratch kept at {scratch}]").strip()
        return result

    def _score(self, pred_file: Path, ref: ReferenceData, feedback, plot_tmp,
               converged: np.ndarray | None = None) -> Score:
        pred = load_prediction(pred_file, self.task)
        score = score_prediction(self.task, ref, pred,
                                 residual=self.residual or feedback == "residual",
                                 plot_path=plot_tmp)
        if converged is not None and score.status == "ok":
            stacked = stack_fields([pred[n] for n in self.task.solver.returns])
            score.nrmse_converged = nrmse(stacked, converged)[0]
        return score


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40] or "run"


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _finite(v):
    return float(v) if isinstance(v, (int, float)) and np.isfinite(v) else None


def _apply(result: EvalResult, score: Score) -> None:
    result.status = score.status
    notes = [x for x in [result.message, score.message, *score.notes] if x]
    result.message = "; ".join(notes)
    if score.status != "ok":
        result.convergence_order = None
        return
    result.nrmse = score.nrmse
    result.nrmse_per_sample = score.nrmse_per_sample
    result.residual = score.residual
    result.nrmse_converged = score.nrmse_converged


def _to_result(child: dict | None, run, split, feedback, timeout, memory_mb,
               n_samples: int) -> EvalResult:
    """Status, timings and notes from the child's report and the sandbox outcome.

    Only the harness's own bookkeeping is read from the child (status, stage, timings,
    convergence); scores are computed by the parent from the prediction file.
    """
    base = dict(split=split, feedback=feedback, wall_seconds=run.wall_seconds,
                stdout_tail=run.stdout_tail, stderr_tail=run.stderr_tail, n_samples=n_samples)
    child_peak = _finite((child or {}).get("peak_memory_mb"))
    base["peak_memory_mb"] = max(filter(None, [run.peak_rss_mb, child_peak]), default=None)
    notes = []
    if run.killed_leftovers:
        notes.append(f"killed {len(run.killed_leftovers)} process(es) the solver left running")
    peak = base["peak_memory_mb"]
    near_limit = bool(memory_mb and peak and peak > 0.9 * memory_mb)
    if child is None:
        if run.timed_out:
            status, msg = "timeout", f"Process exceeded the {timeout:g}-second timeout limit."
        elif "MemoryError" in run.stderr_tail or near_limit:
            status, msg = "memory", f"killed after exceeding the {memory_mb} MB memory limit"
        else:
            sig = f" by signal {run.signal}" if run.signal else f" with exit code {run.returncode}"
            status, msg = "error", f"the evaluation process died{sig} without a result"
        return EvalResult(status=status, message="; ".join([msg, *notes]), **base)
    status = child.get("status", "error")
    if status not in ("ok", "error", "memory", "shape"):
        status = "error"
    msg = str(child.get("message", ""))
    stage = str(child.get("stage", ""))
    conv_note = str(child.get("convergence_note", "") or "")
    order = _finite(child.get("convergence_order"))
    if status == "ok" and stage:  # killed or timed out in a later stage: the main result stands
        why = "timed out" if run.timed_out else "died"
        if stage == "the convergence test":
            conv_note = f"the convergence test {why} (limit {timeout:g} s / {memory_mb} MB)"
            order = None
        else:
            notes.append(f"the evaluation {why} during {stage}")
    elif status != "ok" and run.timed_out:
        status, msg = "timeout", f"Process exceeded the {timeout:g}-second timeout limit ({stage})."
    solver_seconds = _finite(child.get("solver_seconds"))
    return EvalResult(
        status=status, message="; ".join(x for x in [msg, *notes] if x),
        convergence_order=order if status == "ok" else None, convergence_note=conv_note,
        solver_seconds=solver_seconds, **base,
    )
