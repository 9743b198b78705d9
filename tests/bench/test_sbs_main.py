"""The side-by-side bench's driver (bench/side_by_side.py main): ``--prepare`` times nothing and
leaves the last run's library points for ``--reuse-sweep``; a timed run replaces its own cases'
entries and keeps the others'."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import side_by_side  # noqa: E402


def _run(monkeypatch, work: Path, *flags: str) -> None:
    def run_case(case, args, key):  # what run_case returns, without solving or timing
        timed = not args.prepare
        return {"case": case.name, "library": case.library, "title": case.title,
                "reference": {}, "points": [{"nrmse": 1e-3}] if timed else [], "rows": [],
                **({} if timed else {"winners": {}})}
    monkeypatch.setattr(side_by_side, "run_case", run_case)
    monkeypatch.setattr(side_by_side, "source_key", lambda: "key")
    monkeypatch.setattr(side_by_side, "table", lambda results: "")
    monkeypatch.setattr(side_by_side, "plot", lambda results, path: None)
    monkeypatch.setattr(sys, "argv", ["side_by_side.py", "--work", str(work), *flags])
    side_by_side.main()


def test_prepare_keeps_the_last_sweep_and_a_run_replaces_only_its_cases(monkeypatch, tmp_path):
    first, second = side_by_side.QUICK[0], side_by_side.QUICK[1]
    store = tmp_path / "results.json"
    _run(monkeypatch, tmp_path, "--cases", f"{first},{second}")
    before = json.loads(store.read_text())
    assert [r["case"] for r in before] == [first, second] and all(r["points"] for r in before)
    _run(monkeypatch, tmp_path, "--prepare", "--cases", first)
    assert json.loads(store.read_text()) == before  # the points --reuse-sweep reads stay
    _run(monkeypatch, tmp_path, "--cases", second)
    after = json.loads(store.read_text())
    assert sorted(r["case"] for r in after) == sorted([first, second])


def test_a_library_that_stops_short_of_the_tolerance_gets_pdesharp_at_its_best_accuracy():
    # the question that library's user asks: pdesharp's fastest solver at the accuracy the
    # library reaches (its best front point, the cheapest within 10% of its lowest nRMSE)
    case = side_by_side.BY_NAME[side_by_side.QUICK[0]]

    def pt(nrmse, warm):
        return {"nrmse": nrmse, "warm": warm, "cold": 1.0, "config": {}, "refine": 1}
    short = [pt(3e-2, 0.01), pt(2.95e-2, 0.02), pt(2.9e-2, 0.05)]
    assert case.tol < 2.9e-2
    obj = side_by_side.library_objective(case, short)
    assert obj == "fastest-below:0.03"  # 3e-2 is within 10% of 2.9e-2 and the cheapest
    assert side_by_side.run_tag(case, obj) == "at_library"
    reaches = short + [pt(case.tol / 2, 0.5)]
    assert side_by_side.library_objective(case, reaches) is None
    assert side_by_side.library_objective(case, []) is None
    # a library that reaches the tolerance but not pdesharp's most accurate winner: the same
    # question at the library's best accuracy
    assert side_by_side.library_objective(case, reaches, case.tol / 100) == \
        f"fastest-below:{case.tol / 2:.3g}"
    assert side_by_side.library_objective(case, reaches, case.tol / 2) is None
    assert side_by_side.library_objective(case, reaches, math.nan) is None
    assert side_by_side.run_tag(case, "accuracy") == "accuracy"
    assert side_by_side.run_tag(case, f"fastest-below:{case.tol:g}") == "fastest"


def test_the_next_finer_setting_of_each_library():
    from sbs_cases import finer, sweep

    ks = side_by_side.BY_NAME["ape_ks1d"]
    last = sweep(ks, True)[-1]  # 16 substeps, ETDRK4, float64, on the 2x grid
    p = {"config": last[0], "refine": last[1]}
    assert finer(ks, p, True) == ({**last[0], "substeps": 4 * last[0]["substeps"]}, last[1])
    assert finer(ks, p, False)[0]["substeps"] == 2 * last[0]["substeps"]
    adv = side_by_side.BY_NAME["ape_adv1d"]  # linear: exact in time, nothing finer
    assert finer(adv, {"config": sweep(adv, True)[-1][0], "refine": 1}, True) is None
    heat = side_by_side.BY_NAME["pp_heat2d"]
    rk = next(c for c, _ in sweep(heat, True) if c.get("tol") == 1e-6)
    assert finer(heat, {"config": rk, "refine": 1}, True)[0]["tol"] == 1e-8
    euler = next(c for c, _ in sweep(heat, False) if c["solver"] == "euler")
    assert finer(heat, {"config": euler, "refine": 1}, False) is None


def test_an_accuracy_winner_at_the_reference_floor_gets_the_fastest_solver_there_too():
    # 1D KS (run 42): the accuracy search stopped at the first solver to reach the floor
    # (5.6e-9 under 6.0e-9), 1.4x exponax's time at that accuracy; the fastest there is its
    # own question, in its own run folder
    case = side_by_side.BY_NAME["ape_ks1d"]
    at = {"best_dev_score": 5.599e-9, "reference_audit": {"ranking_floor": 6.0e-9}}
    assert side_by_side.floor_objective(at) == "fastest-below:floor"
    assert side_by_side.run_tag(case, "fastest-below:floor") == "floor"
    above = {"best_dev_score": 7.1e-9, "reference_audit": {"ranking_floor": 6.0e-9}}
    assert side_by_side.floor_objective(above) is None
    no_audit = {"best_dev_score": 5.6e-9, "reference_audit": {"ranking_floor": None}}
    assert side_by_side.floor_objective(no_audit) is None
    assert side_by_side.floor_objective(None) is None  # no accuracy winner
    assert side_by_side.floor_objective({"best_dev_score": None}) is None


def test_a_sweep_is_kept_as_soon_as_it_is_measured_and_only_for_its_reference(tmp_path):
    # runs 43 and 45 (Brusselator) were stopped during a 23-minute solve after the sweep:
    # results.json is written at a case's end, so --reuse-sweep found nothing of theirs
    case = side_by_side.BY_NAME["pp_brusselator2d"]
    d = tmp_path / case.name
    d.mkdir()
    ref = {"samples": 4, "spatial": 1e-9}
    points = [{"config": {"backend": "numpy"}, "refine": 1, "nrmse": 3.26e-3, "warm": 0.3}]
    assert side_by_side.stored_sweep(case, d, tmp_path, ref) is None  # nothing measured yet
    side_by_side.store_sweep(d, ref, points)
    assert side_by_side.stored_sweep(case, d, tmp_path, ref) == points
    assert not list(d.glob("*.part"))  # written whole or not at all
    # scored against another reference: swept again, not reused
    assert side_by_side.stored_sweep(case, d, tmp_path, dict(ref, spatial=2e-9)) is None
    # a work folder from before sweep.json: the case's entry in results.json
    (d / "sweep.json").unlink()
    older = [dict(points[0], nrmse=3.37e-3)]
    (tmp_path / "results.json").write_text(json.dumps(
        [{"case": "pp_fhn2d", "reference": ref, "points": points},
         {"case": case.name, "reference": ref, "points": older}]))
    assert side_by_side.stored_sweep(case, d, tmp_path, ref) == older


def test_two_objectives_that_ended_at_one_solver_are_one_solver(tmp_path):
    # 2D Gray-Scott: the floor run's winner is the accuracy run's file but for the header line
    # pdesharp writes (its run id): paired once; a changed constant is another solver
    body = "FAMILY = \"spectral\"\nCFL = 0.2\n\ndef solver(u0, t):\n    return u0\n"
    a, b, c = (tmp_path / n for n in ("a.py", "b.py", "c.py"))
    a.write_text("# Written by pdesharp (PDE-SHARP), run accuracy, task gs: solver c1r1-j1\n"
                 + body)
    b.write_text("# Written by pdesharp (PDE-SHARP), run floor, task gs: solver c1r1-j1\n" + body)
    c.write_text("# Written by pdesharp (PDE-SHARP), run floor, task gs: solver c1r1-j1\n"
                 + body.replace("CFL = 0.2", "CFL = 0.3"))
    assert side_by_side.solver_key(a) == side_by_side.solver_key(b)
    assert side_by_side.solver_key(a) != side_by_side.solver_key(c)
