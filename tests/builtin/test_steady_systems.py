"""Steady systems of several unknowns and side conditions that couple unknowns (issue 26, item
2): Stokes flow with a pressure, a Timoshenko beam with a coupled free-end condition, a linear
marching problem; through `pdesharp solve` with no model (real pipeline, real sandbox) against
closed forms (examples/tasks/reference_constraints.py, and manufactured solutions here)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from pdesharp.boundary import BoundaryError, task_boundary
from pdesharp.builtin.author import problem, render
from pdesharp.builtin.families import candidate_designs
from pdesharp.builtin.support import support
from pdesharp.cli import main
from pdesharp.data.generate.generic import check_task, generate_task
from pdesharp.data.generate.generic_symbolic import UnsupportedTask as GeneratorRefusal
from pdesharp.task import load_task, task_from_dict

from builtin_helpers import EXAMPLES

# Chebyshev collocation of analytic solutions: round-off once the degree resolves them
# (measured through this path: Stokes 2.2e-14 at degree 20, the beam 1.6e-15); the bound is
# the reference files' float64 round-off times the collocation matrices' condition (~N^4 for
# second derivatives, 1e5 at N = 20) with a margin
EXAMPLES_TOL = {"stokes2d": 1e-9, "timoshenko_beam1d": 1e-9}


@pytest.mark.parametrize("name", sorted(EXAMPLES_TOL))
def test_steady_system_through_the_real_pipeline(name, tmp_path, monkeypatch, example_data):
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    out = tmp_path / "runs"
    argv = ["solve", str(EXAMPLES / f"{name}.yaml"), "--out", str(out), "--run-id", "r",
            "--quiet", "--no-convergence", "--candidates", "2", "--max-evals", "2",
            "--max-rounds", "1", "--rejudge-cycles", "0", "--audit", "off",
            "--dev-data", str(example_data / name / "dev.hdf5")]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    summary = json.loads((out / "r" / "summary.json").read_text())
    assert code == 0, summary
    assert summary["best_dev_score"] < EXAMPLES_TOL[name], summary


def test_coupled_conditions_are_read_and_refused_where_they_do_not_belong():
    beam = load_task(EXAMPLES / "timoshenko_beam1d.yaml")
    spec = task_boundary(beam, coupled=True)
    shear = [c for c in spec.conditions if c.others]
    assert len(shear) == 1 and shear[0].unknown == "w" and shear[0].others[0][0] == "theta"
    with pytest.raises(BoundaryError, match="steady systems only"):
        task_boundary(beam)  # every reader but the steady-system one keeps refusing them
    # a time-dependent task with a coupled condition: one line, the same from both commands
    task = task_from_dict({"name": "c", "equation": ["dt(u) = dx(u, 2) + dx(v, 2)",
                                                     "dt(v) = dx(v, 2)"],
                           "domain": {"x": [0, 1]}, "boundary": "dirichlet: u - v = 0, v = 0",
                           "time_span": [0, 1], "n_frames": 3}, "t")
    got = support(task)
    assert not got.supported and "steady systems only" in got.reason
    with pytest.raises(GeneratorRefusal, match="steady systems only"):
        check_task(task)


def _steady(equations, unknowns, boundary, params=None, space=("x", "y")):
    return task_from_dict({"name": "s", "equation": {"unknowns": unknowns, "time": None,
                                                     "equations": equations},
                           "parameters": params or {}, "domain": {a: [0, 1] for a in space},
                           "boundary": boundary}, "t")


def test_linear_marching_system_is_solved_and_generated():
    """u_x + u_y = nu u_yy + f with u given at x = 0 only (x marches), v from dx(u) + dy(v) = 0
    with v given at y = 0 only: manufactured from a stream function."""
    x, y = sp.symbols("x y", real=True)
    nu = 0.05
    psi = (y**2 - y**3 / 3) * (1 + sp.exp(-x) / 2)
    u, v = sp.diff(psi, y), -sp.diff(psi, x)
    f = sp.simplify(sp.diff(u, x) + sp.diff(u, y) - nu * sp.diff(u, y, 2))
    bc = (f"x = 0: u = {sp.simplify(u.subs(x, 0))}; y = 0: u = 0, v = 0;"
          f" y = 1: u = {sp.simplify(u.subs(y, 1))}")
    task = _steady([f"dx(u) + dy(u) = nu*dy(u, 2) + {f}", "dx(u) + dy(v) = 0"], ["u", "v"], bc,
                   {"nu": nu})
    got = support(task)
    assert got.supported, got.reason
    p = problem(task)
    ns: dict = {}
    exec(compile(render(task, candidate_designs(p)[0], p), "<marching>", "exec"), ns)
    xc = (np.arange(16) + 0.5) / 16
    X, Y = np.meshgrid(xc, xc, indexing="ij")
    U, V = ns["solver"]((xc, xc), nu)
    # an analytic solution: collocation at degree 20 is at round-off (measured 5e-15)
    assert np.abs(U - sp.lambdify((x, y), u)(X, Y)).max() < 1e-9
    assert np.abs(V - sp.lambdify((x, y), v)(X, Y)).max() < 1e-9
    data = generate_task(task, 1, seed=0, nx=16)
    assert np.abs(data["v"][0] - sp.lambdify((x, y), v)(X, Y)).max() < 1e-9


def test_nonlinear_marching_is_refused_by_both_commands():
    task = _steady(["u*dx(u) + v*dy(u) = nu*dy(u, 2)", "dx(u) + dy(v) = 0"], ["u", "v"],
                   "x = 0: u = y; y = 0: u = 0, v = 0; y = 1: u = 1", {"nu": 0.05})
    got = support(task)
    assert not got.supported and "marching direction" in got.reason
    with pytest.raises(GeneratorRefusal, match="marching direction"):
        check_task(task)
