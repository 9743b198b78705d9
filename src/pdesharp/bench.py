"""``pdesharp bench``: every method on every task, same model, evaluator and accounting.

Layout of a bench folder::

    bench.json                    the bench configuration (rewritten on every start)
    <task>/<method>-r<k>/         one run folder per cell (RunStore + summary.json)
    table.md, table.csv, table.json   the comparison table

A cell whose ``summary.json`` exists is finished and not re-run; an unfinished cell is reopened
and continued. All counts in the table are read back from the cells' run stores:

* *solver evaluations*: counted executions on the feedback split (dev), debugging re-runs
  included; the final test-split run of the winner is not part of it;
* *debugging iterations per solver*: requests to fix a failed solver, divided by the number of
  solvers written from scratch (samples, refinements, genesis candidates, patches);
* model calls (paid or replayed from the journal are excluded: only calls that reached a model),
  tokens in/out, cost, wall time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pdesharp.baselines import BASELINES, OPTILLM_METHODS
from pdesharp.baselines.common import BaselineConfig
from pdesharp.baselines.runner import run_baseline
from pdesharp.bench_fair import attach_audit, equal_budget
from pdesharp.bench_tables import (COLUMNS, SOLVER_ORIGINS, cell_dir,  # noqa: F401 - re-exported
                                   cell_stats, collect, fmt, to_csv, to_markdown, write_tables)
from pdesharp.task import Task, load_task

ALL_METHODS = ("sharp",) + BASELINES


class BenchError(ValueError):
    """A bench cannot start (unknown method or task); the message says what to fix."""


@dataclass
class BenchConfig:
    tasks: list[str]
    methods: list[str]
    model: str
    out: str = "runs/bench"
    repeats: int = 1
    budget_evals: int | None = None  # the same evaluation budget for every method
    samples: int = 32
    refine_samples: int = 12
    debug_rounds: int = 4
    optillm_url: str | None = None
    data_dir: str | None = None
    # Explicit data files (one task only), as `pdesharp solve --dev-data/--test-data`: with the
    # same files and --no-convergence a bench cell is comparable with a solve run.
    dev_data: str | None = None
    test_data: str | None = None
    convergence: bool = True  # CodePDE's empirical convergence test in every evaluation
    max_samples: int | None = None  # evaluate on the first k samples of each split (smoke runs)
    workers: int = 1  # solver executions at once (per task; local executor)
    executor: str = "local"  # where solvers run: "local" or "ray" (same results either way)
    ray_address: str | None = None  # with "ray": "auto", "ray://host:port", None (local Ray)
    parallel_cells: int = 1  # methods of one task run at once (they share the task's evaluator)
    sharp_options: dict = field(default_factory=dict)  # passed to pipeline.solve
    task_facts: str = "full"  # what every method's prompts state about the task (pdesharp.facts)
    # What picks each cell's winner (pdesharp.synthesis.ranking): PDE-SHARP's search follows it,
    # and under a fastest-* objective the baselines' final pick too (under "accuracy" they keep
    # CodePDE's lowest score). time_margin and retime as for `pdesharp solve`.
    objective: str = "accuracy"
    time_margin: float = 0.3
    retime: int | None = None
    # The model layer's options, as `pdesharp solve` takes them (see pdesharp.llm.cli_args):
    # every method's model is built with them. They say where and how to reach the model, not
    # what a cell computes, so a resumed bench may change them (a proxy on a new port).
    base_url: str | None = None
    llm: dict = field(default_factory=dict)  # make_model options: api_key_env, timeout, ...
    prices: str | None = None  # price table YAML overriding the shipped one
    task_names: list[str] = field(default_factory=list)  # filled in: names of cfg.tasks (paths ok)

    @property
    def names(self) -> list[str]:
        return self.task_names or list(self.tasks)

    def validate(self) -> None:
        bad = [m for m in self.methods if m not in ALL_METHODS]
        if bad:
            raise BenchError(f"unknown method(s) {', '.join(bad)}; choose from "
                             f"{', '.join(ALL_METHODS)}")
        if not self.tasks:
            raise BenchError("no tasks given (--tasks advection,burgers,...)")
        if (self.dev_data or self.test_data) and len(self.tasks) > 1:
            raise BenchError("--dev-data/--test-data name one task's files: bench one task "
                             f"at a time with them (got --tasks {','.join(self.tasks)})")
        if self.repeats < 1:
            raise BenchError("--repeats must be at least 1")
        from pdesharp.synthesis.ranking import Objective, ObjectiveError

        try:
            self.objective = str(Objective.parse(self.objective))
        except ObjectiveError as exc:
            raise BenchError(str(exc)) from None
        if Objective.parse(self.objective).at_floor and set(self.methods) - {"sharp"}:
            raise BenchError("--objective fastest-below:floor takes its target from PDE-SHARP's "
                             "audit, which the baselines do not run: give the target as a "
                             "number (the floor a sharp run reports), or bench only 'sharp'")
        if self.time_margin < 0 or (self.retime is not None and self.retime < 0):
            raise BenchError("--time-margin and --retime must not be negative")
        if self.model.strip().lower() in ("", "builtin") and set(self.methods) - {"sharp"}:
            raise BenchError("--model builtin has no language model for the baselines "
                             f"({', '.join(m for m in self.methods if m != 'sharp')}); give a "
                             "model spec (provider:model) or bench only 'sharp'")

    def check_model_spec(self) -> None:
        """Fail before any cell starts if the model spec cannot name an endpoint (e.g.
        ``compat:x`` without ``--base-url``), instead of failing every cell alike. Only for
        the default model factory: an injected one may use any name."""
        from pdesharp.llm.presets import is_builtin, parse_spec

        spec = self.model.strip()
        if is_builtin(spec) or spec.startswith("scripted:"):
            return
        # With --optillm-url, cot/moa/cepo only pass the name on to the proxy.
        direct = [m for m in self.methods
                  if not (self.optillm_url and m in OPTILLM_METHODS)]
        if not direct:
            return
        try:
            parse_spec(spec, base_url=self.base_url, api_key_env=self.llm.get("api_key_env"))
        except ValueError as exc:
            raise BenchError(f"--model {spec}: {exc}") from None


ModelFactory = Callable[[str, Task, int], Any]  # (method, task, repeat) -> ChatModel
EvaluatorFactory = Callable[[Task], Any]


def solve_model_config(cfg: BenchConfig, **changes):
    """The SolveConfig fields that build models, from the bench's model options."""
    from pdesharp.pipeline import SolveConfig

    fields = dict(model=cfg.model, base_url=cfg.base_url, llm=dict(cfg.llm), prices=cfg.prices)
    return SolveConfig(**{**fields, **changes})  # sharp_options may override any of them


