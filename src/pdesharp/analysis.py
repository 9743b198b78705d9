"""The LLM analyst: the five Analysis steps as sequential calls in one conversation.

Each step sees the previous answers and ends its reply with a small JSON block of structured
facts, parsed into :class:`pdesharp.records.Analysis`. Steps 2-4 can route Genesis: the first
of them that applies decides the route (analytical, transformation, hybrid), and the remaining
route questions are skipped; stability (step 5) is asked for every route except an analytical
one, where there is no time stepping to bound. A reply whose JSON is malformed gets one re-ask;
after that the step keeps its prose and falls back to conservative facts (the route question
counts as "does not apply"), so a sloppy model degrades the analysis but never stops the run.
"""

from __future__ import annotations

import re

import sympy as sp
from pydantic import ValidationError

from pdesharp.llm.base import Message
from pdesharp.prompting import ask, extract_json, render, task_context
from pdesharp.records import Analysis, AnalysisStep, Classification, Route, StabilityBound
from pdesharp.task import Task

ROUTE_STEPS: list[tuple[str, Route]] = [
    ("analytical", "analytical"), ("transformation", "transformation"), ("decomposition", "hybrid"),
]
REFERENCE_CELLS = 1024  # the grid of the shared/CodePDE data, where bounds are evaluated


def reference_scales(task: Task, data_dir=None, dev_data=None, limit: int = 20) -> dict[str, float]:
    """Symbols a stability bound may use, read off the dev data's initial frames: ``<field>max``
    (max |field|; ``umax`` too for a single unknown) and ``n<axis>`` (grid cells). Empty if
    the data cannot be read (bounds then stay symbolic)."""
    try:
        from pdesharp.data.paths import resolve_split
        from pdesharp.data.reference import load_reference

        path = resolve_split(task, "dev", data_dir_override=data_dir, explicit=dev_data)
        spec = task.data.dev
        ref = load_reference(task, path, samples=spec.samples if spec else None, limit=limit)
    except Exception:  # noqa: BLE001 - missing or unreadable data: no numbers, not an error
        return {}
    out: dict[str, float] = {}
    for name, arr in ref.fields.items():
        first = arr if task.steady else arr[:, 0]
        out[f"{name}max"] = float(abs(first).max())
        for axis, size in zip(task.equation.space, first.shape[1:]):
            out[f"n{axis}"] = int(size)
    if len(task.equation.unknowns) == 1 and f"{task.equation.unknowns[0]}max" in out:
        out["umax"] = out[f"{task.equation.unknowns[0]}max"]
    return out


class LLMAnalyst:
    """Implements :class:`pdesharp.roles.Analyst` on a ChatModel. ``scales`` (see
    :func:`reference_scales`) turn symbolic time-step bounds into numbers."""

    def __init__(self, model, name: str = "analyst", scales: dict[str, float] | None = None,
                 feedback: str = "nrmse"):
        self.model = model
        self.name = name
        self.scales = scales or {}
        self.feedback = feedback  # what solvers will be scored on (stated in the first prompt)

    async def analyse(self, task: Task) -> Analysis:
        messages = [Message(role="system", content=render("system", role="the analyst"))]
        steps: list[AnalysisStep] = []

        text, facts = await self._step(messages, "classification",
                                       render("analysis_classification",
                                              **task_context(task, self.feedback)))
        classification = _classification(facts, task)
        steps.append(AnalysisStep(name="classification", text=text, facts=facts))

        route: Route = "numerical"
        for name, step_route in ROUTE_STEPS:
            text, facts = await self._step(messages, name, render(f"analysis_{name}"))
            applies = _as_bool(facts.get("applies"))
            steps.append(AnalysisStep(name=name, text=text, applies=applies, facts=facts))
            if applies:
                route = step_route
                break

        stability: list[StabilityBound] = []
        schemes: list[str] = []
        key_facts: list[str] = []
        if route != "analytical":
            text, facts = await self._step(messages, "stability", render(
                "analysis_stability", parameters=list(task.parameters),
                unknowns=list(task.equation.unknowns)))
            steps.append(AnalysisStep(name="stability", text=text, facts=facts))
            stability = [_bound(b, task, self.scales) for b in facts.get("bounds", [])
                         if isinstance(b, dict)]
            schemes = [str(s) for s in facts.get("recommended_schemes", [])]
            key_facts = [str(f) for f in facts.get("key_facts", [])]
        for step in steps[1:]:
            if step.applies and step.facts.get("method"):
                key_facts.insert(0, f"{step.name}: {step.facts['method']}")
        return Analysis(classification=classification, route=route, steps=steps,
                        stability=stability, recommended_schemes=schemes, key_facts=key_facts,
                        source="llm")

    async def _step(self, messages: list[Message], name: str, prompt: str) -> tuple[str, dict]:
        """Ask one step; returns its prose and its JSON facts ({} if unreadable twice)."""
        messages.append(Message(role="user", content=prompt))
        text = await ask(self.model, messages, f"analysis.{name}", temperature=0.2)
        messages.append(Message(role="assistant", content=text))
        facts = extract_json(text)
        problem = _check(name, facts)
        if problem:
            messages.append(Message(role="user", content=render("reask_json", problem=problem)))
            retry = await ask(self.model, messages, f"analysis.{name}.reask", temperature=0.0)
            messages.append(Message(role="assistant", content=retry))
            facts = extract_json(retry)
            if _check(name, facts):
                facts = None
        return text, facts or {}


