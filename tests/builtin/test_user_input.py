"""Issue 26 item 7: what users bring that does not fit, refused in one line saying what to write:
data made for another task, boundaries that leave a side out or name an unknown the task lacks,
and shipped examples whose reference data `pdesharp data generate` cannot make."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import yaml

from pdesharp.builtin.support import support
from pdesharp.cli import main
from pdesharp.data.generate.generic import verdict
from pdesharp.task import load_task, task_from_dict

from builtin_helpers import EXAMPLES


def _task(equation="dt(u) = 0.01*laplace(u)", boundary="periodic", dim=2) -> dict:
    return {"name": "walls", "equation": equation, "domain": {a: [0, 1] for a in "xy"[:dim]},
            "boundary": boundary, "time_span": [0, 0.5], "n_frames": 6}


def test_data_of_another_dimension_is_refused_before_any_solver_runs(tmp_path, capsys,
                                                                      monkeypatch):
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(_task()))
    with h5py.File(tmp_path / "dev.hdf5", "w") as h5:  # 1D data for the 2D task
        h5["tensor"], h5["t-coordinate"] = np.zeros((2, 6, 32)), np.linspace(0, 0.5, 6)
    with pytest.raises(SystemExit) as stop:
        main(["solve", str(path), "--dev-data", str(tmp_path / "dev.hdf5"), "--out",
              str(tmp_path / "runs"), "--run-id", "r"])
    assert stop.value.code != 0
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and "has shape [1, 6, 32], 1 space axis" in err[0], err
    assert "is 2D (x, y) and needs [batch, frames, N, N]" in err[0]
    assert not (tmp_path / "runs" / "r").exists()  # refused before a run folder or a solver


@pytest.mark.parametrize("dim,boundary,said", [
    # a 2D box with walls on x only: y says nothing
    (2, "x = 0: u = 0; x = 1: u = 0", "no condition for u at y = lo and y = hi, and the"
     " equation has dy(u, 2): give one per end, e.g. 'y = lo: u = 0; y = hi: dy(u) = 0', or"
     " make y periodic"),
    (2, "periodic in x", "no condition for u at y = lo and y = hi"),
    # one end of a diffusion problem
    (1, "x = 0: u = 0", "no condition for u at x = hi, and the equation has dx(u, 2)"),
    # an unknown the task lacks
    (1, "dirichlet: v = 0", "v is not declared; the task's unknowns are u"),
    (1, "x = 0: uu = 0; x = 1: u = 0", "uu is not declared; the task's unknowns are u"),
])
def test_a_boundary_that_leaves_a_side_out_or_names_what_the_task_lacks(dim, boundary, said):
    got = support(task_from_dict(_task(boundary=boundary, dim=dim)), data_dir="/nonexistent",
                  dev_data=None, n_designs=1)
    assert not got.supported and said in got.reason, got.reason
    assert "language model" not in got.reason and "\n" not in got.reason


def test_a_transport_equation_needs_its_inflow_end_only():
    got = support(task_from_dict(_task("dt(u) + dx(u) = 0", "x = 0: u = sin(t)", dim=1)),
                  data_dir="/nonexistent", dev_data=None, n_designs=1)
    assert got.supported, got.reason


@pytest.mark.parametrize("name,said", [
    ("bbm_soliton1d", "Sobolev-type term"), ("bbm_walls1d", "Sobolev-type term"),
    ("cahn_hilliard_neumann1d", "dx(u, 4) between walls: the Chebyshev generator needs 2"
                                " conditions per end"),
    ("sod1d", "a nonlinear flux and no viscosity"),
])
def test_examples_data_generate_cannot_make_say_why_in_tasks_check(name, said, capsys):
    """These four were accepted by `data generate`, then every draw failed; now `tasks check`
    says why and `data generate` refuses at once, with the same reason."""
    task = load_task(EXAMPLES / f"{name}.yaml")
    assert said in (verdict(task) or ""), verdict(task)
    if name == "sod1d":  # the command itself, once (the same function decides for all four)
        assert main(["tasks", "check", str(EXAMPLES / f"{name}.yaml")]) == 0
        assert f"reference data: `pdesharp data generate` cannot make them: task '{name}'" \
            in capsys.readouterr().out
        with pytest.raises(SystemExit) as stop:
            main(["data", "generate", str(EXAMPLES / f"{name}.yaml"), "--samples", "1",
                  "--seed", "1", "--out", "/nonexistent/x.hdf5"])
        assert stop.value.code != 0 and said in capsys.readouterr().err


def test_an_example_the_generic_generator_makes_says_so():
    assert verdict(load_task(EXAMPLES / "allen_cahn_neumann1d.yaml")) is None
