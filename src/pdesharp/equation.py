"""Machine-readable PDEs: parse a task's equation strings into SymPy.

An equation is written in residual form ``F(u, ...) = 0`` (or ``lhs = rhs``) with derivative
operators ``dt(e)``, ``dx(e)``, ``dy(e)``, ``dz(e)`` and an optional order, ``dx(e, 2)``.
Unknowns are functions of time and space, coefficients (given fields such as Darcy's ``a``) are
functions of space only, and parameters are plain symbols. Example (viscous Burgers)::

    dt(u) + dx(u**2/2) - nu*dx(u, 2)

The parsed form keeps SymPy ``Derivative`` objects unevaluated so that the flux structure
(``dx(u**2/2)``) survives for the analysis, while ``.doit()`` gives the expanded form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import sympy as sp

from pdesharp.expression import ExpressionError, UndeclaredNames, read, split_equation

SPACE_AXES = ("x", "y", "z")
# modules for sympy.lambdify of an equation's terms on arrays: special functions (erf, gamma,
# Bessel...) as scipy.special ufuncs; with "numpy" alone SymPy falls back to math.erf, which
# takes no arrays
ARRAY_MODULES = ["scipy", "numpy"]
# functions NumPy evaluates on arrays itself (SymPy's NumPy printer): an expression of these only
# needs no scipy.special, whose import is 0.6 s of CPU in every process that reads a task
NUMPY_FUNCTIONS = frozenset({
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "exp", "log", "Abs", "sign", "floor", "ceiling", "Max", "Min",
    "Heaviside", "Piecewise", "re", "im", "conjugate"})


def array_function(args, expr):
    """``sympy.lambdify`` of ``expr`` (or a list of them) for arrays: NumPy alone when every
    function in it is one of :data:`NUMPY_FUNCTIONS`, else scipy.special's ufuncs first."""
    whole = sp.Tuple(*expr) if isinstance(expr, (list, tuple)) else sp.sympify(expr)
    names = {type(f).__name__ for f in whole.atoms(sp.Function)}
    return sp.lambdify(args, expr, ["numpy"] if names <= NUMPY_FUNCTIONS else ARRAY_MODULES)


class EquationError(ExpressionError):
    """A task's equation could not be parsed; the message names the equation and the cause."""


@dataclass(frozen=True)
class ParsedSystem:
    """A parsed PDE system, ready for symbolic work and for residual evaluation."""

    unknowns: tuple[str, ...]
    coefficients: tuple[str, ...]
    parameters: tuple[str, ...]
    space: tuple[str, ...]
    time: str | None
    sources: tuple[str, ...]
    exprs: tuple[sp.Expr, ...] = field(compare=False)

    @cached_property
    def t(self) -> sp.Symbol | None:
        return sp.Symbol(self.time, real=True) if self.time else None

    @cached_property
    def coords(self) -> tuple[sp.Symbol, ...]:
        return tuple(sp.Symbol(a, real=True) for a in self.space)

    def function(self, name: str) -> sp.Expr:
        """The SymPy application of an unknown or coefficient, e.g. ``u(t, x)``."""
        if name in self.unknowns:
            args = ((self.t,) if self.t is not None else ()) + self.coords
        elif name in self.coefficients:
            args = self.coords
        else:
            raise KeyError(name)
        return sp.Function(name)(*args)

    def split_time_derivative(self, i: int) -> tuple[sp.Expr, sp.Expr]:
        """Write equation i as ``dt(q) + rest`` and return ``(q, rest)``.

        ``q`` is the conserved quantity whose time derivative appears (``u`` for Burgers,
        ``rho*v`` for CNS momentum). Steady equations return ``(0, expr)``.
        """
        expr = self.exprs[i]
        if self.t is None:
            return sp.Integer(0), expr
        q = sp.Integer(0)
        rest = sp.Integer(0)
        for term in distributed_terms(expr):
            coeff, deriv = _time_derivative_part(term, self.t)
            if deriv is None:
                rest += term
            elif coeff.has(*[self.function(u).func for u in self.unknowns]):
                # u*dt(u) is dt(u**2/2), not dt(u*u): a coefficient that depends on the unknowns
                # has no conserved quantity of this simple form, so refuse instead of guessing.
                raise EquationError(
                    f"equation {i}: the time derivative {term} has a coefficient that depends on"
                    " the unknowns; write it in conservative form, e.g. dt(u**2/2)"
                )
            else:
                q += coeff * deriv
        return q, rest


