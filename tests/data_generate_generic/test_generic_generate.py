"""generate_task, the registry fallback, the CLI, and the errors for unsupported tasks."""

from __future__ import annotations

import re

import h5py
import numpy as np
import pytest
import yaml

from generic_tasks import make_task
from pdesharp.cli import main
from pdesharp.data import load_reference
from pdesharp.data.generate import generate_to_file
from pdesharp.data.generate.generic import UnsupportedTask, generate_task, simulate_task
from pdesharp.task import load_task


def allen_cahn(**generator):
    return make_task(["dt(u) - epsilon**2*dx(u, 2) - u + u**3"], ["u"], {"epsilon": 0.05},
                     fields={"u": "tensor"}, time_span=(0.0, 0.5), n_frames=6,
                     generator=generator or None)


def test_generate_task_layout_and_reproducibility():
    task = allen_cahn()
    a = generate_task(task, 3, seed=7, nx=32)
    b = generate_task(task, 3, seed=7, nx=32)
    c = generate_task(task, 3, seed=8, nx=32)
    assert set(a) == {"tensor", "t-coordinate", "x-coordinate"}
    assert a["tensor"].shape == (3, 6, 32)
    np.testing.assert_allclose(a["t-coordinate"], np.linspace(0.0, 0.5, 6))
    np.testing.assert_allclose(a["x-coordinate"], (np.arange(32) + 0.5) / 32)
    np.testing.assert_array_equal(a["tensor"], b["tensor"])  # same seed -> identical data
    assert np.abs(a["tensor"] - c["tensor"]).max() > 0.1
    # without a range the initial fields are scaled to max |u| = 1, measured on a 128-point
    # reference grid (sampling error of the maximum < 0.5 %)
    assert 0.8 < np.abs(a["tensor"][:, 0]).max() <= 1.005
    # samples differ from each other and evolve
    assert np.abs(a["tensor"][0, 0] - a["tensor"][1, 0]).max() > 0.1
    assert np.abs(a["tensor"][:, -1] - a["tensor"][:, 0]).max() > 1e-2


