"""Cross-check an LLM's Analysis against the built-in symbolic one.

The comparison looks at facts that have a right answer: order, linearity, type, whether an
exact (analytical) route exists, and the explicit time-step bounds. Bounds are compared like
with like or not at all:

* the *kind* of a bound is read off its formula, by how it scales with the grid spacing: dt ~ dx
  is an advective (CFL) limit, dt ~ dx² a diffusive one, dt independent of dx a source
  (reaction) limit; a formula that mixes them (min of several) is not compared;
* the symbolic bounds are those of explicit forward-Euler / finite-difference or finite-volume
  steps. A model's bound for a scheme of another stability class (implicit, exact or
  exponential steps, ETD, IMEX, integrating factors, Fourier spectral differentiation) is
  recorded as "not comparable" (info), never as an error: such a scheme may be unconditionally
  stable, or stable under another constant, and its bound may limit accuracy, not stability.
  Advective limits are compared for every class except an exact step (explicit parts of IMEX
  and spectral schemes obey a CFL limit of the same order).

A comparable bound that differs by more than ``factor`` is flagged: an error when the model's
step is larger (unstable), a warning when smaller (merely slower).
"""

from __future__ import annotations

import math
import re

import sympy as sp

from pdesharp.expression import ExpressionError, evaluate, formula
from pdesharp.records import Analysis, Disagreement, StabilityBound
from pdesharp.task import Task

_KINDS = {
    "advective": ("advect", "convect", "hyperbolic", "upwind", "rusanov", "hll", "courant",
                  "cfl", "wave", "flux"),
    "diffusive": ("diffus", "parabolic", "viscous", "viscos", "heat", "laplac"),
    "source": ("source", "reaction", "react", "logistic", "stiff ode"),
}
KIND_BY_POWER = {0: "source", 1: "advective", 2: "diffusive", 3: "dispersive", 4: "hyperdiffusive"}
# words that put a scheme outside the explicit forward-Euler FD/FV class of the symbolic bounds
_EXACT = ("exact", "analytic", "closed form", "closed-form")
_OTHER_CLASS = ("implicit", "crank", "backward euler", "etd", "exponential", "integrating factor",
                "imex", "unconditional", "spectral", "fourier", "pseudo-spectral", "pseudospectral",
                "lawson", "semi-implicit", *_EXACT)


def _expr(text: str):
    """A model's bound formula, read safely (every bare name a symbol, pi and E constants)."""
    return formula(text, where="the stability bound")


def dx_power(b: StabilityBound, task: Task | None = None) -> float | None:
    """How the bound scales with the grid spacing: p in dt ~ dx^p (dy alike), measured on the
    formula with every other symbol at its task value (or 1). None if unreadable."""
    try:
        e = _expr(b.expression)
    except ValueError:  # ExpressionError: refused or unreadable
        return None
    values = dict(task.constants) if task is not None else {}
    grid = [s for s in e.free_symbols if s.name in ("dx", "dy", "dz", "h")]
    rest = {s: values.get(s.name, 1.0) for s in e.free_symbols if s not in grid}

    def at(h: float):
        try:  # under a hard clock (a model's formula at grid values)
            v = evaluate(e, {**rest, **{s: h for s in grid}}, where="the stability bound")
        except ExpressionError:
            return None
        return abs(v.real) if abs(v.imag) < 1e-12 * max(1.0, abs(v.real)) else None

    a = at(1e-3)
    if not a or not math.isfinite(a):  # a formula out of its clock here will be there too
        return None
    c = at(5e-4)
    if not c or not math.isfinite(c):
        return None
    return math.log(a / c, 2)


def bound_kind(b: StabilityBound, task: Task | None = None) -> str | None:
    """Which limit a bound describes: from the formula's scaling with dx when it is a clean
    power, else from the scheme's words; None if neither tells."""
    p = dx_power(b, task)
    if p is not None:
        k = round(p)
        if abs(p - k) < 0.05 and k in KIND_BY_POWER:
            return KIND_BY_POWER[k]
        return None  # a mixed formula (min of several limits): not one kind
    text = f"{b.scheme} {b.note}".lower()
    for kind in ("diffusive", "source", "advective"):  # "viscous flux" is diffusive
        if any(k in text for k in _KINDS[kind]):
            return kind
    return None


