"""``pdesharp solve TASK`` and ``pdesharp resume RUN``: run PDE-SHARP with a live display.

``--model scripted:PATH`` is a testing aid: replies come from a YAML rules file written by us
(see :mod:`pdesharp.rolesets`), never from a real model.
"""

from __future__ import annotations

import asyncio
import os
import sys
import shutil
import signal
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from pdesharp.commands._common import add_data_arguments, add_task_argument, fail, task_or_exit
from pdesharp.commands.sandbox import (UNSAFE_WARNING, add_executor_arguments,
                                       add_sandbox_arguments)
from pdesharp.llm.base import ModelError
from pdesharp.llm.cli_args import add_llm_arguments
from pdesharp.pipeline import SolveConfig, config_of, dump_config, solve
from pdesharp.store import RunStore, RunStoreError
from pdesharp.synthesis.judges import CODE_BUDGET
from pdesharp.synthesis.ranking import OBJECTIVE_HELP, Objective, ObjectiveError
from pdesharp.task import TaskError, load_task, load_task_file

DEFAULT_OUT = "runs"


def register(sub) -> None:
    p = sub.add_parser("solve", help="run PDE-SHARP (Analysis, Genesis, Synthesis) on a task")
    add_task_argument(p, positional=True)
    p.add_argument("--model", default=os.environ.get("PDESHARP_MODEL"),
                   help="provider:model (e.g. openai:gpt-4o), or 'builtin' for the built-in "
                        "analyst (default: $PDESHARP_MODEL, else builtin)")
    p.add_argument("--judges", default=None, help="three comma-separated model specs")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint URL")
    add_llm_arguments(p)
    p.add_argument("--candidates", type=int, default=32, help="Genesis samples (default 32)")
    p.add_argument("--feedback", choices=["nrmse", "residual", "none"], default="nrmse",
                   help="what judges see: dev-split nRMSE (default), the PDE residual of the "
                        "output (no reference needed), or only whether a solver ran")
    p.add_argument("--max-rounds", type=int, default=4, help="rounds per cycle (default 4)")
    p.add_argument("--rejudge-cycles", type=int, default=1,
                   help="extra cycles with fresh judge contexts (default 1)")
    p.add_argument("--saturation-factor", type=float, default=0.9,
                   help="a round improves if best_new < factor * best_old (default 0.9)")
    p.add_argument("--patience", type=int, default=1,
                   help="rounds without improvement before a cycle stops (default 1)")
    p.add_argument("--debug-attempts", type=int, default=2,
                   help="debugging calls for a solver that fails to run (default 2)")
    p.add_argument("--workers", type=int, default=2, help="parallel evaluations")
    p.add_argument("--tie-tolerance", type=float, default=0.01,
                   help="scores within this relative distance of the best are a tie, won by "
                        "the faster solver (default 0.01 = 1%%)")
    add_objective_arguments(p)
    p.add_argument("--max-usd", type=float, default=None, help="stop the search at this cost")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="stop the search at this many tokens (in + out)")
    p.add_argument("--max-evals", type=int, default=None,
                   help="stop the search after this many feedback evaluations")
    p.add_argument("--no-cache", action="store_true", help="bypass the response cache")
    p.add_argument("--out", default=None, help=f"runs folder (default $PDESHARP_RUNS or ./{DEFAULT_OUT})")
    p.add_argument("--run-id", default=None, help="name of the run folder (default: generated)")
    add_data_arguments(p)
    p.add_argument("--timeout", type=float, default=None, help="seconds per evaluation")
    p.add_argument("--max-samples", type=int, default=None,
                   help="evaluate on the first N samples of each split (quick runs)")
    p.add_argument("--no-convergence", action="store_true",
                   help="skip the empirical convergence test in evaluations")
    add_sandbox_arguments(p)
    p.add_argument("--audit", choices=["auto", "compute", "off"], default="auto",
                   help="reference audit of the dev data (pdesharp data audit): auto uses a "
                        "cached one and computes a missing one estimated at a minute or less "
                        "(default), compute computes it first if none is cached, off ignores "
                        "it")
    floor = p.add_mutually_exclusive_group()
    floor.add_argument("--floor-saturation", dest="floor_saturation", action="store_true",
                       default=None,
                       help="use the reference floor (--floor-factor x the audit's reference "
                            "error): stop the tournament once the best score reaches it, and "
                            "rank every solver at or below it as equally accurate, so the "
                            "fastest of them wins (default: on for the built-in analyst, off "
                            "for LLM roles)")
    floor.add_argument("--no-floor-saturation", dest="floor_saturation", action="store_false",
                       help="no floor: search on, and rank by the lowest score alone (the "
                            "paper's ranking)")
    p.add_argument("--floor-factor", type=float, default=None,
                   help="the floor is this times the reference error (default: "
                        "1/saturation-factor, so any further counted improvement would land "
                        "below the reference's own error)")
    p.add_argument("--tell-judges-reference-error", action="store_true",
                   help="show LLM judges the audit's reference error (off by default, as in "
                        "the paper's setup; with --floor-saturation the judges see the floor, "
                        "floor factor x that error, as part of the ranking rule either way)")
    add_executor_arguments(p)
    p.add_argument("--seed", type=int, default=0,
                   help="recorded with the run (the pipeline itself makes no random choices)")
    p.add_argument("--task-facts", choices=["full", "codepde"], default="full",
                   help="what the prompts tell the models about the task: everything the spec "
                        "and the data say (full, default), or exactly what CodePDE's prompts "
                        "give (codepde: description and template), to compare with published "
                        "numbers")
    p.add_argument("--genesis", choices=["independent", "diverse"], default="independent",
                   help="Genesis sampling: N independent samples of one prompt (the paper's, "
                        "default), or diverse: each later candidate is shown the designs already "
                        "written and asked for a different one")
    p.add_argument("--prompt-budget", type=int, default=CODE_BUDGET, metavar="CHARS",
                   help="characters of solver code a judge prompt may show (full code for its "
                        "base and the best few, diffs or one-line summaries for the rest; "
                        f"default {CODE_BUDGET})")
    p.add_argument("--quiet", action="store_true", help="no live display")
    p.set_defaults(func=cmd_solve)

    r = sub.add_parser("resume", help="continue a killed or interrupted run")
    r.add_argument("run", help="run folder, or run id under the runs folder")
    r.add_argument("--out", default=None)
    r.add_argument("--quiet", action="store_true")
    for flag, typ in (("--max-usd", float), ("--max-tokens", int), ("--max-evals", int)):
        r.add_argument(flag, type=typ, default=None,
                       help=f"raise the run's {flag[6:]} budget (after a budget stop)")
    r.set_defaults(func=cmd_resume)


