"""Why a task is outside the built-in analyst's catalogue, said so that a user can act on it."""

from __future__ import annotations

from pdesharp.boundary import (BoundaryError, IncompleteBoundary, require_complete,
                               task_boundary)

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

    @classmethod
    def said(cls, message: str) -> "UnsupportedTask":
        """An UnsupportedTask whose message is ``message`` as already worded (a verdict of
        :func:`pdesharp.builtin.support.support`)."""
        exc = cls.__new__(cls)
        ValueError.__init__(exc, message)
        exc.reason, exc.hint = message, ""
        return exc


def boundary_or_refuse(task):
    """The task's boundary spec, or an UnsupportedTask that quotes the boundary and the error
    (a boundary that says too little or names what the task lacks is the user's to fix: the
    message says what to write, not to use a language model)."""
    try:
        spec = task_boundary(task)
        require_complete(spec, task.system)
        return spec
    except BoundaryError as exc:
        from pdesharp.expressible import PREAMBLE, inexpressible
        from pdesharp.untrusted import one_line

        what = inexpressible({"boundary": task.boundary, "domain": {
            a: list(v) for a, v in task.domain.items()}})
        if what is not None:  # an interface, a moving side, a condition at infinity
            raise UnsupportedTask.said(f"{one_line(task.name, 60)}: {what} {PREAMBLE}.") from None
        if isinstance(exc, IncompleteBoundary):  # grammar, but too little or a wrong name
            raise UnsupportedTask.said(f"{one_line(task.name, 60)}: the boundary"
                                       f" {one_line(task.boundary, 120)!r}: {exc}") from None
        raise UnsupportedTask(f"the boundary {task.boundary!r}: {exc}", hint="") from None


def notation(expr) -> str:
    """An expression in the task's own notation: ``u`` for u(t, x), ``dx(u, 2)`` for the second
    derivative, so a refusal quotes the term as the user wrote it."""
    import sympy as sp
    from sympy.core.function import AppliedUndef
    from sympy.printing.str import StrPrinter

    class _Printer(StrPrinter):
        def _print_Derivative(self, e):
            out = self._print(e.expr)
            for v, n in e.variable_count:
                out = f"d{v}({out}{', ' + str(n) if n > 1 else ''})"
            return out

        def _print_Function(self, e):
            if isinstance(e, AppliedUndef):
                return e.func.__name__
            return super()._print_Function(e)

    return _Printer().doprint(sp.sympify(expr))
