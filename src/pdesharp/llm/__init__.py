"""The model layer: one ChatModel protocol, transports, presets, cache, cost and budgets."""

from pdesharp.llm.base import (
    BudgetExceeded,
    ChatModel,
    ChatParams,
    Message,
    ModelError,
    Reply,
    Usage,
)
from pdesharp.llm.prices import Price, PriceTable, default_prices, load_prices
from pdesharp.llm.scripted import ScriptedModel, ScriptExhausted

__all__ = [
    "BudgetExceeded", "ChatModel", "ChatParams", "Message", "ModelError", "Reply", "Usage",
    "Price", "PriceTable", "default_prices", "load_prices",
    "ScriptedModel", "ScriptExhausted",
]