def _check(name: str, facts: dict | None) -> str:
    """Why ``facts`` is unusable for step ``name`` ("" if fine)."""
    if facts is None:
        return "no JSON object found"
    if name == "classification":
        try:
            Classification.model_validate(facts)
        except ValidationError as exc:
            return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    elif name == "stability":
        if not isinstance(facts.get("bounds"), list):
            return "'bounds' must be a list"
    elif _as_bool(facts.get("applies")) is None:
        return "'applies' must be true or false"
    return ""


def _as_bool(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    return None


def _classification(facts: dict, task: Task) -> Classification:
    try:
        return Classification.model_validate(facts)
    except ValidationError:
        pass
    order = 0  # fallback: read the highest spatial derivative order off the parsed equation
    coords = set(task.system.coords)
    for expr in task.system.exprs:
        for d in expr.atoms(sp.Derivative):
            order = max(order, sum(n for v, n in d.variable_count if v in coords))
    return Classification(time_order=None if task.steady else 1, space_order=order, linear=False,
                          pde_type="other", boundary=task.boundary,
                          notes="the model's classification was unreadable; defaults used")


def _bound(raw: dict, task: Task, scales: dict[str, float]) -> StabilityBound:
    expr = str(raw.get("expression", ""))
    value, note = evaluate_bound(expr, task, scales)
    extra = str(raw.get("note", ""))
    return StabilityBound(scheme=str(raw.get("scheme", "")), expression=expr, value=value,
                          note="; ".join(s for s in (extra, note) if s))


def evaluate_bound(expr: str, task: Task, scales: dict[str, float] | None = None
                   ) -> tuple[float | None, str]:
    """dt_max at the task's parameters and the data's scales (grid: the data's, else
    REFERENCE_CELLS cells), if the formula allows."""
    scales = scales or {}
    # Every bare identifier is a symbol (so "beta" or "gamma" is not SymPy's special function);
    # identifiers followed by "(" stay functions (abs, sqrt, min, max).
    names = {m.group(1) for m in re.finditer(r"\b([A-Za-z_]\w*)\b(?!\s*\()", expr)}
    local = {n: sp.Symbol(n) for n in names}
    # ...except the mathematical constants pi and E (Euler's number), unless the task uses
    # the name for one of its own parameters or constants.
    own = set(task.constants) | set(scales)
    local.update({n: c for n, c in (("pi", sp.pi), ("E", sp.E)) if n in names and n not in own})
    try:
        e = sp.sympify(expr, locals=local)
    except (sp.SympifyError, SyntaxError, TypeError, ValueError):
        return None, "not SymPy-parsable"
    subs = {sp.Symbol(k): v for k, v in task.constants.items()}
    subs.update({sp.Symbol(k): v for k, v in scales.items()})
    for axis, (lo, hi) in task.domain.items():
        subs[sp.Symbol(f"d{axis}")] = (hi - lo) / scales.get(f"n{axis}", REFERENCE_CELLS)
    value = e.subs(subs)
    if value.free_symbols:
        names = ", ".join(sorted(str(s) for s in value.free_symbols))
        return None, f"depends on {names}"
    try:
        return float(value), ""
    except TypeError:
        return None, "not a real number"
