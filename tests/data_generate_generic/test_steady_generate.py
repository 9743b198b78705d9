"""The steady generator (pdesharp.data.generate.steady): one problem given by formulas, solved by
Chebyshev collocation from the task's own equation, checked against closed forms."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from pdesharp.cli import main
from pdesharp.data.generate.steady import UnsupportedTask, generate_steady, solve_steady
from pdesharp.evaluate import Evaluator
from pdesharp.grid import output_grid
from pdesharp.task import load_task, task_from_dict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


def layer(s, eps=0.01):
    return s - (np.exp((s - 1) / eps) - np.exp(-1 / eps)) / (1 - np.exp(-1 / eps))


def _task(equation, boundary="dirichlet: u = 0", space=("x", "y"), grid="cell_centres", **eq):
    return task_from_dict({
        "name": "s", "title": "s", "description": "d",
        "equation": {"unknowns": ["u"], "equations": [equation], "space": list(space),
                     "time": None, **eq},
        "domain": {a: [0.0, 1.0] for a in space}, "grid": grid, "boundary": boundary,
        "solver": {"args": [{"name": "grid", "kind": "grid"}] if not eq else
                   [{"name": "f", "kind": "coefficient", "field": "f"}],
                   "returns": ["u"], "template": "def solver(grid): ..."},
        "data": {"fields": {"u": "sol"}, "t_key": None}})


@pytest.mark.parametrize("name,exact,tol", [
    # Pe = 100 boundary layers; the degree grows until two agree to 1e-10 (measured 2e-15)
    ("convection_diffusion2d", lambda x, y: layer(x)[:, None] * layer(y)[None, :], 1e-10),
    # Newton for u^3, Neumann and Robin ends on nodes
    ("reaction_nonlinear1d", lambda x: np.cos(np.pi * x / 2) + x**2, 1e-10),
    # mixed Dirichlet / Neumann / Robin sides with data varying along them
    ("helmholtz2d", lambda x, y: np.sin(np.pi * x)[:, None] * (np.cos(2 * y) + y)[None, :], 1e-10),
])
def test_the_steady_generator_matches_the_closed_forms(name, exact, tol):
    task = load_task(EXAMPLES / f"{name}.yaml")
    info: dict = {}
    out = generate_steady(task, 2, nx=24, info=info)
    pts = output_grid(task, (24,) * len(task.equation.space))
    ref = exact(*pts)
    assert out["sol"].shape == (2, *ref.shape)  # copies of the one problem
    assert np.max(np.abs(out["sol"][1] - ref)) <= tol * np.max(np.abs(ref))
    assert info["converged"] and info["change"] <= 1e-10
    assert np.array_equal(out["x-coordinate"], pts[0])


def test_the_generator_solves_a_mixed_derivative_the_catalogue_refuses():
    # -lap u - dx(dy(u))/2 = f for u = sin(pi x) sin(pi y): the generator is not limited to the
    # built-in analyst's class
    task = _task("-dx(u, 2) - dy(u, 2) - dx(dy(u))/2 = 2*pi**2*sin(pi*x)*sin(pi*y)"
                 " - pi**2*cos(pi*x)*cos(pi*y)/2", grid="nodes")
    pts = output_grid(task, (20, 20))
    u = solve_steady(task, pts)
    assert np.max(np.abs(u - np.outer(np.sin(np.pi * pts[0]), np.sin(np.pi * pts[1])))) < 1e-10


def test_a_steady_task_with_coefficient_fields_is_refused_with_the_reason():
    task = _task("-dx(u, 2) - f", space=("x",), coefficients=["f"])
    with pytest.raises(UnsupportedTask, match="coefficient fields"):
        generate_steady(task, 1)


def test_data_generate_writes_a_file_the_evaluator_scores(tmp_path):
    """`pdesharp data generate` on a formula task, then a solver given the grid is scored
    against it in the sandbox."""
    path = EXAMPLES / "convection_diffusion1d.yaml"
    out = tmp_path / "dev.hdf5"
    code = main(["data", "generate", str(path), "--samples", "1", "--seed", "0", "--nx", "64",
                 "--out", str(out)])
    assert code in (0, None)
    with h5py.File(out) as h5:
        x = h5["x-coordinate"][:]
        # files store float32, as PDEBench's do: the solution's rounding (6e-8) remains
        assert np.max(np.abs(h5["sol"][0] - layer(x))) < 1e-7
        assert "Chebyshev" in str(h5.attrs["scheme_name"])
    solver = ("import numpy as np\n\ndef solver(x, eps):\n"
              "    return x - (np.exp((x - 1) / eps) - np.exp(-1 / eps)) / (1 - np.exp(-1 / eps))\n")
    ev = Evaluator(load_task(path), dev_data=out, convergence=False, residual=False, timeout=300)
    r = ev.evaluate_sync(solver, split="dev", feedback="nrmse")
    assert r.status == "ok" and r.nrmse < 1e-7