def distributed_terms(expr: sp.Expr) -> list[sp.Expr]:
    """The additive terms of ``expr`` with products distributed over sums at every level of
    multiplication (``tau*(dt(u) - dx(u, 2)) + u`` is three terms), but the arguments of
    derivatives and functions left as written (``dx(u**2/2)`` stays one flux term)."""
    out = []
    for term in sp.Add.make_args(sp.expand(expr, deep=False, mul=True, multinomial=False)):
        if isinstance(term, sp.Mul) and any(isinstance(f, sp.Add) for f in term.args):
            again = sp.expand(term, deep=False, mul=True, multinomial=False)
            out += distributed_terms(again) if again != term else [term]
        else:
            out.append(term)
    return out


def _time_derivative_part(term: sp.Expr, t: sp.Symbol) -> tuple[sp.Expr, sp.Expr | None]:
    """If ``term`` is ``c * Derivative(e, t)`` with c free of derivatives, return (c, e).
    A derivative once in t and also in space, ``Derivative(u, (x, 2), t)`` (SymPy's form of
    ``dt(dx(u, 2))``), is the time derivative of ``dx(u, 2)``: a Sobolev-type term."""
    factors = sp.Mul.make_args(term)
    derivs = [f for f in factors if isinstance(f, sp.Derivative) and t in f.variables]
    if len(derivs) != 1:
        return term, None
    d = derivs[0]
    counts = [(v, int(n)) for v, n in d.variable_count]
    if sum(n for v, n in counts if v == t) != 1:
        return term, None
    coeff = sp.Mul(*[f for f in factors if f is not d])
    if coeff.has(sp.Derivative):
        return term, None
    space = [(v, n) for v, n in counts if v != t]
    return coeff, (sp.Derivative(d.expr, *space) if space else d.expr)


MAX_DERIVATIVE_ORDER = 8  # dx(u, 4) is Kuramoto-Sivashinsky's; dx(u, 10**9) would never expand


def _derivative_op(var: sp.Symbol):
    def op(e, n=1):
        if not isinstance(n, (int, sp.Integer)) or not 1 <= int(n) <= MAX_DERIVATIVE_ORDER:
            raise EquationError(f"derivative order must be an integer from 1 to"
                                f" {MAX_DERIVATIVE_ORDER}, got {n!r}")
        return sp.Derivative(e, (var, int(n)))

    return op


class _Vector:
    """``gradient(e)``: one component per space axis, only meaningful inside ``divergence``,
    ``dot``/``inner`` or times a scalar (``D*gradient(u)``). Not a tuple: SymPy would make a
    tuple its own ``Tuple`` in ``u*gradient(u)``."""

    def __init__(self, comps):
        self.comps = list(comps)

    def __iter__(self):
        return iter(self.comps)

    def __len__(self):
        return len(self.comps)

    def _scaled(self, k):
        if isinstance(k, _Vector):
            raise EquationError("a product of two vectors: write dot(a, b) (or inner(a, b))")
        return _Vector(c * k for c in self)

    __mul__ = __rmul__ = _scaled

    def __truediv__(self, k):
        return self._scaled(1 / k)

    def __neg__(self):
        return self._scaled(-1)

    def __add__(self, other):
        if isinstance(other, _Vector) and len(other) == len(self):
            return _Vector(a + b for a, b in zip(self, other))
        raise EquationError("a vector (gradient(...)) added to a scalar: use it inside"
                            " divergence(...), dot(..., ...) or gradient_squared(...)")

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-other if isinstance(other, _Vector) else other)

    def __rsub__(self, other):
        return (-self) + other

    def __pow__(self, k):
        raise EquationError("a power of a vector: write gradient_squared(u) for |grad u|^2")


# py-pde's operator names (and the spellings users bring from other tools), as pdesharp's own
# derivatives: laplace(u) is dx(u, 2) + dy(u, 2) on the task's axes
VECTOR_CALCULUS = ("laplace", "laplacian", "gradient", "grad", "divergence", "div",
                   "gradient_squared", "dot", "inner")


