"""Issue 21.8 and 20.8: `pdesharp bench` takes --dev-data/--test-data/--no-convergence, so its
cells are comparable with a `pdesharp solve` run on the same data; `--model builtin` benches
sharp alone and says so. Real CLI, real sandbox, the built-in analyst (deterministic). The bench
and the refusals run in real processes; the solve it is compared with, and a refusal of the
same kind as the real-process ones below, run in-process (``pdesharp.cli.main``: the same code
without another interpreter's start)."""

from __future__ import annotations

import json

from cli_helpers import pdesharp

from pdesharp.cli import main

QUICK = ("--no-convergence", "--max-samples", "1")


def exit_status(argv: list[str]) -> int:
    """``main(argv)``'s exit status as a process would have it (a refusal raises SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_builtin_bench_cell_equals_a_solve_run_on_the_same_data(tmp_path, shared_data, capsys):
    dev = str(shared_data / "advection_dev.hdf5")
    bench = pdesharp("bench", "--tasks", "advection", "--model", "builtin", "--dev-data", dev,
                     *QUICK, "--budget-evals", "2", "--out", str(tmp_path / "bench"))
    assert bench.returncode == 0, bench.stderr
    # the default methods with --model builtin: sharp alone, and the user is told
    assert "benching sharp with the built-in analyst only" in bench.stderr
    assert "| advection | sharp |" in bench.stdout and "codepde" not in bench.stdout.split(
        "| task |")[1].split("nRMSE: mean")[0]
    # progress: one line per evaluation and per cell in a log
    assert "cells 1/1" in bench.stderr and "g0 (dev): ok" in bench.stderr
    cell = tmp_path / "bench" / "advection" / "sharp-r0"
    config = json.loads((cell / "config.json").read_text())
    assert config["dev_data"] == dev and config["convergence"] is False

    assert main(["solve", "advection", "--dev-data", dev, *QUICK, "--max-evals", "2",
                 "--out", str(tmp_path / "runs"), "--run-id", "s", "--quiet"]) == 0
    a = json.loads((cell / "summary.json").read_text())
    b = json.loads((tmp_path / "runs" / "s" / "summary.json").read_text())
    for key in ("best_id", "best_dev_score", "feedback_evaluations"):
        assert a[key] == b[key], key  # the same solvers ran on the same data: same numbers

    # the comparison settings are cell settings: changing one on the same folder is refused
    capsys.readouterr()
    code = exit_status(["bench", "--tasks", "advection", "--model", "builtin", "--dev-data", dev,
                        "--max-samples", "1", "--budget-evals", "2", "--out",
                        str(tmp_path / "bench")])
    assert code == 2 and "convergence: False -> True" in capsys.readouterr().err


def test_builtin_bench_of_baselines_only_is_refused(tmp_path):
    got = pdesharp("bench", "--tasks", "advection", "--methods", "codepde", "--model", "builtin",
                   "--out", str(tmp_path))
    assert got.returncode == 2 and "no language model for codepde" in got.stderr
    assert list(tmp_path.iterdir()) == []


def test_dev_data_names_one_task(tmp_path, shared_data):
    got = pdesharp("bench", "--tasks", "advection,burgers", "--methods", "sharp", "--model",
                   "builtin", "--dev-data", str(shared_data / "advection_dev.hdf5"), "--out",
                   str(tmp_path / "b"))
    assert got.returncode == 2 and "one task" in got.stderr


def test_bench_passes_sharps_candidates_and_rounds(monkeypatch, tmp_path):
    """A small side-by-side bench (the CNS bridge run: 3 candidates beside CodePDE best-of-4)
    needs sharp's --candidates/--max-rounds; they reach the sharp cell's SolveConfig through
    sharp_options, a cell setting (recorded, and checked when the bench folder is reopened)."""
    import pdesharp.bench as bench
    from pdesharp.cli import main

    seen = {}

    async def fake_run_bench(cfg, **kw):
        seen["cfg"] = cfg
        return []

    monkeypatch.setattr(bench, "run_bench", fake_run_bench)
    assert main(["bench", "--tasks", "cns1d", "--model", "builtin",
                 "--methods", "sharp", "--candidates", "3", "--max-rounds", "2",
                 "--out", str(tmp_path)]) == 0
    assert seen["cfg"].sharp_options == {"candidates": 3, "max_rounds": 2}
    assert main(["bench", "--tasks", "cns1d", "--model", "builtin", "--out", str(tmp_path)]) == 0
    assert seen["cfg"].sharp_options == {}  # not given: solve's defaults
    assert "sharp_options" in bench.CELL_SETTINGS
