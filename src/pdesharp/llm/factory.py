"""``make_model("openai:gpt-4o-mini", ...)``: one call from a spec to a ready ChatModel.

The returned model is the transport wrapped, innermost first, in

1. :class:`LimitedModel` — at most ``concurrency`` calls in flight per endpoint (shared by all
   models built for the same base URL in this process);
2. :class:`CachedModel` — if ``cache`` is given (a path or a :class:`ResponseCache`); cache hits
   therefore never wait for a concurrency slot;
3. :class:`MeteredModel` — if ``budget`` is given; checked before and charged after each call.

The pipeline's ``--no-cache`` is simply ``cache=None``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdesharp.llm.base import ChatModel
from pdesharp.llm.budget import Budget, LimitedModel, MeteredModel, shared_limit
from pdesharp.llm.cache import CachedModel, ResponseCache
from pdesharp.llm.presets import is_builtin, parse_spec  # noqa: F401  (re-exported)
from pdesharp.llm.prices import PriceTable

# Local servers usually run one or two requests at a time (Ollama's default OLLAMA_NUM_PARALLEL
# is small); hosted APIs take more but rate-limit bursts.
DEFAULT_CONCURRENCY = {"ollama": 2, "vllm": 8}
DEFAULT_REMOTE_CONCURRENCY = 8

_TRANSPORT_OPTS = {"timeout", "max_retries", "reasoning", "system_role", "extra_body", "name",
                   "api_key"}


def make_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    concurrency: int | None = None,
    cache: ResponseCache | str | Path | None = None,
    budget: Budget | None = None,
    prices: PriceTable | None = None,
    **opts: Any,
) -> ChatModel:
    """Build a chat model from ``provider:model``.

    ``opts`` go to the transport: ``timeout`` (s, default 600), ``max_retries`` (default 2,
    the SDK's own retries), ``reasoning`` / ``system_role`` (override the model-family quirk
    detection), ``extra_body`` (extra JSON fields, e.g. OptiLLM's ``optillm_approach``),
    ``name`` (the name used in the cache key and run store), ``api_key`` (instead of a
    variable; prefer the variable).

    Raises ``ValueError`` for a malformed spec or ``"builtin"`` (check :func:`is_builtin`
    first), ``ModelError`` if the API key variable is unset, ``ImportError`` with an install
    hint if the ``anthropic`` extra is needed but missing.
    """
    unknown = set(opts) - _TRANSPORT_OPTS
    if unknown:
        raise TypeError(f"make_model() got unknown options {sorted(unknown)}; "
                        f"known: {sorted(_TRANSPORT_OPTS | {'concurrency', 'cache', 'budget', 'prices'})}")
    ms = parse_spec(spec, base_url=base_url, api_key_env=api_key_env)
    opts.setdefault("name", ms.name)
    model: ChatModel
    if ms.adapter == "anthropic":
        from pdesharp.llm.anthropic_adapter import AnthropicModel

        for quirk in ("reasoning", "system_role", "extra_body"):
            opts.pop(quirk, None)
        model = AnthropicModel(ms.model, base_url=base_url, api_key_env=ms.api_key_env,
                               prices=prices, **opts)
    else:
        from pdesharp.llm.openai_compat import OpenAICompatModel

        model = OpenAICompatModel(ms.model, base_url=ms.base_url, api_key_env=ms.api_key_env,
                                  prices=prices, free=ms.free, **opts)
    n = concurrency or DEFAULT_CONCURRENCY.get(ms.provider, DEFAULT_REMOTE_CONCURRENCY)
    model = LimitedModel(model, shared_limit(ms.base_url, n))
    if cache is not None:
        model = CachedModel(model, cache)
    if budget is not None:
        model = MeteredModel(model, budget)
    return model
