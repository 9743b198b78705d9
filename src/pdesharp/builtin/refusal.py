"""Why a task is outside the built-in analyst's catalogue, said so that a user can act on it."""

from __future__ import annotations

LLM_HINT = ("use a language model for it, e.g. `pdesharp solve TASK --model openai:gpt-4o`"
            " (see docs/models.md)")


class UnsupportedTask(ValueError):
    """The task lies outside the built-in analyst's class.

    ``reason`` names the construct (the term, the boundary, the dimension); ``hint`` is the
    rewrite the catalogue supports, or "llm" when the only way forward is a language model.
    """

    def __init__(self, reason: str, hint: str = "llm"):
        self.reason = reason.rstrip(".")
        self.hint = hint
        text = f"the built-in numerical analyst does not support {self.reason}."
        if hint and hint != "llm":
            text += f" It does support a rewrite: {hint.rstrip('.')}."
            text += f" Otherwise {LLM_HINT}."
        else:
            text += f" To solve it, {LLM_HINT}."
        super().__init__(text[0].upper() + text[1:])
