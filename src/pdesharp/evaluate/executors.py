"""Where sealed runs happen: on this machine, or on the workers of a Ray cluster.

The :class:`~pdesharp.evaluate.evaluator.Evaluator` builds a :class:`~.sealed.SealedJob` (solver
source, input arrays, limits) and hands it to an :class:`Executor`, which returns the
:class:`~.sealed.SealedRun` (checked arrays, times, tails, status). Scoring stays with the
evaluator, where the reference lives; nothing above it knows which executor ran a solver.

``local`` (the default)
    :func:`~.sealed.run_sealed` in this process's event loop, under this machine's sandbox
    policy; at most ``workers`` evaluations at once (:meth:`Executor.slot`).
``ray``
    :class:`~pdesharp.evaluate.ray_executor.RayExecutor`: the job goes to a Ray task that runs
    the same :func:`~.sealed.run_sealed` under a policy resolved *on the worker*; evaluations
    in flight follow the cluster's free resources.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import AsyncContextManager

from pdesharp.evaluate.executor import (  # noqa: F401 - re-exported
    Executor,
    ExecutorUnavailable,
    WorkerLost,
    unlimited,
)
from pdesharp.evaluate.sandbox import SandboxPolicy, resolve
from pdesharp.evaluate.sealed import SealedJob, SealedRun, run_sealed

EXECUTORS = ("local", "ray")


class LocalExecutor:
    """Sealed children of this process, at most ``workers`` evaluations at once."""

    name = "local"

    def __init__(self, policy: SandboxPolicy, workers: int = 1):
        self.policy = policy
        self.workers = max(1, int(workers))
        self._semaphore: asyncio.Semaphore | None = None
        self._loop = None

    @property
    def isolation(self) -> dict:
        return {**self.policy.summary(), "executor": self.name}

    @property
    def device(self) -> str:
        return self.policy.device

    @property
    def max_in_flight(self) -> int:
        return self.workers

    def slot(self) -> AsyncContextManager:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:  # one per event loop
            self._semaphore, self._loop = asyncio.Semaphore(self.workers), loop
        return self._semaphore

    async def run(self, job: SealedJob, *, keep_scratch: bool = False,
                  scratch_root: Path | None = None) -> SealedRun:
        return await run_sealed(job, self.policy, keep_scratch=keep_scratch,
                                scratch_root=scratch_root)


def in_bound_tree(path) -> bool:
    """Whether ``path`` lies in a folder the sandbox binds read-only (system folders, the
    Python runtime): only such paths need masking. A remote executor is told only those, so a
    job normally names no data path at all."""
    from pdesharp.evaluate.sandbox import SYSTEM_DIRS, runtime_roots

    p = Path(path).resolve()
    return any(p == r or r in p.parents for r in [*map(Path, SYSTEM_DIRS), *runtime_roots()])


def make_executor(name: str = "local", *, address: str | None = None, workers: int = 1,
                  threads: int = 1, unsafe: bool = False, device: str = "cpu",
                  sandbox: str | None = None, hidden: list | tuple = ()) -> Executor:
    """The executor ``name``; raises ``SandboxUnavailable`` if no machine that would run the
    solvers can seal them (and ``unsafe`` is not set), :class:`ExecutorUnavailable` if the
    executor itself cannot start."""
    if name == "local":
        if address:
            raise ExecutorUnavailable("--ray-address needs --executor ray")
        policy = resolve(unsafe=unsafe, device=device, force=sandbox,
                         hidden=[Path(h) for h in hidden])
        return LocalExecutor(policy, workers)
    if name == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ExecutorUnavailable(
                "--executor ray needs Ray on this machine: pip install 'pdesharp[ray]' (and "
                "the same pdesharp on every node of the cluster; see docs/cluster.md)") from None
        from pdesharp.evaluate.ray_executor import RayExecutor, SandboxRequest

        request = SandboxRequest(unsafe=unsafe, device=device, force=sandbox,
                                 hidden=tuple(str(h) for h in hidden if in_bound_tree(h)))
        return RayExecutor(request, address=address, threads=threads)
    raise ExecutorUnavailable(f"unknown executor {name!r} (choose from {', '.join(EXECUTORS)})")
