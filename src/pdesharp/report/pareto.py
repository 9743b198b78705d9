"""Accuracy against cost: every evaluated solver of a run as (score, solver time per sample), and
the Pareto front of that set. ``report.md`` and the HTML page show the same table and figure.

A solver is *on the front* when no other solver is at least as good in both coordinates and
strictly better in one (lower score, shorter time); two solvers with the same score and time are
both on it. Times are the evaluator's (a re-timed finalist's median, as the ranking uses them:
:func:`pdesharp.report.tables.results_of`). Solvers that failed, or have no score or no time,
cannot be placed and are only counted.
"""

from __future__ import annotations

from pdesharp.report.tables import cell_text

from dataclasses import dataclass

from pdesharp.records import Candidate, EvalResult


@dataclass
class ParetoPoint:
    """One evaluated solver in the score / time plane."""

    id: str
    title: str
    score: float
    per_sample: float  # solver seconds per sample
    timings: int = 1  # how many runs the time rests on (a median when more than one)
    front: bool = False
    winner: bool = False


@dataclass
class ParetoView:
    points: list[ParetoPoint]  # by time per sample, then score
    unplaced: int = 0  # evaluated solvers without a score or a time (failed ones included)

    @property
    def front(self) -> list[ParetoPoint]:
        return [p for p in self.points if p.front]

    @property
    def winner(self) -> ParetoPoint | None:
        return next((p for p in self.points if p.winner), None)


def on_front(points: list[tuple[float, float]]) -> list[bool]:
    """For each (score, time): is it non-dominated (minimising both)?"""
    return [not any(s2 <= s and t2 <= t and (s2 < s or t2 < t) for s2, t2 in points)
            for s, t in points]


def pareto(cands: list[Candidate], results: dict[str, EvalResult],
           winner_id: str | None = None) -> ParetoView:
    """The front of every candidate with a result in ``results`` (a run's feedback-split
    results, :func:`pdesharp.report.tables.results_of`)."""
    points, unplaced = [], 0
    for c in cands:
        r = results.get(c.id)
        if r is None:
            continue  # never evaluated
        t = r.seconds_per_sample
        if not r.ok or r.score is None or t is None:
            unplaced += 1
            continue
        points.append(ParetoPoint(id=c.id, title=c.title, score=r.score, per_sample=t,
                                  timings=max(1, sum(x is not None for x in r.timings)),
                                  winner=c.id == winner_id))
    for p, flag in zip(points, on_front([(p.score, p.per_sample) for p in points])):
        p.front = flag
    points.sort(key=lambda p: (p.per_sample, p.score, p.id))
    return ParetoView(points=points, unplaced=unplaced)


def objective_bar(view: ParetoView, rule) -> float | None:
    """The highest eligible score over the final pool (drawn in the figure) under a time
    objective, or when the reference floor is in force (pdesharp.synthesis.ranking)."""
    if not view.points:
        return None
    low = min(p.score for p in view.points)
    if not (rule.objective.by_time or rule.below_floor(low)):
        return None
    return rule.bar(low)


def markdown(view: ParetoView, metric: str, figure: str | None = None) -> list[str]:
    """The report.md section: the figure (a file next to report.md) and the table."""
    if not view.points:
        return []
    intro = (f"Every evaluated solver by {metric} and solver time per sample (the evaluator's "
             "clock; a re-timed finalist's median). The Pareto front is the set no other solver "
             f"beats in both; {len(view.front)} of {len(view.points)} are on it.")
    lines = ["## Accuracy and cost", "", intro, ""]
    if figure:
        alt = f"{metric} against solver time per sample, Pareto front and winner"
        lines += [f"![{alt}]({figure})", ""]
    lines += [f"| solver | design | {metric} | s/sample | Pareto front | winner |",
              "|---|---|---|---|---|---|"]
    for p in view.points:
        title = cell_text(p.title)  # model-written: inert
        median = f" (median of {p.timings})" if p.timings > 1 else ""
        lines.append(f"| `{p.id}` | {title} | {p.score:.3e} | {p.per_sample:.3g} s{median} | "
                     f"{'yes' if p.front else ''} | {'**winner**' if p.winner else ''} |")
    if view.unplaced:
        lines += ["", (f"{view.unplaced} evaluated solver(s) failed or have no score or time "
                       "and are not shown.")]
    return lines + [""]