def objective_arg(text: str) -> str:
    """``--objective``: checked while the command line is parsed (argparse prints the error)."""
    import argparse

    try:
        return str(Objective.parse(text))
    except ObjectiveError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_objective_arguments(p) -> None:
    """--objective, --time-margin, --retime (also on `pdesharp bench`)."""
    p.add_argument("--objective", type=objective_arg, default="accuracy", metavar="OBJECTIVE",
                   help=f"what the search optimises: {OBJECTIVE_HELP}".replace("%", "%%"))
    p.add_argument("--time-margin", type=float, default=0.3, metavar="FRACTION",
                   help="one timing cannot tell apart solvers whose times differ by less than "
                        "this fraction: then the lower score wins (default 0.3; a median of k "
                        "timings gets 0.3/sqrt(k))")
    p.add_argument("--retime", type=int, default=None, metavar="N",
                   help="when time decides between close candidates at the end, run each "
                        "finalist N more times (counted evaluations) and use the median "
                        "(default 2, under every objective: time decides on repeatable "
                        "timings)")


def runs_root(out: str | None) -> Path:
    return Path(out or os.environ.get("PDESHARP_RUNS") or DEFAULT_OUT)


def find_run(run: str, out: str | None) -> RunStore:
    path = Path(run)
    if not (path / RunStore.DB_NAME).is_file():
        path = runs_root(out) / run
    try:
        return RunStore.open(path)
    except RunStoreError as exc:
        fail(str(exc))


