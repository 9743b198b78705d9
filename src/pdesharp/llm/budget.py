"""Run budgets (USD, tokens, solver evaluations) and a per-endpoint concurrency limit.

Limits are checked *before* spending: a model call or an evaluation is refused with
:class:`BudgetExceeded` once a limit is reached, while a reply that has already been paid for is
always charged and returned (throwing it away would waste the money). So a run can overshoot
``max_usd`` / ``max_tokens`` by at most the calls in flight when the limit was crossed; it never
overshoots ``max_evals``, which is reserved atomically.

Cache hits (``Reply.cached``) cost nothing and do not count against ``max_tokens``.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from dataclasses import dataclass

from pdesharp.llm.base import BudgetExceeded, ChatModel, ChatParams, Message, Reply


@dataclass
class Spent:
    usd: float = 0.0
    tokens: int = 0
    evals: int = 0
    calls: int = 0  # model calls charged (cache hits included)
    cached_calls: int = 0


class Budget:
    def __init__(self, max_usd: float | None = None, max_tokens: int | None = None,
                 max_evals: int | None = None):
        for label, value in (("max_usd", max_usd), ("max_tokens", max_tokens), ("max_evals", max_evals)):
            if value is not None and value < 0:
                raise ValueError(f"Budget {label} must be >= 0, got {value}")
        self.max_usd = max_usd
        self.max_tokens = max_tokens
        self.max_evals = max_evals
        self.spent = Spent()
        # Evaluations may be charged from worker threads; model calls from the event loop.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"Budget(max_usd={self.max_usd}, max_tokens={self.max_tokens}, "
                f"max_evals={self.max_evals}, spent={self.spent})")

    # -- state --------------------------------------------------------------------------------
    def exhausted(self) -> str | None:
        """Why no further model call may start (None while there is budget left)."""
        s = self.spent
        if self.max_usd is not None and s.usd >= self.max_usd:
            return f"USD budget spent: ${s.usd:.4f} of max ${self.max_usd:.4f}"
        if self.max_tokens is not None and s.tokens >= self.max_tokens:
            return f"token budget spent: {s.tokens} of max {self.max_tokens} tokens"
        return None

    @property
    def remaining(self) -> dict[str, float | int | None]:
        """What is left of each limit (None: unlimited)."""
        s = self.spent
        return {
            "usd": None if self.max_usd is None else max(0.0, self.max_usd - s.usd),
            "tokens": None if self.max_tokens is None else max(0, self.max_tokens - s.tokens),
            "evals": None if self.max_evals is None else max(0, self.max_evals - s.evals),
        }

    # -- spending -----------------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`BudgetExceeded` if a model call may not start."""
        reason = self.exhausted()
        if reason:
            raise BudgetExceeded(reason)

    def charge(self, reply: Reply) -> None:
        """Record a reply's cost and tokens. Never raises: the call is already paid for."""
        with self._lock:
            self.spent.calls += 1
            if reply.cached:
                self.spent.cached_calls += 1
                return
            self.spent.usd += reply.cost_usd
            self.spent.tokens += reply.usage.prompt_tokens + reply.usage.completion_tokens

    def charge_eval(self) -> None:
        """Reserve one solver evaluation, or raise :class:`BudgetExceeded` if none is left."""
        with self._lock:
            if self.max_evals is not None and self.spent.evals >= self.max_evals:
                raise BudgetExceeded(
                    f"evaluation budget spent: {self.spent.evals} of max {self.max_evals} evaluations")
            self.spent.evals += 1


class MeteredModel:
    """Checks the budget before each call and charges it after."""

    def __init__(self, inner: ChatModel, budget: Budget):
        self.inner = inner
        self.budget = budget
        self.name = inner.name

    def __repr__(self) -> str:
        return f"MeteredModel({self.inner!r}, {self.budget!r})"

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        self.budget.check()
        reply = await self.inner.chat(messages, params)
        self.budget.charge(reply)
        return reply


class ConcurrencyLimit:
    """At most ``n`` calls at once, shareable by several models on one endpoint.

    Works across event loops (one semaphore per loop), so it can be created outside any loop.
    """

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"concurrency must be >= 1, got {n}")
        self.n = n
        self._sems: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._sems.get(loop)
        if sem is None:
            sem = self._sems[loop] = asyncio.Semaphore(self.n)
        return sem


_shared_limits: dict[str, ConcurrencyLimit] = {}


def shared_limit(key: str, n: int) -> ConcurrencyLimit:
    """The process-wide limit for an endpoint (``key``, e.g. its base URL); the first caller's
    ``n`` wins, so every model on one provider shares one pool of slots."""
    limit = _shared_limits.get(key)
    if limit is None:
        limit = _shared_limits[key] = ConcurrencyLimit(n)
    return limit


class LimitedModel:
    """Holds a slot of a :class:`ConcurrencyLimit` for the duration of each call."""

    def __init__(self, inner: ChatModel, max_concurrent: int | ConcurrencyLimit):
        self.inner = inner
        self.limit = (max_concurrent if isinstance(max_concurrent, ConcurrencyLimit)
                      else ConcurrencyLimit(max_concurrent))
        self.name = inner.name

    def __repr__(self) -> str:
        return f"LimitedModel({self.inner!r}, max_concurrent={self.limit.n})"

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        async with self.limit.semaphore():
            return await self.inner.chat(messages, params)
