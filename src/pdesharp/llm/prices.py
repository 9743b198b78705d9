"""Putting a USD figure on a model call from its token usage.

The shipped table (``prices.yaml`` beside this module) holds approximate list prices; a user
YAML of the same shape (``--prices FILE`` or ``$PDESHARP_PRICES``) overrides entries or adds
models. An unknown model costs 0 and is warned about once per table, so a run never dies for
lack of a price but the user learns the reported cost is incomplete.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from pdesharp.llm.base import Usage

log = logging.getLogger("pdesharp.llm")

PRICES_ENV = "PDESHARP_PRICES"

# A dated snapshot or an alias of a priced model costs the same as the model itself:
# "gpt-4o-2024-08-06", "claude-3-7-sonnet-20250219", "o3-mini-latest", "gemini-2.5-pro-preview-06-05".
# Deliberately narrow: "o3-pro" must not inherit the price of "o3".
_SNAPSHOT_SUFFIX = re.compile(r"^(-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|preview[\w.-]*|exp[\w.-]*))+$")


class PriceError(ValueError):
    """A price file is unreadable or malformed."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None  # None: cached prompt tokens cost the same as uncached
    cache_write: float | None = None  # prompt tokens written to the cache; None: as input

    def cost(self, usage: Usage) -> float:
        """Prompt tokens at three rates (read from the cache, written to it, the rest),
        completion tokens at the output rate."""
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        return (
            (usage.prompt_tokens - cached - written) * self.input
            + cached * cached_rate
            + written * write_rate
            + usage.completion_tokens * self.output
        ) / 1e6


# Prefixes of our "provider:model" specs (see presets.py) stripped before a price lookup.
PROVIDER_PREFIXES = frozenset(
    {"openai", "deepseek", "openrouter", "gemini", "ollama", "vllm", "anthropic", "compat", "scripted"}
)


def normalise_model_id(model: str) -> str:
    """"openrouter:openai/gpt-4o" -> "gpt-4o"; case-folded. Ollama tags ("qwen2:7b") are kept."""
    model = model.strip().lower()
    head, sep, tail = model.partition(":")
    if sep and head in PROVIDER_PREFIXES:
        model = tail
    return model.rsplit("/", 1)[-1]


class PriceTable:
    """Model id -> Price, with snapshot-suffix fallback and one-time warnings for unknowns."""

    def __init__(self, prices: dict[str, Price] | None = None, *, sources: list[str] | None = None):
        self.prices: dict[str, Price] = {k.lower(): v for k, v in (prices or {}).items()}
        self.sources = list(sources or [])
        self._warned: set[str] = set()

    def lookup(self, model: str) -> Price | None:
        key = normalise_model_id(model)
        if key in self.prices:
            return self.prices[key]
        # Longest priced key of which this id is a dated snapshot / alias.
        best = None
        for name in self.prices:
            if key.startswith(name) and _SNAPSHOT_SUFFIX.match(key[len(name):]):
                if best is None or len(name) > len(best):
                    best = name
        return self.prices[best] if best else None

    def cost(self, model: str, usage: Usage, *, warn: bool = True) -> float:
        price = self.lookup(model)
        if price is None:
            if warn and model not in self._warned:
                self._warned.add(model)
                log.warning(
                    "no price known for model %r: its calls are reported at $0. Add it to a "
                    "prices YAML (--prices FILE or $%s) to count its cost.", model, PRICES_ENV,
                )
            return 0.0
        return price.cost(usage)

    def merged(self, other: "PriceTable") -> "PriceTable":
        return PriceTable({**self.prices, **other.prices}, sources=self.sources + other.sources)


def _parse(data: object, origin: str) -> dict[str, Price]:
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise PriceError(f"{origin}: expected a mapping with a 'models:' section "
                         "(model id -> {input, output, cached_input, cache_write})")
    out: dict[str, Price] = {}
    for name, entry in data["models"].items():
        if not isinstance(entry, dict) or "input" not in entry or "output" not in entry:
            raise PriceError(f"{origin}: model {name!r} needs 'input' and 'output' "
                             "(USD per million tokens)")
        unknown = set(entry) - {"input", "output", "cached_input", "cache_write"}
        if unknown:
            raise PriceError(f"{origin}: model {name!r} has unknown fields {sorted(unknown)}; "
                             "allowed: input, output, cached_input, cache_write")
        try:
            price = Price(
                input=float(entry["input"]),
                output=float(entry["output"]),
                cached_input=None if entry.get("cached_input") is None else float(entry["cached_input"]),
                cache_write=None if entry.get("cache_write") is None else float(entry["cache_write"]),
            )
        except (TypeError, ValueError) as exc:
            raise PriceError(f"{origin}: model {name!r}: prices must be numbers ({exc})") from None
        if min(price.input, price.output, price.cached_input or 0.0, price.cache_write or 0.0) < 0:
            raise PriceError(f"{origin}: model {name!r}: prices must be >= 0")
        out[str(name)] = price
    return out


def load_price_file(path: str | Path) -> PriceTable:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise PriceError(f"cannot read price file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise PriceError(f"price file {path} is not valid YAML: {exc}") from None
    return PriceTable(_parse(data, str(path)), sources=[str(path)])


def shipped_prices() -> PriceTable:
    text = resources.files("pdesharp.llm").joinpath("prices.yaml").read_text()
    return PriceTable(_parse(yaml.safe_load(text), "pdesharp/llm/prices.yaml"),
                      sources=["pdesharp/llm/prices.yaml"])


def load_prices(path: str | Path | None = None, *, use_env: bool = True) -> PriceTable:
    """The shipped table, overridden by ``$PDESHARP_PRICES`` and then by ``path``."""
    table = shipped_prices()
    env = os.environ.get(PRICES_ENV) if use_env else None
    if env:
        table = table.merged(load_price_file(env))
    if path is not None:
        table = table.merged(load_price_file(path))
    return table


_default: PriceTable | None = None


def default_prices() -> PriceTable:
    """Process-wide table (shipped + ``$PDESHARP_PRICES``), loaded on first use."""
    global _default
    if _default is None:
        _default = load_prices()
    return _default


def set_default_prices(table: PriceTable | None) -> None:
    """Install the table the CLI built from ``--prices`` (None: reload lazily)."""
    global _default
    _default = table
