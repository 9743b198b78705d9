"""The Evaluator: "how good is this solver file for this PDE?", answered in a sandbox.

Every call of :meth:`Evaluator.evaluate` is one counted solver execution. The untrusted code runs
in a child process (:mod:`.sandbox`, :mod:`.harness`); this side prepares the scratch directory,
waits (at most ``workers`` children at a time), and turns what the child left behind into an
:class:`~pdesharp.records.EvalResult`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path

from pdesharp.data.paths import resolve_split
from pdesharp.evaluate.sandbox import build_env, run_sandboxed
from pdesharp.records import EvalResult, Feedback, Split
from pdesharp.task import Task

FSIZE_MB = 4096  # largest file the child may write (a float64 prediction of 100 samples fits)


class Evaluator:
    """Evaluates solver source code for one task (implements ``roles.SolverEvaluator``)."""

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
        self._semaphore: asyncio.Semaphore | None = None
        self._loop = None

    def data_path(self, split: Split) -> Path:
        """The reference file for ``split``; raises ``DataNotFound`` with what to do about it."""
        return resolve_split(self.task, split, data_dir_override=self.data_dir,
                             explicit=self.explicit[split])

    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.workers), loop
        return self._semaphore

    async def evaluate(self, code: str, *, split: Split, feedback: Feedback, label: str = "",
                       plot_path: Path | None = None,
                       prediction_path: Path | None = None) -> EvalResult:
        """Run ``code`` on ``split`` and score it. Missing data raises before anything runs."""
        data = self.data_path(split)
        spec = getattr(self.task.data, split)
        async with self._sem():
            self.n_evaluations += 1
            scratch = Path(tempfile.mkdtemp(prefix=f"pdesharp-eval-{_safe(label)}-",
                                            dir=self.scratch_root))
            try:
                return await self._run(code, scratch, data, spec.samples if spec else None,
                                       split, feedback, plot_path, prediction_path)
            finally:
                if not self.keep_scratch:
                    shutil.rmtree(scratch, ignore_errors=True)

    def evaluate_sync(self, code: str, **kw) -> EvalResult:
        """Blocking convenience wrapper around :meth:`evaluate` (not inside a running loop)."""
        return asyncio.run(self.evaluate(code, **kw))

    async def _run(self, code, scratch: Path, data: Path, samples, split, feedback,
                   plot_path, prediction_path) -> EvalResult:
        (scratch / "solver.py").write_text(code)
        job = {
            "task": self.task.model_dump(mode="json"),
            "data_path": str(Path(data).resolve()),
            "samples": samples,
            "max_samples": self.max_samples,
            "solver_file": "solver.py",
            "result_path": str(scratch / "result.json"),
            "memory_mb": self.memory_mb,
            "fsize_mb": FSIZE_MB,
            "convergence": self.convergence,
            "residual": self.residual or feedback == "residual",
            "plot": plot_path is not None,
            "save_prediction": prediction_path is not None or self.keep_scratch,
        }
        (scratch / "job.json").write_text(json.dumps(job))
        argv = [sys.executable, "-m", "pdesharp.evaluate.harness", str(scratch / "job.json")]
        run = await run_sandboxed(argv, cwd=scratch, env=build_env(scratch, threads=self.threads),
                                  timeout=self.timeout)
        child = _read_json(scratch / "result.json")
        result = _to_result(child, run, split, feedback, self.timeout, self.memory_mb)
        if plot_path is not None and (scratch / "plot.png").is_file():
            Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(scratch / "plot.png", plot_path)
            result.plot_path = str(plot_path)
        if prediction_path is not None and (scratch / "prediction.npz").is_file():
            Path(prediction_path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(scratch / "prediction.npz", prediction_path)
        if self.keep_scratch:
            result.message = (result.message + f" [scratch kept at {scratch}]").strip()
        return result


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40] or "run"


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _finite(v):
    return v if isinstance(v, (int, float)) and v == v and abs(v) != float("inf") else None


def _to_result(child: dict | None, run, split, feedback, timeout, memory_mb) -> EvalResult:
    base = dict(split=split, feedback=feedback, wall_seconds=run.wall_seconds,
                stdout_tail=run.stdout_tail, stderr_tail=run.stderr_tail)
    peak = max(filter(None, [run.peak_rss_mb, (child or {}).get("peak_memory_mb")]), default=None)
    base["peak_memory_mb"] = peak
    notes = []
    if run.killed_leftovers:
        notes.append(f"killed {len(run.killed_leftovers)} process(es) the solver left running")
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
    msg = child.get("message", "")
    stage = child.get("stage", "")
    conv_note = child.get("convergence_note", "")
    if status == "ok" and stage:  # killed or timed out in a later stage: the main result stands
        why = "timed out" if run.timed_out else "died"
        if stage == "the convergence test":
            conv_note = f"the convergence test {why} (limit {timeout:g} s / {memory_mb} MB)"
        else:
            notes.append(f"the evaluation {why} during {stage}")
    elif status != "ok" and run.timed_out:
        status, msg = "timeout", f"Process exceeded the {timeout:g}-second timeout limit ({stage})."
    elif status == "error" and stage and "MemoryError" in child.get("traceback", ""):
        status = "memory"
    for key in ("residual_note", "plot_note"):
        if child.get(key):
            notes.append(f"{key.split('_')[0]}: {child[key]}")
    message = "; ".join(x for x in [msg, *notes] if x)
    return EvalResult(
        status=status, message=message, n_samples=int(child.get("n_samples", 0)),
        nrmse=_finite(child.get("nrmse")) if status == "ok" else None,
        nrmse_per_sample=[float(v) for v in child.get("nrmse_per_sample", [])] if status == "ok" else [],
        residual=_finite(child.get("residual")) if status == "ok" else None,
        convergence_order=_finite(child.get("convergence_order")) if status == "ok" else None,
        convergence_note=conv_note, solver_seconds=child.get("solver_seconds"), **base,
    )