def trig_interpolate(values, length, x):
    """The trigonometric interpolant of periodic cell-centred samples [..., N], evaluated at x."""
    n = values.shape[-1]
    spec = np.fft.fft(values, axis=-1) / n
    m = np.fft.fftfreq(n, 1.0 / n)
    if n % 2 == 0:  # drop the (ambiguous) Nyquist mode
        spec[..., n // 2] = 0
    x0 = 0.5 * length / n
    phase = np.exp(2j * np.pi * np.outer(m, x - x0) / length)
    return np.real(spec @ phase)


def test_same_seed_same_functions_at_every_resolution_spectral_self_convergence():
    # a nonlinear PDE, nx = 24 and 48 from the same seed: the initial functions are identical and
    # both runs resolve the (analytic) solution, so the 48-point trajectory interpolated to the
    # 24 points must match to near the integration tolerance (an O(h^p) method would show
    # ~1e-3 here; spectral accuracy gives ~1e-9)
    task = allen_cahn(modes=3)
    coarse = generate_task(task, 2, seed=11, nx=24)
    fine = generate_task(task, 2, seed=11, nx=48)
    on_coarse = trig_interpolate(fine["tensor"], 1.0, coarse["x-coordinate"])
    assert np.abs(on_coarse - coarse["tensor"]).max() < 1e-7


def test_generated_frames_match_simulating_the_stored_initial_data():
    # the generator's own trajectory and a fresh run from its stored frame 0 (Fourier-interpolated
    # to the internal grid, exact for these band-limited data) agree to the integrator tolerance
    task = allen_cahn()
    data = generate_task(task, 2, seed=3, nx=32)
    again = simulate_task(task, {"u": data["tensor"][:, 0]}, data["t-coordinate"])["u"]
    assert np.abs(again - data["tensor"]).max() < 1e-8


def test_ranges_from_the_generator_section_and_2d_layout():
    task = make_task(["dt(h) + dx(h*u) + dy(h*w)", "dt(u) + u*dx(u) + w*dy(u) + dx(h)",
                      "dt(w) + u*dx(w) + w*dy(w) + dy(h)"], ["h", "u", "w"],
                     space=("x", "y"), time_span=(0.0, 0.05), n_frames=3,
                     fields={"h": "height", "u": "Vx", "w": "Vy"},
                     generator={"modes": 2, "ranges": {"h": [0.9, 1.1], "u": [-0.05, 0.05]}})
    out = generate_task(task, 2, seed=1, nx=8)
    assert set(out) == {"height", "Vx", "Vy", "t-coordinate", "x-coordinate", "y-coordinate"}
    assert out["height"].shape == (2, 3, 8, 8)
    h0, u0 = out["height"][:, 0], out["Vx"][:, 0]
    # ranges hold to the reference grid's sampling error of the extrema (< 0.5 % of the span)
    assert h0.min() >= 0.9 - 1e-3 and h0.max() <= 1.1 + 1e-3 and h0.max() - h0.min() > 0.1
    assert u0.min() >= -0.05 - 5e-4 and u0.max() <= 0.05 + 5e-4
    np.testing.assert_allclose(out["y-coordinate"], (np.arange(8) + 0.5) / 8)


def test_cli_generates_a_user_yaml_task(tmp_path, capsys):
    spec = allen_cahn(modes=3).model_dump(mode="json")
    spec["name"] = "my_allen_cahn"
    path = tmp_path / "my_pde.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "ac.hdf5"
    rc = main(["data", "generate", str(path), "--samples", "2", "--seed", "5", "--nx", "16",
               "--out", str(out)])
    assert rc == 0 and "wrote" in capsys.readouterr().out
    with h5py.File(out, "r") as h5:
        attrs = dict(h5.attrs)
        assert h5["tensor"].dtype == np.float32 and h5["tensor"].shape == (2, 6, 16)
    assert attrs["generator"] == "pdesharp.data.generate.generic"
    assert attrs["task"] == "my_allen_cahn" and attrs["seed"] == 5
    assert "epsilon**2*dx(u, 2)" in attrs["task_spec"]
    assert attrs["scheme_method"] in ("dop853", "etdrk4")
    task = load_task(str(path))
    ref = load_reference(task, out)  # the evaluator's reader accepts the layout
    assert ref.fields["u"].shape == (2, 6, 16) and len(ref.t) == 6


def test_a_user_task_reusing_a_builtin_name_is_not_given_the_builtin_generator(tmp_path):
    spec = load_task("advection").model_dump(mode="json")
    spec["parameters"] = {"beta": 0.5}
    spec["time_span"], spec["n_frames"] = [0.0, 0.1], 3
    from pdesharp.task import task_from_dict

    task = task_from_dict(spec)
    path = generate_to_file(task, 1, 0, out=tmp_path / "a.hdf5", nx=16)
    with h5py.File(path, "r") as h5:
        assert h5.attrs["generator"] == "pdesharp.data.generate.generic"
        assert h5["tensor"].shape == (1, 3, 16)


@pytest.mark.parametrize("change,reason", [
    ({"boundary": "periodic in x; y = 0: u = 0; y = 1: u = 0", "space": ("x", "y")},
     "not a mixture"),
    ({"boundary": "reflective walls"}, "cannot be read"),
    # a constraint nonlinear in its unknown (linear ones go to the constrained generator)
    ({"equations": ["dt(u) - dx(w)", "w**3 - dx(u)"], "unknowns": ["u", "w"]},
     "not linear with constant coefficients"),
    ({"equations": ["dt(u) + dx(dt(u))"]}, "mixed time derivatives are not supported"),
    ({"equations": ["dt(u) - dx(a*dx(u))"], "coefficients": ["a"]}, "coefficient fields"),
    ({"equations": ["dt(u) + dt(u)**2"]}, "time derivative appears inside another expression"),
])
def test_unsupported_tasks_name_the_reason(change, reason):
    kw = {"unknowns": ["u"], "equations": ["dt(u) - dx(u, 2)"], **change}
    task = make_task(kw.pop("equations"), kw.pop("unknowns"), **kw)
    with pytest.raises(UnsupportedTask, match=re.escape(reason)):
        generate_task(task, 1, 0, nx=16)


def test_steady_task_is_refused_by_the_generic_generator(tmp_path, capsys):
    with pytest.raises(UnsupportedTask, match="steady"):
        generate_task(load_task("darcy"), 1, 0)
    spec = allen_cahn().model_dump(mode="json")
    spec["boundary"] = "mirror walls"  # not the boundary grammar of docs/tasks.md
    path = tmp_path / "neumann.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(SystemExit) as exc:
        main(["data", "generate", str(path), "--samples", "1", "--seed", "0",
              "--out", str(tmp_path / "n.hdf5")])
    assert exc.value.code == 2
    assert "cannot be read" in capsys.readouterr().err
    assert not (tmp_path / "n.hdf5").exists()
