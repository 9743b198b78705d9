"""Genesis: generated solvers compile, have the task's exact signature, import only NumPy/SciPy,
are distinct designs, and (a few of them) run accurately on short windows of the dev data."""

from __future__ import annotations

import ast
import asyncio
import sys

import pytest
from builtin_helpers import nrmse, read_h5, run_solver

from pdesharp.builtin import BuiltinAnalyst, BuiltinAuthor, DataBounds
from pdesharp.builtin.author import render
from pdesharp.builtin.families import family
from pdesharp.task import load_task, task_from_dict

BOUNDS = {
    "advection": {"u": (-1.0, 1.0)}, "burgers": {"u": (-1.0, 1.0)}, "reacdiff1d": {"u": (0.0, 1.0)},
    "cns1d": {"rho": (1.0, 10.0), "v": (-2.0, 2.0), "p": (10.0, 100.0)}, "darcy": {"u": (0.0, 0.02)},
}


def _candidates(name, n=6):
    task = load_task(name)
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields=BOUNDS[name])).analyse_sync(task)
    return task, asyncio.run(BuiltinAuthor().write(task, analysis, n))


@pytest.mark.parametrize("name", ["advection", "burgers", "reacdiff1d", "cns1d", "darcy"])
def test_candidates_compile_with_the_exact_signature(name):
    task, cands = _candidates(name)
    assert len(cands) >= 2
    assert len({c.code for c in cands}) == len(cands)  # distinct designs, not copies
    for c in cands:
        tree = ast.parse(c.code)
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == task.solver.name)
        assert [a.arg for a in fn.args.args] == [a.name for a in task.solver.args]
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module)])}
        # numba: compiled kernels; the standard library (the 2D spectral transforms read the
        # thread budget through os): a user runs the file without pdesharp
        assert imported - set(sys.stdlib_module_names) <= {"numpy", "scipy", "numba"}, imported
        assert c.origin == "genesis" and c.title
        # nothing may branch on the task's identity
        assert task.name not in c.code.lower().replace(task.title.lower(), "")


def test_advection_exact_and_muscl_on_a_short_window(shared_data):
    task = load_task("advection")
    ref = read_h5(shared_data / "advection_dev.hdf5", samples=2, frames=21)
    errors = {}
    for d in (family("exact").design(), family("fv").design(
            RECONSTRUCTION="muscl", LIMITER="mc", RIEMANN="rusanov", INTEGRATOR="rk2mid", CFL=0.4)):
        pred, r = run_solver(render(task, d), task, ref, ref["t-coordinate"])
        assert pred.shape == r.shape
        errors[d.family] = nrmse(pred, r)
    # the reference is PDEBench's MUSCL solution: the exact shift differs from it by its own
    # truncation error (~1e-3 over the full window, less over 0.2 time units), while the same
    # scheme family at the data's CFL reproduces it to float32 level (measured ~5e-6)
    assert errors["exact"] < 2e-3
    assert errors["fv"] < 5e-5


def test_reaction_diffusion_split_design_is_accurate(shared_data):
    task = load_task("reacdiff1d")
    ref = read_h5(shared_data / "reacdiff1d_dev.hdf5", samples=2, frames=31)
    pred, r = run_solver(render(task, family("split").design(SYMBOL="fd2", SPLIT_DT=0.0025)), task,
                         ref, ref["t-coordinate"])
    # exact FD2 diffusion + exact logistic step, Strang error O(dt^2) with dt = 2.5e-3: measured
    # 1.3e-5 over the whole window; the published best is 2.3e-3
    assert nrmse(pred, r) < 1e-4


def test_darcy_designs_on_one_sample(shared_data):
    task = load_task("darcy")
    ref = read_h5(shared_data / "darcy_dev.hdf5", samples=1)
    cells = run_solver(render(task, family("elliptic").design(GRID="cells")), task, ref)
    # 5-point finite volumes on the cell centres, arithmetic face means: the shared README measured
    # 1.6e-4 for this discretisation; seeds that put u = 0 on the outer ring sit at 4.8e-3
    assert nrmse(cells[0][..., 0], cells[1][..., 0]) < 1e-3
    nodes = run_solver(render(task, family("elliptic").design(GRID="nodes")), task, ref)
    # splines to a node grid, five points, arithmetic face means, splines back: the method the
    # reference was made with (shared README), so only the float32 storage of the data remains
    # (measured 2.5e-8); 1e-6 is far below any other discretisation (1e-4 and up)
    assert nrmse(nodes[0][..., 0], nodes[1][..., 0]) < 1e-6


def test_cns_runs_and_returns_the_right_shapes(shared_data):
    task = load_task("cns1d")
    ref = read_h5(shared_data / "cns1d_dev.hdf5", samples=1, frames=3)
    d = family("fv").design(RECONSTRUCTION="muscl", LIMITER="mc", RIEMANN="hll",
                            INTEGRATOR="rk2mid", CFL=0.3, VISCOUS="trbdf2")
    pred, r = run_solver(render(task, d), task, ref, ref["t-coordinate"])
    assert pred.shape == r.shape
    # two output steps (t = 0.02), the viscous part implicit (TR-BDF2): the stacked (v, rho, p)
    # error stays small (measured 1.7e-4; the explicit design gives the same)
    assert nrmse(pred, r) < 2e-3


@pytest.mark.parametrize("name,source,exact", [
    ("reacdiff1d", None, True),
    ("examples/tasks/allen_cahn1d.yaml", None, True),  # u - u**3: Bernoulli, in closed form
    ("examples/tasks/allen_cahn1d.yaml", "u - u**3 + 0.1", False),  # no closed form tried
])
def test_split_titles_match_the_code(name, source, exact):
    from builtin_helpers import EXAMPLES

    task = load_task(EXAMPLES.parent.parent / name if name.endswith(".yaml") else name)
    if source is not None:
        spec = task.model_dump(mode="json")
        spec["equation"]["equations"] = [f"dt(u) - epsilon**2*dx(u, 2) - ({source})"]
        task = task_from_dict(spec)
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (-1.0, 1.0)})).analyse_sync(task)
    split = [c for c in asyncio.run(BuiltinAuthor().write(task, analysis, 8)) if "Strang" in c.title]
    assert split
    for c in split:
        assert f"SOURCE_EXACT = {exact}" in c.code
        assert ("exact source step" in c.title) == exact
        assert ("RK4 source sub-steps" in c.title) == (not exact)
