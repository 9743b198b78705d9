"""Chat over any OpenAI-compatible ``/chat/completions`` endpoint with the ``openai`` SDK.

Covers OpenAI, DeepSeek, OpenRouter, Ollama, vLLM, OptiLLM and other compatible servers.

* Retries and timeouts are the SDK's own (``max_retries``, ``timeout``); there is no second
  retry loop here. A call that still fails raises :class:`ModelError` naming the endpoint and
  what to check. ``latency_s`` is the wall time of the whole logical call, retries included.
* Reasoning models (o1/o3/o4/gpt-5 families, or ``reasoning=True``) reject ``temperature`` and
  ``max_tokens``: they get ``max_completion_tokens`` and no temperature.
* Models without a system role (the o1 family, or ``system_role=False``) get the system prompt
  merged into the first user message.
* Consecutive messages of one role (a judge's turn: what every judge is told, then its own
  request) are sent as one message, their texts joined by a blank line: some servers' chat
  templates insist on alternating roles. Prompt caching (OpenAI, DeepSeek, Gemini, vLLM) is
  by prefix and needs nothing sent: its hits come back as ``prompt_tokens_details.
  cached_tokens`` (DeepSeek: ``prompt_cache_hit_tokens``) and are priced at the cached rate.
* One completion per request: we never send ``n > 1`` (Ollama, llama.cpp and others do not
  support it); N samples are N calls distinguished by ``ChatParams.sample_index``.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from pdesharp.llm.base import ChatParams, Message, ModelError, Reply, Usage
from pdesharp.llm.errors import Endpoint, model_error
from pdesharp.llm.http import shared_ssl_context
from pdesharp.llm.prices import PriceTable, default_prices

# Matched against the model id after any "vendor/" prefix ("openai/o3-mini" on OpenRouter).
_REASONING = re.compile(r"^(o1|o3|o4)(\b|-)|^gpt-5(?!-chat)")
_NO_SYSTEM_ROLE = re.compile(r"^o1(\b|-)")

# Sent as the API key to servers that need none: the SDK refuses to build a client without one.
NO_KEY = "no-key-needed"


def _bare(model: str) -> str:
    return model.rsplit("/", 1)[-1].lower()


def is_reasoning_model(model: str) -> bool:
    """True for model families that take ``max_completion_tokens`` and no ``temperature``."""
    return bool(_REASONING.search(_bare(model)))


def has_system_role(model: str) -> bool:
    return not _NO_SYSTEM_ROLE.search(_bare(model))


def merge_system_into_user(messages: list[Message]) -> list[Message]:
    """Fold system messages into the first user message (for models without a system role)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    rest = [m for m in messages if m.role != "system"]
    if not system:
        return rest
    for i, m in enumerate(rest):
        if m.role == "user":
            rest[i] = Message(role="user", content=f"{system}\n\n{m.content}")
            return rest
    return [Message(role="user", content=system), *rest]


def merge_turns(messages: list[Message]) -> list[Message]:
    """Consecutive messages of one role as one message (texts joined by a blank line)."""
    out: list[Message] = []
    for m in messages:
        if out and out[-1].role == m.role:
            out[-1] = Message(role=m.role, content=f"{out[-1].content}\n\n{m.content}")
        else:
            out.append(Message(role=m.role, content=m.content))
    return out


