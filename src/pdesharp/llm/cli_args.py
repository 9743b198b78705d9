"""Command-line options of the model layer, for any subcommand that builds chat models.

    add_llm_arguments(parser)                 # --api-key-env --prices --concurrency
                                              # --llm-timeout --llm-retries
    model = make_model(args.model, base_url=args.base_url, **llm_options(args))

``llm_options`` also installs the ``--prices`` table as the process default, so every model
(including ones built elsewhere) prices its calls with it. Flags a command already defines
itself can be left out with ``skip={"--prices", ...}``.
"""

from __future__ import annotations

import argparse
from typing import Any

from pdesharp.llm.prices import PRICES_ENV, load_prices, set_default_prices

_FLAGS = ("--api-key-env", "--prices", "--concurrency", "--llm-timeout", "--llm-retries")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def add_llm_arguments(parser: argparse.ArgumentParser, *, skip: set[str] | frozenset[str] = frozenset()) -> None:
    unknown = set(skip) - set(_FLAGS)
    if unknown:
        raise ValueError(f"add_llm_arguments: unknown flags to skip {sorted(unknown)}")
    add = {
        "--api-key-env": dict(default=None, metavar="NAME",
                              help="environment variable holding the API key (default: the "
                                   "provider's, e.g. OPENAI_API_KEY)"),
        "--prices": dict(default=None, metavar="FILE",
                         help=f"YAML of USD prices per million tokens overriding the shipped "
                              f"table (also ${PRICES_ENV})"),
        "--concurrency": dict(type=_positive_int, default=None, metavar="N",
                              help="model requests in flight per endpoint (default 8; Ollama 2)"),
        "--llm-timeout": dict(type=_positive_float, default=600.0, metavar="SECONDS",
                              help="timeout of one model request (default 600)"),
        "--llm-retries": dict(type=_non_negative_int, default=2, metavar="N",
                              help="retries of a failed model request by the SDK (default 2)"),
    }
    for flag in _FLAGS:
        if flag not in skip:
            parser.add_argument(flag, **add[flag])


def llm_options(args: argparse.Namespace) -> dict[str, Any]:
    """``make_model`` keyword arguments from parsed flags; installs ``--prices`` as default.

    Raises :class:`~pdesharp.llm.prices.PriceError` for an unreadable price file."""
    prices = getattr(args, "prices", None)
    if prices:
        set_default_prices(load_prices(prices))
    opts: dict[str, Any] = {}
    if getattr(args, "api_key_env", None):
        opts["api_key_env"] = args.api_key_env
    if getattr(args, "concurrency", None):
        opts["concurrency"] = args.concurrency
    if getattr(args, "llm_timeout", None) is not None:
        opts["timeout"] = args.llm_timeout
    if getattr(args, "llm_retries", None) is not None:
        opts["max_retries"] = args.llm_retries
    return opts
