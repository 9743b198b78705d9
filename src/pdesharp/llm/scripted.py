"""A chat model that answers from a script, for tests and offline demos.

The replies in a script are written by us (the pdesharp developers) to exercise code paths;
they are NOT recordings of any real language model's output.

Two kinds of script:

* a mapping ``tag -> list of replies``. A call with ``ChatParams.tag == "analysis.stability"``
  consumes the next reply of the most specific key that still has replies: the exact tag
  ``"analysis.stability"``, then the dotted prefixes (``"analysis"``), then the catch-all key
  ``"*"``. Replies are consumed in call order. A reply is a ``str``, a full :class:`Reply` (to script usage or finish_reason),
  or an ``Exception`` instance, which is raised (to script a dead endpoint: ``ModelError(...)``).
* a callable ``(messages, params, call_index) -> str | Reply`` (``call_index`` counts every call
  to this model from 0), for replies that depend on the prompt.

Every call is recorded in :attr:`ScriptedModel.calls`. Running out of script raises
:class:`ScriptExhausted`, which is deliberately *not* a :class:`ModelError`: code that tolerates
a failing endpoint must not hide a test whose script is too short.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Union

from pdesharp.llm.base import ChatParams, Message, Reply, Usage
from pdesharp.llm.prices import Price

ScriptItem = Union[str, Reply, BaseException]
ScriptFn = Callable[[list[Message], ChatParams, int], Union[str, Reply]]
Script = Union[Mapping[str, Sequence[ScriptItem]], ScriptFn]

CATCH_ALL = "*"


class ScriptExhausted(RuntimeError):
    """The script has no reply left for a call (the test's script is too short)."""


@dataclass
class ScriptedCall:
    messages: list[Message]
    params: ChatParams
    index: int  # 0-based, over all calls to this model
    key: str | None = None  # script key that answered (None for a callable script)
    reply: Reply | None = None  # None if the call raised

    @property
    def tag(self) -> str:
        return self.params.tag

    @property
    def prompt(self) -> str:
        """All message contents joined, for ``assert "CFL" in call.prompt``."""
        return "\n\n".join(m.content for m in self.messages)


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters per token), used where no tokenizer reports usage."""
    return math.ceil(len(text) / 4)


@dataclass
class ScriptedModel:
    replies: Script
    name: str = "scripted:test"
    price: Price | None = None  # USD per million tokens; None: every call costs 0
    latency_s: float = 0.0  # reported latency (no real waiting)
    delay_s: float = 0.0  # really await this long after taking the reply (interleaves callers)
    calls: list[ScriptedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not callable(self.replies):
            for key, items in self.replies.items():
                if isinstance(items, str):
                    raise TypeError(f"script key {key!r}: expected a list of replies, got a str")
            # Copy so that consuming replies never mutates the caller's script.
            self._queues: dict[str, list[ScriptItem]] = {
                str(k): list(v) for k, v in self.replies.items()
            }
            self._used: dict[str, int] = {k: 0 for k in self._queues}

    # -- script lookup ------------------------------------------------------------------------
    def _keys_for(self, tag: str) -> list[str]:
        """Script keys matching ``tag``, most specific first."""
        parts = tag.split(".") if tag else []
        keys = [".".join(parts[:n]) for n in range(len(parts), 0, -1)]
        keys.append(CATCH_ALL)
        return [k for k in keys if k in self._queues]

    def remaining(self, key: str | None = None) -> int:
        """Replies not yet consumed (for one script key, or all)."""
        if callable(self.replies):
            return 0
        if key is not None:
            return len(self._queues.get(key, []))
        return sum(len(q) for q in self._queues.values())

    def assert_exhausted(self) -> None:
        """Fail if some scripted replies were never asked for (the code made fewer calls)."""
        left = {k: len(q) for k, q in getattr(self, "_queues", {}).items() if q}
        if left:
            raise AssertionError(f"{self.name}: scripted replies never consumed: {left}")

    def calls_for(self, tag_prefix: str) -> list[ScriptedCall]:
        return [c for c in self.calls if c.tag == tag_prefix or c.tag.startswith(tag_prefix + ".")]

    # -- the ChatModel method ------------------------------------------------------------------
    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        params = params or ChatParams()
        # Everything up to consuming the reply is synchronous, so concurrent callers consume
        # replies in the order they called (asyncio runs one coroutine at a time).
        call = ScriptedCall(messages=list(messages), params=params, index=len(self.calls))
        self.calls.append(call)
        if callable(self.replies):
            item: ScriptItem = self.replies(list(messages), params, call.index)
        else:
            keys = self._keys_for(params.tag)
            key = next((k for k in keys if self._queues[k]), None)
            if key is None:
                have = ", ".join(f"{k!r} ({len(q)} left)" for k, q in self._queues.items())
                where = (", ".join(f"key {k!r} used up after {self._used[k]} replies" for k in keys)
                         if keys else "no key matches")
                raise ScriptExhausted(
                    f"{self.name}: no scripted reply for call #{call.index} with tag "
                    f"{params.tag!r}: {where}. Script keys: {have or 'none'}."
                )
            item = self._queues[key].pop(0)
            self._used[key] += 1
            call.key = key
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if isinstance(item, BaseException):
            raise item
        call.reply = self._as_reply(item, messages)
        return call.reply

    def _as_reply(self, item: str | Reply, messages: list[Message]) -> Reply:
        if isinstance(item, Reply):
            reply = item.model_copy(deep=True)
        elif isinstance(item, str):
            usage = Usage(
                prompt_tokens=sum(estimate_tokens(m.content) for m in messages),
                completion_tokens=estimate_tokens(item),
            )
            reply = Reply(text=item, model=self.name, usage=usage, finish_reason="stop")
        else:
            raise TypeError(f"{self.name}: a scripted reply must be str, Reply or an exception, "
                            f"got {type(item).__name__}")
        reply.latency_s = self.latency_s if not reply.latency_s else reply.latency_s
        if self.price is not None and not reply.cost_usd:
            reply.cost_usd = self.price.cost(reply.usage)
        return reply
