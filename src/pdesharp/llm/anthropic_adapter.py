"""Native Anthropic Messages API adapter (optional: ``pip install 'pdesharp[anthropic]'``).

The ``anthropic`` package is imported only when a model is built, so pdesharp works without it.
Differences from the OpenAI protocol handled here:

* the system prompt is a separate ``system`` argument, not a message;
* consecutive messages of the same role are merged (the API requires alternating roles);
* ``max_tokens`` is mandatory (default 8192 when ChatParams leaves it unset);
* prompt caching is explicit: a message marked ``Message.cache`` (a prefix later calls send
  again: the judges' shared system prompt and pool, a conversation so far) gets a
  ``cache_control`` breakpoint on its last content block, at most four per request (the system
  prompt's and the last three marked messages': the API looks back from each breakpoint for an
  earlier one that hits);
* usage: ``input_tokens`` excludes cache reads and cache writes, so
  ``prompt_tokens = input + cache_read + cache_creation``, ``cached_tokens = cache_read`` and
  ``cache_write_tokens = cache_creation`` (each priced at its own rate);
* ``stop_reason`` "end_turn"/"stop_sequence" -> "stop", "max_tokens" -> "length";
* ``temperature`` is clipped to [0, 1] and sent as a raw JSON field (see ``request_body``).

Retries and timeouts are the SDK's own, as for the OpenAI transport.
"""

from __future__ import annotations

import os
import time
from typing import Any

from pdesharp.llm.base import ChatParams, Message, ModelError, Reply, Usage
from pdesharp.llm.errors import Endpoint, model_error
from pdesharp.llm.http import shared_ssl_context
from pdesharp.llm.prices import PriceTable, default_prices

DEFAULT_MAX_TOKENS = 8192
DEFAULT_URL = "https://api.anthropic.com"

_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def _import_anthropic():
    try:
        import anthropic
    except ImportError:
        raise ImportError(
            "the 'anthropic' package is needed for anthropic: models but is not installed: "
            "pip install 'pdesharp[anthropic]' (or use openrouter:anthropic/MODEL through the "
            "OpenAI-compatible transport)") from None
    return anthropic


MAX_BREAKPOINTS = 4  # cache_control blocks the Messages API accepts per request
EPHEMERAL = {"type": "ephemeral"}


def to_anthropic(messages: list[Message]) -> tuple[str | list | None, list[dict]]:
    """(system prompt, alternating user/assistant messages) for the Messages API. Without a
    cache mark, plain strings; with one, content blocks, the marked ones (see the module doc)
    carrying ``cache_control``."""
    system_msgs = [m for m in messages if m.role == "system"]
    system_text = "\n\n".join(m.content for m in system_msgs) or None
    rest = [m for m in messages if m.role != "system"]
    marked = [i for i, m in enumerate(rest) if m.cache]
    system_cached = any(m.cache for m in system_msgs)
    keep = set(marked[-(MAX_BREAKPOINTS - (1 if system_cached else 0)):]) if marked else set()
    if not keep and not system_cached:
        out: list[dict] = []
        for m in rest:
            if out and out[-1]["role"] == m.role:
                out[-1]["content"] += "\n\n" + m.content
            else:
                out.append({"role": m.role, "content": m.content})
    else:
        out = []
        for i, m in enumerate(rest):
            block = {"type": "text", "text": m.content}
            if i in keep:
                block["cache_control"] = EPHEMERAL
            if out and out[-1]["role"] == m.role:  # one turn, several blocks
                out[-1]["content"].append(block)
            else:
                out.append({"role": m.role, "content": [block]})
    if out and out[0]["role"] != "user":
        # The API wants the conversation to open with a user turn.
        out.insert(0, {"role": "user", "content": "(continue)"})
    system = ([{"type": "text", "text": system_text, "cache_control": EPHEMERAL}]
              if system_text and system_cached else system_text)
    return system, out


