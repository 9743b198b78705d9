"""What a run produced, as one typed record: :class:`Outcome`, written as ``summary.json``
(:meth:`Outcome.summary`) and read by the report.

The pipeline (:func:`pdesharp.pipeline.solve`) fills it from the tournament, the settlement of
the winner's time, the test evaluation and the audit; every case the summary distinguishes (a
tie won on time, a time objective's pick, a pick the reference floor decided, no winner) is
decided here, once, from the run's :class:`~pdesharp.synthesis.ranking.Rule`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pdesharp.records import Candidate, EvalResult
from pdesharp.synthesis.ranking import Rule

Scored = tuple[Candidate, EvalResult]


@dataclass
class Outcome:
    """The run's result. ``best``: the rule's pick (None: no solver ran successfully);
    ``lowest``: the lowest score, whatever the rule picked."""

    rule: Rule
    metric: str  # "nRMSE" or "score": how the objective is put in words
    best: Scored | None = None
    lowest: Scored | None = None
    floor_decided: bool = False  # the reference floor changed the pick
    test_nrmse: float | None = None
    test_note: str = ""
    best_path: str | None = None
    stop_reason: str = ""
    budget_stop: bool = False
    route: str | None = None
    winner_time: dict = field(default_factory=dict)  # Settlement.describe of the winner
    reference_audit: dict = field(default_factory=dict)  # audit.runs.summary
    settings: dict = field(default_factory=dict)  # task_facts, genesis, objective, isolation

    @property
    def status(self) -> str:
        """finished, budget_stop (resumable with a larger budget) or failed (nothing usable)."""
        return "budget_stop" if self.budget_stop else ("finished" if self.best else "failed")

    def objective_words(self) -> str:
        low = self.lowest[1].score if self.lowest else None
        return self.rule.words(self.metric, low)

    def _not_lowest(self) -> dict[str, Any]:
        """When the winner is not the lowest score, which rule made it so and the two times."""
        if self.best is None or self.lowest is None or self.lowest[0].id == self.best[0].id:
            return {}
        (low_c, low), (_, best) = self.lowest, self.best
        key = "tie_break" if not self.rule.objective.by_time else "objective_pick"
        kind = self.rule.floor_kind(low.score)  # the floor in force, if any
        if self.floor_decided and kind == "reference":
            key = "floor_pick"
        block = {"lowest_id": low_c.id, "lowest_score": low.score,
                 "lowest_seconds": low.solver_seconds, "best_seconds": best.solver_seconds,
                 "lowest_per_sample": low.seconds_per_sample,
                 "best_per_sample": best.seconds_per_sample,
                 "tie_tolerance": self.rule.tie_tolerance,
                 "time_rule": self.rule.time_words()}
        if key == "floor_pick":
            block.update(floor=self.rule.floor, lowest_vs_converged=low.nrmse_converged,
                         best_vs_converged=best.nrmse_converged)
        elif self.floor_decided and kind == "round_off":  # a tie at round-off time decided
            block["round_off"] = self.rule.round_off
        return {key: block}

    def summary(self) -> dict[str, Any]:
        """The ``summary.json`` fields this run adds to the store's accounting."""
        best = self.best[1] if self.best else None
        out: dict[str, Any] = {
            "best_dev_score": best.score if best else None, "test_nrmse": self.test_nrmse,
            "test_note": self.test_note, "best_id": self.best[0].id if self.best else None,
            "best_solver": self.best_path, "stop_reason": self.stop_reason,
            "budget_stop": self.budget_stop, "route": self.route,
            # the evaluator's clock, never the solver's: ranking and report use it too (the
            # median of the finalists' timings when they were re-timed)
            "best_solver_seconds": best.solver_seconds if best else None,
            "best_seconds_per_sample": best.seconds_per_sample if best else None,
            "objective_words": self.objective_words(), "winner_time": self.winner_time,
            "rule": {"objective": str(self.rule.objective),
                     "tie_tolerance": self.rule.tie_tolerance,
                     "time_margin": self.rule.time_margin, "floor": self.rule.floor,
                     "round_off": self.rule.round_off, "time_rule": self.rule.time_words()},
            **self.settings}
        out.update(self._not_lowest())
        out["reference_audit"] = self.reference_audit
        return out
