"""Named providers: ``provider:model`` -> endpoint URL, API-key variable and adapter.

=============  ==================================  ====================  ==========
provider       base URL                            API key variable      adapter
=============  ==================================  ====================  ==========
openai         https://api.openai.com/v1 [1]_      OPENAI_API_KEY        openai
deepseek       https://api.deepseek.com            DEEPSEEK_API_KEY      openai
openrouter     https://openrouter.ai/api/v1        OPENROUTER_API_KEY    openai
gemini         Google's OpenAI-compatible API [2]_  GEMINI_API_KEY        openai
ollama         http://localhost:11434/v1           (none)                openai
vllm           http://localhost:8000/v1            (none)                openai
anthropic      https://api.anthropic.com           ANTHROPIC_API_KEY     anthropic
compat         (``--base-url`` required) [3]_      (none unless given)   openai
=============  ==================================  ====================  ==========

.. [1] ``$OPENAI_BASE_URL`` overrides it, as in the ``openai`` SDK.
.. [2] https://generativelanguage.googleapis.com/v1beta/openai/
.. [3] ``compat`` does not fall back to ``$OPENAI_BASE_URL``: that variable is paired with
   ``$OPENAI_API_KEY`` in the ``openai`` preset (write ``openai:NAME`` to use both).

Any spec also takes ``base_url`` / ``api_key_env`` overrides (e.g. ``ollama:qwen2.5-coder:7b``
on another host, or ``openai:gpt-4o-mini`` through an OptiLLM proxy). A bare model name with a
``base_url`` is the generic OpenAI-compatible form. ``builtin`` is not a chat model: it selects
the rule-based numerical analyst, which the pipeline constructs itself (see :func:`is_builtin`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

BUILTIN = "builtin"


@dataclass(frozen=True)
class Preset:
    provider: str
    base_url: str | None
    api_key_env: str | None
    adapter: Literal["openai", "anthropic"] = "openai"
    free: bool = False  # a local server: calls cost 0 without an "unknown price" warning
    base_url_env: str | None = None  # environment variable overriding base_url

    def resolved_base_url(self) -> str | None:
        if self.base_url_env and os.environ.get(self.base_url_env):
            return os.environ[self.base_url_env]
        return self.base_url


PRESETS: dict[str, Preset] = {
    p.provider: p
    for p in (
        Preset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", base_url_env="OPENAI_BASE_URL"),
        Preset("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
        Preset("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        Preset("gemini", "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY"),
        Preset("ollama", "http://localhost:11434/v1", None, free=True),
        Preset("vllm", "http://localhost:8000/v1", None, free=True),
        Preset("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", adapter="anthropic"),
        Preset("compat", None, None),
    )
}


def is_builtin(spec: str | None) -> bool:
    """True if ``spec`` selects the built-in analyst rather than a chat model."""
    return spec is not None and spec.strip().lower() == BUILTIN


def _guess_provider(model: str) -> str | None:
    m = model.lower()
    if m.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return "openai"
    if m.startswith("deepseek"):
        return "deepseek"
    if m.startswith("claude"):
        return "anthropic"
    if m.startswith("gemini"):
        return "gemini"
    if "/" in m:
        return "openrouter"
    return None


@dataclass(frozen=True)
class ModelSpec:
    """A parsed ``provider:model`` with its endpoint settled."""

    provider: str
    model: str
    base_url: str
    api_key_env: str | None
    adapter: Literal["openai", "anthropic"]
    free: bool

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"


def parse_spec(spec: str, *, base_url: str | None = None,
               api_key_env: str | None = None) -> ModelSpec:
    """Settle provider, model, URL and key variable for a spec, or raise ``ValueError``."""
    spec = (spec or "").strip()
    if not spec:
        raise ValueError("empty model spec: use provider:model, e.g. openai:gpt-4o-mini, "
                         "ollama:qwen2.5-coder:7b, or a model name with --base-url")
    if is_builtin(spec):
        raise ValueError(f"{BUILTIN!r} is not a chat model; the pipeline selects the built-in "
                         "analyst")
    head, sep, tail = spec.partition(":")
    if sep and head.lower() in PRESETS:
        preset, model = PRESETS[head.lower()], tail.strip()
        if not model:
            raise ValueError(f"{spec!r} names no model: write {head}:MODEL_NAME")
    elif base_url:
        # Generic OpenAI-compatible endpoint; the whole spec is the model id (it may contain
        # ':' as Ollama tags do).
        preset, model = PRESETS["compat"], spec
    else:
        known = ", ".join(f"{p}:" for p in PRESETS)
        guess = _guess_provider(spec)
        hint = f" Did you mean {guess}:{spec}?" if guess and not sep else ""
        raise ValueError(f"unknown model spec {spec!r}: prefix a provider ({known}) or pass "
                         f"--base-url for any OpenAI-compatible server.{hint}")
    url = base_url or preset.resolved_base_url()
    if not url:
        # compat: deliberately ignores $OPENAI_BASE_URL: that variable belongs to the openai
        # preset together with $OPENAI_API_KEY, and a generic endpoint should be named where
        # the run records it (the command line / run config), not inherited from the shell.
        raise ValueError(f"{spec!r}: the generic 'compat:' provider needs --base-url "
                         "(e.g. http://localhost:8000/v1); it does not read $OPENAI_BASE_URL. "
                         f"To use $OPENAI_BASE_URL (with $OPENAI_API_KEY), write openai:{model}")
    return ModelSpec(provider=preset.provider, model=model, base_url=url,
                     api_key_env=api_key_env if api_key_env is not None else preset.api_key_env,
                     adapter=preset.adapter,
                     # a local preset moved to another host is still a free local server
                     free=preset.free)
