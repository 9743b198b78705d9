"""The Evaluator: "how good is this solver file for this PDE?", answered in a sealed sandbox.

Every call of :meth:`Evaluator.evaluate` is one counted solver execution. The untrusted code runs
through the executor seam :func:`~pdesharp.evaluate.sealed.run_sealed`, which sees only the
solver's inputs and returns checked prediction arrays and the solver time measured from outside;
this side loads the reference data (once per split), scores the arrays (:mod:`.scoring`), and,
in a second sealed run, calls the solver on the convergence test's grids and computes the order
itself (:mod:`.convergence`). Solver time is that of the first run only.

Where the sealed runs happen is the :mod:`.executors`' business: in this process (``local``) or
on a Ray cluster's workers (``ray``), which receive the job and its inputs, never the reference.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import numpy as np

from pdesharp.data.paths import resolve_split
from pdesharp.data.reference import DataError, ReferenceData, load_reference
from pdesharp.evaluate import convergence as conv
from pdesharp.evaluate.executors import make_executor
from pdesharp.evaluate.scoring import Score, score_prediction
from pdesharp.evaluate.sealed import Case, Limits, SealedJob, SealedRun
from pdesharp.evaluate.spec import ChildSpec
from pdesharp.records import EvalResult, Feedback, Split
from pdesharp.task import Task

FSIZE_MB = 1024  # largest file the child may write; a float64 CNS prediction of 100 samples is 250 MB


class Evaluator:
    """Evaluates solver source code for one task (implements ``roles.SolverEvaluator``).

    ``timeout`` / ``memory_mb`` default to the task's (CodePDE's) values; ``residual`` computes
    the PDE residual for every run (it always is with ``feedback="residual"``); ``threads`` caps
    BLAS/OpenMP threads in the child; ``keep_scratch`` keeps each sandbox folder for debugging.
    ``device="cuda"`` exposes the GPU in the sandbox; ``unsafe_no_isolation`` runs solvers with
    no sandbox at all (recorded in every result); ``sandbox`` forces a mechanism ("bwrap",
    "landlock"); ``hidden`` lists more paths the child must not see (e.g. the run folder).
    ``executor="ray"`` runs the sealed children on a Ray cluster (``ray_address``: ``auto``,
    ``ray://host:port``, or None for a local instance); ``workers`` then does not apply.
    Raises :class:`~pdesharp.evaluate.sandbox.SandboxUnavailable` if nothing can seal the child,
    :class:`~pdesharp.evaluate.executors.ExecutorUnavailable` if the executor cannot start.
    """

    takes_apart = True  # evaluate(warm=True) times the samples after the first alone

    def __init__(self, task: Task, *, data_dir=None, dev_data=None, test_data=None,
                 workers: int = 1, timeout: float | None = None, memory_mb: int | None = None,
                 convergence: bool = True, scratch_root: Path | None = None,
                 max_samples: int | None = None, residual: bool = True, threads: int = 1,
                 keep_scratch: bool = False, device: str = "cpu",
                 unsafe_no_isolation: bool = False, sandbox: str | None = None,
                 max_processes: int = 256, hidden: list | tuple = (), executor: str = "local",
                 ray_address: str | None = None):
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
        self.max_processes = max_processes
        self.n_evaluations = 0  # counted solver executions (PDE-SHARP's budget metric)
        # split -> converged solution of a reference audit, stacked like the metric (set by
        # pdesharp.audit.runs); predictions are scored against it too, for the report only
        self.converged: dict[str, np.ndarray] = {}
        self.spec = ChildSpec.from_task(task)
        self.executor = make_executor(executor, address=ray_address, workers=self.workers,
                                      threads=threads, unsafe=unsafe_no_isolation, device=device,
                                      sandbox=sandbox, hidden=[*self._data_paths(), *hidden])
        self._refs: dict[str, ReferenceData] = {}
        self._inputs: dict[str, dict[str, np.ndarray]] = {}
        self._refs_lock = threading.Lock()  # concurrent evaluate() calls load a split once

    @property
    def isolation(self) -> dict:
        """Which sandbox seals the solvers, and where they run (recorded with runs; ``unsafe``
        if none)."""
        return self.executor.isolation

    @property
    def policy(self):
        """This machine's sandbox policy (None when the solvers run elsewhere)."""
        return getattr(self.executor, "policy", None)

    @property
    def device(self) -> str:
        return self.executor.device

    @property
    def max_in_flight(self) -> int:
        """Evaluations worth keeping in flight: ``workers`` locally; on a cluster, as many as
        the caller has (the cluster queues them)."""
        return self.executor.max_in_flight

    def _data_paths(self) -> list[Path]:
        out = [Path(self.data_dir)] if self.data_dir else []
        for split in ("dev", "test"):
            try:
                out.append(self.data_path(split))
            except (FileNotFoundError, ValueError):
                pass
        return out

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

    def _limits(self) -> Limits:
        return Limits(timeout=self.timeout, memory_mb=self.memory_mb,
                      max_processes=self.max_processes, fsize_mb=FSIZE_MB, threads=self.threads)

    def _job(self, code: str, cases: list[Case], label: str, gate: bool = False) -> SealedJob:
        return SealedJob(code=code, function=self.task.solver.name, args=self.spec.arg_refs(),
                         cases=cases, limits=self._limits(), steady=self.task.steady,
                         label=_safe(label), gate=gate)

    async def evaluate(self, code: str, *, split: Split, feedback: Feedback, label: str = "",
                       plot_path: Path | None = None,
                       prediction_path: Path | None = None, warm: bool = False) -> EvalResult:
        """Run ``code`` on ``split`` and score it. Missing data raises before anything runs.
        ``warm``: the warm timing (EvalResult.warm_seconds; a batch of one sample, or a task
        without a batch, is one call as usual), without the convergence test."""
        self.data_path(split)  # fail fast with DataNotFound, before counting anything
        ref = await asyncio.to_thread(self.reference, split)
        async with self.executor.slot():
            self.n_evaluations += 1
            t0 = time.monotonic()
            result = await self._run(code, ref, split, feedback, label, plot_path,
                                     prediction_path, warm)
            result.wall_seconds = time.monotonic() - t0
            return result

    def evaluate_sync(self, code: str, **kw) -> EvalResult:
        """Blocking convenience wrapper around :meth:`evaluate` (not inside a running loop)."""
        return asyncio.run(self.evaluate(code, **kw))

    def inputs(self, ref: ReferenceData) -> dict[str, np.ndarray]:
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
        if any(a.kind == "grid" for a in self.task.solver.args):
            arrays.update(_grid_inputs(self.task, ref))
        if ref.x is not None:
            arrays["x"] = ref.x
        return arrays

    async def _run(self, code, ref: ReferenceData, split, feedback, label, plot_path,
                   prediction_path, warm: bool = False) -> EvalResult:
        if split not in self._inputs:  # the same arrays every time (a Ray worker gets them once)
            self._inputs[split] = await asyncio.to_thread(self.inputs, ref)
        inputs = self._inputs[split]
        expected = tuple(next(iter(ref.fields.values())).shape)
        # one problem (no batched input): the solver returns its fields without the batch axis
        returned = expected if self.task.batched else expected[1:]
        given = {k: v for k, v in inputs.items() if k != "x"}
        warm = warm and self.task.batched and expected[0] > 1
        if warm:  # the first sample, then the others with their inputs held back (sealed.py)
            cases = [Case({k: _samples(k, v, part) for k, v in given.items()},
                          [(n, (m,) + expected[1:]) for n in self.task.solver.returns])
                     for part, m in ((slice(0, 1), 1), (slice(1, None), expected[0] - 1))]
        else:
            cases = [Case(given, [(n, returned) for n in self.task.solver.returns])]
        run = await self.executor.run(self._job(code, cases, label or "run", gate=warm),
                                      keep_scratch=self.keep_scratch,
                                      scratch_root=self.scratch_root)
        result = _to_result(run, split, feedback, n_samples=expected[0])
        if run.status != "ok":
            return result
        pred = run.outputs[0] if not warm else \
            {k: np.concatenate([o[k] for o in run.outputs]) for k in run.outputs[0]}
        if warm:
            result.warm_seconds, result.warm_samples = run.warm_seconds, expected[0] - 1
        if not self.task.batched:  # compared with every stored sample (copies of one problem)
            pred = {k: np.broadcast_to(v[None], expected) for k, v in pred.items()}
        plot_tmp = None
        if plot_path is not None:
            Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
            plot_tmp = Path(plot_path)
        try:
            score = await asyncio.to_thread(score_prediction, self.task, ref, pred,
                                            residual=self.residual or feedback == "residual",
                                            plot_path=plot_tmp,
                                            converged=self.converged.get(split))
        except Exception as exc:  # noqa: BLE001 - a scoring failure is this solver's result
            score = Score(status="error", message=f"cannot score the prediction: {exc}")
        _apply(result, score)
        if prediction_path is not None:
            Path(prediction_path).parent.mkdir(parents=True, exist_ok=True)
            np.savez(prediction_path, **pred)
        if result.ok and self.convergence and not warm:
            result.convergence_order, result.convergence_note = await self._convergence(
                code, inputs, pred, label, result)
        return result

    async def _convergence(self, code: str, inputs: dict, pred: dict, label: str,
                           result: EvalResult) -> tuple[float | None, str]:
        """CodePDE's convergence test: the solver runs sealed on each grid, the order is ours."""
        plan = conv.plan(self.spec, inputs, [pred[n] for n in self.task.solver.returns])
        if plan is None:
            return None, ""
        cases = [Case(i, [(n, shape) for n in self.task.solver.returns]) for i, shape in plan.cases]
        run = await self.executor.run(self._job(code, cases, f"{label or 'run'}-conv"),
                                      keep_scratch=self.keep_scratch,
                                      scratch_root=self.scratch_root)
        result.retries += run.retries
        if run.status == "timeout":
            return None, (f"the convergence test timed out (limit {self.timeout:g} s / "
                          f"{self.memory_mb} MB)")
        if run.status != "ok":
            if run.detail:  # the solver's own words about it: untrusted, beside its others
                result.detail = "\n".join(x for x in (result.detail,
                                                      f"[convergence test] {run.detail}") if x)
            return None, f"the solver failed in the convergence test: {run.message}"[:1000]
        try:
            rate, errors = await asyncio.to_thread(plan.finish, run.outputs)
        except conv.NotMeasured as exc:  # the outputs ignore the given data: no rate
            return None, str(exc)
        except Exception as exc:  # noqa: BLE001
            return None, f"the convergence test failed: {type(exc).__name__}: {exc}"[:1000]
        return conv.rate_note(rate, errors)


def _grid_inputs(task: Task, ref: ReferenceData) -> dict[str, np.ndarray]:
    """A ``grid`` argument's arrays: the task's output grid at the reference's size (checked
    against the file's stored x coordinates, when it has them)."""
    from pdesharp.grid import check_stored_coordinates, grid_inputs, space_shape

    shape = space_shape(task, next(iter(ref.fields.values())).shape)
    try:
        check_stored_coordinates(task, {task.equation.space[0]: ref.x}, shape, ref.path)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    return grid_inputs(task, shape)


def _samples(key: str, value: np.ndarray, part: slice) -> np.ndarray:
    """An input's samples ``part`` (initial fields and per-sample coefficients lead with the
    batch axis); shared inputs (times, grids) whole."""
    return value[part] if key.startswith(("initial:", "coefficient:")) else value


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40] or "run"