NO_MODEL_NOTICE = (
    "pdesharp: no model configured: using the built-in numerical analyst (--model builtin), "
    "which needs no network.\n  To run the LLM pipeline, pass --model provider:model "
    "(e.g. --model openai:gpt-4o with OPENAI_API_KEY set, --model ollama:qwen2.5-coder:7b, or "
    "--model compat:NAME --base-url URL) or set $PDESHARP_MODEL; `pdesharp models` lists providers."
)


def cmd_solve(args) -> int:
    task_or_exit(args.task)
    if not args.model:
        print(NO_MODEL_NOTICE, file=sys.stderr)
    task_ref = str(Path(args.task).resolve()) if Path(args.task).is_file() else args.task
    judges = [s.strip() for s in args.judges.split(",")] if args.judges else None
    try:
        config = SolveConfig(
            task=task_ref, model=args.model, judges=judges, candidates=args.candidates,
            feedback=args.feedback, max_rounds=args.max_rounds,
            rejudge_cycles=args.rejudge_cycles, saturation_factor=args.saturation_factor,
            patience=args.patience, debug_attempts=args.debug_attempts, workers=args.workers,
            tie_tolerance=args.tie_tolerance, objective=args.objective,
            time_margin=args.time_margin, retime=args.retime,
            max_usd=args.max_usd, max_tokens=args.max_tokens, max_evals=args.max_evals,
            seed=args.seed, no_cache=args.no_cache, out=str(runs_root(args.out)),
            task_facts=args.task_facts, genesis=args.genesis, prompt_budget=args.prompt_budget,
            data_dir=args.data_dir, dev_data=args.dev_data, test_data=args.test_data,
            timeout=args.timeout, max_samples=args.max_samples,
            convergence=not args.no_convergence, base_url=args.base_url,
            device=args.device, unsafe_no_isolation=args.unsafe_no_isolation,
            executor=args.executor, ray_address=args.ray_address,
            llm=_llm_opts(args), prices=args.prices, audit=args.audit,
            floor_saturation=args.floor_saturation, floor_factor=args.floor_factor,
            judges_see_reference_error=args.tell_judges_reference_error)
    except ValueError as exc:
        fail(str(exc))
    task = load_task(config.task)
    try:
        store = RunStore.create(config.out, task=task, config=dump_config(config), run_id=args.run_id)
    except FileExistsError:
        fail(f"run folder {runs_root(args.out) / args.run_id} exists; resume it with "
             f"`pdesharp resume {args.run_id}` or choose another --run-id")
    return run_solve(task, config, store, quiet=args.quiet, fresh=True)


def _llm_opts(args) -> dict:
    opts = {k: getattr(args, a) for k, a in (("api_key_env", "api_key_env"),
            ("concurrency", "concurrency"), ("timeout", "llm_timeout"),
            ("max_retries", "llm_retries")) if getattr(args, a, None) is not None}
    return opts


def cmd_resume(args) -> int:
    store = find_run(args.run, args.out)
    complete = all((store.dir / f).is_file() for f in ("summary.json", "report.md"))
    if store.status == "finished" and complete:
        print(f"run {store.run_id} already finished; `pdesharp show {store.dir}` prints it")
        return 0
    # A "finished" run without its report (an older pdesharp set the status before writing
    # them) is resumed like any other: only the final steps are really redone.
    try:
        config = config_of(store)
    except ValueError as exc:  # pydantic's ValidationError: another command's run folder
        fail(f"{store.dir} is not a `pdesharp solve` run (its config does not validate: "
             f"{str(exc).splitlines()[0]})")
    raised = {k: getattr(args, k) for k in ("max_usd", "max_tokens", "max_evals")
              if getattr(args, k, None) is not None}
    if raised:
        config = config.model_copy(update=raised)
        store.update_config(dump_config(config))
    try:  # the task exactly as solved (a built-in YAML may have changed since)
        task = load_task_file(store.dir / "task.yaml")
    except TaskError as exc:
        fail(str(exc))
    store.event("resume")
    return run_solve(task, config, store, quiet=args.quiet)


