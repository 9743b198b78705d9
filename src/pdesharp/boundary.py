"""Boundary conditions of a task, read from its ``boundary:`` string.

A task's ``boundary`` is prose for a language model, but when it follows the grammar below the
built-in analyst and the generic data generator can use it too::

    periodic                                   every axis periodic
    dirichlet: u = 0                           every side: u = 0
    neumann: dx(u) = 0                         (1D) or dn(u) = 0 on every side (dn: outward normal)
    robin: dn(u) + h*u = 0
    x = 0: u = sin(pi*t); x = 1: dx(u) = 0     one clause per side, ';' between clauses
    dirichlet at x = 0: u = 1, v = 0; neumann at x = 1: dx(u) = 0, dx(v) = 0
    periodic in x; y = 0: u = 0; y = 1: dy(u) + u = x

A clause is ``[kind] [at SIDE]: condition[, condition...]``. ``kind`` (optional) is
``dirichlet``, ``neumann`` or ``robin`` and is checked against the conditions. ``SIDE`` is
``AXIS = VALUE`` with VALUE one end of the task's domain (or ``lo``/``hi``), or ``left``,
``right`` (x), ``bottom``, ``top`` (y); a clause without a side applies to every non-periodic
side. Each condition is linear in one unknown: ``a*u + b*d(u) = g`` where ``d`` is ``dx``,
``dy`` or ``dn`` (the outward normal derivative), ``a``, ``b`` are numbers or parameters and
``g`` may depend on parameters, time and the coordinate along the side.

Everything is stored in terms of the derivative along the side's own axis (``dn`` at the low end
is ``-dx``), as :class:`Condition` records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sympy as sp

from pdesharp.expression import ExpressionError, UndeclaredNames, read, split_equation

KINDS = ("dirichlet", "neumann", "robin")
_SIDE_WORDS = {"left": ("x", 0), "right": ("x", 1), "bottom": ("y", 0), "top": ("y", 1)}
GRAMMAR_HINT = (
    "write the boundary as 'periodic', 'dirichlet: u = 0', 'neumann: dx(u) = 0', or one clause per"
    " side such as 'x = 0: u = 1; x = 1: dx(u) + 2*u = 0' (see docs/tasks.md, 'Boundary conditions')")


class BoundaryError(ExpressionError):
    """The boundary text does not follow the grammar; the message says what to write."""


class IncompleteBoundary(BoundaryError):
    """The boundary follows the grammar but says too little (a side the equations need left
    out) or names what the task lacks: the user's to fix, not a language model's."""


@dataclass(frozen=True)
class Condition:
    """``a*w + b*dw/d(axis) = g`` for one unknown ``w`` on one side of one axis."""

    unknown: str
    axis: str
    side: int  # 0: the low end of the axis, 1: the high end
    a: sp.Expr
    b: sp.Expr
    g: sp.Expr
    text: str = ""

    @property
    def kind(self) -> str:
        if self.b == 0:
            return "dirichlet"
        return "neumann" if self.a == 0 else "robin"

    def describe(self) -> str:
        end = "low" if self.side == 0 else "high"
        return f"{self.kind} for {self.unknown} at the {end} end of {self.axis}: {self.text}"


@dataclass(frozen=True)
class BoundarySpec:
    """Periodic axes and the conditions on the other sides."""

    axes: tuple[str, ...]
    periodic: tuple[str, ...]
    conditions: tuple[Condition, ...] = field(default_factory=tuple)
    text: str = ""

    @property
    def all_periodic(self) -> bool:
        return set(self.axes) == set(self.periodic)

    def condition(self, unknown: str, axis: str, side: int) -> Condition | None:
        for c in self.conditions:
            if (c.unknown, c.axis, c.side) == (unknown, axis, side):
                return c
        return None

    def missing(self, unknowns) -> list[tuple[str, str, int]]:
        """(unknown, axis, side) with no condition on a non-periodic side."""
        return [(u, a, s) for a in self.axes if a not in self.periodic for s in (0, 1)
                for u in unknowns if self.condition(u, a, s) is None]


def parse_boundary(text: str, *, unknowns, space, domain: dict, names=(), time: str | None = "t"
                   ) -> BoundarySpec:
    """Read ``text``; ``names`` are the parameters and constants conditions may use."""
    raw = (text or "").strip()
    axes = tuple(space)
    low = raw.lower()
    if not raw:
        raise BoundaryError(f"the boundary is empty; {GRAMMAR_HINT}")
    if low.startswith("periodic") and ":" not in raw and ";" not in raw:
        rest = low[len("periodic"):].strip(" .")
        m = re.fullmatch(r"(?:in\s+)?((?:[xyz](?:\s*(?:,|and)\s*)?)+)", rest) if rest else None
        periodic = axes if not rest or rest.startswith(("boundar", "on all", "everywhere", "in all")) \
            else tuple(a for a in axes if m and a in m.group(1))
        if rest and not periodic:
            raise BoundaryError(f"cannot read {text!r}; {GRAMMAR_HINT}")
        return BoundarySpec(axes=axes, periodic=periodic, text=raw)
    periodic: list[str] = []
    conds: list[Condition] = []
    for clause in [c.strip() for c in re.split(r"[;\n]", raw) if c.strip()]:
        m = re.fullmatch(r"periodic\s+(?:in\s+)?([xyz](?:\s*(?:,|and)\s*[xyz])*)", clause.lower())
        if m:
            periodic += [a for a in axes if a in m.group(1)]
            continue
        conds += _clause(clause, unknowns, axes, domain, names, time, text)
    spec = BoundarySpec(axes=axes, periodic=tuple(a for a in axes if a in periodic),
                        conditions=tuple(conds), text=raw)
    seen = set()
    for c in conds:
        key = (c.unknown, c.axis, c.side)
        if key in seen:
            raise BoundaryError(f"two conditions for {c.unknown} on the same side ({c.axis},"
                                f" {'low' if c.side == 0 else 'high'} end) in {text!r}")
        if c.axis in spec.periodic:
            raise BoundaryError(f"axis {c.axis} is periodic but has a condition {c.text!r}")
        seen.add(key)
    return spec


_CLAUSE = re.compile(
    r"^\s*(?P<kind>dirichlet|neumann|robin)?\s*(?:(?:at|on)\s+)?"
    r"(?P<side>left|right|bottom|top|[xyz]\s*=\s*[-+.\w]+|[xyz]_(?:lo|hi|min|max))?\s*:\s*(?P<cond>.+)$",
    re.IGNORECASE | re.DOTALL)


def _clause(clause: str, unknowns, axes, domain, names, time, text) -> list[Condition]:
    m = _CLAUSE.match(clause)
    if m is None or not (m["kind"] or m["side"]):
        raise BoundaryError(f"cannot read the boundary clause {clause!r}; {GRAMMAR_HINT}")
    kind = (m["kind"] or "").lower() or None
    sides = [_side(m["side"], axes, domain, text)] if m["side"] else \
        [(a, s) for a in axes for s in (0, 1)]
    out = []
    for cond in _split_conditions(m["cond"]):
        for axis, side in sides:
            end = float(domain[axis][side]) if axis in domain else 0.0
            c = _condition(cond, axis, side, unknowns, axes, names, time,
                           all_sides=not m["side"], end=end)
            if kind == "dirichlet" and c.b != 0 or kind == "neumann" and c.a != 0:
                raise BoundaryError(f"{cond!r} is not a {kind} condition (it is {c.kind})")
            out.append(c)
    return out


def _split_conditions(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _side(word: str, axes, domain, text) -> tuple[str, int]:
    w = word.strip().lower().replace(" ", "")
    if w in _SIDE_WORDS:
        axis, side = _SIDE_WORDS[w]
    elif "_" in w:
        axis, end = w.split("_")
        side = 0 if end in ("lo", "min") else 1
    else:
        axis, value = w.split("=")
        lo, hi = (float(v) for v in domain[axis]) if axis in domain else (None, None)
        if value in ("lo", "min"):
            side = 0
        elif value in ("hi", "max"):
            side = 1
        else:
            try:
                v = float(read(value, where=f"the side {word!r}"))
            except (ExpressionError, TypeError, ValueError):
                raise BoundaryError(f"cannot read the side {word!r} in {text!r}") from None
            if lo is not None and abs(v - lo) <= 1e-9 * max(1.0, abs(lo)):
                side = 0
            elif hi is not None and abs(v - hi) <= 1e-9 * max(1.0, abs(hi)):
                side = 1
            else:
                raise BoundaryError(f"{word!r} is not an end of the domain of {axis}"
                                    f" ({lo:g}, {hi:g})" if lo is not None else
                                    f"{word!r}: {axis} is not a space axis")
    if axis not in axes:
        raise BoundaryError(f"{word!r} names axis {axis}, which is not a space axis {list(axes)}")
    return axis, side


def _condition(text: str, axis: str, side: int, unknowns, axes, names, time, all_sides: bool,
               end: float = 0.0) -> Condition:
    value = {u: sp.Symbol(f"_bv_{u}") for u in unknowns}
    deriv = {u: sp.Symbol(f"_bd_{u}") for u in unknowns}
    sign = -1 if side == 0 else 1  # dn = sign * d/d(axis)
    used_ops: set[str] = set()

    def op(name):
        def d(e, n=1):
            if n != 1 or not isinstance(e, sp.Symbol) or e not in value.values():
                raise BoundaryError(f"{name}(...) in {text!r} must be the first derivative of an"
                                    " unknown, e.g. dx(u)")
            used_ops.add(name)
            u = e.name[len("_bv_"):]
            if name == "dn":
                return sign * deriv[u]
            if name != "d" + axis:
                if all_sides:
                    raise BoundaryError(f"{text!r} applies to every side but uses {name}(...);"
                                        " write dn(u) (outward normal derivative) instead")
                raise BoundaryError(f"{text!r} on a side of {axis} uses {name}(...), a tangential"
                                    f" derivative; use d{axis}(...) or dn(...)")
            return deriv[u]
        return d

    local: dict = {u: value[u] for u in unknowns}
    ops = {"d" + a: op("d" + a) for a in ("x", "y", "z")}
    ops["dn"] = op("dn")
    for n in names:
        local[n] = sp.Symbol(n, real=True)
    for a in axes:
        local[a] = sp.Symbol(a, real=True)
    if time:
        local[time] = sp.Symbol(time, real=True)
    sides = split_equation(text)
    if len(sides) != 2:
        raise BoundaryError(f"boundary condition {text!r} needs exactly one '='")
    where = f"the boundary condition {text.strip()!r}"
    try:
        expr = read(sides[0], where=where, names=local, operators=ops) - \
            read(sides[1], where=where, names=local, operators=ops)
    except BoundaryError:
        raise
    except UndeclaredNames as exc:  # most often a misspelt unknown: say which ones there are
        raise IncompleteBoundary(
            f"{where}: {exc.explain()}; the task's unknowns are {', '.join(unknowns)}"
            + (f" and its parameters {', '.join(names)}" if names else "")) from None
    except ExpressionError as exc:
        raise BoundaryError(str(exc)) from None
    except Exception as exc:  # SymPy raises many types
        raise BoundaryError(f"boundary condition {text!r} does not parse: {exc}") from None
    involved = [u for u in unknowns if expr.has(value[u]) or expr.has(deriv[u])]
    if len(involved) != 1:
        raise BoundaryError(
            f"boundary condition {text!r} must involve exactly one unknown (found"
            f" {involved or 'none'}); conditions that couple unknowns are not supported")
    u = involved[0]
    a = sp.diff(expr, value[u])
    b = sp.diff(expr, deriv[u])
    if a.has(value[u], deriv[u]) or b.has(value[u], deriv[u]):
        raise BoundaryError(f"boundary condition {text!r} is not linear in {u}")
    g = sp.expand(-(expr - a * value[u] - b * deriv[u]))  # (simplify: a minute on trig data)
    known = {sp.Symbol(n, real=True) for n in names} | {sp.Symbol(a_, real=True) for a_ in axes}
    if time:
        known.add(sp.Symbol(time, real=True))
    stray = (a.free_symbols | b.free_symbols | g.free_symbols) - known
    if stray:
        raise BoundaryError(f"boundary condition {text!r} uses undeclared names"
                            f" {sorted(map(str, stray))}")
    g = g.subs(sp.Symbol(axis, real=True), end)  # on the side, its own coordinate is the end
    if (a.free_symbols | b.free_symbols) & ({sp.Symbol(a_, real=True) for a_ in axes}
                                            | ({sp.Symbol(time, real=True)} if time else set())):
        raise BoundaryError(f"boundary condition {text!r}: the coefficients of {u} and its"
                            " derivative must be constants or parameters (only the right-hand"
                            " side may vary along the side or in time)")
    return Condition(unknown=u, axis=axis, side=side, a=sp.nsimplify(a) if a.is_number else a,
                     b=sp.nsimplify(b) if b.is_number else b, g=g, text=text.strip())


def derivative_orders(system) -> dict[tuple[str, str], int]:
    """{(unknown, axis): the highest order of its derivatives along the axis} in the equations
    (0 when it has none)."""
    out = {(u, a): 0 for u in system.unknowns for a in system.space}
    funcs = {system.function(u).func: u for u in system.unknowns}
    for e in system.exprs:
        for d in e.doit().atoms(sp.Derivative):
            u = funcs.get(getattr(d.expr, "func", None))
            for v, n in d.variable_count if u is not None else ():
                if v.name in system.space:
                    out[(u, v.name)] = max(out[(u, v.name)], int(n))
    return out


def require_complete(spec: BoundarySpec, system) -> None:
    """A side left without a condition where the equations need one, refused with what to
    write: an unknown with second (or higher) derivatives along a walled axis needs a
    condition at both ends; an axis along which anything is transported needs at least one."""
    orders = derivative_orders(system)
    walled = [a for a in spec.axes if a not in spec.periodic]
    for a in walled:
        given = [c for c in spec.conditions if c.axis == a]
        lo, hi = f"{a} = lo", f"{a} = hi"
        for u in system.unknowns:
            k = orders[(u, a)]
            ends = [s for s in (0, 1) if spec.condition(u, a, s) is None]
            if k >= 2 and ends:
                where = " and ".join((lo, hi)[s] for s in ends)
                raise IncompleteBoundary(
                    f"no condition for {u} at {where}, and the equation has d{a}({u}, {k}):"
                    f" give one per end, e.g. '{lo}: {u} = 0; {hi}: d{a}({u}) = 0'"
                    + ("" if given else f", or make {a} periodic ('periodic in {a}')"))
        if not given and any(orders[(u, a)] >= 1 for u in system.unknowns):
            raise IncompleteBoundary(
                f"no condition on either end of {a}: write one for the inflow end at least, e.g."
                f" '{lo}: {system.unknowns[0]} = 0', or make {a} periodic ('periodic in {a}')")


def task_boundary(task) -> BoundarySpec:
    """The parsed boundary of a :class:`~pdesharp.task.Task` (raises BoundaryError)."""
    eq = task.equation
    return parse_boundary(task.boundary, unknowns=list(eq.unknowns), space=list(eq.space),
                          domain=dict(task.domain), names=list(task.constants), time=eq.time)
