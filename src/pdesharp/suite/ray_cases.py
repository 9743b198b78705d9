"""Whole cases on the workers of a Ray cluster (``pdesharp suite run --executor ray``).

Each case not yet done becomes one Ray task, :func:`pdesharp_suite_case`, which runs the case
exactly as the serial driver does (``work``: :func:`pdesharp.suite.run.run_stored_case`: the
case's bench, its cells' run stores, the local sealed executor), so a case's evaluations run
sealed on the worker that runs the case and the table is the serial one. What that requires and implies:

* the suite folder and the results folder must be at the same path on every node (a shared
  file system: NFS, Lustre, a Slurm ``$SCRATCH``); on one machine they are;
* the worker reads the case's reference data and scores its evaluations, and with a language
  model it makes the model calls, with the API key of its own environment (pdesharp sends no
  key to a worker);
* a worker (or node) lost mid-case: Ray runs the task again (``max_retries``), and the new
  attempt reopens the case's run folders, where every model call and evaluation the lost
  attempt recorded is replayed from the journal, not repeated (the `pdesharp resume`
  machinery). A case that fails for another reason is recorded as failed, not retried.

Progress: workers put ``(case, stage)`` on a Ray queue that the driver drains; the driver
records each case in the results store as its task returns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict

MAX_RETRIES = 2  # attempts after a lost worker or node (a case is resumed, not restarted)
POLL = 0.5  # seconds between looks at finished cases and stage messages

log = logging.getLogger(__name__)


def pdesharp_suite_case(work: Callable, cfg: dict, case, queue=None) -> dict:
    """One case on this worker: ``work(cfg, case, stage)`` (a module-level function, which Ray
    ships by reference: :func:`pdesharp.suite.run.run_stored_case`), its stages put on the
    driver's queue."""

    def stage(name: str, words: str) -> None:
        if queue is not None:
            try:
                queue.put_nowait((name, words))
            except Exception:  # noqa: BLE001 - a full or closed queue costs a progress line only
                pass

    return work(cfg, case, stage)


def run_on_ray(cfg, todo: list, *, work: Callable, record: Callable, stage=None,
               note=None) -> None:
    """Every ``(position, case)`` of ``todo`` as a Ray task running ``work(settings, case,
    stage)``; ``record(position, case, got)`` as each returns, in the order they finish."""
    from pdesharp.evaluate.ray_executor import connect

    connect(cfg.ray_address)
    import ray
    from ray.util.queue import Empty, Queue

    queue = Queue(maxsize=1000) if stage else None
    remote = ray.remote(pdesharp_suite_case).options(
        num_cpus=max(1, int(cfg.workers)), max_retries=MAX_RETRIES, retry_exceptions=False)
    settings = asdict(cfg)
    pending = {remote.remote(work, settings, case, queue): (i, case) for i, case in todo}
    if note:
        note(f"{len(pending)} case(s) sent to the Ray cluster"
             f" ({cfg.ray_address or 'a local instance'})")
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL)
            while queue is not None:
                try:
                    name, words = queue.get_nowait()
                except Empty:
                    break
                stage(name, words)
            for ref in ready:
                i, case = pending.pop(ref)
                record(i, case, _outcome(ray, ref, case))
    except BaseException:
        for ref in pending:  # interrupted: the cases' workers stop; their folders resume later
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001
                pass
        raise
    finally:
        if queue is not None:
            try:
                queue.shutdown()
            except Exception:  # noqa: BLE001
                pass


def _outcome(ray, ref, case) -> dict:
    """The task's result, or a failed case naming why (the work it recorded is kept)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None) or exc
        return {"state": "failed", "rows": [],
                "reason": f"{type(cause).__name__}: {str(cause).splitlines()[0][:500]}"}
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
            ray.exceptions.LocalRayletDiedError, ray.exceptions.ObjectLostError,
            ray.exceptions.OutOfMemoryError) as exc:
        return {"state": "failed", "rows": [],
                "reason": f"the Ray worker running {case.name} was lost {MAX_RETRIES + 1} times "
                          f"({type(exc).__name__}); its recorded work is kept: resume the suite"}
