"""``pdesharp solve TASK`` and ``pdesharp resume RUN``: run PDE-SHARP with a live display.

``--model scripted:PATH`` is a testing aid: replies come from a YAML rules file written by us
(see :mod:`pdesharp.rolesets`), never from a real model.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# Only what the command line and the run-folder look-ups need (`runs`, `show`, `report` import
# this module too): the pipeline, the task reader (SymPy) and the data readers (h5py, NumPy)
# are imported by the functions that run a command, so `--help` and `pdesharp runs` start fast.
from pdesharp.commands._common import (
    add_data_arguments,
    add_task_argument,
    fail,
    settings_error,
    task_or_exit,
)
from pdesharp.commands.sandbox import add_executor_arguments, add_sandbox_arguments
from pdesharp.llm.cli_args import add_llm_arguments
from pdesharp.store import RunStore, RunStoreError, new_run_id
from pdesharp.synthesis.listing import CODE_BUDGET
from pdesharp.synthesis.ranking import OBJECTIVE_HELP, Objective, ObjectiveError
from pdesharp.untrusted import UnsafeFolder, check_folder, one_line, path_component

if TYPE_CHECKING:
    from pdesharp.pipeline import SolveConfig

DEFAULT_OUT = "runs"


def __getattr__(name: str):
    if name == "Display":  # the live panel, re-exported lazily (PEP 562)
        from pdesharp.commands.solve_display import Display

        return Display
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
                        "cached one and computes a missing one estimated at a minute or less, "
                        "stopped after two (default), compute computes it first if none is cached, off ignores "
                        "it")
    floor = p.add_mutually_exclusive_group()
    floor.add_argument("--floor-saturation", dest="floor_saturation", action="store_true",
                       default=None,
                       help="rank, stop and pick by the floors (the default, for the built-in "
                            "analyst and language models alike): with an audit, the reference "
                            "floor (--floor-factor x the audit's reference error); without "
                            "one, the nRMSE that rounding the reference to its stored type "
                            "causes. Scores at or below the floor tie, the fastest of them "
                            "wins, and the search stops once the best score reaches it")
    floor.add_argument("--no-floor-saturation", dest="floor_saturation", action="store_false",
                       help="no floors: search on, rank by the lowest score alone, and tell "
                            "the models nothing of the audit (the paper's set-up)")
    p.add_argument("--floor-factor", type=float, default=None,
                   help="the floor is this times the reference error (default: "
                        "1/saturation-factor, so any further counted improvement would land "
                        "below the reference's own error)")
    p.add_argument("--tell-judges-reference-error", action="store_true", default=None,
                   help="state the audit's reference error in the prompts under "
                        "--no-floor-saturation too (with the floors on, every prompt after "
                        "the audit states it)")
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
                   help="characters of solver code one judge message may list (the Genesis "
                        "solvers, the pool, a round's news: full code for the best few, forward "
                        "diffs or one-line summaries for the rest; "
                        f"default {CODE_BUDGET})")
    p.add_argument("--quiet", action="store_true", help="no live display")
    p.set_defaults(func=cmd_solve)

    r = sub.add_parser("resume", help="continue a killed or interrupted run")
    r.add_argument("run", help="run folder, or run id under the runs folder")
    r.add_argument("--out", default=None,
                   help=f"runs folder to look the run id up in (default $PDESHARP_RUNS or "
                        f"./{DEFAULT_OUT})")
    r.add_argument("--quiet", action="store_true")
    for flag, typ in (("--max-usd", float), ("--max-tokens", int), ("--max-evals", int)):
        r.add_argument(flag, type=typ, default=None,
                       help=f"raise the run's {flag[6:]} budget (after a budget stop)")
    # Where the data and the model are, not what the run computes: a resumed run may find them
    # elsewhere (a moved data folder, a proxy on a new port). Recorded once the run restarts.
    add_data_arguments(r)
    r.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint URL")
    add_llm_arguments(r)
    r.set_defaults(llm_timeout=None, llm_retries=None)  # unset: keep the run's own
    # How solvers run and which endpoint gets which key: never read from the folder (a run
    # folder is untrusted input); a run started with other values needs them passed again.
    add_sandbox_arguments(r)
    add_executor_arguments(r)
    r.set_defaults(device=None, executor=None)  # unset: the defaults, unless the run differs
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


def run_path(run: str, out: str | None) -> Path:
    """A run given as a folder, or as a run id under the runs folder (one name: no separator,
    no ``..``)."""
    path = Path(run).expanduser()
    if not (path / RunStore.DB_NAME).is_file():
        try:
            path = runs_root(out) / path_component(run, "run id")
        except ValueError as exc:
            fail(f"{run!r} is not a run folder, and {exc}")
    return path


def find_run(run: str, out: str | None, *, readonly: bool = False) -> RunStore:
    """The run's store, after checking its folder holds nothing but regular files and folders
    (:func:`pdesharp.untrusted.check_folder`): a run folder is untrusted input."""
    path = run_path(run, out)
    try:
        if path.is_dir():
            check_folder(path)
        return RunStore.open(path, readonly=readonly)
    except (RunStoreError, UnsafeFolder) as exc:
        fail(str(exc))


NO_MODEL_NOTICE = (
    "pdesharp: no model configured: using the built-in numerical analyst (--model builtin), "
    "which needs no network.\n  To run the LLM pipeline, pass --model provider:model "
    "(e.g. --model openai:gpt-4o with OPENAI_API_KEY set, --model ollama:qwen2.5-coder:7b, or "
    "--model compat:NAME --base-url URL) or set $PDESHARP_MODEL; `pdesharp models` lists providers."
)


def resolved_data(data_dir: str | None, dev_data: str | None, test_data: str | None) -> dict:
    """Where the data are, as absolute paths: a run records them so that `report`, `resume` and
    `show` find them from any shell and any working folder (``$PDESHARP_DATA`` resolved)."""
    from pdesharp.data.paths import data_dir as default_data_dir

    def absolute(p: str | None) -> str | None:  # absolute, symlinks kept as the user gave them
        return None if p is None else os.path.abspath(Path(p).expanduser())

    return {"data_dir": os.path.abspath(default_data_dir(data_dir).expanduser()),
            "dev_data": absolute(dev_data), "test_data": absolute(test_data)}


def cmd_solve(args) -> int:
    from pdesharp.commands.solve_run import run_solve
    from pdesharp.pipeline import SolveConfig, dump_config
    from pdesharp.task import load_task

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
            seed=args.seed, no_cache=args.no_cache, out=str(runs_root(args.out).resolve()),
            task_facts=args.task_facts, genesis=args.genesis, prompt_budget=args.prompt_budget,
            **resolved_data(args.data_dir, args.dev_data, args.test_data),
            timeout=args.timeout, max_samples=args.max_samples,
            convergence=not args.no_convergence, base_url=args.base_url,
            device=args.device, unsafe_no_isolation=args.unsafe_no_isolation,
            executor=args.executor, ray_address=args.ray_address,
            llm=_llm_opts(args), prices=args.prices, audit=args.audit,
            floor_saturation=args.floor_saturation, floor_factor=args.floor_factor,
            judges_see_reference_error=args.tell_judges_reference_error)
    except ValueError as exc:
        fail(settings_error(exc))
    task = load_task(config.task)
    _data_fits(task, config)
    run_id = args.run_id or new_run_id(task.name)
    try:
        path_component(run_id, "--run-id")
    except ValueError as exc:
        fail(str(exc))
    try:
        store = RunStore.create(config.out, task=task, config=dump_config(config), run_id=run_id)
    except FileExistsError:
        fail(f"run folder {runs_root(args.out) / run_id} exists; resume it with "
             f"`pdesharp resume {run_id}` or choose another --run-id")
    except (OSError, sqlite3.Error) as exc:  # a full disk: leave no half-made folder
        shutil.rmtree(Path(config.out) / run_id, ignore_errors=True)
        fail(f"cannot create a run folder under {config.out}: {exc}")
    return run_solve(task, config, store, quiet=args.quiet, fresh=True)


def _data_fits(task, config: SolveConfig) -> None:
    """Data that cannot be this task's (1D arrays for a 2D task, missing keys) refused in one
    line before a run folder exists or any solver runs; missing data is the run's to report."""
    from pdesharp.data.paths import DataNotFound, resolve_split
    from pdesharp.data.reference import DataError, load_reference

    for split, explicit in (("dev", config.dev_data), ("test", config.test_data)):
        try:
            path = resolve_split(task, split, data_dir_override=config.data_dir,
                                 explicit=explicit)
        except DataNotFound:
            continue
        try:
            load_reference(task, path, limit=1)
        except DataError as exc:
            fail(f"the {split} data do not fit task {task.name!r}: {exc}")


