"""``generate`` and ``init_multi``: layout, dtypes, the properties of PDEBench's initial data."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from pdesharp.data.generate import advection, burgers, fv1d, initial, reacdiff


def test_pdebench_times_and_cell_centres_match_the_stored_coordinates(shared_data):
    with h5py.File(shared_data / "advection_dev.hdf5", "r") as h5:
        t_adv, x_adv = h5["t-coordinate"][:], h5["x-coordinate"][:]
    with h5py.File(shared_data / "reacdiff1d_dev.hdf5", "r") as h5:
        t_rd = h5["t-coordinate"][:]
    with h5py.File(shared_data / "reacdiff1d_dev_f32stall.hdf5", "r") as h5:
        t_rd32 = h5["t-coordinate"][:]
    # times are formed in the run's precision: float32 runs and the float64 run differ in ulps
    np.testing.assert_array_equal(initial.pdebench_times(2.0), t_adv)
    np.testing.assert_array_equal(initial.pdebench_times(1.0, dtype=np.float64), t_rd)
    np.testing.assert_array_equal(initial.pdebench_times(1.0, dtype=np.float32), t_rd32)
    np.testing.assert_array_equal(fv1d.cell_centres(1024), x_adv)


@pytest.mark.parametrize("module", [advection, burgers])
def test_generate_layout_float32(module):
    out = module.generate(3, seed=5, nx=64, t_end=0.05)
    assert set(out) == {"tensor", "t-coordinate", "x-coordinate"}
    assert out["tensor"].shape == (3, 6, 64) and out["tensor"].dtype == np.float32
    assert out["t-coordinate"].shape == (6,)  # one time per frame
    np.testing.assert_allclose(out["t-coordinate"], np.arange(6) * 0.01, rtol=1e-6)
    np.testing.assert_allclose(out["x-coordinate"], (np.arange(64) + 0.5) / 64, rtol=1e-7)
    assert np.all(np.isfinite(out["tensor"]))
    # frame 0 is exactly the seed's initial condition
    ic = initial.init_multi(fv1d.cell_centres(64), 3, 5, k_tot=4)
    np.testing.assert_array_equal(out["tensor"][:, 0], ic)


def test_generate_reacdiff_normalised_ics_and_bounds():
    out = reacdiff.generate(4, seed=11, nx=64, t_end=0.03)
    u = out["tensor"]
    assert u.shape == (4, 4, 64) and u.dtype == np.float32
    np.testing.assert_array_equal(u[:, 0].min(axis=1), 0.0)
    np.testing.assert_array_equal(u[:, 0].max(axis=1), 1.0)
    # logistic growth plus diffusion keeps u in [0, 1] and raises the mean
    assert u.min() >= 0.0 and u.max() <= 1.0
    assert np.all(u[:, -1].mean(axis=1) > u[:, 0].mean(axis=1))


def test_generate_is_reproducible_per_seed():
    a = advection.generate(2, seed=3, nx=32, t_end=0.02)["tensor"]
    b = advection.generate(2, seed=3, nx=32, t_end=0.02)["tensor"]
    c = advection.generate(2, seed=4, nx=32, t_end=0.02)["tensor"]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_init_multi_structure():
    x = fv1d.cell_centres(256, dtype=np.float64)
    u = initial.init_multi(x, 400, 0, dtype=np.float64, p_abs=0.0, p_window=0.0)
    # modes not drawn contribute A sin(phi): fields have a random, mostly nonzero mean
    assert np.mean(np.abs(u.mean(axis=1)) > 1e-3) > 0.9
    # two of four modes, n <= 4, so no wavenumber beyond 2*4 (a mode drawn twice doubles);
    # the 1/(x_last - x_first) factor leaks a little energy, hence the 1e-2 threshold
    spectrum = np.abs(np.fft.rfft(u - u.mean(axis=1, keepdims=True), axis=1))
    high = spectrum[:, 12:].max(axis=1) / spectrum.max(axis=1)
    assert np.all(high < 1e-1)
    # amplitudes U(0,1) over four modes: |u| <= 4
    assert np.abs(u).max() <= 4.0


def test_init_multi_abs_and_window_options():
    x = fv1d.cell_centres(256)
    forced_abs = initial.init_multi(x, 50, 1, p_abs=1.0, p_window=0.0)
    # |.| then a random sign: every field is one-signed, and both signs occur
    one_signed = (forced_abs.min(axis=1) >= 0) | (forced_abs.max(axis=1) <= 0)
    assert one_signed.all()
    assert (forced_abs.max(axis=1) > 0).any() and (forced_abs.min(axis=1) < 0).any()
    windowed = initial.init_multi(x, 50, 1, p_abs=0.0, p_window=1.0)
    # x < 0.02 lies >= 8 transition widths outside every window (x_L >= 0.1): 1 - tanh(8) ~ 2e-7
    edges = np.abs(windowed[:, :5]).max()
    assert edges < 1e-5
    never = initial.init_multi(x, 200, 2, p_abs=0.0, p_window=0.0)
    assert np.mean(np.abs(never[:, :20]).max(axis=1) > 1e-3) > 0.9


def test_init_multi_normalise_float32_exact_bounds():
    x = fv1d.cell_centres(128)
    u = initial.init_multi(x, 30, 9, normalise=True)
    assert u.dtype == np.float32
    np.testing.assert_array_equal(u.min(axis=1), 0.0)
    np.testing.assert_array_equal(u.max(axis=1), 1.0)


def test_bad_inputs_are_reported_clearly():
    u0 = np.zeros((1, 32), np.float32)
    t = initial.pdebench_times(0.02)
    with pytest.raises(fv1d.GeneratorInputError, match="unknown parameter"):
        advection.simulate({"u": u0}, t, {"velocity": 1.0})
    with pytest.raises(fv1d.GeneratorInputError, match="field 'u'"):
        burgers.simulate({"v": u0}, t, {})
    with pytest.raises(fv1d.GeneratorInputError, match="t_out\\[0\\]"):
        advection.simulate({"u": u0}, t[1:], {})
    with pytest.raises(fv1d.GeneratorInputError, match="NaN"):
        advection.simulate({"u": np.full((1, 32), np.nan)}, t, {})
    with pytest.raises(fv1d.GeneratorInputError, match="float32 or float64"):
        advection.simulate({"u": u0}, t, {}, dtype=np.float16)
    with pytest.raises(fv1d.GeneratorInputError, match="unknown generator options"):
        advection.generate(1, 0, nx=16, t_end=0.01, bogus=1)
    with pytest.raises(fv1d.GeneratorInputError, match="nu must be > 0"):
        reacdiff.simulate({"u": u0 + 0.5}, t, {"nu": 0.0})


def test_nonuniform_output_times_hit_each_time():
    # the clock clips steps at every requested time, uniform or not
    x = fv1d.cell_centres(64)
    u0 = initial.init_multi(x, 2, 0)
    t = np.array([0.0, 0.013, 0.05, 0.051])
    frames = advection.simulate({"u": u0}, t, {})["u"]
    assert frames.shape == (2, 4, 64)
    np.testing.assert_array_equal(frames[:, 0], u0)
    # the field moves away from u0 more the later the frame
    err = np.abs(frames - frames[:, :1]).max(axis=(0, 2))
    assert err[1] < err[2] and err[3] > 0


@pytest.mark.parametrize("task", ["advection", "burgers", "reacdiff1d"])
def test_registry_writes_codepde_layout(task, tmp_path):
    from pdesharp.data.generate import generate_to_file

    path = generate_to_file(task, 2, 7, out=tmp_path / f"{task}.hdf5", nx=32,
                            options={"t_end": 0.02})
    with h5py.File(path, "r") as h5:
        assert h5["tensor"].shape == (2, 3, 32) and h5["tensor"].dtype == np.float32
        assert h5["t-coordinate"].shape == (3,) and h5["x-coordinate"].shape == (32,)
        assert "MUSCL" in h5.attrs["scheme_scheme"] or "logistic" in h5.attrs["scheme_scheme"]
