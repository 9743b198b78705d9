"""The solver argument of kind ``grid`` (issue 19, item 3): the task format, the value the
sealed child receives (``x`` in 1D, the tuple ``(x, y)`` in 2D), one problem without a batch
axis, the convergence test's subsampled grids, the facts the prompts state, and a data file
whose stored coordinates are not the task's grid."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from pdesharp.evaluate import Evaluator
from pdesharp.evaluate.child import solver_args
from pdesharp.evaluate.convergence import plan
from pdesharp.evaluate.spec import ChildSpec
from pdesharp.facts import TaskFacts, read_data_facts
from pdesharp.grid import grid_value, output_grid
from pdesharp.prompting import facts_block
from pdesharp.task import TaskError, load_task, task_from_dict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
DATA = Path(__file__).resolve().parents[1] / "builtin" / "data"


def _spec(args, grid="cell_centres", space=("x", "y"), **extra):
    spec = {"name": "g", "title": "g", "description": "d",
            "equation": {"unknowns": ["u"], "space": list(space), "time": None,
                         "equations": ["-dx(u, 2) - dy(u, 2) = sin(pi*x)*sin(pi*y)"
                                       if len(space) == 2 else "-dx(u, 2) = sin(pi*x)"]},
            "domain": {a: [0.0, 1.0] for a in space}, "grid": grid,
            "boundary": "dirichlet: u = 0",
            "solver": {"args": args, "returns": ["u"], "template": "def solver(grid): ..."},
            "data": {"fields": {"u": "sol"}, "t_key": None}}
    spec.update(extra)
    return spec


def test_a_grid_argument_is_one_at_most_and_names_no_field():
    task = task_from_dict(_spec([{"name": "grid", "kind": "grid"}]))
    assert not task.batched  # no initial or coefficient input: one problem
    with pytest.raises(TaskError, match="at most one of kind 'grid'"):
        task_from_dict(_spec([{"name": "g1", "kind": "grid"}, {"name": "g2", "kind": "grid"}]))
    with pytest.raises(TaskError, match="takes no field"):
        task_from_dict(_spec([{"name": "grid", "kind": "grid", "field": "u"}]))


@pytest.mark.parametrize("grid,expected", [
    ("cell_centres", [0.125, 0.375, 0.625, 0.875]),  # (i + 1/2)/N
    ("nodes", [0.0, 1 / 3, 2 / 3, 1.0]),  # i/(N - 1), both ends
])
def test_the_grid_value_is_the_output_grid_of_the_convention(grid, expected):
    task = task_from_dict(_spec([{"name": "grid", "kind": "grid"}], grid=grid))
    x, y = grid_value(task, (4, 3))
    assert np.allclose(x, expected) and len(y) == 3 and x.dtype == np.float64
    one = task_from_dict(_spec([{"name": "x", "kind": "grid"}], grid=grid, space=("x",)))
    assert np.allclose(grid_value(one, (4,)), expected)  # 1D: the array itself, no tuple


@pytest.mark.parametrize("grid,expected", [
    ("cell_centres", [0.125, 0.375, 0.625, 0.875]),
    ("nodes", [0.0, 1 / 3, 2 / 3, 1.0]),
])
def test_every_consumer_of_the_convention_asks_pdesharp_grid(grid, expected, monkeypatch):
    # the facts' sentence, the residual's coordinates and the generator's grid agree with the
    # one module; a changed convention there changes them all (one place, not four copies)
    from pdesharp import grid as conventions
    from pdesharp.data.generate.generic import output_grid as generator_grid
    from pdesharp.evaluate.residual import _Evaluator as _Fields
    from pdesharp.facts import DataFacts, grid_sentence

    one = task_from_dict(_spec([{"name": "x", "kind": "grid"}], grid=grid, space=("x",)))
    assert np.allclose(generator_grid(one, 4)[0], expected)
    h = 0.25 if grid == "cell_centres" else 1 / 3
    assert f"i = 0..N-1, dx = 1/{round(1 / h)}" in grid_sentence(one, DataFacts(n_samples=1, grid={"x": 4}))
    ref = type("Ref", (), {"x": None, "t": None, "coefficients": {}})()
    f = _Fields(one, {"u": np.zeros((1, 4))}, ref)
    assert np.allclose(f.coords["x"].ravel(), expected) and f.h["x"] == pytest.approx(h)
    shifted = conventions.Convention(grid, "points", 0.25, "(i + 1/4)", False)
    monkeypatch.setitem(conventions.CONVENTIONS, grid, shifted)
    moved = [0.0625, 0.3125, 0.5625, 0.8125]
    assert np.allclose(generator_grid(one, 4)[0], moved)
    assert np.allclose(_Fields(one, {"u": np.zeros((1, 4))}, ref).coords["x"].ravel(), moved)
    assert "N = 4 points x_i = (i + 1/4)·dx" in grid_sentence(one, DataFacts(n_samples=1, grid={"x": 4}))


def test_the_child_receives_x_in_1d_and_the_tuple_x_y_in_2d():
    two = ChildSpec.from_task(task_from_dict(_spec([{"name": "grid", "kind": "grid"}])))
    one = ChildSpec.from_task(task_from_dict(_spec([{"name": "x", "kind": "grid"}],
                                                   space=("x",))))
    assert two.arg_refs() == [("arrays", ["grid:x", "grid:y"])]
    assert one.arg_refs() == [("array", "grid:x")]
    inputs = {"grid:x": np.arange(3.0), "grid:y": np.arange(2.0)}
    (xy,) = solver_args([list(r) for r in two.arg_refs()], inputs)  # as the JSON job has them
    assert isinstance(xy, tuple) and [len(a) for a in xy] == [3, 2]
    (x,) = solver_args([list(r) for r in one.arg_refs()], inputs)
    assert x is inputs["grid:x"]


GRID_SOLVER = '''
import numpy as np

def solver(grid, kappa):
    x, y = grid
    X, Y = np.meshgrid(x, y, indexing="ij")
    return np.sin(np.pi * X) * np.sin(np.pi * Y) / kappa
'''


def test_a_grid_solver_is_scored_in_the_sandbox_without_a_batch_axis():
    """The closed form at the grid the evaluator passes: the reference to round-off; the
    sealed child got float64 coordinates of the task's cell centres (else the error would be
    ~1e-2 or a shape error)."""
    task = load_task(EXAMPLES / "poisson_formula2d.yaml")
    ev = Evaluator(task, dev_data=DATA / "poisson_formula2d" / "dev.hdf5", convergence=False,
                   residual=True, timeout=300)
    r = ev.evaluate_sync(GRID_SOLVER, split="dev", feedback="nrmse")
    assert r.status == "ok", r.message
    assert r.nrmse < 1e-14  # float64 closed form against itself
    assert r.residual is not None and r.residual < 1e-2  # second differences of the output
    batched = GRID_SOLVER.replace("return np.sin", "return (np.sin").replace("/ kappa", "/ kappa)[None]")
    r = ev.evaluate_sync(batched, split="dev", feedback="nrmse")
    assert r.status == "shape" and "(50, 50)" in r.message  # one problem: [N, N] expected


def test_a_solver_that_overwrites_its_grid_cannot_change_where_it_is_scored():
    """Hostile: the child's copy of the grid is its own; the parent's reference and the
    next evaluation's inputs are untouched."""
    task = load_task(EXAMPLES / "poisson_formula2d.yaml")
    ev = Evaluator(task, dev_data=DATA / "poisson_formula2d" / "dev.hdf5", convergence=False,
                   residual=False, timeout=300)
    hostile = GRID_SOLVER.replace("    x, y = grid\n", "    x, y = grid\n    x[:] = 0.5\n    y[:] = 0.5\n")
    r = ev.evaluate_sync(hostile, split="dev", feedback="nrmse")
    assert r.status == "ok" and r.nrmse > 0.5  # scored on the true grid: a constant is wrong
    r = ev.evaluate_sync(GRID_SOLVER, split="dev", feedback="nrmse")
    assert r.nrmse < 1e-14


