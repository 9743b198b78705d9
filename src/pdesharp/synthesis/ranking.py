"""The tournament's ranking rule, in one place: who is best, and the order of a results list.

Lower score is better; scores within ``tie_tolerance`` (relative) of the lowest are a tie, won
by the faster solver (``solver_seconds``; unknown time counts as slowest), then by the lower
score, then by the earlier entry. The winner, the judges' listings and the report all use it, so
a judge never sees an order that the tournament would not pick. (A later objective, e.g. the
fastest solver within a factor of the best score, extends :func:`pick_best` alone.)
"""

from __future__ import annotations

from typing import TypeVar

from pdesharp.records import EvalResult

T = TypeVar("T")


def _best_index(scored: list[tuple[T, EvalResult]], tie_tolerance: float) -> int:
    lowest = min(r.score for _, r in scored)
    cap = lowest + abs(lowest) * tie_tolerance
    tied = [(i, r) for i, (_, r) in enumerate(scored) if r.score <= cap]
    return min(tied, key=lambda t: (t[1].solver_seconds is None, t[1].solver_seconds or 0.0,
                                    t[1].score, t[0]))[0]


def pick_best(scored: list[tuple[T, EvalResult]], tie_tolerance: float) -> tuple[T, EvalResult]:
    """The best of ``scored`` (items with an ok result and a score, in a fixed order)."""
    return scored[_best_index(scored, tie_tolerance)]


def rank(scored: list[tuple[T, EvalResult]], tie_tolerance: float) -> list[tuple[T, EvalResult]]:
    """``scored`` best first: the best by :func:`pick_best`, then the best of the rest, ..."""
    rest, out = list(scored), []
    while rest:
        out.append(rest.pop(_best_index(rest, tie_tolerance)))
    return out
