"""CodePDE's subset rule on small synthetic PDEBench-like files."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from pdesharp.data.reference import DataError, load_reference
from pdesharp.data.subset import make_subsets, subset_targets
from pdesharp.task import load_task

NB, NT, NX = 160, 6, 8


def _marker(nb: int, nt: int, nx: int, offset: float = 0.0) -> np.ndarray:
    # sample b holds the value b everywhere, so each output sample says where it came from
    return (np.arange(nb, dtype=np.float32)[:, None, None] + offset) * np.ones((1, nt, nx), np.float32)


def _pdebench_1d(path, nb=NB, n_t=NT + 1):
    with h5py.File(path, "w") as h5:
        h5["tensor"] = _marker(nb, NT, NX)
        h5["t-coordinate"] = np.arange(n_t, dtype=np.float32) * 0.01
        h5["x-coordinate"] = (np.arange(NX, dtype=np.float32) + 0.5) / NX
        h5["unrelated"] = np.zeros(3)  # not the task's key: must not be copied
    return path


def test_1d_layout_first_100_test_last_50_dev(tmp_path):
    task = load_task("burgers")
    src = _pdebench_1d(tmp_path / "1D_Burgers_Sols_Nu0.01.hdf5")
    targets = subset_targets(task, tmp_path / "data", src)
    # names are exactly the first candidates the task looks for
    assert targets["dev"] == tmp_path / "data" / task.data.dev.files[0]
    assert targets["test"] == tmp_path / "data" / task.data.test.files[0]
    res = make_subsets(task, src, targets)
    assert res.t_dropped and res.indices == {"dev": (110, 160), "test": (0, 100)}
    with h5py.File(targets["test"]) as h5:
        assert sorted(h5.keys()) == ["t-coordinate", "tensor", "x-coordinate"]
        np.testing.assert_array_equal(h5["tensor"][:, 0, 0], np.arange(100))
        assert h5["tensor"].dtype == np.float32
        assert len(h5["t-coordinate"]) == NT  # T+1 values -> T, the last one dropped
        np.testing.assert_allclose(h5["t-coordinate"][:], np.arange(NT) * 0.01, rtol=1e-6)
    with h5py.File(targets["dev"]) as h5:
        np.testing.assert_array_equal(h5["tensor"][:, 0, 0], np.arange(110, 160))
        assert list(h5.attrs["sample_range"]) == [110, 160]
    ref = load_reference(task, targets["dev"])  # the reader accepts what we wrote
    assert ref.n_samples == 50 and ref.t.shape == (NT,)


def test_t_with_one_value_per_frame_is_kept(tmp_path):
    task = load_task("advection")
    src = _pdebench_1d(tmp_path / "src.hdf5", n_t=NT)
    targets = subset_targets(task, tmp_path, src, out_dir=tmp_path / "out")
    assert targets["dev"].name == "src_development.hdf5" and targets["test"].name == "src.hdf5"
    res = make_subsets(task, src, targets)
    assert not res.t_dropped
    with h5py.File(targets["dev"]) as h5:
        assert len(h5["t-coordinate"]) == NT


def test_cns_layout(tmp_path):
    task = load_task("cns1d")
    src = tmp_path / "1D_CFD_Rand_Eta0.1_Zeta0.1_periodic_Train.hdf5"
    with h5py.File(src, "w") as h5:
        h5["Vx"] = _marker(NB, NT, NX)
        h5["density"] = _marker(NB, NT, NX, 1000.0)
        h5["pressure"] = _marker(NB, NT, NX, 2000.0)
        h5["Vy"] = _marker(NB, NT, NX)  # not used by the 1D task
        h5["t-coordinate"] = np.arange(NT + 1, dtype=np.float32) * 0.01
        h5["x-coordinate"] = np.linspace(-1, 1, NX, dtype=np.float32)
    targets = subset_targets(task, tmp_path / "data", src)
    make_subsets(task, src, {"dev": targets["dev"]})  # one split only
    assert not targets["test"].exists()
    with h5py.File(targets["dev"]) as h5:
        assert sorted(h5.keys()) == ["Vx", "density", "pressure", "t-coordinate", "x-coordinate"]
        np.testing.assert_array_equal(h5["density"][:, 0, 0], np.arange(110, 160) + 1000.0)
        np.testing.assert_array_equal(h5["pressure"][:, -1, -1], np.arange(110, 160) + 2000.0)
        assert len(h5["t-coordinate"]) == NT
    ref = load_reference(task, targets["dev"])
    assert ref.stacked(["v", "rho", "p"]).shape == (50, NT, NX, 3)


def test_small_source_warns_about_overlap_and_refuses_overwrite(tmp_path):
    task = load_task("advection")
    src = _pdebench_1d(tmp_path / "s.hdf5", nb=120)
    targets = subset_targets(task, tmp_path, src, out_dir=tmp_path / "o")
    res = make_subsets(task, src, targets)
    assert res.indices == {"dev": (70, 120), "test": (0, 100)} and "overlap" in res.warnings[0]
    with pytest.raises(DataError, match="overwrite"):
        make_subsets(task, src, targets)
    make_subsets(task, src, targets, overwrite=True)
    with pytest.raises(DataError, match="overwrite its source"):
        make_subsets(task, src, {"test": src}, overwrite=True)


def test_missing_key_is_named(tmp_path):
    src = _pdebench_1d(tmp_path / "s.hdf5")
    with pytest.raises(DataError, match="Vx"):
        make_subsets(load_task("cns1d"), src, {"dev": tmp_path / "d.hdf5"})
    assert not (tmp_path / "d.hdf5").exists() and not (tmp_path / "d.hdf5.part").exists()