def _default_model_factory(cfg: BenchConfig) -> ModelFactory:
    """Models as ``pdesharp solve`` makes them (presets, response cache, ``scripted:FILE``).
    ``sharp`` gets None: its pipeline builds and journals its own roles from ``cfg.model``."""
    from pdesharp.baselines.optillm_proxy import UpstreamName
    from pdesharp.llm.presets import is_builtin
    from pdesharp.rolesets import make_chat_model

    def factory(method: str, task: Task, repeat: int):
        if method == "sharp":
            return None
        if is_builtin(cfg.model):
            raise BenchError(f"--model builtin has no language model for the baseline {method!r};"
                             " give a model spec (provider:model) or bench only 'sharp'")
        if cfg.optillm_url and method in OPTILLM_METHODS:
            return UpstreamName(cfg.model)  # the proxy holds the upstream credentials
        return make_chat_model(cfg.model, solve_model_config(cfg))

    return factory


def _default_evaluator_factory(cfg: BenchConfig) -> EvaluatorFactory:
    from pdesharp.evaluate import Evaluator

    def factory(task: Task):
        from pdesharp.evaluate.executors import ExecutorUnavailable
        from pdesharp.evaluate.sandbox import SandboxUnavailable

        try:
            return Evaluator(task, data_dir=cfg.data_dir, dev_data=cfg.dev_data,
                             test_data=cfg.test_data, max_samples=cfg.max_samples,
                             convergence=cfg.convergence, workers=cfg.workers,
                             executor=cfg.executor, ray_address=cfg.ray_address)
        except (SandboxUnavailable, ExecutorUnavailable) as exc:
            raise BenchError(str(exc)) from None

    return factory