def test_a_data_file_whose_coordinates_are_not_the_task_grid_is_refused(tmp_path):
    from pdesharp.data.reference import DataError

    task = load_task(EXAMPLES / "poisson_formula2d.yaml")
    bad = tmp_path / "dev.hdf5"
    with h5py.File(DATA / "poisson_formula2d" / "dev.hdf5") as src, h5py.File(bad, "w") as out:
        out["sol"] = src["sol"][:]
        out["x-coordinate"] = np.linspace(0.0, 1.0, 50)  # nodes, but the task says cell centres
    ev = Evaluator(task, dev_data=bad, convergence=False, residual=False, timeout=300)
    with pytest.raises(DataError, match="not the task's output grid"):
        ev.inputs(ev.reference("dev"))


def test_the_convergence_test_passes_the_subsampled_grid_with_the_fields():
    task = task_from_dict(_spec([{"name": "a", "kind": "coefficient", "field": "a"},
                                 {"name": "grid", "kind": "grid"}],
                                evaluation={"convergence": {"kind": "downsample_2d",
                                                            "rates": [4, 2], "batch": 1}},
                                data={"fields": {"u": "sol"}, "coefficients": {"a": "a"},
                                      "t_key": None})
                           | {"equation": {"unknowns": ["u"], "coefficients": ["a"],
                                           "space": ["x", "y"], "time": None,
                                           "equations": ["-dx(a*dx(u)) - dy(a*dy(u)) - 1"]}})
    spec = ChildSpec.from_task(task)
    x, y = output_grid(task, (16, 16))
    inputs = {"coefficient:a": np.ones((2, 16, 16)), "grid:x": x, "grid:y": y}
    p = plan(spec, inputs, [np.zeros((2, 16, 16))])
    for (case, shape), r in zip(p.cases, [4, 2]):
        assert np.array_equal(case["grid:x"], x[::r]) and case["coefficient:a"].shape == (1, 16 // r, 16 // r)
        assert shape == (1, 16 // r, 16 // r)


def test_the_facts_state_the_grid_argument_and_the_unbatched_output():
    task = load_task(EXAMPLES / "poisson_formula2d.yaml")
    data = read_data_facts(task, dev_data=DATA / "poisson_formula2d" / "dev.hdf5")
    arg = next(a for a in data.args if a.kind == "grid")
    assert arg.shape == [50, 50] and "tuple (x, y)" in arg.text and "indexing=\"ij\"" in arg.text
    assert data.output_shape == [50, 50]  # no batch axis
    facts = TaskFacts.from_spec(task)
    facts.data = data
    text = facts_block(task, facts)
    assert "`grid`: a tuple (x, y) of float64 arrays of shapes [50] and [50]" in text
    assert "one problem: no input and no output has a batch axis" in text
    assert "of shape [50, 50]" in text
