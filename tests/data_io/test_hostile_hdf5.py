"""HDF5 files that point elsewhere or declare more than memory holds are refused, by name,
before anything is read; honest files read exactly as before (pdesharp.data.hdf5)."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from pdesharp.audit.core import file_samples
from pdesharp.cli import main
from pdesharp.data import hdf5
from pdesharp.data.info import split_status
from pdesharp.data.reference import DataError, load_reference
from pdesharp.data.subset import make_subsets
from pdesharp.task import load_task

TASK = load_task("advection")  # keys: tensor, t-coordinate, x-coordinate


def honest(path, n=4, nx=8):
    """A small advection-layout file; tensor[i, k, j] = 100 i + 10 k + j."""
    tensor = (100 * np.arange(n)[:, None, None] + 10 * np.arange(3)[None, :, None]
              + np.arange(nx)[None, None, :]).astype(np.float32)
    with h5py.File(path, "w") as f:
        f["tensor"] = tensor
        f["t-coordinate"] = np.array([0.0, 0.5, 1.0, 1.5])
        f["x-coordinate"] = (np.arange(nx) + 0.5) / nx
    return tensor


def with_coords(f, nx=8, nt=3):
    f["t-coordinate"] = np.linspace(0.0, 1.0, nt + 1)
    f["x-coordinate"] = (np.arange(nx) + 0.5) / nx


@pytest.fixture
def other(tmp_path):
    """The file an attacker wants pdesharp to read instead: all zeros, so scoring is easy."""
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f["tensor"] = np.zeros((4, 3, 8), np.float32)
    return path


def test_honest_file_reads_exactly_as_stored(tmp_path):
    path = tmp_path / "dev.h5"
    tensor = honest(path)
    ref = load_reference(TASK, path, samples="last:3", limit=2)
    assert ref.fields["u"].dtype == np.float32
    assert np.array_equal(ref.fields["u"], tensor[1:3])
    assert np.array_equal(ref.t, [0.0, 0.5, 1.0])  # the extra PDEBench time value dropped
    assert file_samples(TASK, path) == 4


def test_a_soft_link_inside_the_file_is_followed(tmp_path):
    path = tmp_path / "dev.h5"
    with h5py.File(path, "w") as f:
        f["data/u"] = np.ones((2, 3, 8), np.float32)
        f["tensor"] = h5py.SoftLink("/data/u")
        with_coords(f)
    assert load_reference(TASK, path).fields["u"].sum() == 2 * 3 * 8


def test_an_external_link_is_refused_naming_the_dataset(tmp_path, other, capsys):
    path = tmp_path / "dev.h5"
    with h5py.File(path, "w") as f:
        f["tensor"] = h5py.ExternalLink(str(other), "/tensor")
        with_coords(f)
    with pytest.raises(DataError, match="'tensor' is an external link to .*other.h5"):
        load_reference(TASK, path)
    with pytest.raises(DataError, match="external link"):
        file_samples(TASK, path)
    with pytest.raises(DataError, match="external link"):
        make_subsets(TASK, path, {"dev": tmp_path / "out.h5"})
    dev = tmp_path / "data" / TASK.data.dev.files[0]  # where `data info` looks
    dev.parent.mkdir(parents=True)
    shutil.copy(path, dev)
    status = split_status(TASK, "dev", tmp_path / "data")
    assert status.path == dev and "'tensor' is an external link" in status.error
    assert status.shapes == {}
    # the real CLI: `pdesharp data audit` exits non-zero with the one-line reason
    with pytest.raises(SystemExit) as exit_:
        main(["data", "audit", "advection", "--dev-data", str(path), "--no-store"])
    assert exit_.value.code != 0
    assert "'tensor' is an external link" in capsys.readouterr().err


def test_a_soft_link_to_an_external_link_is_refused(tmp_path, other):
    path = tmp_path / "dev.h5"
    with h5py.File(path, "w") as f:
        f["hidden"] = h5py.ExternalLink(str(other), "/tensor")
        f["tensor"] = h5py.SoftLink("/hidden")
        with_coords(f)
    with pytest.raises(DataError, match="external link"):
        load_reference(TASK, path)


def test_a_virtual_dataset_is_refused(tmp_path, other):
    path = tmp_path / "dev.h5"
    layout = h5py.VirtualLayout(shape=(4, 3, 8), dtype=np.float32)
    layout[:] = h5py.VirtualSource(str(other), "tensor", shape=(4, 3, 8))
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("tensor", layout)
        with_coords(f)
    with pytest.raises(DataError, match="'tensor' is a virtual dataset"):
        load_reference(TASK, path)


def test_external_raw_storage_is_refused(tmp_path):
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.zeros(4 * 3 * 8, np.float32).tobytes())
    path = tmp_path / "dev.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("tensor", shape=(4, 3, 8), dtype=np.float32,
                         external=[(str(raw), 0, h5py.h5f.UNLIMITED)])
        with_coords(f)
    with pytest.raises(DataError, match="'tensor' keeps its data in external raw files"):
        load_reference(TASK, path)


def test_a_declared_terabyte_is_refused_before_reading(tmp_path):
    """A few kB of file declaring 2e6 x 201 x 1024 float32 gzip chunks (1.6 TB stored, 3.3 TB
    as the float64 evaluation uses): refused from the declared shape; a small selection of the
    same file still reads."""
    path = tmp_path / "bomb.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("tensor", shape=(2_000_000, 201, 1024), dtype=np.float32,
                         chunks=(1, 201, 1024), compression="gzip")
        with_coords(f, 1024, 201)
    assert path.stat().st_size < 1_000_000
    with pytest.raises(DataError, match=r"'tensor'.* declares 3\.3 TB"):
        load_reference(TASK, path)
    assert load_reference(TASK, path, limit=2).fields["u"].shape == (2, 201, 1024)
    assert file_samples(TASK, path) == 2_000_000  # the shape alone is read


def test_a_gzip_bomb_is_refused_before_decompressing(tmp_path, monkeypatch):
    """96 MB of zeros (192 MB as float64) compress to well under 1 MB; with 64 MB available the
    declared size is refused and no chunk is decompressed (reading one would raise from the
    patched read)."""
    path = tmp_path / "bomb.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("tensor", data=np.zeros((120, 200, 1000), np.float32),
                         chunks=(1, 200, 1000), compression="gzip")
        with_coords(f, 1000, 200)
    assert path.stat().st_size < 2_000_000
    monkeypatch.setattr(hdf5, "available_memory", lambda: 64_000_000)

    def no_read(*args, **kwargs):
        raise AssertionError("a chunk was read")

    monkeypatch.setattr(h5py.Dataset, "__getitem__", no_read)
    with pytest.raises(DataError, match="declares 192.0 MB and 64.0 MB of memory is available"):
        load_reference(TASK, path)


def test_the_audit_cost_estimate_reads_no_external_link(tmp_path, other):
    # `--audit auto` estimates a user task's audit from the data's shape: through the one
    # reader, so an external link is not followed (the estimate is "unknown", no audit is
    # computed on another file's say-so) and an honest file is measured
    from pdesharp.audit.cost import SPECTRAL_PER_POINT_FRAME, estimate_seconds

    task = TASK.model_copy(update={"name": "my_advection"})  # not the built-in: shape-based
    path = tmp_path / "dev.h5"
    with h5py.File(path, "w") as f:
        f["tensor"] = h5py.ExternalLink(str(other), "/tensor")
        with_coords(f)
    assert estimate_seconds(task, path, 4) is None
    honest(tmp_path / "honest.h5")
    assert estimate_seconds(task, tmp_path / "honest.h5", 4) == pytest.approx(
        SPECTRAL_PER_POINT_FRAME * 3 * 8 * 4, rel=1e-12)