def baseline_config(cfg: BenchConfig, repeat: int) -> BaselineConfig:
    return BaselineConfig(samples=cfg.samples, refine_samples=cfg.refine_samples,
                          debug_rounds=cfg.debug_rounds, budget_evals=cfg.budget_evals,
                          seed=repeat, task_facts=cfg.task_facts, objective=cfg.objective,
                          time_margin=cfg.time_margin, retime=cfg.retime)


def task_ref(cfg: BenchConfig, task: Task) -> str:
    """How ``cfg`` names ``task``: its built-in or example name, or its YAML file's absolute
    path (what the built-in analyst and `pdesharp resume` load it from)."""
    ref = dict(zip(cfg.names, cfg.tasks)).get(task.name, task.name)
    return str(Path(ref).expanduser().resolve()) if ref.endswith((".yaml", ".yml")) else ref


async def _run_sharp(task: Task, *, model, evaluator, run_dir: Path, cfg: BenchConfig,
                     progress: Callable[..., None] | None = None) -> None:
    """PDE-SHARP through its own pipeline, into the cell's run folder (reopened if a killed
    bench left it unfinished: the pipeline's journal replays what was already asked)."""
    from pdesharp.baselines.runner import open_or_create
    from pdesharp.pipeline import dump_config, solve
    from pdesharp.rolesets import build_roles

    options = {"max_samples": cfg.max_samples, "data_dir": cfg.data_dir,
               "dev_data": cfg.dev_data, "test_data": cfg.test_data,
               "convergence": cfg.convergence,
               "task_facts": cfg.task_facts, "objective": cfg.objective,
               "time_margin": cfg.time_margin, "retime": cfg.retime,
               "executor": cfg.executor, "ray_address": cfg.ray_address, **cfg.sharp_options}
    config = solve_model_config(cfg, task=task_ref(cfg, task), max_evals=cfg.budget_evals,
                                out=str(run_dir.parent), **options)
    store = open_or_create(run_dir.parent, run_dir.name, task, dump_config(config))
    try:
        roles = build_roles(config, store, models={cfg.model: model} if model is not None else None,
                            task=task)
        await solve(task, config, store, roles, evaluator, progress=progress)
    finally:
        store.close()


# Settings that change what a cell computes: a bench folder keeps them fixed, so that resumed
# and added cells stay comparable with the finished ones. Tasks, methods and repeats may grow.
CELL_SETTINGS = ("model", "samples", "refine_samples", "debug_rounds", "budget_evals",
                 "optillm_url", "max_samples", "sharp_options", "task_facts", "objective",
                 "time_margin", "retime", "dev_data", "test_data", "convergence")


def bench_facts(task: Task, cfg: BenchConfig):
    """The task facts of every cell of ``task``: what PDE-SHARP's roles are told (its
    ``rolesets.facts_for`` with the bench's data settings), so the baselines see the same."""
    from pdesharp.rolesets import facts_for

    return facts_for(solve_model_config(cfg, task=task.name, data_dir=cfg.data_dir,
                                        dev_data=cfg.dev_data, test_data=cfg.test_data,
                                        max_samples=cfg.max_samples,
                                        task_facts=cfg.task_facts), task)