def _llm_opts(args) -> dict:
    opts = {k: getattr(args, a) for k, a in (("api_key_env", "api_key_env"),
            ("concurrency", "concurrency"), ("timeout", "llm_timeout"),
            ("max_retries", "llm_retries")) if getattr(args, a, None) is not None}
    return opts


# Options a resume may change: budgets (raised after a budget stop), and where the data and the
# model are. What the run computes (task, model, candidates, ...) stays as it was started.
RESUME_BUDGETS = ("max_usd", "max_tokens", "max_evals")


# What a resume takes from the command line of the user who resumes, never from the run folder
# (a folder from someone else could otherwise run solvers unsandboxed, or send this user's key
# to its own endpoint): the isolation, where solvers run, the endpoint, the key variable and
# the price file. Unset flags mean the defaults; a folder recording another value is refused
# unless the flag is given (with that value, or another).
USER_SETTINGS = {"unsafe_no_isolation": "--unsafe-no-isolation", "device": "--device",
                 "executor": "--executor", "ray_address": "--ray-address",
                 "base_url": "--base-url", "api_key_env": "--api-key-env", "prices": "--prices"}


def user_settings(args, config: SolveConfig) -> dict:
    """The resume's own value of each of :data:`USER_SETTINGS` (``api_key_env`` is kept in
    ``config.llm``); fails naming the flags to pass when the run folder records another."""
    from pdesharp.pipeline import SolveConfig

    given = {k: getattr(args, k, None) or None for k in USER_SETTINGS}
    if given["prices"]:
        given["prices"] = str(Path(given["prices"]).expanduser().resolve())
    recorded = {k: config.llm.get(k) if k == "api_key_env" else getattr(config, k)
                for k in USER_SETTINGS}
    defaults = {k: SolveConfig.model_fields[k].default if k != "api_key_env" else None
                for k in USER_SETTINGS}
    out = {k: defaults[k] if given[k] is None else given[k] for k in USER_SETTINGS}
    refused = [k for k in USER_SETTINGS if given[k] is None and recorded[k] != defaults[k]]
    if refused:
        said = ", ".join(USER_SETTINGS[k] + ("" if recorded[k] is True else
                                             f" {one_line(recorded[k], 80)}") for k in refused)
        fail(f"this run folder records {said}. A resume takes how solvers run and which "
             "endpoint gets which key from its own command line, never from the folder: pass "
             + ("it" if len(refused) == 1 else "them") + " to `pdesharp resume` (the same "
             "values, or others) if you mean it, or start a new run with `pdesharp solve`")
    return out


