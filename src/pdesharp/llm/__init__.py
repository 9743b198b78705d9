"""The model layer: one ChatModel protocol, transports, presets, cache, cost and budgets.

Typical use::

    from pdesharp.llm import make_model, is_builtin, Budget, ChatParams, Message

    model = make_model("openai:gpt-4o-mini", cache=default_cache_path(), budget=Budget(max_usd=5))
    reply = await model.chat([Message(role="user", content="...")], ChatParams(tag="genesis"))
"""

from pdesharp.llm.base import (
    BudgetExceeded,
    ChatModel,
    ChatParams,
    Message,
    ModelError,
    Reply,
    Usage,
)
from pdesharp.llm.budget import Budget, ConcurrencyLimit, LimitedModel, MeteredModel
from pdesharp.llm.cache import CachedModel, ResponseCache, cache_key, default_cache_path
from pdesharp.llm.cli_args import add_llm_arguments, llm_options
from pdesharp.llm.factory import make_model
from pdesharp.llm.openai_compat import OpenAICompatModel, is_reasoning_model
from pdesharp.llm.presets import PRESETS, is_builtin, parse_spec
from pdesharp.llm.prices import (
    Price,
    PriceError,
    PriceTable,
    default_prices,
    load_prices,
    set_default_prices,
)
from pdesharp.llm.scripted import ScriptedModel, ScriptExhausted

__all__ = [
    "BudgetExceeded", "ChatModel", "ChatParams", "Message", "ModelError", "Reply", "Usage",
    "Budget", "ConcurrencyLimit", "LimitedModel", "MeteredModel",
    "CachedModel", "ResponseCache", "cache_key", "default_cache_path",
    "add_llm_arguments", "llm_options",
    "make_model", "OpenAICompatModel", "is_reasoning_model",
    "PRESETS", "is_builtin", "parse_spec",
    "Price", "PriceError", "PriceTable", "default_prices", "load_prices", "set_default_prices",
    "ScriptedModel", "ScriptExhausted",
]
