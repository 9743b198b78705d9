"""Pairing in the side-by-side bench (bench/side_by_side.py): a library's accuracy-time front
and its time at a given accuracy, interpolated along it."""

from __future__ import annotations

import math


def front(points: list[dict], key: str) -> list[dict]:
    """The Pareto front (faster and more accurate) by time ``key``, fastest first."""
    ok = [p for p in points if not p.get("failed") and math.isfinite(p["nrmse"])]
    out: list[dict] = []
    for p in sorted(ok, key=lambda p: (p[key], p["nrmse"])):
        if not out or p["nrmse"] < out[-1]["nrmse"]:
            out.append(p)
    return out


# a library point within this factor of the library's best nRMSE counts as its best accuracy: on a
# flat front the most accurate point is a costly way to the same error, and pairing against it
# flattered pdesharp (exponax on Gray-Scott: 1.2071e-3 at 6.16 s with 64 substeps per frame,
# 1.2109e-3 at 0.79 s with 8)
BEST_SLACK = 1.1


def best_point(fr: list[dict]) -> dict:
    """The library's fastest front point within :data:`BEST_SLACK` of its best nRMSE."""
    floor = fr[-1]["nrmse"] * BEST_SLACK
    return next(p for p in fr if p["nrmse"] <= floor)


def at_accuracy(fr: list[dict], err: float, key: str):
    """The library's time at accuracy ``err`` along its front (log-log linear between the two
    points that bracket it): (time, bracketing points, reached). Not reached: the time of its
    best accuracy (:func:`best_point`), reached False."""
    if not fr:
        return math.nan, [], False
    best = best_point(fr)
    if err < fr[-1]["nrmse"]:  # round-off levels (below 1e-13) count as equal accuracy
        return best[key], [best], fr[-1]["nrmse"] < 1e-13
    for a, b in zip(fr, fr[1:]):
        if b["nrmse"] <= err <= a["nrmse"]:
            s = (math.log(err) - math.log(a["nrmse"])) / (math.log(b["nrmse"]) - math.log(a["nrmse"]))
            return math.exp(math.log(a[key]) + s * (math.log(b[key]) - math.log(a[key]))), [a, b], True
    return fr[0][key], [fr[0]], True  # less accurate than the fastest point: its time


def turn_ratios(times: list[tuple[list[float], list[float]]], bracket: list[dict],
                goal: float) -> list[float]:
    """Per round, pdesharp's time over the library's at accuracy ``goal``, from timings in
    turns: ``times`` holds, per point of ``bracket`` (one point, or the two that bracket
    ``goal``), pdesharp's times and that point's, round by round (one process per point). The
    library's time relative to pdesharp's is interpolated log-log between the two points by
    their nRMSE (as :func:`at_accuracy` interpolates times); rounds up to the shorter run."""
    out = []
    for r in range(min(len(mine) for mine, _ in times)):
        logs = [math.log(lib[r] / mine[r]) for mine, lib in times]
        if len(bracket) == 2:
            a, b = bracket
            x = (math.log(goal) - math.log(a["nrmse"])) / (math.log(b["nrmse"])
                                                          - math.log(a["nrmse"]))
            logs = [logs[0] + x * (logs[1] - logs[0])]
        out.append(math.exp(-logs[0]))
    return out
