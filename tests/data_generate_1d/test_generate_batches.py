"""The built-in generators work in batches for ``pdesharp data generate`` (each batch a
checkpoint): the batched file holds exactly what one call for all samples returns, so batching
(and resuming after an interruption) changes no number."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from pdesharp.data.generate import generate_to_file, get_generator

CASES = [  # task, samples (more than one batch), options keeping each run small
    ("advection", 12, {"nx": 32, "t_end": 0.02}),
    ("burgers", 12, {"nx": 32, "t_end": 0.02}),
    ("reacdiff1d", 11, {"nx": 32, "t_end": 0.01}),
    ("cns1d", 3, {"nx": 32, "t_end": 0.02}),
    ("darcy", 2, {"nx": 17}),
]


@pytest.mark.parametrize("task,n,options", CASES)
def test_batched_file_equals_one_call(task, n, options, tmp_path):
    module = get_generator(task)
    assert 0 < module.BATCH < n  # the file below is really made of several batches
    opts = dict(options)
    nx = opts.pop("nx")
    path = generate_to_file(task, n, 3, out=tmp_path / "g.hdf5", nx=nx, options=opts)
    whole = module.generate(n, 3, None, nx=nx, **opts)
    with h5py.File(path, "r") as h5:
        assert set(h5.keys()) == set(whole)
        for key, value in whole.items():
            stored = h5[key][()]
            expected = np.asarray(value).astype(np.float32) \
                if np.asarray(value).dtype.kind == "f" else np.asarray(value)
            assert np.array_equal(stored, expected), key
    assert not (tmp_path / "g.hdf5.partial").exists()