def run_solve(task, config: SolveConfig, store: RunStore, *, quiet: bool = False,
              fresh: bool = False) -> int:
    from pdesharp.data.paths import DataNotFound
    from pdesharp.evaluate import Evaluator
    from pdesharp.rolesets import build_roles

    console = Console(stderr=True)
    lock = _claim(store)
    try:
        evaluator = Evaluator(task, data_dir=config.data_dir, dev_data=config.dev_data,
                              test_data=config.test_data, workers=config.workers,
                              timeout=config.timeout, max_samples=config.max_samples,
                              convergence=config.convergence, device=config.device,
                              unsafe_no_isolation=config.unsafe_no_isolation,
                              executor=config.executor, ray_address=config.ray_address,
                              hidden=[store.dir])  # the run folder and store: never in reach
        evaluator.data_path("dev")
        roles = build_roles(config, store, task=task)
    except (DataNotFound, OSError, ValueError, RuntimeError, ImportError, ModelError) as exc:
        if fresh:  # nothing happened yet: leave no empty run folder behind
            store.db.close()
            shutil.rmtree(store.dir, ignore_errors=True)
            fail(str(exc))
        store.set_status("failed", str(exc)[:300])
        lock.unlink(missing_ok=True)
        fail(f"{exc}\n(run folder: {store.dir})")
    store.event("isolation", **evaluator.isolation)
    if evaluator.isolation["unsafe"]:
        print(UNSAFE_WARNING, file=sys.stderr)
    display = Display(store.run_id)
    progress = display.update(store)
    for model in roles.models:  # refresh tokens/cost on every model call
        model.on_call = lambda tag: progress(last_call=tag)
    hint = f"the run is resumable: pdesharp resume {store.dir}"
    previous = signal.signal(signal.SIGTERM, _terminate)  # `kill`/timeouts end like Ctrl-C
    try:
        with Live(display, console=console, refresh_per_second=4, transient=False,
                  redirect_stdout=False) if not quiet and console.is_terminal else _Null():
            result = asyncio.run(solve(task, config, store, roles, evaluator,
                                       progress=progress))
    except ModelError as exc:
        store.set_status("interrupted", str(exc)[:300])
        store.write_summary()
        console.print(f"[red]model error:[/] {exc}\n{hint}")
        return 1
    except KeyboardInterrupt:
        store.set_status("interrupted", "interrupted by the user")
        console.print(f"interrupted; {hint}")
        return 130
    except Exception as exc:  # a bug or an unexpected failure: keep the traceback, stay resumable
        import traceback

        log = store.dir / "logs" / "error.log"
        log.write_text(traceback.format_exc())
        if store.status not in ("failed",):
            store.set_status("failed", f"{type(exc).__name__}: {exc}"[:300])
        console.print(f"[red]the run failed:[/] {type(exc).__name__}: {exc} (traceback in "
                      f"{log}); {hint}")
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        store.close()
        lock.unlink(missing_ok=True)
    s = result.summary
    if result.status == "budget_stop":
        console.print(f"[yellow]budget stop:[/] {result.stop_reason} (best result so far kept)")
    elif result.stop_reason:
        print(f"search ended:   {result.stop_reason}")
    print(f"run:            {result.run_dir}")
    print(f"best solver:    {s.get('best_solver') or 'none'}")
    print(f"{'dev ' + config.feedback + ':':<16}{_fmt(result.best_dev_score)}")
    audit = s.get("reference_audit") or {}
    if config.objective != "accuracy" or audit.get("ranked_below_floor"):
        print(f"objective:      {s.get('objective_words') or config.objective}")
    floor_pick = s.get("floor_pick")
    if floor_pick:  # the floor changed the pick: name what the lowest score alone would take
        t = floor_pick.get("lowest_per_sample")
        print(f"lowest score:   {floor_pick['lowest_id']} {_fmt(floor_pick['lowest_score'])}, "
              + (f"{t:.3g} s per sample" if t is not None else "time unknown")
              + " (not picked: at or below the reference floor the fastest wins; "
              "--no-floor-saturation ranks by score alone)")
    timed = s.get("winner_time") or {}
    if timed.get("per_sample") is not None:
        print(f"solver time:    {timed['per_sample']:.3g} s per sample (dev; {timed['how']})")
    print(f"test nRMSE:     {_fmt(result.test_nrmse)}"
          + (f" ({s['test_note']})" if s.get("test_note") else ""))
    if audit.get("status") == "ok":
        print(f"reference err:  {_fmt(audit['reference_error'])} (dev data against a converged "
              f"solution; best solver against it: {_fmt(audit.get('best_nrmse_vs_converged'))})")
    print(f"evaluations:    {s['evaluations']} (debugging iterations {s['debug_iterations']})")
    print(f"model calls:    {s['model_calls']}, tokens {s['tokens_in']}/{s['tokens_out']}, "
          f"${s['cost_usd']:.4f}")
    print(f"report:         {result.run_dir / 'report.md'}")
    if result.best_id is None:  # nothing usable was produced: say so, exit non-zero
        console.print(f"[red]no solver ran successfully[/] ({s.get('test_note', '')}); the run"
                      f" is kept in {result.run_dir}")
        return 1
    return 0


