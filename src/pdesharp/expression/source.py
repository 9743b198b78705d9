"""The formula as text, before it is parsed: ``=`` splitting, bracket balance, declared names
that are Python keywords, and the columns that error messages name (in the user's whole text)."""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping

from pdesharp.expression.rules import MAX_DEPTH, ExpressionError
from pdesharp.untrusted import one_line


def split_equation(text: str) -> list[str]:
    """``text`` cut at each ``=`` outside brackets that is not part of ``<= >= == !=`` (so a
    Piecewise condition ``x <= 1`` stays whole): one part for ``expr``, two for ``lhs = rhs``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "=" and depth == 0 and text[i - 1:i] not in ("<", ">", "=", "!") \
                and text[i + 1:i + 2] != "=":
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_])")


def _keywords_as_names(source: str, names: Mapping) -> tuple[str, dict[str, str]]:
    """``source`` with each declared name that is a Python keyword (a parameter ``lambda``)
    replaced by a placeholder identifier of the same length (so that every column an error
    names stays right), and {placeholder: name}. Nothing to do for most formulas."""
    declared = [n for n in names if isinstance(n, str) and keyword.iskeyword(n)]
    if not declared:
        return source, {}
    present = set(_IDENTIFIER.findall(source))
    back: dict[str, str] = {}
    for name in (n for n in declared if n in present):
        for i in range(36 ** (len(name) - 1)):
            digits = ""
            while len(digits) < len(name) - 1:
                i, d = divmod(i, 36)
                digits += "0123456789abcdefghijklmnopqrstuvwxyz"[d]
            holder = "_" + digits
            if holder not in present and holder not in back and not keyword.iskeyword(holder):
                break
        back[holder] = name
        source = re.sub(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", holder, source)
    return source, back


def _at(line: int | None, column: int | None, offset: int = 0) -> str:
    if line and line > 1:
        return f"line {line}, column {column}"
    return f"column {(column or 1) + offset}"


def _syntax_place(exc: SyntaxError, source: str, offset: int) -> str:
    """Where the parser stopped, as a column of the user's text and the text there: Python
    reports the end of the input as column 0 or one past it."""
    line = exc.lineno or 1
    col = exc.offset if exc.offset and 1 <= exc.offset <= len(source) and line == 1 \
        else (len(source) if line == 1 else exc.offset)
    if line > 1:
        return _at(line, col)
    near = source[col - 1:col + 9].strip()
    return f"column {col + offset}" + (f", at `{one_line(near, 12)}`" if near else
                                       ", at the end")


def _check_brackets(source: str, where: str, offset: int = 0) -> None:
    """Unbalanced parentheses say so (the parser says "EOF in multi-line statement")."""
    stack: list[tuple[str, int]] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for i, ch in enumerate(source):
        if ch in "([{":
            stack.append((ch, i))
            if len(stack) > MAX_DEPTH:
                raise ExpressionError(f"{where} nests brackets more than {MAX_DEPTH} deep")
        elif ch in pairs:
            if not stack or stack[-1][0] != pairs[ch]:
                raise ExpressionError(f"unbalanced parentheses in {where}: an extra '{ch}' at"
                                      f" column {i + 1 + offset}")
            stack.pop()
    if stack:
        ch, i = stack[-1]
        raise ExpressionError(f"unbalanced parentheses in {where}: the '{ch}' at column"
                              f" {i + 1 + offset} is never closed")
