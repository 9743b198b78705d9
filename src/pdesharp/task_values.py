"""Numbers a task may write as formulas: ``domain: {x: [0, 32*pi]}``, ``time_span: [0, 2*T]``,
``parameters: {L: 10, k: 2*pi/L}``.

Each such string is read by the one expression reader (never evaluated as Python) with ``pi``,
``E`` and the task's other parameters and constants as names, and must come out a finite real
number; the task then holds that number. Parameters and constants may refer to each other in
any order, without cycles. A formula that is not a number is refused naming the key, the text
and why (a misspelt name gets the reader's "did you mean").
"""

from __future__ import annotations

import math

import sympy as sp

from pdesharp.expression import ExpressionError, UndeclaredNames, read
from pdesharp.untrusted import one_line


class ValueFormulaError(ValueError):
    """A number written as a formula is not a number; the message names the key and why."""


def _number(text: str, where: str, known: dict[str, float]) -> float:
    value = read(text, where=where, names={k: sp.Float(v) for k, v in known.items()})
    if not (isinstance(value, sp.Expr) and value.is_number):
        raise ValueFormulaError(f"{where}: {one_line(text, 60)!r} is not a number")
    got = complex(sp.N(value))
    if got.imag != 0 or not math.isfinite(got.real):
        raise ValueFormulaError(f"{where}: {one_line(text, 60)!r} is {one_line(str(value), 40)},"
                                " not a finite real number")
    return got.real


def _value(text: str, where: str, known: dict[str, float]) -> float:
    try:
        return _number(text, where, known)
    except UndeclaredNames as exc:
        raise ValueFormulaError(f"{where}: {exc.explain()} (a number here may use pi, E and the"
                                " task's parameters and constants)") from None
    except ExpressionError as exc:
        raise ValueFormulaError(str(exc)) from None


def _resolve(table: dict[str, tuple[str, object]], known: dict[str, float]) -> dict:
    """{name: number} for ``table`` ({name: (key path, value)}), each formula reading the
    numbers already known (``known``, updated in place), in as many passes as the dependencies
    need."""
    todo = [k for k, (_, v) in table.items() if isinstance(v, str)]
    while todo:
        left = []
        for k in todo:
            where = table[k][0]
            try:
                known[k] = _number(table[k][1], where, known)
            except UndeclaredNames as exc:
                if any(n in todo for n in exc.names):  # another formula not read yet
                    left.append(k)
                    continue
                raise ValueFormulaError(f"{where}: {exc.explain()} (a number here may use pi, E and"
                                        " the task's parameters and constants)") from None
            except ExpressionError as exc:
                raise ValueFormulaError(str(exc)) from None
        if len(left) == len(todo):
            raise ValueFormulaError(f"{', '.join(table[k][0] for k in left)} refer to each other"
                                    " in a cycle: give one of them a number")
        todo = left
    return known


def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def resolve_values(data: dict) -> dict:
    """``data`` (a task mapping) with the formulas among its numbers read as numbers."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    eq = out.get("equation") if isinstance(out.get("equation"), dict) else None
    params = out.get("parameters") if isinstance(out.get("parameters"), dict) else None
    consts = eq.get("constants") if eq is not None and isinstance(eq.get("constants"), dict) \
        else None
    table: dict[str, tuple[str, object]] = {}
    for prefix, src in (("equation.constants", consts), ("parameters", params)):
        for k, v in (src or {}).items():
            if isinstance(k, str) and (_real(v) or isinstance(v, str)):
                table[k] = (f"{prefix}.{k}", v)
    known = {k: float(v) for k, (_, v) in table.items() if _real(v)}
    if any(isinstance(v, str) for _, v in table.values()):
        _resolve(table, known)
        if params is not None:
            out["parameters"] = {k: known.get(k, v) if isinstance(v, str) else v
                                 for k, v in params.items()}
        if consts is not None:
            out["equation"] = {**eq, "constants": {k: known.get(k, v) if isinstance(v, str)
                                                   else v for k, v in consts.items()}}
    if isinstance(out.get("domain"), dict):
        out["domain"] = {a: [_value(v, f"domain.{a}", known) if isinstance(v, str) else v
                             for v in r] if isinstance(r, (list, tuple)) else r
                         for a, r in out["domain"].items()}
    if isinstance(out.get("time_span"), (list, tuple)):
        out["time_span"] = [_value(v, "time_span", known) if isinstance(v, str) else v
                            for v in out["time_span"]]
    return out