def resume_changes(args, config: SolveConfig) -> dict:
    """The config fields ``pdesharp resume`` was asked to change (only those that differ)."""
    changes: dict = {k: getattr(args, k) for k in RESUME_BUDGETS
                     if getattr(args, k, None) is not None}
    if args.data_dir or args.dev_data or args.test_data:
        data = resolved_data(args.data_dir or config.data_dir,
                             args.dev_data or config.dev_data, args.test_data or config.test_data)
        changes.update(data)
    settings = user_settings(args, config)
    changes.update({k: v for k, v in settings.items() if k != "api_key_env"})
    llm = {**config.llm, **_llm_opts(args)}
    llm.pop("api_key_env", None)
    if settings["api_key_env"] is not None:
        llm["api_key_env"] = settings["api_key_env"]
    if llm != config.llm:
        changes["llm"] = llm
    return {k: v for k, v in changes.items() if getattr(config, k) != v}


def cmd_resume(args) -> int:
    from pdesharp.runlock import RunBusy, claim

    path = run_path(args.run, args.out)
    find_run(args.run, args.out, readonly=True).close()  # fails with what is wrong, if anything
    try:  # claimed before the folder is opened: a refused resume writes nothing at all
        lock = claim(path)
    except RunBusy as exc:
        fail(f"run {path.name} is being worked on by process {exc.pid}; wait for it or stop "
             f"it first (a killed run leaves a stale lock, which is ignored)")
    except OSError as exc:
        fail(f"cannot write the run folder {path}: {exc.strerror or exc}")
    try:
        store, config, task, changes = _resume_setup(args, path)
    except BaseException:
        lock.unlink(missing_ok=True)
        raise
    if store is None:  # already finished: nothing to do
        lock.unlink(missing_ok=True)
        return 0
    from pdesharp.commands.solve_run import run_solve
    from pdesharp.pipeline import dump_config

    def on_start() -> None:  # the run is set up and going: now record the resume
        if changes:
            store.update_config(dump_config(config), changed=sorted(changes))
        store.event("resume", changed=sorted(changes))

    return run_solve(task, config, store, quiet=args.quiet, on_start=on_start, lock=lock)


