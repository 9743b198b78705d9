"""The side-by-side bench's pairing (bench/sbs_pairing.py): the library's time at pdesharp's
accuracy along its front, and, where it cannot reach it, the time of its best accuracy, taken at
the cheapest point of a flat front rather than its most costly one."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from sbs_pairing import (EXTEND_POINTS, at_accuracy, at_floor, extend, front,  # noqa: E402
                         turn_ratios)


def point(nrmse: float, warm: float) -> dict:
    return {"nrmse": nrmse, "warm": warm, "cold": warm + 1.0, "config": {}, "refine": 1}


# exponax's Gray-Scott front was of this shape (1.2109e-3 at 0.79 s, 1.2071e-3 at 6.16 s): the
# last third of a percent of accuracy costs 8x the time
FLAT = [point(1e-2, 0.01), point(1.15e-5, 0.1), point(1.12e-5, 33.0)]


def test_an_unreached_accuracy_pairs_with_the_cheapest_point_near_the_best():
    fr = front(FLAT, "warm")
    assert [p["warm"] for p in fr] == [0.01, 0.1, 33.0]
    t, pts, reached = at_accuracy(fr, 1e-9, "warm")
    # 1.15e-5 is within 1.1x of the best 1.12e-5: its 0.1 s is the library's time there, not 33 s
    assert (t, reached) == (0.1, False) and pts == [FLAT[1]]


def test_a_best_point_far_from_the_next_is_still_the_best():
    steep = [point(1e-2, 0.01), point(2e-5, 0.1), point(1.12e-5, 33.0)]  # 2e-5: 1.8x the best
    t, pts, reached = at_accuracy(front(steep, "warm"), 1e-9, "warm")
    assert (t, reached) == (33.0, False) and pts == [steep[2]]


def test_a_reached_accuracy_interpolates_log_log_between_its_bracket():
    fr = front([point(1e-2, 0.01), point(1e-4, 1.0)], "warm")
    t, pts, reached = at_accuracy(fr, 1e-3, "warm")
    # halfway in log error between the bracket: halfway in log time, exp(mean(log)) = 0.1 s
    assert reached and len(pts) == 2 and math.isclose(t, 0.1, rel_tol=1e-12)


def test_a_library_point_closer_than_the_reference_error_is_paired_at_that_error():
    # 1D KS (run 39): exponax on the reference's own grid and steps measured 2.7e-14 from a
    # reference 5.4e-9 from the PDE's solution; 16 substeps gave 1.2e-6. At pdesharp's 5.6e-9
    # the pair interpolated towards 2.7e-14 (0.14 s); the library reaches 5.4e-9 at 0.357 s
    pts = [point(1.21e-6, 0.089), point(2.74e-14, 0.357), point(3e-14, 0.5), point(2e-3, 0.01)]
    at_floor(pts, 5.4e-9)
    assert [p["nrmse"] for p in pts] == [1.21e-6, 5.4e-9, 5.4e-9, 2e-3]
    assert pts[1]["nrmse_measured"] == 2.74e-14 and "nrmse_measured" not in pts[0]
    fr = front(pts, "warm")
    assert [p["warm"] for p in fr] == [0.01, 0.089, 0.357]  # the faster of the two at the floor
    t, bracket, reached = at_accuracy(fr, 5.6e-9, "warm")
    # log-log between (1.21e-6, 0.089) and (5.4e-9, 0.357): s = ln(1.21e-6/5.6e-9) /
    # ln(1.21e-6/5.4e-9) = 0.99328; 0.089 (0.357/0.089)^s = 0.35368 (to 5 digits)
    assert reached and bracket == fr[1:] and math.isclose(t, 0.35368, rel_tol=2e-5)
    at_floor(pts, 5.4e-9)  # a reused sweep: idempotent, the measured value kept
    assert pts[1]["nrmse"] == 5.4e-9 and pts[1]["nrmse_measured"] == 2.74e-14


def test_turn_ratios_interpolate_the_library_relative_to_pdesharp_round_by_round():
    # two library points (1e-2 and 1e-4) each timed in turns with pdesharp in its own process;
    # the machine runs 2x slower in round 2 of both: the ratios do not move
    a, b = point(1e-2, 0.01), point(1e-4, 1.0)
    times = [([1.0, 2.0], [0.5, 1.0]),  # pdesharp, then point a: a takes half pdesharp's time
             ([1.0, 2.0, 3.0], [2.0, 4.0, 6.0])]  # point b: twice pdesharp's (a third round)
    ratios = turn_ratios(times, [a, b], 1e-3)
    # at 1e-3, halfway in log nRMSE: the library's time is sqrt(0.5 * 2) = 1 x pdesharp's;
    # rounds up to the shorter process (2)
    assert len(ratios) == 2 and all(math.isclose(r, 1.0) for r in ratios)
    near_a = turn_ratios(times, [a, b], 1e-2)  # at point a: pdesharp takes 2x a's time
    assert all(math.isclose(r, 2.0) for r in near_a)
    one = turn_ratios([([1.0, 1.2], [4.0, 6.0])], [point(1e-6, 1.0)], 1e-9)  # one point
    assert [round(r, 6) for r in one] == [0.25, 0.2]


def _library(errors: dict[int, float]):
    """A stand-in library: substeps -> nRMSE (``errors``; absent: the run fails), 0.01 s per
    sample per substep; ``runs`` lists what was run."""
    runs = []

    def run(config, refine):
        runs.append(config["substeps"])
        n = config["substeps"]
        if n not in errors:
            return {"failed": True, "config": config, "refine": refine}
        return {"nrmse": errors[n], "warm": 0.01 * n, "cold": 1.0, "config": config,
                "refine": refine}

    def finer(p):
        return {"substeps": 4 * p["config"]["substeps"]}, p["refine"]
    return run, finer, runs


def sub(n: int, err: float) -> dict:
    return {"nrmse": err, "warm": 0.01 * n, "cold": 1.0, "config": {"substeps": n}, "refine": 2}


def test_the_front_is_carried_past_the_sweep_while_the_library_error_falls():
    # exponax on 1D Kuramoto-Sivashinsky: 1.5e-4 at 4 substeps, 1.2e-6 at 16, and still falling
    run, finer, runs = _library({64: 5e-9, 256: 4e-9})
    swept = [sub(4, 1.5e-4), sub(16, 1.2e-6)]
    new = extend(swept, 6.5e-7, finer, run)
    # 64 reaches the goal: nothing past it
    assert runs == [64] and [p["nrmse"] for p in new] == [5e-9]
    t, pts, reached = at_accuracy(front(swept + new, "warm"), 6.5e-7, "warm")
    assert reached and [p["config"]["substeps"] for p in pts] == [16, 64]


def test_the_front_stops_where_a_finer_step_no_longer_pays():
    # the grid's limit: 64 substeps lowers the error 1.5x only (under EXTEND_GAIN, 2x), so no
    # 256; a goal already met runs nothing; a failed run ends the chain
    run, finer, runs = _library({64: 8e-7, 256: 1e-9})
    swept = [sub(16, 1.2e-6)]
    assert [p["nrmse"] for p in extend(swept, 1e-9, finer, run)] == [8e-7] and runs == [64]
    assert extend(swept, 2e-6, finer, run) == [] and runs == [64]
    run, finer, runs = _library({})
    new = extend(swept, 1e-9, finer, run)
    assert runs == [64] and new[0]["failed"]
    # a setting the front has (a reused sweep, extended last time) is not run again, and the
    # chain goes on from it
    run, finer, runs = _library({256: 1e-9})
    new = extend(swept + [sub(64, 1e-7)], 1e-9, finer, run)
    assert runs == [256] and [p["nrmse"] for p in new] == [1e-9]
    # nor past the point where it stopped (64 gained 1.5x only): the limit is kept with it
    run, finer, runs = _library({64: 8e-7, 256: 1e-9})
    swept = [sub(16, 1.2e-6)]
    swept += extend(swept, 1e-9, finer, run)
    assert extend(swept, 1e-9, finer, run) == [] and runs == [64]


def test_the_front_stops_at_its_point_and_time_limits():
    errors = {4**j: 10.0 ** -j for j in range(1, 12)}  # 10x better per 4x, without end
    run, finer, runs = _library(errors)
    new = extend([sub(1, 1.0)], 1e-30, finer, run)
    assert len(new) == EXTEND_POINTS  # 4, 16, 64, 256: not 1024 (the point limit)
    run, finer, runs = _library(errors)
    new = extend([sub(256, 1e-4)], 1e-30, finer, run)  # 2.56 s per sample: one more, 10.24 s
    assert runs == [1024]
    # no finer setting (a linear case, py-pde's Euler): nothing
    assert extend([sub(1, 1.0)], 1e-30, lambda p: None, run) == [] and runs == [1024]


def test_the_front_goes_past_the_time_limit_while_the_library_is_faster_than_the_winner():
    # 2D Gray-Scott: exponax at 2.5e-6 with 1024 substeps here (10.24 s per sample, past the
    # 5 s limit) against a 24 s winner at 2.3e-8: one more step, which reaches it
    run, finer, runs = _library({4096: 1e-8})
    swept = [sub(256, 1e-3), sub(1024, 2.5e-6)]
    assert extend(swept, 2.3e-8, finer, run) == [] and runs == []  # the fixed limit alone
    new = extend(swept, 2.3e-8, finer, run, slowest=24.0)
    assert runs == [4096] and [p["nrmse"] for p in new] == [1e-8]
    # a library point already slower than the winner, and less accurate, is beaten on both
    # counts: no finer (slower) one is run
    run, finer, runs = _library({4096: 1e-8})
    assert extend(swept, 2.3e-8, finer, run, slowest=9.0) == [] and runs == []
    # a faster winner never lowers the fixed limit
    run, finer, runs = _library({64: 1e-9})
    assert [p["nrmse"] for p in extend([sub(16, 1e-3)], 1e-8, finer, run, slowest=0.01)] \
        == [1e-9] and runs == [64]


def test_a_setting_that_stops_short_hands_on_to_the_most_accurate_other_one():
    # exponax on KdV: float32 ETDRK2 stops at its round-off (64 substeps no better), float64
    # goes on; the float64 point is the most accurate of the other setting
    def run(config, refine):
        ran.append((config["x64"], config["substeps"]))
        err = {(False, 64): 9e-4, (True, 64): 1e-5, (True, 256): 1e-7}[(config["x64"],
                                                                          config["substeps"])]
        return {"nrmse": err, "warm": 0.01, "cold": 1.0, "config": config, "refine": refine}

    def finer(p):
        return {**p["config"], "substeps": 4 * p["config"]["substeps"]}, p["refine"]

    def setting(p):
        return p["config"]["x64"]
    ran: list = []
    swept = [{"nrmse": e, "warm": 0.01, "cold": 1.0, "config": {"x64": x, "substeps": 16},
              "refine": 1} for x, e in ((False, 8e-4), (True, 9e-4))]
    new = extend(swept, 1e-7, finer, run, setting)
    assert ran == [(False, 64), (True, 64), (True, 256)] and new[-1]["nrmse"] == 1e-7
    # the goal met by the first setting: no other is tried
    ran.clear()
    assert extend(swept + [dict(swept[0], nrmse=1e-8)], 1e-7, finer, run, setting) == []
    assert ran == []
