"""The LLM analyst: the five Analysis steps as sequential calls in one conversation.

Each step sees the previous answers and ends its reply with a small JSON block of structured
facts, parsed into :class:`pdesharp.records.Analysis`. Steps 2-4 can route Genesis: the first
of them that applies decides the route (analytical, transformation, hybrid), and the remaining
route questions are not asked (recorded as skipped steps, with the reason, which the stability
prompt and the report state); stability (step 5) is asked for every route except an analytical
one, and never for a steady task: there is no time stepping to bound (the step is recorded as
skipped, with the reason). A reply whose JSON is malformed gets one re-ask;
after that the step keeps its prose and falls back to conservative facts (the route question
counts as "does not apply"), so a sloppy model degrades the analysis but never stops the run.
"""

from __future__ import annotations


import sympy as sp
from pydantic import ValidationError

from pdesharp.expression import ExpressionError, evaluate, formula
from pdesharp.llm.base import Message
from pdesharp.facts import TaskFacts, reference_scales  # noqa: F401  (re-exported)
from pdesharp.prompting import ROUTE_WORDS, ask, extract_json, render, task_context
from pdesharp.records import (STEP_NUMBERS, Analysis, AnalysisStep, Classification, Route,
                              StabilityBound)
from pdesharp.task import Task

ROUTE_STEPS: list[tuple[str, Route]] = [
    ("analytical", "analytical"), ("transformation", "transformation"), ("decomposition", "hybrid"),
]
REFERENCE_CELLS = 1024  # the grid of the shared/CodePDE data, where bounds are evaluated
NO_TIME_STEPPING = "an exact solution needs no time stepping, so there is no step size to bound"
STEADY = "the task is steady: there is no time stepping, so there is no step size to bound"


def skip_reason(decided: str, route: Route) -> str:
    """Why the route questions after ``decided`` are not asked."""
    return (f"step {STEP_NUMBERS[decided]} ({decided}) found the {ROUTE_WORDS[route]} route, and "
            "the route questions stop at the first that applies")


class LLMAnalyst:
    """Implements :class:`pdesharp.roles.Analyst` on a ChatModel. ``facts`` are the task facts
    the prompts state (:mod:`pdesharp.facts`); their data scales turn symbolic time-step
    bounds into numbers."""

    def __init__(self, model, name: str = "analyst", facts: TaskFacts | None = None,
                 feedback: str = "nrmse", goal: str = ""):
        self.model = model
        self.name = name
        # the run's time objective in words ("" under accuracy): the scheme recommended for it,
        # not the most accurate one (a bridge review of KdV under fastest-below:1e-4: the
        # analysis advised 32-64 substeps per frame for 1e-9, where 3-4 met the target)
        self.goal = goal
        self.facts = facts
        self.scales = facts.data.scales if facts is not None and facts.data is not None else {}
        self.feedback = feedback  # what solvers will be scored on (stated in the first prompt)

    async def analyse(self, task: Task) -> Analysis:
        messages = [Message(role="system", content=render("system", role="the analyst"))]
        steps: list[AnalysisStep] = []

        text, facts = await self._step(messages, "classification",
                                       render("analysis_classification", steady=task.steady,
                                              goal=self.goal,
                                              **task_context(task, self.feedback, self.facts)))
        classification = _classification(facts, task)
        steps.append(AnalysisStep(name="classification", text=text, facts=facts))

        route: Route = "numerical"
        decided = ""
        for name, step_route in ROUTE_STEPS:
            if decided:
                steps.append(AnalysisStep(name=name, text="", skipped=skip_reason(decided, route)))
                continue
            text, facts = await self._step(messages, name, render(f"analysis_{name}",
                                                                  steady=task.steady))
            applies = _as_bool(facts.get("applies"))
            steps.append(AnalysisStep(name=name, text=text, applies=applies, facts=facts))
            if applies:
                route, decided = step_route, name

        stability: list[StabilityBound] = []
        schemes: list[str] = []
        key_facts: list[str] = []
        if route == "analytical" or task.steady:
            steps.append(AnalysisStep(name="stability", text="",
                                      skipped=STEADY if task.steady else NO_TIME_STEPPING))
        else:
            skipped = [{"number": STEP_NUMBERS[st.name], "name": st.name, "why": st.skipped}
                       for st in steps if st.skipped]
            text, facts = await self._step(messages, "stability", render(
                "analysis_stability", parameters=list(task.parameters),
                unknowns=list(task.equation.unknowns), skipped=skipped,
                route_words=ROUTE_WORDS[route], spacings=[f"d{a}" for a in task.equation.space],
                goal=self.goal,
                # numbers read off the solver's inputs, at the full facts level only
                scales={k: v for k, v in self.scales.items() if k.endswith(("max", "min"))}
                if self.facts is not None and self.facts.numbers else {}))
            steps.append(AnalysisStep(name="stability", text=text, facts=facts))
            stability = [_bound(b, task, self.scales) for b in facts.get("bounds", [])
                         if isinstance(b, dict)]
            schemes = [str(s) for s in facts.get("recommended_schemes", [])]
            key_facts = [str(f) for f in facts.get("key_facts", [])]
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
    # Every bare name is a symbol (so "beta" or "gamma" is not SymPy's special function), except
    # the constants pi and E unless the task names one of its own parameters so; the text is
    # the model's, so it is read by the safe reader, never sympify.
    try:
        e = formula(expr, where="the stability bound", own=set(task.constants) | set(scales))
    except ExpressionError as exc:
        return None, f"not readable: {exc}"
    subs = {sp.Symbol(k): v for k, v in task.constants.items()}
    subs.update({sp.Symbol(k): v for k, v in scales.items()})
    for axis, (lo, hi) in task.domain.items():
        subs[sp.Symbol(f"d{axis}")] = (hi - lo) / scales.get(f"n{axis}", REFERENCE_CELLS)
    free = {s for s in e.free_symbols if s not in subs}
    if free:
        return None, f"depends on {', '.join(sorted(str(s) for s in free))}"
    try:  # under a hard clock: a bounded formula may still take SymPy forever at grid values
        value = evaluate(e, subs, where="the stability bound")
    except ExpressionError as exc:
        return None, f"not evaluable: {exc}"
    if value.imag:
        return None, "not a real number"
    return value.real, ""