def _terminate(signum, frame):
    raise KeyboardInterrupt  # unwinds asyncio.run: tasks are cancelled, sandboxes cleaned up


def _claim(store: RunStore) -> Path:
    """One process per run folder: a second `resume` of a live run would duplicate work."""
    import psutil

    lock = store.dir / "run.lock"
    if lock.is_file():
        try:
            pid = int(lock.read_text().strip() or 0)
        except ValueError:
            pid = 0
        if pid and pid != os.getpid() and psutil.pid_exists(pid):
            fail(f"run {store.run_id} is being worked on by process {pid}; wait for it or stop "
                 f"it first (a killed run leaves a stale lock, which is ignored)")
    lock.write_text(str(os.getpid()))
    return lock


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3e}"


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Display:
    """The live status panel; updated from the pipeline's progress callback."""

    def __init__(self, run_id: str):
        self.state: dict = {"run": run_id, "stage": "starting"}

    def update(self, store: RunStore):
        def progress(**info) -> None:
            self.state.update({k: v for k, v in info.items() if v is not None})
            if info.get("last_call") == "genesis":
                self.state["written"] = self.state.get("genesis_replies", 0) + 1
                self.state["genesis_replies"] = self.state["written"]
            acc = store.accounting()  # on the event-loop thread, where the store lives
            self.state.update(tokens=f"{acc['tokens_in']}/{acc['tokens_out']}",
                              cost=f"${acc['cost_usd']:.4f}", evaluations=acc["evaluations"])
        return progress

    def __rich__(self) -> Table:
        t = Table(show_header=False, title="pdesharp solve", box=None)
        s = self.state
        rows = [("run", s.get("run")), ("stage", s.get("stage")),
                ("candidates", s.get("written", s.get("candidates"))),
                ("round", f"cycle {s['cycle']}, round {s['round']}" if "round" in s else None),
                ("best score", _fmt(s["best"]) if s.get("best") is not None else None),
                ("evaluations", s.get("evaluations")), ("last model call", s.get("last_call")),
                ("tokens in/out", s.get("tokens")),
                ("cost", s.get("cost"))]
        for k, v in rows:
            if v is not None:
                t.add_row(k, str(v))
        return t