def _vector_operators(coords) -> dict:
    def scalar(e, what):
        if isinstance(e, _Vector):
            raise EquationError(f"{what} of a vector: {what} takes a scalar expression")
        return e

    def vector(e, what):
        if isinstance(e, _Vector):
            if len(e) != len(coords):
                raise EquationError(f"{what}: a vector of {len(e)} components on {len(coords)} axes")
            return e
        if len(coords) == 1:  # in 1D a scalar is a vector of one component
            return _Vector([e])
        raise EquationError(f"{what} of a scalar: {what} takes a vector such as gradient(u)")

    def laplace(e):
        e = scalar(e, "laplace")
        return sp.Add(*[sp.Derivative(e, (c, 2)) for c in coords])

    def gradient(e):
        return _Vector(sp.Derivative(scalar(e, "gradient"), c) for c in coords)

    def divergence(v):
        return sp.Add(*[sp.Derivative(a, c) for a, c in zip(vector(v, "divergence"), coords)])

    def gradient_squared(e):
        return sp.Add(*[sp.Derivative(scalar(e, "gradient_squared"), c) ** 2 for c in coords])

    def dot(a, b):
        return sp.Add(*[x * y for x, y in zip(vector(a, "dot"), vector(b, "dot"))])

    ops = {"laplace": laplace, "gradient": gradient, "divergence": divergence,
           "gradient_squared": gradient_squared, "dot": dot}
    ops.update(laplacian=laplace, grad=gradient, div=divergence, inner=dot)
    # py-pde's partial derivatives: d_dx(u), d2_dx2(u)
    for c in coords:
        ops[f"d_d{c.name}"] = lambda e, c=c: sp.Derivative(scalar(e, "a derivative"), c)
        ops[f"d2_d{c.name}2"] = lambda e, c=c: sp.Derivative(scalar(e, "a derivative"), (c, 2))
    return ops


def parse_system(
    equations: list[str],
    unknowns: list[str],
    *,
    space: list[str],
    time: str | None = "t",
    coefficients: list[str] | None = None,
    parameters: list[str] | None = None,
    sources: list[str] | None = None,
) -> ParsedSystem:
    """Parse equation strings; every free name must be declared, so typos fail loudly."""
    coefficients = list(coefficients or [])
    parameters = list(parameters or [])
    sources = list(sources or [])
    for axis in space:
        if axis not in SPACE_AXES:
            raise EquationError(f"space axis {axis!r} is not one of {SPACE_AXES}")
    declared = [*unknowns, *coefficients, *parameters, *sources, *space, *([time] if time else [])]
    for name in declared:
        if not (isinstance(name, str) and name.isidentifier()) or name.startswith("__"):
            raise EquationError(f"{name!r} is not a plain name (letters, digits, '_')")
    t = sp.Symbol(time, real=True) if time else None
    coords = [sp.Symbol(a, real=True) for a in space]
    local: dict[str, sp.Basic] = {}
    targs = ([t] if t is not None else []) + coords
    for name in unknowns:
        local[name] = sp.Function(name)(*targs)
    for name in coefficients:
        local[name] = sp.Function(name)(*coords)
    for name in parameters:
        local[name] = sp.Symbol(name, real=True)
    for name in sources:
        local.setdefault(name, sp.Symbol(name))
    operators = _vector_operators(coords)
    if t is not None:
        operators["dt"] = _derivative_op(t)
        local[time] = t
    for axis, c in zip(space, coords):
        operators["d" + axis] = _derivative_op(c)
        local[axis] = c
    exprs = []
    for i, text in enumerate(equations, 1):
        if not isinstance(text, str):
            raise EquationError(f"equation {i} is not text: {type(text).__name__}")
        parts = split_equation(text)
        if len(parts) > 2:
            raise EquationError(f"equation {text!r}: write it as 'lhs = rhs' or as 'expr' (= 0)")
        starts = [1, len(parts[0]) + 2]  # the column where each side begins
        try:
            sides = [read(p, where=f"equation {i}", names=local, operators=operators, column=c)
                     for p, c in zip(parts, starts)]
        except UndeclaredNames as exc:
            bare = [n for n in exc.names if n not in exc.called]
            raise EquationError(
                f"equation {i} ({text!r}): {exc.explain()}"
                + (f"; declare {', '.join(bare)} under parameters (or as unknowns or"
                   " coefficients)" if bare and not all(exc.guess(n) for n in bare) else "")
                + (". Functions: sin, exp, tanh, ... (docs/tasks.md, 'Equation notation'),"
                   " operators: dt, dx, laplace, gradient, divergence"
                   if any(not exc.guess(n) for n in exc.called) else "")) from None
        except ExpressionError as exc:
            raise EquationError(f"{exc} ({text!r})") from None
        if any(isinstance(side, _Vector) for side in sides):
            raise EquationError(f"equation {i} ({text!r}) is a vector (gradient(...)): each"
                                " equation is a scalar; use divergence(...) or dot(...)")
        expr = sides[0] - sides[1] if len(sides) == 2 else sides[0]
        if not isinstance(expr, sp.Expr):
            raise EquationError(f"equation {text!r} is not an expression")
        exprs.append(expr)
    return ParsedSystem(
        unknowns=tuple(unknowns),
        coefficients=tuple(coefficients),
        parameters=tuple(parameters),
        space=tuple(space),
        time=time,
        sources=tuple(sources),
        exprs=tuple(exprs),
    )
