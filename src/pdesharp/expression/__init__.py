"""The one reader for formulas pdesharp did not write: task files, model replies, run folders.

SymPy's ``sympify``/``parse_expr`` run their input through Python's ``eval``, so a string such as
``0*__import__('os').system('...')`` runs a program. This module never evaluates text. It parses
with :mod:`ast`, checks every node against the allowlists below, and builds the SymPy expression
itself from the checked tree: numbers, the caller's names (unknowns, coordinates, parameters) and
operators (``dt``/``dx``...), ``+ - * / **``, unary minus, calls of the functions in
:data:`FUNCTIONS`, and comparisons only inside ``Piecewise`` conditions (or where the caller
allows them). Anything else is refused with :class:`ExpressionError` naming the construct and
where it is. Honest input gives exactly what ``parse_expr`` gave (tests/test_expression.py).

Sizes are bounded so that no formula can make the process hang: text length, nesting, exact
numbers (digits), powers, the size of a function's numeric argument (``floor(exp(10**99))`` is
refused before SymPy evaluates it), and time: building a formula, and every later evaluation of
one at numbers (:func:`evaluate`), runs under a hard clock (:mod:`pdesharp.clock`) that stops
even a single SymPy call.
"""

from __future__ import annotations

import ast
import cmath
import warnings
from collections.abc import Callable, Mapping

import sympy as sp

from pdesharp.clock import TimeUp, within
from pdesharp.expression.rules import (  # noqa: F401  (the public names are read here)
    ALIASES, ARITY, CONSTANTS, ELEMENTARY, EVALUATION_BUDGET, FUNCTIONS, MAX_DEPTH, MAX_DIGITS,
    MAX_FLOAT, MAX_LENGTH, MAX_NODES, MAX_NUMBER_POWER, MAX_POWER, SPECIAL,
    SPECIAL_ARGUMENT_LIMIT, TIME_BUDGET, _ARITHMETIC, _COMPARE, _OPERATOR_WORDS, _REFUSED,
    ExpressionError, UndeclaredNames,
)
from pdesharp.expression.source import (_at, _check_brackets, _keywords_as_names,
                                        _syntax_place, split_equation)  # noqa: F401
from pdesharp.untrusted import one_line


