"""Pairing in the side-by-side bench (bench/side_by_side.py): a library's accuracy-time front
and its time at a given accuracy, interpolated along it."""

from __future__ import annotations

import json
import math


def front(points: list[dict], key: str) -> list[dict]:
    """The Pareto front (faster and more accurate) by time ``key``, fastest first."""
    ok = [p for p in points if not p.get("failed") and math.isfinite(p["nrmse"])]
    out: list[dict] = []
    for p in sorted(ok, key=lambda p: (p[key], p["nrmse"])):
        if not out or p["nrmse"] < out[-1]["nrmse"]:
            out.append(p)
    return out


def at_floor(points: list[dict], floor: float) -> None:
    """A library point measured closer to the reference than the reference's own error is
    ``floor`` (``nrmse_measured`` keeps what was measured): its distance from the PDE's
    solution is not known below that, as pdesharp's is compared at it. Where the library runs
    the reference's own discretisation (exponax's ETDRK4 with 64 substeps on 1D KS's 4x
    reference grid: 2.7e-14 from a reference 5.4e-9 from the solution), the measured error
    says only that it computed the reference again; paired at 2.7e-14 it was interpolated to
    0.14 s per sample at pdesharp's 5.6e-9, where reaching the floor takes it 0.36 s."""
    for p in points:
        if not p.get("failed") and math.isfinite(p["nrmse"]) and p["nrmse"] < floor:
            p.setdefault("nrmse_measured", p["nrmse"])
            p["nrmse"] = floor


# a library point within this factor of the library's best nRMSE counts as its best accuracy: on a
# flat front the most accurate point is a costly way to the same error, and pairing against it
# flattered pdesharp (exponax on Gray-Scott: 1.2071e-3 at 6.16 s with 64 substeps per frame,
# 1.2109e-3 at 0.79 s with 8)
BEST_SLACK = 1.1


def best_point(fr: list[dict]) -> dict:
    """The library's fastest front point within :data:`BEST_SLACK` of its best nRMSE."""
    floor = fr[-1]["nrmse"] * BEST_SLACK
    return next(p for p in fr if p["nrmse"] <= floor)


# past the sweep, a finer step that lowers the library's error by less than this factor has met
# the limit of its setting (its grid, its precision, or the reference's own error): no finer one
# is tried along it
EXTEND_GAIN = 2.0
# nor more than this many points along one setting, or from a point slower than this (seconds
# per sample, warm) unless pdesharp's winner is slower still (``extend(slowest=...)``); and at
# most this many settings are carried on
EXTEND_POINTS = 4
EXTEND_WARM = 5.0
EXTEND_SETTINGS = 2


def extend(points: list[dict], goal: float, finer, run, setting=lambda p: None,
           slowest: float | None = None) -> list[dict]:
    """The library's front carried on past its sweep towards accuracy ``goal``: from its most
    accurate point, the setting ``finer(point)`` (None: none) measured by ``run(config, refine)``
    and so on, while the front is above ``goal``, each finer step lowers the error by
    :data:`EXTEND_GAIN` at least, within :data:`EXTEND_POINTS` points, and from a point no
    slower than the larger of :data:`EXTEND_WARM` and ``slowest`` (s per sample, warm: the
    time of pdesharp's most accurate winner). A library point slower than that
    winner and still less accurate is beaten on both counts, and a finer step is slower again;
    a faster one must be carried on, or the row would say the library cannot reach an accuracy
    it reaches in less time than the winner's (2D Gray-Scott: exponax at 2.5e-6 with 16
    substeps on the 4x grid, 9.9 s per sample, against a 24 s winner at 2.3e-8; 5 s stopped
    it there). Where that stops short of ``goal``, the same from the most accurate point of
    another setting (``setting(point)``: what stays fixed along ``finer``), up to
    :data:`EXTEND_SETTINGS` settings (exponax's float32 ETDRK2 on KdV stops at its round-off,
    9e-4, where float64 goes on). A setting ``points`` has already is not run again, nor is the
    front carried past a point where an earlier call stopped (a reused sweep). Returns the new
    points. Without this, a library whose sweep ended above pdesharp's accuracy was said not to
    reach it, and was paired at its last point: a limit of the sweep, not of the library
    (exponax on 1D Kuramoto-Sivashinsky stopped at 1.2e-6 with 16 substeps per frame, its error
    still falling 30x per 4x substeps)."""
    def key(config, refine):
        return json.dumps([config, refine], sort_keys=True)

    def usable(p):
        return not p.get("failed") and math.isfinite(p["nrmse"])

    known = {key(p["config"], p["refine"]): p for p in points if "config" in p}
    new: list[dict] = []
    done: list = []
    limit = max(EXTEND_WARM, slowest or 0.0)
    for _ in range(EXTEND_SETTINGS):
        ok = [p for p in points + new if usable(p) and setting(p) not in done]
        if not ok or min(p["nrmse"] for p in points + new if usable(p)) <= goal:
            break
        best = min(ok, key=lambda p: p["nrmse"])
        done.append(setting(best))
        steps = 0
        while best["nrmse"] > goal and best["warm"] <= limit \
                and steps < EXTEND_POINTS and not best.get("extend_stop"):
            step = finer(best)
            if step is None:
                break
            p = known.get(key(*step))
            if p is None:
                p = known[key(*step)] = run(*step)
                new.append(p)
            steps += 1
            if not usable(p) or p["nrmse"] * EXTEND_GAIN > best["nrmse"]:
                p["extend_stop"] = True  # the limit, kept with the point: a reuse goes no further
                break
            best = p
    return new


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
