"""What every executor is (:class:`Executor`) and how one fails: the protocol that
:mod:`.executors` (the local one, and the choice among them) and :mod:`.ray_executor` both
implement, kept apart so that neither imports the other's module."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import AsyncContextManager, Protocol

from pdesharp.evaluate.sealed import SealedJob, SealedRun


class ExecutorUnavailable(RuntimeError):
    """The chosen executor cannot run evaluations (Ray missing, cluster unreachable, no GPU in
    the cluster, a node with another pdesharp); the message says what to do."""


class WorkerLost(RuntimeError):
    """The machine running an evaluation was lost, and so was the one retry: an infrastructure
    failure, not the solver's verdict (the evaluation is not recorded; the run is resumable)."""


class Executor(Protocol):
    name: str

    @property
    def isolation(self) -> dict:
        """The sandbox that seals solvers (``SandboxPolicy.summary()`` plus ``executor``)."""

    @property
    def device(self) -> str: ...

    @property
    def max_in_flight(self) -> int:
        """How many evaluations the callers should keep in flight at most."""

    def slot(self) -> AsyncContextManager:
        """Held for one whole evaluation (both sealed runs and scoring)."""

    async def run(self, job: SealedJob, *, keep_scratch: bool = False,
                  scratch_root: Path | None = None) -> SealedRun: ...


def unlimited() -> AsyncContextManager:
    return contextlib.nullcontext()