def not_comparable(b: StabilityBound, kind: str) -> str:
    """Why the model's bound is of another stability class than the symbolic one ("" if it is
    comparable)."""
    text = f"{b.scheme} {b.note}".lower()
    if any(w in text for w in _EXACT):
        # a bound is a step limit, so the part it bounds is stepped explicitly: "exact" names
        # another part (diffusion by an integrating factor, say), never the bounded one
        return ("the model's scheme treats another part of the problem exactly, and this bound "
                "is for the explicit rest of that scheme, not for explicit forward Euler on "
                "the whole operator")
    if kind == "advective":
        return ""
    hit = next((w for w in _OTHER_CLASS if w in text), "")
    return f"the model's scheme is {hit!s}, not explicit forward Euler" if hit else ""


def readable(expression: str, unknowns: list[str]) -> str:
    """A symbolic bound as a reader wants it: Max(Abs(u)) -> max|u|."""
    for u in unknowns:
        expression = re.sub(rf"Max\(Abs\({u}\)\)", f"max|{u}|", expression)
        expression = re.sub(rf"Abs\({u}\)", f"max|{u}|", expression)
    return expression


def _value(b: StabilityBound, task: Task, dx: float | None) -> float | None:
    """The bound's number: its value, or its expression evaluated at dx and the parameters."""
    if b.value is not None:
        return float(b.value)
    if dx is None:
        return None
    try:
        expr = _expr(b.expression)
        subs = {sp.Symbol(k): v for k, v in task.constants.items()}
        subs[sp.Symbol("dx")] = dx
        val = evaluate(expr, subs, where="the stability bound")  # under a hard clock
    except ValueError:  # ExpressionError: refused, not a number, or out of time
        return None
    return None if val.imag else val.real


def compare_analyses(llm: Analysis, builtin: Analysis, task: Task, factor: float = 2.0
                     ) -> list[Disagreement]:
    """Disagreements of ``llm`` with ``builtin`` (the symbolic analysis is taken as reference)."""
    out: list[Disagreement] = []
    lc, bc = llm.classification, builtin.classification

    def add(fact, a, b, severity="warning", note=""):
        out.append(Disagreement(fact=fact, llm=str(a), builtin=str(b), severity=severity, note=note))

    if lc.linear != bc.linear:
        add("classification.linear", lc.linear, bc.linear, "error",
            "linearity decides whether an exact propagator exists")
    if lc.pde_type != bc.pde_type:
        add("classification.pde_type", lc.pde_type, bc.pde_type, "warning")
    if lc.time_order != bc.time_order:
        add("classification.time_order", lc.time_order, bc.time_order, "warning")
    if lc.space_order != bc.space_order:
        add("classification.space_order", lc.space_order, bc.space_order, "warning")
    if (llm.route == "analytical") != (builtin.route == "analytical"):
        add("route", llm.route, builtin.route, "warning",
            "the symbolic analysis " + ("finds" if builtin.route == "analytical" else "finds no")
            + " exact Fourier propagator")
    dx = None
    for step in builtin.steps:
        dx = step.facts.get("design_facts", {}).get("dx", dx) if step.facts else dx
    ours = {bound_kind(b, task): b for b in builtin.stability}
    unknowns = list(task.equation.unknowns)
    for b in llm.stability:
        kind = bound_kind(b, task)
        if kind is None or kind not in ours:
            continue
        mine = ours[kind]
        theirs = readable(mine.expression, unknowns)
        why = not_comparable(b, kind)
        if why:
            add(f"stability[{kind}]", f"{b.expression} ({b.scheme})", theirs, "info",
                f"not compared: {why}; the symbolic bound is for {mine.scheme}")
            continue
        v_llm, v_ours = _value(b, task, dx), mine.value
        if v_llm is None or v_ours is None or v_ours <= 0:
            continue
        ratio = v_llm / v_ours
        if not (1.0 / factor <= ratio <= factor):
            add(f"stability[{kind}].value", f"{v_llm:.4g} ({b.expression})",
                f"{v_ours:.4g} ({theirs})", "error" if ratio > factor else "warning",
                f"off by a factor {ratio:.3g}; " + ("a step above the bound is unstable"
                                                    if ratio > factor else
                                                    "a smaller step than needed costs time"))
    return out