def _check_same_settings(path: Path, cfg: BenchConfig) -> None:
    if not path.is_file():
        return
    old = json.loads(path.read_text())
    new = asdict(cfg)
    # a setting an older bench.json lacks had its default then
    defaults = asdict(BenchConfig(tasks=[], methods=[], model=""))
    changed = [k for k in CELL_SETTINGS if old.get(k, defaults[k]) != new[k]]
    if changed:
        what = ", ".join(f"{k}: {old[k]!r} -> {new[k]!r}" for k in changed)
        raise BenchError(f"{path.parent} was benched with other settings ({what}); its finished "
                         "cells would not be comparable. Use the same settings, or a new --out.")


_CELL_LOCKS: dict[str, asyncio.Lock] = {}


def _lock(run_dir: Path) -> asyncio.Lock:
    return _CELL_LOCKS.setdefault(str(run_dir.resolve()), asyncio.Lock())


async def run_cell(task: Task, method: str, repeat: int, *, cfg: BenchConfig,
                   model_factory: ModelFactory, evaluator,
                   on_stage: Callable[[str, str], None] | None = None) -> Path:
    """Run (or finish) one cell; returns its run folder. A cell runs at most once at a time
    (codepde-r waits for the codepde cell it takes its seeds from). ``on_stage(method,
    stage)``: PDE-SHARP's stages as its pipeline reaches them (analysis, genesis, ...)."""
    run_dir = cell_dir(cfg.out, task.name, method, repeat)
    seed_run = None
    if method == "codepde-r":
        seed_run = await run_cell(task, "codepde", repeat, cfg=cfg, model_factory=model_factory,
                                  evaluator=evaluator, on_stage=on_stage)
    async with _lock(run_dir):
        if (run_dir / "summary.json").is_file():
            return run_dir
        model = model_factory(method, task, repeat)
        if method == "sharp":
            stage = None if on_stage is None else \
                (lambda **kw: kw.get("stage") and on_stage(method, kw["stage"]))
            await _run_sharp(task, model=model, evaluator=evaluator, run_dir=run_dir, cfg=cfg,
                             progress=stage)
            return run_dir
        if on_stage is not None:
            on_stage(method, "running")
        await run_baseline(method, task, model=model, evaluator=evaluator,
                           out_root=run_dir.parent, cfg=baseline_config(cfg, repeat),
                           run_id=run_dir.name, seed_run=seed_run, optillm_url=cfg.optillm_url,
                           upstream_model=cfg.model, facts=bench_facts(task, cfg))
    return run_dir


class ObservedEvaluator:
    """A task's evaluator that tells ``report(label, split, result)`` of every execution (the
    bench's progress lines); everything else is the evaluator's own."""

    def __init__(self, inner, report: Callable[[str, str, Any], None]):
        self._inner, self._report = inner, report

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    async def evaluate(self, code: str, *, split, feedback, label: str = "", **kw):
        result = await self._inner.evaluate(code, split=split, feedback=feedback, label=label,
                                            **kw)
        try:
            self._report(label, split, result)
        except Exception:  # noqa: BLE001 - a progress line must never cost a result
            pass
        return result


