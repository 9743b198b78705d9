"""The real OptiLLM, run by the user as a proxy in front of their model (``--optillm-url``).

pdesharp does not install or start OptiLLM: the package pulls in ``litellm`` unpinned (see
docs/baselines.md on the 2026 litellm supply-chain incident), torch, transformers and more.
Start it yourself, in its own environment, pointed at your model::

    OPENAI_API_KEY=... optillm --base-url https://your-endpoint/v1 --port 8000

then ``pdesharp bench ... --methods cot,moa,cepo --optillm-url http://127.0.0.1:8000/v1``.
The approach is chosen by OptiLLM's model-name prefix (``cot_reflection-<model>``,
``moa-<model>``, ``cepo-<model>``). One baseline call is then one proxy request; the proxy
reports the *summed* completion tokens of its internal calls (and no prompt tokens), which is
what the store records for that call.
"""

from __future__ import annotations

import os

from pdesharp.llm.base import ChatModel, ChatParams, Message, Reply

KEY_ENV = "PDESHARP_OPTILLM_KEY"  # sent as the bearer key if the proxy was started with one

APPROACH_PREFIX = {"cot": "cot_reflection", "moa": "moa", "cepo": "cepo"}


def proxy_model_name(method: str, model: str) -> str:
    """The model name that makes the OptiLLM proxy run ``method``'s approach on ``model``."""
    try:
        prefix = APPROACH_PREFIX[method]
    except KeyError:
        raise ValueError(f"no OptiLLM approach for method {method!r}; "
                         f"expected one of {sorted(APPROACH_PREFIX)}") from None
    bare = model.split(":", 1)[1] if ":" in model and not model.startswith("http") else model
    return f"{prefix}-{bare}"


def proxy_model(method: str, model: str, url: str, *, api_key: str | None = None,
                timeout: float = 3600.0) -> ChatModel:
    """A chat model that sends every request through the OptiLLM proxy at ``url``.

    ``model`` is the upstream model name as the proxy should pass it on (a ``provider:``
    prefix is dropped). Long timeout: CePO makes dozens of upstream calls per request."""
    from pdesharp.llm.openai_compat import OpenAICompatModel

    name = proxy_model_name(method, model)
    # The proxy forwards to a model the user pays for; its prices are unknown to us here, so
    # cost is whatever the transport computes for the prefixed name (usually 0, flagged).
    api_key = api_key or os.environ.get(KEY_ENV) or "optillm"
    return OpenAICompatModel(name, base_url=url, api_key=api_key, name=f"optillm:{name}",
                             system_role=True, reasoning=False, timeout=timeout, max_retries=1)


class UpstreamName:
    """Stands for the upstream model when only the proxy talks to it: pdesharp needs its name
    (for the approach prefix) but no credentials of its own."""

    def __init__(self, name: str):
        self.name = name

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        raise RuntimeError(f"{self.name} is reached only through the OptiLLM proxy")