def usage_from_anthropic(u: Any) -> Usage:
    read = int(getattr(u, "cache_read_input_tokens", 0) or 0)
    write = int(getattr(u, "cache_creation_input_tokens", 0) or 0)
    return Usage(
        prompt_tokens=int(getattr(u, "input_tokens", 0) or 0) + read + write,
        completion_tokens=int(getattr(u, "output_tokens", 0) or 0),
        cached_tokens=read,
        cache_write_tokens=write,
    )


class AnthropicModel:
    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str | None = "ANTHROPIC_API_KEY", name: str | None = None,
                 max_retries: int = 2, timeout: float = 600.0,
                 prices: PriceTable | None = None, client: Any = None):
        self.model = model
        self.name = name or f"anthropic:{model}"
        self.base_url = (base_url or DEFAULT_URL).rstrip("/")
        self.max_retries = max_retries
        self.timeout = timeout
        self._prices = prices
        key_from_env = api_key is None and bool(api_key_env)  # which variable to blame on a 401
        if client is None:
            _import_anthropic()  # fail at construction, before a run starts
            if api_key is None and api_key_env:
                api_key = os.environ.get(api_key_env)
                if not api_key:
                    raise ModelError(f"${api_key_env} is not set: {self.name} needs an API key. "
                                     f"Export {api_key_env}=... or pass --api-key-env NAME.")
        self._api_key = api_key
        self._fixed_client = client  # tests inject a fake with .messages.create
        self.endpoint = Endpoint(url=self.base_url, model=model,
                                 key_env=api_key_env if key_from_env else None,
                                 timeout_s=timeout, max_retries=max_retries,
                                 has_key=api_key is not None)

    def _client(self):
        """A fresh SDK client (closed after the call), as in openai_compat, or the injected one."""
        anthropic = _import_anthropic()
        http = anthropic.DefaultAsyncHttpxClient(
            verify=shared_ssl_context(anthropic.DefaultAsyncHttpxClient))
        return anthropic.AsyncAnthropic(api_key=self._api_key, base_url=self.base_url,
                                        max_retries=self.max_retries, timeout=self.timeout,
                                        http_client=http)

    async def _create(self, body: dict[str, Any]):
        if self._fixed_client is not None:
            return await self._fixed_client.messages.create(**body)
        async with self._client() as client:
            return await client.messages.create(**body)

    def request_body(self, messages: list[Message], params: ChatParams) -> dict[str, Any]:
        system, msgs = to_anthropic(messages)
        body: dict[str, Any] = {"model": self.model, "messages": msgs,
                                "max_tokens": params.max_tokens or DEFAULT_MAX_TOKENS}
        if system:
            body["system"] = system
        if params.temperature is not None:
            # Anthropic's range is [0, 1]; OpenAI-style 0..2 values are clipped. Sent as an extra
            # body field because recent SDK releases dropped ``temperature`` from the typed
            # signature of messages.create while older ones require it there; the raw JSON
            # field works with both.
            body["extra_body"] = {"temperature": min(max(params.temperature, 0.0), 1.0)}
        return body

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        params = params or ChatParams()
        if not messages:
            raise ValueError(f"{self.name}: chat() needs at least one message")
        body = self.request_body(messages, params)
        start = time.perf_counter()
        try:
            resp = await self._create(body)
        except Exception as exc:  # the SDK's errors, duck-typed (no import needed)
            if type(exc).__module__.split(".")[0] not in ("anthropic", "httpx"):
                raise
            raise model_error(exc, self.endpoint) from exc
        latency = time.perf_counter() - start
        text = "".join(getattr(b, "text", "") for b in (resp.content or [])
                       if getattr(b, "type", "text") == "text")
        usage = usage_from_anthropic(getattr(resp, "usage", None))
        cost = (self._prices or default_prices()).cost(self.model, usage)
        return Reply(text=text, model=getattr(resp, "model", None) or self.model, usage=usage,
                     cost_usd=cost, latency_s=latency,
                     finish_reason=_STOP.get(resp.stop_reason, resp.stop_reason))