def read(text: str, *, where: str, names: Mapping[str, sp.Basic] = {},
         operators: Mapping[str, Callable] = {}, free_symbols: bool = False,
         caret_is_power: bool = False, relations: bool = False, column: int = 1) -> sp.Basic:
    """The SymPy expression of ``text``.

    ``where`` says what the text is ("equation 1"), for messages. ``names`` are the symbols,
    applied functions and constants the text may use; ``operators`` are the caller's own
    callables (``dx(e, 2)``), called with already built SymPy arguments. With ``free_symbols``
    every other bare name is a plain ``Symbol`` (a model's formula in its own notation). With
    ``caret_is_power``, ``^`` means ``**`` (as ``sympify`` read it); otherwise it is refused with
    a hint. ``relations`` allows comparisons at the top level. ``column`` is where ``text``
    starts in the caller's own text (one side of an equation), so that the columns messages
    name are the user's.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"{where}: expected a formula as text, got {type(text).__name__}")
    source = text.strip()
    if not source:
        raise ExpressionError(f"{where} is empty")
    offset = column - 1 + len(text) - len(text.lstrip())
    if len(source) > MAX_LENGTH:
        raise ExpressionError(f"{where} is {len(source)} characters long; at most {MAX_LENGTH}")
    _check_brackets(source, where, offset)
    if caret_is_power:  # as sympify's convert_xor: the token, so dx^2/2 is (dx**2)/2
        source = source.replace("^", "**")
    parsed, keywords = _keywords_as_names(source, names)
    try:
        with warnings.catch_warnings():  # "'int' object is not callable" for 2(u): refused below
            warnings.simplefilter("ignore")
            tree = ast.parse(parsed, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{where} is not a formula: {exc.msg}"
                              f" ({_syntax_place(exc, source, offset)})") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, deep nesting
        raise ExpressionError(f"{where} is not a formula: {exc}") from None
    for node in ast.walk(tree) if keywords else ():
        if isinstance(node, ast.Name) and node.id in keywords:
            node.id = keywords[node.id]
    builder = _Builder(source, where, names, operators, free_symbols, relations)
    builder.offset = offset
    builder.check(tree.body)
    try:
        return within(TIME_BUDGET, lambda: builder.build(tree.body))
    except ExpressionError:
        raise
    except TimeUp:
        raise ExpressionError(f"{where} takes more than {TIME_BUDGET:g} s to build") from None
    except RecursionError:
        raise ExpressionError(f"{where} is nested too deeply") from None
    except Exception as exc:  # SymPy raises many types on meaningless input (u(x), 1 < u < 2)
        raise ExpressionError(f"{where} does not evaluate: {one_line(exc, 160)}") from None


def formula(text: str, *, where: str, own: set[str] | frozenset[str] = frozenset()) -> sp.Basic:
    """A model's free-form formula (a stability bound such as ``0.5*dx**2/nu``): every name is a
    plain symbol except ``pi`` and ``E`` (unless ``own`` declares them), ``^`` is a power."""
    consts = {n: c for n, c in (("pi", sp.pi), ("E", sp.E)) if n not in own}
    return read(text, where=where, names=consts, free_symbols=True, caret_is_power=True)


def evaluate(expr: sp.Basic, values: Mapping, *, where: str,
             seconds: float = EVALUATION_BUDGET) -> complex:
    """The number ``expr`` (a formula :func:`read` built) takes at ``values`` (symbol -> number),
    under a hard clock: a model's ``dx**16*sin(exp(1/dx**16))`` is a formula of bounded size
    that SymPy cannot evaluate at dx = 1/1024 in any time. Raises :class:`ExpressionError` (one
    line) when it does not come to a number within ``seconds``."""
    def work() -> complex:
        value = expr.subs(values)
        if value.free_symbols:
            names = ", ".join(sorted(str(s) for s in value.free_symbols))
            raise ExpressionError(f"{where} depends on {names}")
        return complex(value.evalf())

    try:
        return within(seconds, work)
    except ExpressionError:
        raise
    except TimeUp:
        raise ExpressionError(f"{where} does not evaluate within {seconds:g} s") from None
    except Exception as exc:  # NoConvergence, a complex infinity, ...
        raise ExpressionError(f"{where} does not evaluate: {one_line(exc, 160)}") from None


class _Builder:
    def __init__(self, source, where, names, operators, free_symbols, relations):
        self.source, self.where = source, where
        self.names, self.operators = dict(names), dict(operators)
        self.free, self.relations = free_symbols, relations
        self.offset = 0  # where the source starts in the caller's text (columns of messages)

    # -- checking: every node against the allowlist, before anything is built ---------------
    def refuse(self, node: ast.AST, what: str) -> ExpressionError:
        line, col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
        if isinstance(node, ast.Attribute) and node.end_col_offset is not None:
            line, col = node.end_lineno, node.end_col_offset - len(node.attr) - 1  # the dot
        at = f" ({_at(line, col + 1, self.offset)})" if col is not None else ""
        return ExpressionError(f"{what} is not allowed in {self.where}{at}")

    def segment(self, node: ast.AST) -> str:
        return one_line(ast.get_source_segment(self.source, node) or "?", 40)

    def check(self, root: ast.AST) -> None:
        undeclared: set[str] = set()
        self.called: set[str] = set()
        todo = [(root, 0, False)]  # (node, depth, inside a condition)
        count = 0
        while todo:
            node, depth, cond = todo.pop()
            count += 1
            if count > MAX_NODES or depth > MAX_DEPTH:
                raise ExpressionError(f"{self.where} is too large (more than {MAX_NODES} terms"
                                      f" or nested more than {MAX_DEPTH} deep)")
            children = self.check_node(node, cond, undeclared)
            todo.extend((c, depth + 1, cc) for c, cc in reversed(children))
        if undeclared:
            known = set(self.names) | set(CONSTANTS)
            functions = set(FUNCTIONS) | set(self.operators)
            raise UndeclaredNames(sorted(undeclared), self.where, self.called & undeclared,
                                  known, functions)

    def check_node(self, node, cond, undeclared) -> list[tuple[ast.AST, bool]]:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) and cond:
                return []
            if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
                return []
            what = "a string" if isinstance(v, (str, bytes)) else f"`{self.segment(node)}`"
            raise self.refuse(node, what)
        if isinstance(node, ast.Name):
            self.check_name(node, undeclared, call=False)
            return []
        if isinstance(node, ast.BinOp):
            op = type(node.op)
            if op in _ARITHMETIC:
                return [(node.left, cond), (node.right, cond)]
            if op is ast.BitXor:
                raise self.refuse(node, "`^` (use ** for powers: u**2)")
            if op in (ast.BitAnd, ast.BitOr) and cond:
                return [(node.left, cond), (node.right, cond)]
            raise self.refuse(node, f"the operator {_OPERATOR_WORDS.get(op, op.__name__)}")
        if isinstance(node, ast.UnaryOp):
            op = type(node.op)
            if op in (ast.USub, ast.UAdd) or (op is ast.Invert and cond):
                return [(node.operand, cond)]
            raise self.refuse(node, f"the operator {_OPERATOR_WORDS.get(op, op.__name__)}")
        if isinstance(node, ast.Compare):
            if not (cond or self.relations) or not all(type(o) in _COMPARE for o in node.ops):
                raise self.refuse(node, f"the comparison `{self.segment(node)}`")
            return [(node.left, False)] + [(c, False) for c in node.comparators]
        if isinstance(node, ast.Call):
            return self.check_call(node, undeclared)
        if isinstance(node, ast.Attribute):
            raise self.refuse(node, f"attribute access `.{one_line(node.attr, 40)}`")
        if isinstance(node, ast.Subscript):
            raise self.refuse(node, f"the subscript `{self.segment(node)}`")
        raise self.refuse(node, _REFUSED.get(type(node), f"the construct {type(node).__name__}"))

    def check_name(self, node: ast.Name, undeclared: set[str], *, call: bool) -> None:
        name = node.id
        if name.startswith("__") or name.endswith("__"):
            raise self.refuse(node, f"the name `{one_line(name, 40)}`")
        if call:
            if name in self.operators or (name in FUNCTIONS and name not in self.names):
                return
            if name in self.names:
                raise self.refuse(node, f"calling `{name}(...)` ({name} is not a function)")
            if self.free:
                raise self.refuse(node, f"the function `{one_line(name, 40)}(...)`")
            undeclared.add(name)
            self.called.add(name)
        elif not (name in self.names or name in CONSTANTS or self.free):  # free: Symbol(name)
            if name in self.operators or name in FUNCTIONS:
                raise self.refuse(node, f"`{name}` without arguments")
            undeclared.add(name)

    def check_call(self, node: ast.Call, undeclared) -> list[tuple[ast.AST, bool]]:
        if not isinstance(node.func, ast.Name):
            # the callee's own construct names the problem (attribute access `.system`)
            if isinstance(node.func, ast.Attribute):
                raise self.refuse(node.func, f"attribute access `.{one_line(node.func.attr, 40)}`")
            raise self.refuse(node, f"calling `{self.segment(node.func)}`")
        self.check_name(node.func, undeclared, call=True)
        name = node.func.id
        if node.keywords:
            kw = node.keywords[0]
            raise self.refuse(kw, f"the keyword argument `{kw.arg or '**'}=`")
        limit = ARITY.get(ALIASES.get(name, name), 32)
        if len(node.args) > limit:
            raise self.refuse(node, f"calling {name} with {len(node.args)} arguments (at most"
                                    f" {limit})")
        if name == "Piecewise" and name not in self.names and name not in self.operators:
            out = []
            for arg in node.args:
                if not (isinstance(arg, ast.Tuple) and len(arg.elts) == 2):
                    raise self.refuse(arg, "a Piecewise argument that is not a (value, condition)"
                                           " pair")
                out += [(arg.elts[0], False), (arg.elts[1], True)]
            return out
        return [(a, False) for a in node.args]

    # -- building: SymPy objects only, from the checked tree ---------------------------------
    def build(self, node: ast.AST, cond: bool = False):
        if isinstance(node, ast.Constant):
            return self.number(node)
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in CONSTANTS and not self.free:
                return CONSTANTS[node.id]
            return sp.Symbol(node.id)  # free_symbols: every other name (I, oo too) a symbol
        if isinstance(node, ast.UnaryOp):
            v = self.build(node.operand, cond)
            return self.bounded(node, -v if isinstance(node.op, ast.USub)
                                else (~v if isinstance(node.op, ast.Invert) else +v))
        if isinstance(node, ast.BinOp):
            a, b = self.build(node.left, cond), self.build(node.right, cond)
            op = type(node.op)
            if op in (ast.BitAnd, ast.BitOr):
                return (a & b) if op is ast.BitAnd else (a | b)
            if op is ast.Pow:
                self.check_power(node, a, b)
            return self.bounded(node, _ARITHMETIC[op](a, b))
        if isinstance(node, ast.Compare):
            left = self.sized(node, "a comparison", self.build(node.left))
            parts = []
            for o, c in zip(node.ops, node.comparators):
                right = self.sized(node, "a comparison", self.build(c))
                parts.append(_COMPARE[type(o)](left, right))
                left = right
            return parts[0] if len(parts) == 1 else sp.And(*parts)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.refuse(node, type(node).__name__)  # unreachable after check()

    def number(self, node: ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return sp.true if v else sp.false
        text = (ast.get_source_segment(self.source, node) or repr(v)).replace("_", "")
        imaginary = isinstance(v, complex)
        if imaginary:
            text = text.rstrip("jJ")
        # as parse_expr's auto_number: Float from the literal's text (its precision), else Integer
        if "." in text or (("e" in text or "E" in text) and not text.lower().startswith("0x")):
            out = sp.Float(text)
        else:
            out = sp.Integer(int(text, 0) if not imaginary else int(text))
        out = self.bounded(node, out)
        return out * sp.I if imaginary else out

    def check_power(self, node, base, exponent) -> None:
        if not getattr(exponent, "is_Number", False):
            return
        e = abs(float(exponent)) if exponent.is_finite else float("inf")
        if getattr(base, "is_Number", False):
            if e > MAX_NUMBER_POWER:
                raise self.refuse(node, f"a power of a number with exponent beyond"
                                        f" {MAX_NUMBER_POWER}")
            if base.is_Rational and exponent.is_Rational:
                digits = max(len(str(abs(base.p))), len(str(base.q)))
                if (digits - 1) * e > MAX_DIGITS:
                    raise self.refuse(node, f"a number with more than {MAX_DIGITS} digits")
        elif e > MAX_POWER:
            raise self.refuse(node, f"the power `{self.segment(node)}` (exponents up to"
                                    f" {MAX_POWER})")

    def bounded(self, node, value):
        """``value`` if every number in it is within the bounds."""
        if not isinstance(value, sp.Basic):
            return value
        atoms = [value] if value.is_Atom else value.atoms(sp.Number, sp.Pow)
        for a in atoms:
            if a.is_Rational and max(a.p.bit_length(), a.q.bit_length()) > MAX_DIGITS * 3.33:
                raise self.refuse(node, f"a number with more than {MAX_DIGITS} digits")
            if a.is_Float and a.is_finite and abs(a) > MAX_FLOAT:
                raise self.refuse(node, f"a number beyond {MAX_FLOAT:g} in size")
            if a.is_Pow and a.exp.is_Number and a.exp.is_finite and abs(a.exp) > MAX_POWER \
                    and not a.base.is_Number:
                raise self.refuse(node, f"a power beyond {MAX_POWER}")
        return value

    def call(self, node: ast.Call):
        name = node.func.id
        if name == "Piecewise" and name not in self.names and name not in self.operators:
            pairs = [(self.build(a.elts[0]), self.build(a.elts[1], cond=True)) for a in node.args]
            return self.bounded(node, sp.Piecewise(*pairs))
        args = [self.build(a) for a in node.args]
        if name in self.operators:
            return self.bounded(node, self.operators[name](*args))
        limit = SPECIAL_ARGUMENT_LIMIT if name in SPECIAL else None
        args = [self.sized(node, name, a, limit) for a in args]
        return self.bounded(node, FUNCTIONS[name](*args))

    def sized(self, node, what: str, value, limit: float | None = None):
        """``value`` if it is not a number beyond ``limit`` (default: the double range) in
        size: SymPy evaluates functions and comparisons of numbers eagerly (the sign of
        ``sin(exp(10**50))``, the integer part of ``exp(10**99)``), at a cost that grows
        without bound with the number. Estimated in double precision, before SymPy sees it."""
        if not isinstance(value, sp.Expr) or value.free_symbols:
            return value
        if value.is_Number:
            size = abs(float(value)) if value.is_finite else None
        else:
            size = _size(value)
        limit = MAX_FLOAT if limit is None else limit
        if size is not None and not size <= limit:
            raise self.refuse(node, f"{what} of a number beyond {limit:g} in size")
        return value


_CMATH = {n: getattr(cmath, n) for n in ("exp", "log", "sqrt", "sin", "cos", "tan", "sinh",
                                          "cosh", "tanh", "asin", "acos", "atan", "asinh",
                                          "acosh", "atanh")}


class _Unknown(Exception):
    pass


def _size(value: sp.Expr) -> float | None:
    """|value| of a number-valued expression in double precision: inf beyond the double range,
    None when the expression uses something this estimate does not know."""
    def z(e) -> complex:
        if e.is_Number or e.is_NumberSymbol or e is sp.I:
            return complex(e)
        if e.is_Add or e.is_Mul:
            out = complex(0 if e.is_Add else 1)
            for a in e.args:
                out = out + z(a) if e.is_Add else out * z(a)
            return out
        if e.is_Pow:
            return z(e.base) ** z(e.exp)
        f = _CMATH.get(type(e).__name__)
        if f is None or len(e.args) != 1:
            raise _Unknown
        return f(z(e.args[0]))

    try:
        v = abs(z(value))
    except OverflowError:
        return float("inf")
    except (_Unknown, ArithmeticError, ValueError, TypeError):
        return None
    return v if v == v else None
