"""Fixtures for the evaluator tests: reference solver sources and a small CNS reference file."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

SOLVERS = Path(__file__).parent / "solvers"


@pytest.fixture(scope="session")
def solver_code():
    def read(name: str) -> str:
        return (SOLVERS / f"{name}.py").read_text()

    return read


@pytest.fixture(scope="session")
def cns_small(shared_data, tmp_path_factory) -> Path:
    """The shared CNS dev data cut to t <= 0.1 (11 frames) and block-averaged 1024 -> 256 cells.

    A plain explicit finite-volume solver needs ~80 s for the full-resolution window on this
    machine (the viscous step limit dx^2/(2 nu) dominates); on 256 cells it takes ~2 s, which
    keeps the CNS test fast while still scoring a real solver against real PDEBench data.
    """
    src = shared_data / "cns1d_dev.hdf5"
    out = tmp_path_factory.mktemp("cns") / "cns1d_small.hdf5"
    with h5py.File(src, "r") as f, h5py.File(out, "w") as g:
        for key in ("Vx", "density", "pressure"):
            a = np.asarray(f[key][:, :11])
            g[key] = a.reshape(a.shape[0], a.shape[1], 256, 4).mean(axis=-1).astype(np.float32)
        g["t-coordinate"] = np.asarray(f["t-coordinate"][:11])
        g["x-coordinate"] = np.asarray(f["x-coordinate"]).reshape(256, 4).mean(axis=-1)
    return out
