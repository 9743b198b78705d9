"""The expression reader's allowlists, bounds and errors (data only): what a formula may contain
and how large it may be. The reader is :mod:`pdesharp.expression`."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

import sympy as sp

# --- the allowlists (data) -------------------------------------------------------------------
# Mathematical functions a formula may call. Elementary functions take any number; "special"
# ones (SymPy evaluates them on numbers with series that grow with the argument) only numbers
# up to SPECIAL_ARGUMENT_LIMIT in size. Left out on purpose: functions whose evaluation on an
# integer grows without bound (factorial, binomial, polygamma, incomplete gamma, Bernoulli...),
# anything that takes a string (S, Symbol, sympify) and anything that is not a function.
ELEMENTARY = (
    "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "acot", "atan2",
    "sinh", "cosh", "tanh", "coth", "sech", "csch", "asinh", "acosh", "atanh",
    "exp", "log", "sqrt", "cbrt", "Abs", "sign", "floor", "ceiling", "Min", "Max",
    "Heaviside", "Piecewise", "re", "im",
)
SPECIAL = (
    "erf", "erfc", "erfi", "erfinv", "erfcinv", "gamma", "loggamma", "digamma", "beta",
    "besselj", "bessely", "besseli", "besselk", "airyai", "airybi", "expint", "Ei", "Si", "Ci",
    "Shi", "Chi", "LambertW", "sinc", "zeta", "dirichlet_eta", "fresnels", "fresnelc",
    "elliptic_k", "elliptic_e",
)
# Python spellings that mean the SymPy function (``abs(u)`` was Python's abs on a SymPy object)
ALIASES = {"abs": "Abs", "min": "Min", "max": "Max", "ln": "log"}
# at most this many arguments (zeta(s) only: the Hurwitz form zeta(s, a) is slow on numbers)
ARITY = {"zeta": 1, "Min": 16, "Max": 16, "Piecewise": 16}
FUNCTIONS: dict[str, Callable] = {n: getattr(sp, n) for n in ELEMENTARY + SPECIAL}
FUNCTIONS.update({a: getattr(sp, n) for a, n in ALIASES.items()})
# Names with a fixed meaning unless the caller declares the name for something else.
CONSTANTS: dict[str, sp.Basic] = {
    "pi": sp.pi, "E": sp.E, "I": sp.I, "oo": sp.oo,
    "EulerGamma": sp.EulerGamma, "GoldenRatio": sp.GoldenRatio, "Catalan": sp.Catalan,
}
# the operator module, not the left operand's method: a caller's operator may return its own
# objects (equation.gradient's vectors), which only the reflected method of the right operand knows
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.Div: operator.truediv, ast.Pow: operator.pow}
_COMPARE = {ast.Lt: sp.Lt, ast.LtE: sp.Le, ast.Gt: sp.Gt, ast.GtE: sp.Ge, ast.Eq: sp.Eq,
            ast.NotEq: sp.Ne}
# What a refused construct is called in the error message.
_REFUSED = {
    ast.Lambda: "a lambda", ast.IfExp: "a conditional `a if c else b` (use Piecewise)",
    ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a comprehension",
    ast.List: "a list", ast.Set: "a set", ast.Dict: "a dict", ast.Tuple: "a tuple",
    ast.NamedExpr: "an assignment `:=`", ast.Starred: "a starred argument",
    ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield", ast.Slice: "a slice",
    ast.BoolOp: "`and`/`or` (use & and | between conditions)",
}
_OPERATOR_WORDS = {ast.FloorDiv: "`//`", ast.Mod: "`%`", ast.MatMult: "`@`", ast.LShift: "`<<`",
                   ast.RShift: "`>>`", ast.BitAnd: "`&`", ast.BitOr: "`|`",
                   ast.Not: "`not`", ast.Invert: "`~`"}

# --- the bounds ------------------------------------------------------------------------------
MAX_LENGTH = 2000            # characters of one formula
MAX_DEPTH = 100              # nesting of the syntax tree (and of parentheses)
MAX_NODES = 2000             # nodes of the syntax tree
MAX_DIGITS = 100             # digits of an exact number (integer, numerator or denominator)
MAX_FLOAT = 1e308            # magnitude of a floating-point number (the double range)
MAX_POWER = 16               # integer power of anything but a number (u**16; (1 + x)**16)
MAX_NUMBER_POWER = 400       # power of a number (10**-12, 2**100): its result is bounded too
SPECIAL_ARGUMENT_LIMIT = 100  # |number| a special function may be evaluated at
TIME_BUDGET = 10.0           # seconds for building one formula (ms for honest ones)
EVALUATION_BUDGET = 2.0      # seconds for evaluating one formula at numbers (ms for honest ones)


class ExpressionError(ValueError):
    """A formula was refused or does not parse; the message names the construct and where."""


class UndeclaredNames(ExpressionError):
    """The formula uses names its context does not declare (``names``, sorted); ``called`` are
    those it calls as functions (``tanhh(u)``), ``known`` what it could have meant."""

    def __init__(self, names: list[str], where: str, called: set[str] = frozenset(),
                 known: set[str] = frozenset(), functions: set[str] = frozenset()):
        self.names, self.where, self.called = names, where, set(called)
        self.known, self.functions = set(known), set(functions)
        super().__init__(f"{where} uses undeclared names {names}")

    def __reduce__(self):  # pickles (a formula built in a child process, pdesharp.clock)
        return type(self), (self.names, self.where, self.called, self.known, self.functions)

    def guess(self, name: str) -> str | None:
        """The closest known name (a function for a call), if one is close: a typo's fix."""
        import difflib

        pool = sorted(self.functions if name in self.called else self.known)
        same = [p for p in pool if p.lower() == name.lower()]  # Sin for sin, Nu for nu
        got = same or difflib.get_close_matches(name, pool, n=1, cutoff=0.8)
        return got[0] if got else None

    def explain(self) -> str:
        """One phrase per name: what it is taken for and the likely fix."""
        out = []
        for n in self.names:
            g = self.guess(n)
            what = f"{n}(...) is not a known function" if n in self.called else \
                f"{n} is not declared"
            out.append(what + (f" (did you mean {g}?)" if g else ""))
        return "; ".join(out)
