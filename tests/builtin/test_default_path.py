"""The default path as users run it: `pdesharp solve TASK` with no model configured, through the
real pipeline (analysis, Genesis, the tournament with the three built-in judges, the report) and
the real sandboxed evaluator. Small sample counts and budgets keep each run to a few seconds;
the long windows are measured in bench/ (bench/builtin_results.md)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import h5py
import pytest
from builtin_helpers import EXAMPLES

from pdesharp.cli import main
from pdesharp.task import load_task

HERE = Path(__file__).resolve().parent


def solve(tmp_path, monkeypatch, task: str, *extra: str, evals: int = 3) -> tuple[int, dict, Path]:
    """``pdesharp solve TASK`` exactly as a user types it (no --model), in-process."""
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    out = tmp_path / "runs"
    argv = ["solve", task, "--out", str(out), "--run-id", "r", "--quiet", "--no-convergence",
            "--candidates", "3", "--max-evals", str(evals), "--max-rounds", "1",
            "--rejudge-cycles", "0", *extra]
    try:
        code = main(argv)
    except SystemExit as exc:  # the CLI's clean error exit
        code = exc.code
    summary_path = out / "r" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return code, summary, out / "r"


def standalone(path: Path) -> bool:
    """The winning file imports NumPy/SciPy (and Numba, a dependency, for compiled kernels)
    besides Python's standard library only (the 2D spectral transforms read the thread budget
    through ``os``): a user runs it without pdesharp."""
    tree = ast.parse(path.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    return names - set(sys.stdlib_module_names) <= {"numpy", "scipy", "numba"}


def short_copy(src: Path, dst: Path, task: str, frames: int, samples: int = 1) -> Path:
    """The first ``samples`` samples and ``frames`` frames of a shared dev file: a user's own
    (short) data file, passed with --dev-data."""
    spec = load_task(task).data
    with h5py.File(src, "r") as h5, h5py.File(dst, "w") as out:
        for key in spec.fields.values():
            out[key] = h5[key][:samples, :frames]
        out["t-coordinate"] = h5["t-coordinate"][:frames]
        for key in [k for k in h5 if k.endswith("-coordinate") and k != "t-coordinate"]:
            out[key] = h5[key][:]  # the space axes, whatever their names
    return dst


# tolerance per built-in task on its window, with the reason (measured values in comments)
BUILTIN = {
    # exact shift 1.1e-3 against PDEBench's MUSCL reference, the MUSCL design 5e-6 (full window);
    # both at or below the reference floor, so the faster wins and timing picks which (the
    # winner measured 1.60e-3 on the first sample); 3e-3 bounds either with a 1.9x margin
    "advection": ([], 3e-3),
    # 21 frames: pseudo-spectral 2.1e-4, MUSCL-mc 1.8e-5; the published best is 1.05e-4 on 201
    "burgers": (["FRAMES", 21], 1e-3),
    # full window: pseudo-spectral/exact-split designs 1e-5 to 1e-4, the published best 2.3e-3;
    # 21 frames (half the time of the full window here): the winner 1.0e-6
    "reacdiff1d": (["FRAMES", 21], 2e-3),
    # 6 frames of the (only) two-sample CNS file: pseudo-spectral in primitive variables 5.5e-4
    # (1/4 grid) and 4.1e-4 (data grid), the finite-volume design with an implicit viscous step
    # ~2e-4 (the data were made by a MUSCL scheme in float32: 5.0e-3 from the PDE over 101 frames)
    "cns1d": (["FRAMES", 6], 2e-3),
    # one 421^2 sample: five-point on the cell centres 2.0e-4, on the spline node grid 2.5e-8
    "darcy": ([], 1e-3),
}


@pytest.mark.parametrize("task", sorted(BUILTIN))
def test_builtin_task_through_the_real_pipeline(task, tmp_path, monkeypatch, shared_data):
    extra, tol = BUILTIN[task]
    args = ["--max-samples", "1"]
    if extra and extra[0] == "FRAMES":
        dev = short_copy(shared_data / f"{task}_dev.hdf5", tmp_path / "dev.hdf5", task, extra[1])
        args += ["--dev-data", str(dev)]
    else:
        args += ["--data-dir", str(shared_data)]
    # darcy: the first design (five-point, 2.0e-4) decides; cns1d: the first (pseudo-spectral,
    # 5.5e-4) and the finite volumes; the others end after one evaluation on their own
    code, summary, run = solve(tmp_path, monkeypatch, task, *args,
                               evals={"cns1d": 2, "darcy": 1}.get(task, 3))
    assert code == 0, summary
    assert summary["status"] in ("finished", "budget_stop")
    assert summary["best_dev_score"] < tol
    assert (run / "report.md").is_file() and standalone(run / "best_solver.py")


# the seven user PDEs and one example per new capability: example YAML, reference from
# examples/tasks/make_reference.py (exact, manufactured or an independent generator), tolerance
# with the reason (measured through this same path on all the file's samples). The suite
# scores the first sample only (--max-samples 1: one of two or three samples): every
# bound holds there with a margin of 2.5 or more (measured 2026-11-29; allen_cahn_neumann1d
# 4.1e-8, shear_advection2d 4.9e-6, bbm_walls1d 2.4e-4), except the breather's (ALL_SAMPLES).
# The second number is the evaluation budget: 1 where Genesis' first design meets the bound
# with a margin of 4 or more on that sample (measured 2026-11-29 with one evaluation, in the
# comment as "first"); 3 where the tournament has to move past it (the judges' moves are what
# those runs check)
EXAMPLE_TOLERANCE = {
    # issue row 1: x- and t-forcing; pseudo-spectral ETDRK4 matches the 5x DOP853 run (9e-10;
    # first 2.1e-8)
    "forced_burgers1d": (1e-6, 1),
    # row 2: a two-point problem, variable conductivity, Robin end; the output grid's second
    # order gives 2.4e-4 at N = 128, a 3x grid with Richardson extrapolation 7.7e-8 (issue 19;
    # first 5.0e-8)
    "poisson1d": (1e-6, 1),
    # row 3: 2D steady, parameter kappa and constant c0, mixed sides; the output grid gives
    # 2.4e-3 at N = 32, a 3x grid with Richardson 2.9e-6 (the spline of the data f: 2.2e-6;
    # first 3.8e-6)
    "steady2d": (2e-5, 1),
    # row 4: u_tt rewritten to a first-order system, exact Fourier matrix exponential (4e-12)
    "wave1d": (1e-9, 1),
    # row 5: fourth order, spectral family; a 2x internal grid keeps all the data's modes (1.1e-5)
    "kuramoto_sivashinsky1d": (1e-4, 5),
    # row 6: 2D heat, exact propagator (4e-16)
    "heat2d": (1e-9, 1),
    # row 7: Dirichlet walls, exact sine-series propagator (3e-16)
    "heat_dirichlet1d": (1e-9, 1),
    # time-dependent Dirichlet inflow + Neumann outflow, nonlinear flux, FV with ghost cells (2.6e-4;
    # first 4.9e-7)
    "burgers_inflow1d": (2e-3, 1),
    # Neumann and Robin ends, x-dependent source: FV, second order at N = 128 (1.2e-4; first
    # 1.3e-7)
    "fisher_robin1d": (1e-3, 1),
    # 2D Burgers, pseudo-spectral against the generator's 4x-grid spectral run (1.4e-4; first
    # 2.5e-4)
    "burgers2d": (1e-3, 1),
    # 2D reaction-diffusion, pseudo-spectral (3.7e-5; first 2.2e-8)
    "allen_cahn2d": (1e-3, 1),
    # 2D advection-diffusion with forcing in x, y, t: exact with Duhamel's integral (6e-11;
    # first 7.2e-11)
    "advection_diffusion2d": (1e-8, 1),
    # the first-order wave system, exact matrix exponential per wavenumber (1.9e-14)
    "wave_system1d": (1e-9, 1),
    # issue 19 item 1: Maxwell TM in a PEC square, exact sine/cosine propagator (7e-15)
    "tm_cavity2d": (1e-11, 1),
    # items 1 and 2: 2D heat, time-dependent Dirichlet data on 17^2 nodes, method of lines,
    # best of three order-4/6 designs (1.6e-4; more evaluations move to finer grids: 3e-8)
    "heat_dirichlet2d": (1e-3, 3),
    # item 8: Allen-Cahn with Neumann walls, cosine pseudo-spectral (4.2e-9; FV reached 6e-5)
    "allen_cahn_neumann1d": (1e-7, 3),
    # item 7: Gross-Pitaevskii with walls, sine series with matrix ETDRK4 (7.1e-7; FV 3.8e-3)
    "gross_pitaevskii1d": (1e-5, 3),
    # item 8: 2D pseudo-spectral sampled at the points: 2x internal grid 5.0e-6 (truncated to the
    # data's modes, every refinement scored 4.4e-4)
    "shear_advection2d": (2e-5, 3),
    # issue 19 item 5, the forms users type (closed forms, Cole-Hopf, Radau on a 3x Fourier
    # grid: examples/tasks/reference_terms.py); measured through this path with 3 evaluations.
    # u*dx(u) as written, periodic: pseudo-spectral ETDRK4 (KdV 1.9e-8, viscous Burgers 5.9e-9)
    "kdv_soliton1d": (1e-6, 3),
    "burgers_nonconservative1d": (1e-7, 3),
    # u*dx(u) between Dirichlet walls: method of lines (3.0e-8; first 1.7e-7)
    "burgers_nonconservative_walls1d": (1e-6, 1),
    # a product of derivatives dx(u)**2 between Neumann walls: cosine series (6.5e-11)
    "kpz_neumann1d": (1e-9, 3),
    # tau*(dt(u) - nu*dx(u, 2)) + u: the bracket expanded, exact sine propagator (5.6e-16)
    "damped_heat_walls1d": (1e-12, 1),
    # a Piecewise source (the TypeError of the issue): exact sine propagator; the jump sampled
    # on 64 points bounds it (2.0e-4)
    "heater_piecewise1d": (1e-3, 1),
    # Sobolev-type dt(u - dx(u, 2)): periodic Fourier (1.3e-7), Dirichlet walls by the method of
    # lines with the operator inverted (2.0e-4)
    "bbm_soliton1d": (1e-6, 3),
    "bbm_walls1d": (1e-3, 3),
    # item 6: sine-Gordon (crashed in _coupled_rate): breather periodic (4.2e-5), kink between
    # Dirichlet walls u = 0, 2 pi (5.2e-6)
    "sine_gordon_breather1d": (2e-4, 3),
    "sine_gordon_kink1d": (5e-5, 3),
    # a mixed derivative dx(dy(u)), time-dependent Dirichlet data: method of lines (9.1e-8)
    "cross_diffusion2d": (1e-6, 3),
    # Cahn-Hilliard, fourth order nonlinear: semi-implicit pseudo-spectral, periodic (1.5e-9)
    # and cosine series between Neumann walls (2.7e-9)
    "cahn_hilliard1d": (1e-7, 3),
    "cahn_hilliard_neumann1d": (1e-7, 3),
    # issue 26 item 6, against Chebyshev collocation with Radau: Zakharov between walls, E = 0
    # and dx(n) = 0 (the method of lines took ~250 s per sample): the sine/cosine series, its
    # step bounded by the spectral radius of the jets' coupling (2 s per sample; 3.9e-6 and
    # 3.0e-8 for the first two designs; first 6.9e-7 on the first sample)
    "zakharov_walls1d": (1e-4, 1),
    # item 5: APEBench's viscous Burgers on 160 nodes, fronts two points wide (cell Peclet 2.0):
    # pseudo-spectral on a 2x grid sampled at the nodes, first design (3.7e-5; WENO5 4.4e-3;
    # first 1.5e-5 on the first sample)
    "apebench_burgers1d": (1e-4, 1),
}


# the breather's first sample alone scores 4.6e-4, over the bound 2e-4 that its three samples
# meet together (4.2e-5): it keeps them all
ALL_SAMPLES = {"sine_gordon_breather1d"}


@pytest.mark.parametrize("name", sorted(EXAMPLE_TOLERANCE))
def test_example_task_through_the_real_pipeline(name, tmp_path, monkeypatch, example_data):
    tol, evals = EXAMPLE_TOLERANCE[name]
    # no audit: these check the designs' accuracy; a 2D example's audit alone takes about a
    # minute (the floor and `auto` on the default path: test_default_path_fresh.py)
    samples = () if name in ALL_SAMPLES else ("--max-samples", "1")
    code, summary, run = solve(tmp_path, monkeypatch, str(EXAMPLES / f"{name}.yaml"),
                               "--dev-data", str(example_data / name / "dev.hdf5"),
                               "--audit", "off", *samples, evals=evals)
    assert code == 0, summary
    assert summary["best_dev_score"] < tol, summary
    assert standalone(run / "best_solver.py")


def test_ucm_start_up_of_channel_flow_between_walls(tmp_path, monkeypatch, example_data):
    """Issue 26 item 6: an upper-convected Maxwell fluid starting up in a channel (velocity,
    shear and normal stress; the stresses have no wall condition), against Chebyshev
    collocation with Radau. The method of lines of order 6 (7.6e-7 on the full window of two
    samples, 1.7e-7 with a 3x grid); here the first half of the window of one sample, so the
    test stays short (the full window takes ~8 s per sample and evaluation)."""
    data = short_copy(example_data / "ucm_startup1d" / "dev.hdf5", tmp_path / "ucm.hdf5",
                      str(EXAMPLES / "ucm_startup1d.yaml"), frames=6)
    code, summary, run = solve(tmp_path, monkeypatch, str(EXAMPLES / "ucm_startup1d.yaml"),
                               "--dev-data", str(data), "--audit", "off", evals=2)
    assert code == 0, summary
    assert summary["best_dev_score"] < 1e-4, summary  # 2.2e-2 in the issue
    assert standalone(run / "best_solver.py")


# issue 19, items 3 and 4: steady problems given by formulas, the solver taking the grid (one
# problem, no batch axis); references are closed forms (examples/tasks/reference_steady.py).
# Chebyshev collocation is exact to round-off (measured through this path). It comes first,
# so one evaluation (and the test split's) decides, except for the Peclet-100 layers, where the
# first design scores 1.2e-5 and the judges refine it
STEADY_TOLERANCE = {
    "poisson_formula2d": 1e-10,  # the formula source (1.1e-14)
    "convection_diffusion2d": 1e-10,  # Pe = 100 layers, node grid: degree 64 (6.1e-15)
    "helmholtz2d": 1e-10,  # indefinite, Neumann and Robin sides (1.1e-13)
    "reaction_nonlinear1d": 1e-10,  # Newton, node grid, Neumann and Robin ends (2.7e-13)
}
STEADY_EVALS = {"convection_diffusion2d": 3}  # the others: 1


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(STEADY_TOLERANCE))
def test_steady_formula_task_through_the_real_pipeline(name, tmp_path, monkeypatch,
                                                       example_data):
    code, summary, run = solve(tmp_path, monkeypatch, str(EXAMPLES / f"{name}.yaml"),
                               "--dev-data", str(example_data / name / "dev.hdf5"),
                               "--test-data", str(example_data / name / "test.hdf5"),
                               evals=STEADY_EVALS.get(name, 1))
    assert code == 0, summary
    assert summary["best_dev_score"] < STEADY_TOLERANCE[name], summary
    # the test file has another N (64 against 50; 200 against 128): the solver takes any grid
    assert summary["test_nrmse"] < STEADY_TOLERANCE[name], summary
    assert standalone(run / "best_solver.py")


@pytest.mark.slow
def test_the_judges_go_past_the_output_grids_error_on_a_conductivity_jump(tmp_path, monkeypatch,
                                                                          example_data):
    """A jump of 10^6 across x = 1/2, a coefficient field: the five-point stencil with harmonic
    means stops at the smooth part's h^2 (1.1e-3 at N = 50); the judges move to a 3x grid
    (1.2e-4) and Richardson extrapolation (7.7e-8), each an improvement (round 1 proposes on
    the judges' own nominees, before the harmonic design's score is known; rounds 2 and 3 move
    from it)."""
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    out = tmp_path / "runs"
    name = "kappa_jump2d"
    argv = ["solve", str(EXAMPLES / f"{name}.yaml"), "--out", str(out), "--run-id", "r",
            "--quiet", "--no-convergence", "--candidates", "3", "--max-evals", "12",
            "--max-rounds", "3", "--rejudge-cycles", "0",
            "--dev-data", str(example_data / name / "dev.hdf5")]
    assert main(argv) in (0, None)
    summary = json.loads((out / "r" / "summary.json").read_text())
    assert summary["best_dev_score"] < 1e-6, summary
    best = (out / "r" / "best_solver.py").read_text()
    assert "REFINE = 3" in best and 'EXTRAPOLATE = "richardson"' in best


@pytest.mark.slow
def test_the_judges_refine_the_cells_of_a_riemann_problem_between_walls(tmp_path, monkeypatch,
                                                                       example_data):
    """Issue 19 item 7: Sod, Lax and a random Riemann problem between walls, against the exact
    solutions averaged over the cells. The discontinuities bound every scheme on the output
    grid (WENO5 1.5e-2 at N = 256, where the issue saw 3e-2); the judges move to finer internal
    grids, averaged back conservatively, each round halving the error (first order at a
    shock): 8.0e-3 with 2x, 3.5e-3 with 4x. Every judge refines a Riemann problem first, the
    robust one by a 4x leap off the output grid (issue 26), so round 1 already reaches 4x and
    round 2 8x (1.6e-3 in 8 evaluations; 66 s per sample, measured outside the suite).
    The suite runs Sod alone (the file's first sample) for one round: 3.7e-3 at 4x in 4
    evaluations (two rounds: 1.7e-3 at 8x in 6, twice the time). The bound 5e-3 sits between
    the 4x error and the 2x one (8.0e-3): it holds only if round 1 went past 2x."""
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    out = tmp_path / "runs"
    argv = ["solve", str(EXAMPLES / "sod1d.yaml"), "--out", str(out), "--run-id", "r",
            "--quiet", "--no-convergence", "--candidates", "3", "--max-evals", "4",
            "--max-rounds", "1", "--rejudge-cycles", "0", "--max-samples", "1",
            "--dev-data", str(example_data / "sod1d" / "dev.hdf5")]
    assert main(argv) in (0, None)
    summary = json.loads((out / "r" / "summary.json").read_text())
    assert summary["best_dev_score"] < 5e-3, summary
    best = (out / "r" / "best_solver.py").read_text()
    assert "REFINE = 4" in best or "REFINE = 8" in best


def test_a_run_where_no_solver_runs_fails_honestly(tmp_path, monkeypatch, shared_data, capsys):
    # every evaluation times out (0.05 s cannot even start the sandboxed child): nothing usable.
    # The judges debug the failed exact propagator first (this once ended the run with a
    # KeyError on a GRID constant the design does not have).
    code, summary, run = solve(tmp_path, monkeypatch, "advection", "--data-dir", str(shared_data),
                               "--max-samples", "1", "--timeout", "0.05", "--debug-attempts", "1",
                               evals=3)
    err = capsys.readouterr()
    assert code == 1 and summary["debug_iterations"] >= 1
    assert not (run / "logs" / "error.log").exists()
    assert summary["status"] in ("failed", "budget_stop") and summary["best_id"] is None
    assert "no solver executed successfully" in summary["test_note"]
    assert "timeout" in summary["test_note"]
    assert "no solver ran successfully" in err.err + err.out
    assert not (run / "best_solver.py").exists()


def test_an_unsupported_pde_is_refused_with_the_construct_named(tmp_path, monkeypatch, capsys,
                                                                shared_data):
    spec = load_task("burgers").model_dump(mode="json")
    spec["name"] = "nonlinear_dispersion"
    spec["equation"]["equations"] = ["dt(u) + u*dx(u, 3)"]
    path = tmp_path / "nd.yaml"
    import yaml

    path.write_text(yaml.safe_dump(spec))
    code, summary, _ = solve(tmp_path, monkeypatch, str(path), "--dev-data",
                             str(shared_data / "burgers_dev.hdf5"))
    err = capsys.readouterr().err
    assert code not in (0, None) and not summary
    assert "the term -u*dx(u, 3) in dt(u)" in err and "steps to t = " in err
    assert "--model openai:gpt-4o" in err and "Traceback" not in err
