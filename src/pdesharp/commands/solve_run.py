"""Running a solve from the command line: claim the run folder, set up, show progress, end well.

The rules a user can rely on:

* one process per run folder (:func:`pdesharp.store.claim`); a refused command writes nothing;
* a command that fails before anything was computed leaves nothing behind: a fresh run's
  folder is removed, a resumed run's config, events and status are left as they were
  (``on_start`` records a resume's changes only once the run is really going);
* a full disk (or a run folder that cannot be written) ends the run with one line, not a
  traceback; the run stays resumable, its status is not left ``running``, and nothing already
  recorded is lost (every row is committed as it is written);
* Ctrl-C, SIGTERM and model errors leave the run ``interrupted`` and resumable.
"""

from __future__ import annotations

import asyncio
import errno
import shutil
import signal
import sqlite3
import sys
from collections.abc import Callable

from rich.console import Console

from pdesharp.commands._common import fail
from pdesharp.commands.solve_display import Display, log_progress
from pdesharp.llm.base import ModelError
from pdesharp.pipeline import SolveConfig, solve
from pdesharp.runlock import RunBusy, claim
from pdesharp.store import RunStore
from pdesharp.synthesis.timing import apart_words
from pdesharp.untrusted import one_line, rich_markup


def storage_error(exc: BaseException) -> str | None:
    """A one-line description if ``exc`` means the run folder cannot be written (a full disk,
    a quota, a read-only or failing file system), else None."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS,
                                                   errno.EIO):
        return f"{exc.strerror or exc}"
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        if any(w in text for w in ("disk is full", "disk I/O error", "readonly database",
                                   "unable to open database")):
            return text
    cause = exc.__cause__ or exc.__context__
    return storage_error(cause) if cause is not None and cause is not exc else None


def storage_advice(store_dir, what: str) -> str:
    return (f"cannot write the run folder {store_dir}: {what}. Everything recorded before "
            f"this is kept; free some space, then `pdesharp resume {store_dir}`")


def _quietly(action: Callable[[], object]) -> None:
    """A bookkeeping write at the end of a run that may itself hit the full disk."""
    try:
        action()
    except (OSError, sqlite3.Error):
        pass


def _recorded_nothing(store: RunStore) -> bool:
    """No completed model call, candidate or evaluation: the run folder holds no work."""
    db = store.db
    return not any(db.execute(sql).fetchone()[0] for sql in (
        "SELECT COUNT(*) FROM model_calls WHERE error = ''",
        "SELECT COUNT(*) FROM candidates", "SELECT COUNT(*) FROM evaluations"))


def _remove(store: RunStore) -> None:
    _quietly(store.db.close)
    shutil.rmtree(store.dir, ignore_errors=True)


def run_solve(task, config: SolveConfig, store: RunStore, *, quiet: bool = False,
              fresh: bool = False, on_start: Callable[[], None] | None = None,
              lock=None) -> int:
    """Run (or resume) ``store``'s solve. ``lock``: the run's lock if the caller claimed it
    already (resume claims before it opens the folder), else it is claimed here."""
    from pdesharp.data.paths import DataNotFound
    from pdesharp.evaluate import Evaluator
    from pdesharp.rolesets import build_roles

    console = Console(stderr=True, soft_wrap=True)  # a log's lines are never wrapped
    try:
        lock = lock or claim(store.dir)
    except RunBusy as exc:
        _quietly(store.db.close)
        fail(f"run {store.run_id} is being worked on by process {exc.pid}; wait for it or stop "
             f"it first (a killed run leaves a stale lock, which is ignored)")
    except OSError as exc:
        if fresh:
            _remove(store)
        fail(storage_advice(store.dir, exc.strerror or str(exc)) if not fresh else
             f"cannot write the run folder {store.dir}: {exc.strerror or exc}")
    try:
        evaluator = Evaluator(task, data_dir=config.data_dir, dev_data=config.dev_data,
                              test_data=config.test_data, workers=config.workers,
                              timeout=config.timeout, max_samples=config.max_samples,
                              convergence=config.convergence, device=config.device,
                              unsafe_no_isolation=config.unsafe_no_isolation,
                              executor=config.executor, ray_address=config.ray_address,
                              hidden=[store.dir])  # the run folder and store: never in reach
        evaluator.reference("dev")  # read now: a file that cannot be used stops nothing begun
        roles = build_roles(config, store, task=task)
        if on_start is not None:
            on_start()  # a resume's changed limits and options, recorded now it is going
    except (DataNotFound, OSError, ValueError, RuntimeError, ImportError, ModelError,
            sqlite3.Error) as exc:
        lock.unlink(missing_ok=True)
        if fresh:  # nothing happened yet: leave no run folder behind
            _remove(store)
            fail(str(exc))
        # a resume that cannot start changes nothing: no wall time, no WAL files left
        _quietly(lambda: store.db.execute("PRAGMA journal_mode=DELETE"))
        _quietly(store.db.close)
        broken = storage_error(exc)
        fail(storage_advice(store.dir, broken) if broken else
             f"{exc}\n(nothing was changed in the run folder {store.dir}; `pdesharp resume "
             f"--help` lists the options a resume takes, e.g. --data-dir, --dev-data, "
             f"--base-url)")
    return _run(task, config, store, roles, evaluator, lock, console, quiet=quiet, fresh=fresh)


def _run(task, config, store, roles, evaluator, lock, console, *, quiet, fresh) -> int:
    from pdesharp.commands.sandbox import UNSAFE_WARNING

    hint = f"the run is resumable: pdesharp resume {store.dir}"
    live = not quiet and console.is_terminal
    log = log_progress(store.run_id, config.max_evals) if not quiet and not live else None
    display = Display(store.run_id, limit=config.max_evals, log=log)
    previous = signal.signal(signal.SIGTERM, _terminate)  # `kill`/timeouts end like Ctrl-C
    try:
        store.event("isolation", **evaluator.isolation)
        if evaluator.isolation["unsafe"]:
            print(UNSAFE_WARNING, file=sys.stderr)
        progress = display.update(store)
        store.observer = display.observe
        for model in roles.models:  # refresh tokens/cost on every model call
            model.on_call = lambda tag: progress(last_call=tag)
        if not fresh:
            acc = store.accounting()
            (log.note if log else lambda m: console.print(m, markup=False, highlight=False))(
                f"resuming run {store.run_id}: {acc['feedback_evaluations']} evaluations and "
                f"{acc['model_calls']} model calls already recorded (looked up, not repeated)")
        if live:
            from rich.live import Live

            with Live(display, console=console, refresh_per_second=4, transient=False,
                      redirect_stdout=False):
                result = asyncio.run(solve(task, config, store, roles, evaluator,
                                           progress=progress))
        else:
            with log if log is not None else _Null():
                result = asyncio.run(solve(task, config, store, roles, evaluator,
                                           progress=progress))
    except ModelError as exc:
        if fresh and _recorded_nothing(store):  # a dead endpoint: no empty folder per attempt
            lock.unlink(missing_ok=True)
            _remove(store)
            console.print(f"[red]model error:[/] {rich_markup(exc)}\nnothing was recorded, so "
                          f"the run folder {store.dir} was removed; run the same command again "
                          "once the endpoint answers")
            return 1
        note = one_line(exc, 300)
        _quietly(lambda: store.set_status("interrupted", note))
        _quietly(store.write_summary)
        console.print(f"[red]model error:[/] {rich_markup(exc)}\n{rich_markup(hint)}")
        return 1
    except KeyboardInterrupt:
        _quietly(lambda: store.set_status("interrupted", "interrupted by the user"))
        console.print(f"interrupted; {hint}", markup=False, highlight=False)
        return 130
    except Exception as exc:  # a bug or an unexpected failure: keep the traceback, stay resumable
        from pdesharp.data.paths import DataNotFound
        from pdesharp.data.reference import DataError

        broken = storage_error(exc)
        if broken:
            _quietly(lambda: store.set_status("interrupted", f"cannot write: {broken}"[:300]))
            print(f"pdesharp: error: {storage_advice(store.dir, broken)}", file=sys.stderr)
            return 1
        if isinstance(exc, (DataError, DataNotFound)):  # resuming on the same file fails again
            _quietly(lambda: store.set_status("failed", f"data: {exc}"[:300]))
            console.print(f"the run failed: the data cannot be used: {one_line(exc, 500)}; fix "
                          f"the file, or resume with other data: pdesharp resume {store.dir} "
                          "--dev-data FILE", markup=False, highlight=False)
            return 1
        import traceback

        log_file = store.dir / "logs" / "error.log"
        _quietly(lambda: log_file.write_text(traceback.format_exc()))
        if store.status not in ("failed",):
            note = f"{type(exc).__name__}: {exc}"[:300]
            _quietly(lambda: store.set_status("failed", note))
        console.print(f"the run failed: {type(exc).__name__}: {one_line(exc, 500)} (traceback "
                      f"in {log_file}); {hint}", markup=False, highlight=False)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        store.observer = None
        _quietly(store.close)
        lock.unlink(missing_ok=True)
    return _print_result(result, config, console)


def _print_result(result, config, console) -> int:
    s = result.summary
    if result.status == "budget_stop":
        console.print(f"[yellow]budget stop:[/] {rich_markup(result.stop_reason)} (best result "
                      "so far kept)")
    elif result.stop_reason:
        print(f"search ended:   {one_line(result.stop_reason, 500)}")
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
    apart = apart_words(timed)
    if apart:
        print(f"taken apart:    {apart}")
    print(f"test nRMSE:     {_fmt(result.test_nrmse)}"
          + (f" ({one_line(s['test_note'], 500)})" if s.get("test_note") else ""))
    if audit.get("status") == "ok" and audit.get("source") == "stated":
        print(f"reference err:  {_fmt(audit['reference_error'])} (as the dev file states it: its "
              "generator's estimate, not measured; `pdesharp data audit` measures it)")
    elif audit.get("status") == "ok":
        print(f"reference err:  {_fmt(audit['reference_error'])} (dev data against a converged "
              f"solution; best solver against it: {_fmt(audit.get('best_nrmse_vs_converged'))})")
    # the search's evaluations, then the runs that fed no decision (the final test, the
    # winner's warm timing)
    extra = [f"{n} {what}" for n, what in ((s.get("test_evaluations", 0), "final test"),
                                            (s.get("warm_timing_evaluations", 0), "warm timing"))
             if n]
    print(f"evaluations:    {s.get('feedback_evaluations', s['evaluations'])}"
          + (f" (+ {', '.join(extra)})" if extra else "")
          + f"; debugging iterations {s['debug_iterations']}")
    print(f"model calls:    {s['model_calls']}, tokens {s['tokens_in']}/{s['tokens_out']}, "
          f"${s['cost_usd']:.4f}")
    print(f"report:         {result.run_dir / 'report.md'}")
    if result.best_id is None:  # nothing usable was produced: say so, exit non-zero
        console.print(f"[red]no solver ran successfully[/] ({rich_markup(s.get('test_note', ''))})"
                      f"; the run is kept in {rich_markup(result.run_dir)}")
        return 1
    return 0


def _terminate(signum, frame):
    raise KeyboardInterrupt  # unwinds asyncio.run: tasks are cancelled, sandboxes cleaned up


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3e}"


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
