"""The run's ranking rule, built once and recorded: objective, tie tolerance, time margin,
reference floor and round-off floor (:class:`pdesharp.synthesis.ranking.Rule`).

The pipeline builds it after the reference audit is known (:func:`build`) and records it as the
run's first ``rule`` event (:func:`record`); the tournament, the judges, the settlement of the
winner's time, the summary and the report all use that one value, and a resumed run or
``pdesharp report`` read it back (:func:`recorded`) instead of re-deriving the floor from the
config and the audit events. Runs recorded before this event existed are read as they ranked:
the config's tolerances and the first audit event's ``ranking_floor``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pdesharp.synthesis.ranking import Objective, Rule


def data_round_off(evaluator) -> float | None:
    """The round-off floor of the run's dev data: the nRMSE that rounding its reference to the
    stored float type causes (:func:`pdesharp.evaluate.metrics.rounding_nrmse`, on the fields
    stacked as the score takes them), None when the evaluator has no reference arrays to look
    at (a stand-in evaluator, feedback without data)."""
    from pdesharp.evaluate.metrics import rounding_nrmse, stack_fields

    reference = getattr(evaluator, "reference", None)
    task = getattr(evaluator, "task", None)
    if reference is None:
        return None
    try:
        fields = reference("dev").fields
        names = task.solver.returns if task is not None else list(fields)
        return rounding_nrmse(stack_fields([fields[n] for n in names]))
    except Exception:  # noqa: BLE001 - no dev data: no round-off floor, the run goes on
        return None


def floor_saturation_enabled(config) -> bool:
    """The config's choice (``--floor-saturation`` / ``--no-floor-saturation``), else on: the
    built-in analyst and language models rank, stop and pick by the same rule (issue 24)."""
    return True if config.floor_saturation is None else bool(config.floor_saturation)


def floor_factor(config) -> float:
    """The reference floor over the reference error: ``--floor-factor``, else
    1 / saturation factor (from within it, a round's counted improvement would land below the
    reference's own error)."""
    return config.floor_factor if config.floor_factor is not None \
        else 1.0 / config.saturation_factor


def reference_floor(config, reference_error: float | None) -> float | None:
    """The reference floor of a run whose dev data an audit found ``reference_error`` from the
    PDE: floor factor x that error, with floor saturation on and nRMSE feedback; else None."""
    if reference_error is None or config.feedback != "nrmse" \
            or not floor_saturation_enabled(config):
        return None
    return floor_factor(config) * reference_error


def build(config, *, floor: float | None, ranking_floor: float | None,
          round_off: float | None) -> Rule:
    """The run's rule. ``floor``: the reference floor the search stops at (floor saturation on,
    an audit); ``ranking_floor``: the floor recorded for the ranking (the same value, None for
    runs recorded before the floor entered the ranking); ``round_off``: the data's rounding
    floor, in force only where there is no reference floor, and only with floor saturation on
    and nRMSE feedback (a residual is not compared with the stored reference)."""
    if not floor_saturation_enabled(config) or config.feedback != "nrmse":
        round_off = None
    ranks = ranking_floor if ranking_floor is not None else None
    old = floor if ranking_floor is None else None  # a run recorded before floors ranked
    # fastest-below:floor: its target is the floor the run ranks by (Objective.at); the judges
    # are told it, and the round-off floor is a number read from the data, which the codepde
    # facts level does not state
    stated = round_off if config.task_facts == "full" else None
    target = next((f for f in (ranks, floor, stated) if f is not None), None)
    return Rule(Objective.parse(config.objective).at(target), float(config.tie_tolerance),
                float(config.time_margin), ranks, round_off, stop_only_floor=old)


def as_record(rule: Rule) -> dict[str, Any]:
    return {"objective": str(rule.objective), "at_floor": rule.objective.at_floor,
            "tie_tolerance": rule.tie_tolerance,
            "time_margin": rule.time_margin, "floor": rule.floor, "round_off": rule.round_off,
            "stop_only_floor": rule.stop_only_floor}


def record(store, rule: Rule) -> Rule:
    """Record the rule once (the first ``rule`` event wins: a resumed run keeps it); returns
    the recorded rule."""
    first = next(iter(store.events("rule")), None)
    if first is not None:
        return _from_event(first)
    store.event("rule", **as_record(rule))
    return rule


def _from_event(e: dict) -> Rule:
    objective = Objective.parse(e.get("objective"))  # fastest-below:floor's, its target in
    if e.get("at_floor") is True and objective.kind == "fastest-below":
        objective = replace(objective, at_floor=True)
    return Rule(objective, float(e.get("tie_tolerance", 0.01)),
                float(e.get("time_margin", 0.3)), e.get("floor"), e.get("round_off"),
                stop_only_floor=e.get("stop_only_floor"))


def recorded(store, config=None) -> Rule:
    """The rule a run ranked by (see :func:`from_events`)."""
    return from_events(store.events(), config if config is not None else store.config)


def from_events(events: list[dict], config) -> Rule:
    """The rule a run ranked by: its first ``rule`` event, else (older runs) its config's
    tolerances and the first reference-audit event's ranking floor. ``events``: the run's
    events (all kinds, each with its ``kind``)."""
    first = next((e for e in events if e.get("kind") == "rule"), None)
    if first is not None:
        return _from_event(first)
    return Rule.of(config, floor=ranking_floor(events))


def ranking_floor(events: list[dict]) -> float | None:
    """The floor a run ranks by, as its first reference-audit lookup recorded it (``events``:
    the run's ``reference_audit`` events, or all of them); None for runs without a floor and
    for runs made before the floor entered the ranking, which thus rank as they did."""
    first = next((e for e in events if e.get("kind") == "reference_audit"), None)
    return None if first is None else first.get("ranking_floor")
