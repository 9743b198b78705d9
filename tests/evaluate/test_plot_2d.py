"""Figures for every shape a task can have (issue 20: ``eval --plot`` on a 2D task failed with
"TypeError: Invalid shape (11, 32, 32)" and exited 0): 1D and 2D, time-dependent and steady,
scalar and systems, one block of panels per field; and ``eval --plot`` on a 2D example task
through the real CLI and sandbox."""

from __future__ import annotations

import textwrap
from pathlib import Path

import h5py
import matplotlib.image as mpimg
import numpy as np
import pytest

from pdesharp.cli import main
from pdesharp.data.reference import ReferenceData
from pdesharp.evaluate.plot import PlotError, plot_sample, snapshot_frames
from pdesharp.task import task_from_dict

DPI = 80  # plot_sample's


def _task(unknowns, space, steady=False):
    eqs = [f"-dx(dx({u})) - f" if steady else f"dt({u}) - dx(dx({u}))" for u in unknowns]
    data = {"name": "shapes", "equation": {"unknowns": list(unknowns), "equations": eqs,
                                           **({"time": None, "coefficients": ["f"]} if steady
                                              else {})},
            "domain": {a: [0, 1] for a in space}, "boundary": "dirichlet: " + ", ".join(
                f"{u} = 0" for u in unknowns)}
    if not steady:
        data["time_span"] = [0, 1]
    return task_from_dict(data, "test")


def _draw(tmp_path, task, shape, n_fields):
    rng = np.random.default_rng(0)
    names = task.solver.returns
    ref = ReferenceData(path=Path("x"), fields={n: rng.standard_normal(shape) for n in names},
                        t=None if task.steady else np.linspace(0, 1, shape[1]))
    pred = {n: ref.fields[n] + 1e-3 * rng.standard_normal(shape) for n in names}
    out = plot_sample(task, pred, ref, tmp_path / "p.png", sample=1)
    height, width = mpimg.imread(out).shape[:2]
    return height, width


# a system of two fields shows the block per field as well as three would (the figure's
# drawing time grows with its panels: 48 with colour bars for two fields, 72 for three)
@pytest.mark.parametrize("unknowns", [["u"], ["h", "v"]])
def test_2d_time_dependent_fields_get_snapshot_rows_per_field(tmp_path, unknowns):
    task = _task(unknowns, ["x", "y"])
    height, width = _draw(tmp_path, task, (2, 11, 12, 10), len(unknowns))
    # rows: prediction, reference, error for each field; columns: 4 snapshot times
    assert height == round(3.2 * 3 * len(unknowns) * DPI)
    assert width == round(3.6 * 4 * DPI)
    assert snapshot_frames(11) == [0, 3, 7, 10] and snapshot_frames(2) == [0, 1]


@pytest.mark.parametrize("unknowns", [["u"], ["h", "v"]])
def test_1d_time_dependent_systems_get_one_row_per_field(tmp_path, unknowns):
    height, _ = _draw(tmp_path, _task(unknowns, ["x"]), (3, 9, 32), len(unknowns))
    assert height == round(3.2 * len(unknowns) * DPI)


def test_steady_fields_in_1d_and_2d(tmp_path):
    height, width = _draw(tmp_path, _task(["u"], ["x"], steady=True), (2, 32), 1)
    assert (height, width) == (round(3.2 * DPI), round(4.0 * 2 * DPI))
    height, width = _draw(tmp_path, _task(["u"], ["x", "y"], steady=True), (2, 16, 16), 1)
    assert (height, width) == (round(3.2 * DPI), round(4.0 * 3 * DPI))


def test_a_shape_it_cannot_draw_is_named():
    task = _task(["u"], ["x", "y"])
    ref = ReferenceData(path=Path("x"), fields={"u": np.zeros((1, 3, 4, 4, 4))})
    with pytest.raises(PlotError, match=r"2D time-dependent field of shape \(3, 4, 4, 4\)"):
        plot_sample(task, {"u": np.zeros((1, 3, 4, 4, 4))}, ref, Path("/nonexistent/p.png"))


HEAT2D = textwrap.dedent('''\
    import numpy as np

    def solver(u0_batch, t_coordinate, nu):
        B, N, _ = u0_batch.shape
        k = 2 * np.pi * np.fft.fftfreq(N, d=1.0 / N)
        k2 = k[:, None] ** 2 + k[None, :] ** 2
        U = np.fft.fft2(u0_batch)
        return np.stack([np.real(np.fft.ifft2(U * np.exp(-nu * k2 * t))) for t in t_coordinate],
                        axis=1)
    ''')


@pytest.fixture(scope="module")
def heat2d_dev(tmp_path_factory) -> Path:
    """Two samples of the heat2d example on a 16 x 16 grid, made by the generic generator."""
    out = tmp_path_factory.mktemp("heat2d") / "heat2d_dev.hdf5"
    # no reference-error estimate (its finer runs are a third of the command's time): the
    # figures are what these tests look at
    assert main(["data", "generate", "heat2d", "--samples", "2", "--seed", "1", "--nx", "16",
                 "--check-samples", "0", "--out", str(out)]) == 0
    with h5py.File(out, "r") as h5:
        assert h5["tensor"].shape == (2, 11, 16, 16)
    return out


def test_eval_plot_on_a_2d_task_writes_the_figure(tmp_path, capsys, heat2d_dev):
    dev = heat2d_dev
    solver = tmp_path / "heat2d_solver.py"
    solver.write_text(HEAT2D)
    png = tmp_path / "h.png"
    # one sample, no convergence study or residual: the figure is what this test checks
    assert main(["eval", str(solver), "--task", "heat2d", "--dev-data", str(dev),
                 "--max-samples", "1", "--no-convergence", "--no-residual",
                 "--plot", str(png)]) == 0
    assert png.is_file() and mpimg.imread(png).shape[0] == round(3.2 * 3 * DPI)
    assert "Invalid shape" not in capsys.readouterr().out


def test_eval_exits_non_zero_when_the_asked_plot_is_not_written(tmp_path, capsys, heat2d_dev):
    dev = heat2d_dev
    solver = tmp_path / "heat2d_solver.py"
    solver.write_text(HEAT2D)
    png = tmp_path / "h.png"
    png.mkdir()  # a folder in the way: the figure cannot be saved there (even as root)
    code = main(["eval", str(solver), "--task", "heat2d", "--dev-data", str(dev),
                 "--max-samples", "1", "--no-convergence", "--no-residual", "--plot", str(png)])
    captured = capsys.readouterr()
    assert code == 1 and "was not written" in captured.err


def test_eval_plot_without_a_name_writes_it_beside_the_solver(tmp_path, capsys, heat2d_dev):
    """Issue 28: `--plot` alone is not an error: SOLVER_plot.png next to the solver file."""
    solver = tmp_path / "heat2d_solver.py"
    solver.write_text(HEAT2D)
    assert main(["eval", str(solver), "--task", "heat2d", "--dev-data", str(heat2d_dev),
                 "--max-samples", "1", "--no-convergence", "--no-residual", "--plot"]) == 0
    png = tmp_path / "heat2d_solver_plot.png"
    assert png.is_file() and mpimg.imread(png).shape[0] == round(3.2 * 3 * DPI)
