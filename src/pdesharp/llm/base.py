"""The one interface every chat model implements, and the records it returns."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    role: Role
    content: str
    # Later calls re-send the conversation up to and including this message (a judge's shared
    # system prompt and pool, a conversation so far): transports with explicit prompt-cache
    # breakpoints (Anthropic's cache_control) mark it; OpenAI-style endpoints cache prefixes
    # on their own. Not part of what the model reads.
    cache: bool = False

    def record(self) -> dict:
        """The message as journals and request keys store it (``cache`` only when set, so
        keys of unmarked messages are what they always were)."""
        return self.model_dump(exclude_defaults=True)


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # part of prompt_tokens served from the provider's prompt cache
    # part of prompt_tokens written to the provider's prompt cache (Anthropic's cache writes,
    # priced above plain input); 0 where writes are not reported or not charged
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0  # part of completion_tokens spent on hidden reasoning, if reported

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Reply(BaseModel):
    """What a chat call returns: text plus the accounting every call must carry."""

    text: str
    model: str  # the model id that answered
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_s: float = 0.0
    finish_reason: str | None = None  # "stop", "length", ...
    cached: bool = False  # served from the response cache (no new cost)
    saved_usd: float = 0.0  # on a cache hit: what the original call cost (not spent again)


class ChatParams(BaseModel):
    """Sampling parameters; transports drop what an endpoint rejects."""

    temperature: float | None = 0.7
    max_tokens: int | None = 8192
    sample_index: int = 0  # distinguishes otherwise identical requests (N samples) in the cache
    tag: str = ""  # the pipeline role making the call ("analysis.stability", "judge.propose", ...)


class ModelError(RuntimeError):
    """A model call failed after the transport's own retries (dead endpoint, auth, bad request).

    The message names the endpoint and says what to check."""


class BudgetExceeded(RuntimeError):
    """A run budget (USD, tokens, evaluations) is spent; the run stops with its best so far."""


@runtime_checkable
class ChatModel(Protocol):
    """Messages in; text, usage, cost, latency and model id out."""

    name: str  # "provider:model", used in the cache key and the run store

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply: ...
