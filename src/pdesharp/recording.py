"""Every model call of a run goes through :class:`RecordingModel`.

It journals each call in the run store (``model_calls``), replays this run's own earlier replies
when a killed run is resumed, and enforces the USD and token budgets.

Resume works because the pipeline is deterministic given its inputs: a resumed run starts from
the beginning, and every request it makes that the killed run already completed is identical
(same messages, same parameters, same ``sample_index``), so it is answered from the journal
(``source = "replay"``, no cost) instead of the model. The k-th identical request of a session
gets the k-th recorded reply. Only requests the killed run never finished reach the model.
"""

from __future__ import annotations

import hashlib
import json

from pdesharp.llm.base import BudgetExceeded, ChatParams, Message, ModelError, Reply, Usage
from pdesharp.store import RunStore


def request_key(model: str, messages: list[Message], params: ChatParams) -> str:
    payload = json.dumps({"model": model, "messages": [m.record() for m in messages],
                          "params": params.model_dump()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class RecordingModel:
    """A ChatModel wrapper: journal, replay, budgets. ``inner`` does the real work."""

    def __init__(self, inner, store: RunStore, *, max_usd: float | None = None,
                 max_tokens: int | None = None):
        self.inner = inner
        self.name = inner.name
        self.store = store
        self.max_usd = max_usd
        self.max_tokens = max_tokens
        self._replay = store.replayable_calls()
        self._used: dict[str, int] = {}
        self.on_call = None  # optional callback(tag) after each call (the live display)

    def _check_budget(self) -> None:
        acc = self.store.accounting()
        if self.max_usd is not None and acc["cost_usd"] >= self.max_usd:
            raise BudgetExceeded(f"USD budget spent: ${acc['cost_usd']:.4f} of "
                                 f"${self.max_usd:.4f} (--max-usd)")
        if self.max_tokens is not None and acc["tokens_in"] + acc["tokens_out"] >= self.max_tokens:
            raise BudgetExceeded(f"token budget spent: {acc['tokens_in'] + acc['tokens_out']} of "
                                 f"{self.max_tokens} tokens (--max-tokens)")

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        params = params or ChatParams()
        key = request_key(self.name, messages, params)
        n = self._used.get(key, 0)
        rows = self._replay.get(key, [])
        if n < len(rows):
            self._used[key] = n + 1
            row = rows[n]
            reply = Reply(text=row["reply"], model=row["model"], cached=True,
                          usage=Usage(prompt_tokens=row["prompt_tokens"],
                                      completion_tokens=row["completion_tokens"],
                                      cached_tokens=row["cached_tokens"] or 0,
                                      cache_write_tokens=row["cache_write_tokens"] or 0))
            self.store.record_model_call(model=self.name, tag=params.tag, messages=messages,
                                         reply=reply, sample_index=params.sample_index,
                                         request_key=key, source="replay")
            self._notify(params.tag)
            return reply
        self._check_budget()
        try:
            reply = await self.inner.chat(messages, params)
        except ModelError as exc:
            self.store.record_model_call(model=self.name, tag=params.tag, messages=messages,
                                         reply=None, sample_index=params.sample_index,
                                         error=str(exc)[:500], request_key=key)
            raise
        self._used[key] = n + 1
        self._replay.setdefault(key, [])  # a later identical request in this session is new
        self.store.record_model_call(model=self.name, tag=params.tag, messages=messages,
                                     reply=reply, sample_index=params.sample_index,
                                     request_key=key)
        self._notify(params.tag)
        # A call that crosses a budget is paid for: its reply is used, and the next call stops.
        return reply

    def _notify(self, tag: str) -> None:
        if self.on_call is not None:
            self.on_call(tag)