class OpenAICompatModel:
    """A :class:`ChatModel` speaking the OpenAI chat-completions protocol."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        api_key_env: str | None = None,
        name: str | None = None,
        reasoning: bool | None = None,
        system_role: bool | None = None,
        max_retries: int = 2,
        timeout: float = 600.0,
        prices: PriceTable | None = None,
        free: bool = False,
        extra_body: dict[str, Any] | None = None,
    ):
        if not model:
            raise ValueError("model name is empty")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.name = name or f"compat:{model}"
        self.reasoning = is_reasoning_model(model) if reasoning is None else reasoning
        self.system_role = has_system_role(model) if system_role is None else system_role
        self.max_retries = max_retries
        self.timeout = timeout
        self.free = free  # a local server: cost 0 without an "unknown price" warning
        self.extra_body = dict(extra_body or {})
        self._prices = prices
        self.api_key_env = api_key_env
        key_from_env = api_key is None and bool(api_key_env)  # which variable to blame on a 401
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ModelError(
                    f"${api_key_env} is not set: {self.name} at {self.base_url} needs an API key. "
                    f"Export {api_key_env}=... or name another variable with --api-key-env.")
        self._api_key = api_key or NO_KEY
        self.endpoint = Endpoint(url=self.base_url, model=model,
                                 key_env=api_key_env if key_from_env else None,
                                 timeout_s=timeout, max_retries=max_retries,
                                 has_key=self._api_key != NO_KEY)

    def __repr__(self) -> str:
        return f"OpenAICompatModel({self.name!r}, base_url={self.base_url!r})"

    @property
    def prices(self) -> PriceTable:
        return self._prices or default_prices()

    def _client(self):
        import openai

        # A fresh client per call, closed when the call ends, with a shared TLS context (why:
        # see pdesharp.llm.http).
        default_cls = openai.DefaultAsyncHttpxClient
        http = default_cls(verify=shared_ssl_context(default_cls))
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self._api_key,
                                  max_retries=self.max_retries, timeout=self.timeout,
                                  http_client=http)

    async def list_models(self) -> list[str]:
        """Model ids the endpoint offers (``GET /models``), for checking a configuration."""
        import openai

        try:
            async with self._client() as client:
                page = await client.models.list()
                return sorted(m.id for m in page.data)
        except openai.OpenAIError as exc:
            raise model_error(exc, self.endpoint) from exc
        except ValueError as exc:
            raise model_error(exc, self.endpoint) from exc

    def request_body(self, messages: list[Message], params: ChatParams) -> dict[str, Any]:
        """The keyword arguments sent to ``chat.completions.create`` (quirks applied)."""
        if not self.system_role:
            messages = merge_system_into_user(messages)
        messages = merge_turns(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        extra = dict(self.extra_body)
        if self.reasoning:
            if params.max_tokens is not None:
                # As a raw JSON field: older SDK releases lack the typed keyword.
                extra["max_completion_tokens"] = params.max_tokens
        else:
            if params.temperature is not None:
                body["temperature"] = params.temperature
            if params.max_tokens is not None:
                body["max_tokens"] = params.max_tokens
        if extra:
            body["extra_body"] = extra
        return body

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        import openai

        params = params or ChatParams()
        if not messages:
            raise ValueError(f"{self.name}: chat() needs at least one message")
        body = self.request_body(messages, params)
        start = time.perf_counter()
        try:
            async with self._client() as client:
                resp = await client.chat.completions.create(**body)
        except openai.OpenAIError as exc:
            raise model_error(exc, self.endpoint) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise model_error(exc, self.endpoint) from exc
        latency = time.perf_counter() - start
        return self._reply(resp, latency)

    def _reply(self, resp: Any, latency: float) -> Reply:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise ModelError(f"{self.base_url} (model {self.model!r}) returned no choices: "
                             f"is --base-url an OpenAI-compatible chat API? Got: {str(resp)[:200]}")
        choice = choices[0]
        text = getattr(choice.message, "content", None) or ""
        finish = getattr(choice, "finish_reason", None)
        if not text and getattr(choice.message, "refusal", None):
            finish = "refusal"  # the model declined; callers see an empty text and why
        usage = _usage(getattr(resp, "usage", None))
        answered_by = getattr(resp, "model", None) or self.model
        if self.free:
            cost = 0.0
        else:
            table = self.prices
            if table.lookup(self.model) is None and table.lookup(answered_by) is not None:
                cost = table.cost(answered_by, usage)
            else:
                cost = table.cost(self.model, usage)
        return Reply(text=text, model=answered_by, usage=usage, cost_usd=cost, latency_s=latency,
                     finish_reason=finish)


def _usage(u: Any) -> Usage:
    if u is None:
        return Usage()
    ptd = getattr(u, "prompt_tokens_details", None)
    ctd = getattr(u, "completion_tokens_details", None)
    # DeepSeek reports its prompt-cache hits as a top-level prompt_cache_hit_tokens.
    cached = (getattr(ptd, "cached_tokens", None) if ptd is not None else None) \
        or getattr(u, "prompt_cache_hit_tokens", None) or 0
    return Usage(
        prompt_tokens=int(getattr(u, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(u, "completion_tokens", 0) or 0),
        cached_tokens=int(cached),
        reasoning_tokens=int((getattr(ctd, "reasoning_tokens", None) if ctd is not None else None) or 0),
    )