def _apply(result: EvalResult, score: Score) -> None:
    result.status = score.status
    notes = [x for x in [result.message, score.message, *score.notes] if x]
    result.message = "; ".join(notes)
    if score.status != "ok":
        return
    result.nrmse = score.nrmse
    result.nrmse_per_sample = score.nrmse_per_sample
    result.nrmse_per_field = score.nrmse_per_field
    result.residual = score.residual
    if score.plot_path is not None:
        result.plot_path = str(score.plot_path)
    result.nrmse_converged = score.nrmse_converged


def _to_result(run: SealedRun, split, feedback, n_samples: int) -> EvalResult:
    """Status, timings and notes from the sealed run (scores come from the arrays)."""
    notes = [n for n in run.notes if not n.startswith("no cgroup")]
    if run.scratch:
        notes.append(f"[scratch kept at {run.scratch}]")
    status = run.status if run.status in ("ok", "error", "timeout", "memory", "shape") else "error"
    return EvalResult(
        status=status, split=split, feedback=feedback, n_samples=n_samples,
        message="; ".join(x for x in [run.message, *notes] if x),
        error_type=run.error_type, detail=run.detail,
        solver_seconds=run.solver_seconds, wall_seconds=run.wall_seconds,
        peak_memory_mb=run.peak_memory_mb, stdout_tail=run.stdout_tail,
        stderr_tail=run.stderr_tail, isolation=run.mechanism, host=run.host,
        retries=run.retries,
    )
