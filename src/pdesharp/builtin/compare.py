"""Cross-check an LLM's Analysis against the built-in symbolic one.

The comparison looks at facts that have a right answer: order, linearity, type, whether an
exact (analytical) route exists, and the explicit time-step bounds, matched by kind (advective,
diffusive, source) and flagged when the values differ by more than ``factor``.
"""

from __future__ import annotations

import sympy as sp

from pdesharp.records import Analysis, Disagreement, StabilityBound
from pdesharp.task import Task

_KINDS = {
    "advective": ("advect", "convect", "hyperbolic", "upwind", "rusanov", "hll", "courant",
                  "cfl", "wave", "flux"),
    "diffusive": ("diffus", "parabolic", "viscous", "viscos", "heat", "laplac"),
    "source": ("source", "reaction", "react", "logistic", "stiff ode"),
}


def bound_kind(b: StabilityBound) -> str | None:
    """Which limit a bound describes, read from its scheme name and note."""
    text = f"{b.scheme} {b.note}".lower()
    for kind in ("diffusive", "source", "advective"):  # "viscous flux" is diffusive, not advective
        if any(k in text for k in _KINDS[kind]):
            return kind
    return None


def _value(b: StabilityBound, task: Task, dx: float | None) -> float | None:
    """The bound's number: its value, or its expression evaluated at dx and the parameters."""
    if b.value is not None:
        return float(b.value)
    if dx is None:
        return None
    try:
        expr = sp.sympify(b.expression)
        subs = {sp.Symbol(k): v for k, v in task.constants.items()}
        subs[sp.Symbol("dx")] = dx
        val = expr.subs(subs)
        return float(val) if val.is_number else None
    except (sp.SympifyError, TypeError, ValueError):
        return None


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
    ours = {bound_kind(b): b for b in builtin.stability}
    for b in llm.stability:
        kind = bound_kind(b)
        if kind is None or kind not in ours:
            continue
        mine = ours[kind]
        v_llm, v_ours = _value(b, task, dx), mine.value
        if v_llm is None or v_ours is None or v_ours <= 0:
            continue
        ratio = v_llm / v_ours
        if not (1.0 / factor <= ratio <= factor):
            add(f"stability[{kind}].value", f"{v_llm:.4g} ({b.expression})",
                f"{v_ours:.4g} ({mine.expression})", "error" if ratio > factor else "warning",
                f"off by a factor {ratio:.3g}; a step above the bound is unstable")
    return out
