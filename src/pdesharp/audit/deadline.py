"""An audit computed within a time budget: what ``--audit auto`` spends, measured, not predicted.

:mod:`pdesharp.audit.cost` predicts an audit's wall time from measured rates, but the generic
spectral audit's cost grows with the dimension faster than any per-point rate (a 2D implicit
step solves a system over every grid point: a 2-sample 2D Burgers file estimated at 2 s took
62 s). So ``auto`` computes in a child process and stops it at the budget: the run then goes on
without the audit and says which command computes it. The child writes the cache only when it
finishes (:mod:`pdesharp.audit.cache` replaces files atomically, the report last), so a stopped
audit leaves nothing a later run could take for an audit. The audit reads trusted numerics on
the user's own data: the child is a plain process, not the solver sandbox.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from collections.abc import Callable
from pathlib import Path

from pdesharp.task import Task


class AuditOverBudget(Exception):
    """The audit did not finish within the budget; nothing was stored."""


def _child(task: Task, path: str, samples: str | None, limit: int | None, messages) -> None:
    from pdesharp.audit.core import audit_with_cache

    try:
        audit_with_cache(task, path, samples=samples, limit=limit,
                         progress=lambda message: messages.put(("step", message)))
        messages.put(("done", ""))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which decides
        messages.put(("error", f"{type(exc).__name__}: {exc}"[:300]))


def compute_within(task: Task, path: Path, *, samples: str | None, limit: int | None,
                   seconds: float, progress: Callable[[str], None] | None = None) -> None:
    """Compute and cache the audit of ``path`` in a child process; raise
    :class:`AuditOverBudget` when it has not finished after ``seconds`` (the child is stopped),
    RuntimeError with the child's error when it failed."""
    ctx = mp.get_context("spawn")  # the parent runs threads and an event loop: never fork
    messages = ctx.Queue()
    child = ctx.Process(target=_child, args=(task, str(path), samples, limit, messages),
                        name="pdesharp-audit", daemon=True)
    child.start()
    deadline = time.monotonic() + seconds
    try:
        while True:
            try:
                kind, text = messages.get(timeout=max(0.0, min(0.5, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise AuditOverBudget(f"stopped after {seconds:.0f} s, --audit auto's "
                                          "budget") from None
                if not child.is_alive() and messages.empty():
                    raise RuntimeError(f"the audit process ended with code {child.exitcode}")
                continue
            if kind == "step" and progress is not None:
                progress(text)
            elif kind == "done":
                return
            elif kind == "error":
                raise RuntimeError(text)
    finally:
        if child.is_alive():
            child.terminate()
            child.join(5)
            if child.is_alive():
                child.kill()
        child.join(5)
        messages.close()