async def run_bench(cfg: BenchConfig, *, model_factory: ModelFactory | None = None,
                    evaluator_factory: EvaluatorFactory | None = None,
                    progress: Callable[[str], None] | None = None,
                    on_evaluation: Callable[[str, str, str, Any], None] | None = None,
                    on_cell: Callable[[int, int, str], None] | None = None,
                    on_stage: Callable[[str, str], None] | None = None) -> list[dict]:
    """Run every (task, method, repeat) cell not yet finished, then write the tables.
    ``on_evaluation(task, label, split, result)``: every solver execution; ``on_cell(done,
    total, words)``: cells finished so far of all cells (finished ones of an earlier run too);
    ``on_stage(method, stage)``: where a running cell is (see :func:`run_cell`)."""
    cfg.validate()
    if model_factory is None:
        cfg.check_model_spec()
    tasks = [load_task(t) for t in cfg.tasks]
    cfg.task_names = [t.name for t in tasks]
    if len(set(cfg.task_names)) != len(tasks):
        raise BenchError(f"two tasks share a name in {cfg.tasks}: cells are named by task name")
    out = Path(cfg.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    _check_same_settings(out / "bench.json", cfg)
    (out / "bench.json").write_text(json.dumps(asdict(cfg), indent=2))
    model_factory = model_factory or _default_model_factory(cfg)
    evaluator_factory = evaluator_factory or _default_evaluator_factory(cfg)
    sem = asyncio.Semaphore(max(1, cfg.parallel_cells))

    failures: list[str] = []
    n_cells = cfg.repeats * len(tasks) * len(cfg.methods)
    finished = [0]

    def cell_done(words: str) -> None:
        finished[0] += 1
        if on_cell:
            on_cell(finished[0], n_cells, words)

    async def cell(task: Task, method: str, repeat: int, evaluator) -> None:
        async with sem:
            name = f"{task.name} / {method} / repeat {repeat}"
            done = (cell_dir(out, task.name, method, repeat) / "summary.json").is_file()
            if progress:
                progress(f"{name}: {'already finished' if done else 'running'}")
            try:
                run_dir = await run_cell(task, method, repeat, cfg=cfg,
                                         model_factory=model_factory, evaluator=evaluator,
                                         on_stage=on_stage)
            except BenchError:
                raise
            except Exception as exc:  # one broken cell must not cost the others their results
                msg = f"{name} failed: {type(exc).__name__}: {exc}"
                failures.append(msg)
                if progress:
                    progress(msg + " (its folder is kept; run the bench again to continue it)")
                cell_done(f"{name}: failed")
                return
            summary = json.loads((run_dir / "summary.json").read_text())
            score = summary.get("test_nrmse")
            which = "test nRMSE"
            if score is None:
                score, which = summary.get("best_dev_score"), "dev score"
            cell_done(f"{name}: {summary.get('status')}"
                      + (f", {which} {score:.3e}" if isinstance(score, float) else ""))

    for repeat in range(cfg.repeats):
        for task in tasks:
            evaluator = evaluator_factory(task)
            if on_evaluation is not None:
                evaluator = ObservedEvaluator(
                    evaluator, lambda label, split, r, t=task.name: on_evaluation(t, label,
                                                                                 split, r))
            # every method's dev runs are scored against the PDE's solution too (cached after
            # the first repeat)
            await asyncio.to_thread(attach_audit, task, evaluator,
                                    cfg.sharp_options.get("audit", "auto"), out)
            # codepde-r last, so that it finds its codepde seeds finished or in progress.
            methods = sorted(cfg.methods, key=lambda m: m == "codepde-r")
            await asyncio.gather(*(cell(task, m, repeat, evaluator) for m in methods))
            if {"sharp", "codepde"} <= set(cfg.methods):
                try:
                    await equal_budget(cell_dir(out, task.name, "sharp", repeat),
                                       cell_dir(out, task.name, "codepde", repeat), evaluator)
                except Exception as exc:  # noqa: BLE001 - a table row, never a lost bench
                    failures.append(f"{task.name} / CodePDE best-of-N / repeat {repeat}: "
                                    f"{type(exc).__name__}: {exc}")
    rows = collect(out, cfg.names, cfg.methods, cfg.repeats)
    write_tables(out, rows)
    if failures:
        raise BenchIncomplete(failures, rows)
    return rows


class BenchIncomplete(RuntimeError):
    """Some cells failed; the others finished and the tables were written with them."""

    def __init__(self, failures: list[str], rows: list[dict]):
        super().__init__(f"{len(failures)} cell(s) failed:\n  " + "\n  ".join(failures))
        self.failures, self.rows = failures, rows


def load_bench(out: str | Path) -> tuple[BenchConfig, list[dict]]:
    """A bench folder's configuration and its table rows (recomputed from the stores)."""
    out = Path(out)
    data = json.loads((out / "bench.json").read_text())
    cfg = BenchConfig(**data)
    return cfg, collect(out, cfg.names, cfg.methods, cfg.repeats)