def _resume_setup(args, path: Path):
    """The run's store, config (with the resume's changes), task and changes; store None
    when the run is already finished."""
    from pdesharp.pipeline import config_of
    from pdesharp.task import TaskError, load_task_file

    store = RunStore.open(path, readonly=True)  # (checked by cmd_resume) only read: nothing written
    complete = all((store.dir / f).is_file() for f in ("summary.json", "report.md"))
    if store.status == "finished" and complete:
        store.close()
        print(f"run {store.run_id} already finished; `pdesharp show {store.dir}` prints it")
        return None, None, None, None
    # A "finished" run without its report (an older pdesharp set the status before writing
    # them) is resumed like any other: only the final steps are really redone.
    try:
        config = config_of(store)
    except RunStoreError as exc:  # a recorded configuration that is not data one can read
        fail(str(exc))
    except ValueError as exc:  # pydantic's ValidationError: another command's run folder
        fail(f"{store.dir} is not a `pdesharp solve` run (its config does not validate: "
             f"{str(exc).splitlines()[0]})")
    changes = resume_changes(args, config)
    if changes:
        config = config.model_copy(update=changes)
    try:  # the task exactly as solved (a built-in YAML may have changed since)
        task = load_task_file(store.dir / "task.yaml")
    except TaskError as exc:
        fail(str(exc))
    # the data are checked before the folder is opened for writing: a resume that cannot find
    # them leaves the folder byte for byte as it was
    from pdesharp.data.paths import DataNotFound, resolve_split

    try:
        resolve_split(task, "dev", data_dir_override=config.data_dir, explicit=config.dev_data)
    except DataNotFound as exc:
        store.close()
        fail(f"{exc}\n(nothing was changed in the run folder {path}; `pdesharp resume --help` "
             "lists the options a resume takes, e.g. --data-dir, --dev-data, --base-url)")
    store.close()
    return RunStore.open(path), config, task, changes
