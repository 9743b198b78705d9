"""Issue 25 row 12: an int8 dev file of a few kB whose declared shape is 1.2 GB passed the
memory check (1 byte a value) and then took 8 bytes a value in the evaluation (float64):
ENOMEM, or the OOM killer. The check now counts every field at the size the evaluation makes
of it, before anything is read. Driven through `pdesharp eval`, with the available memory
fixed at 64 MB so the numbers hold on any machine."""

from __future__ import annotations

import h5py
import numpy as np

from pdesharp.cli import main
from pdesharp.data import hdf5

SOLVER = '''import numpy as np

def solver(u0_batch, t_coordinate, beta):
    return np.repeat(u0_batch[:, None, :], len(t_coordinate), axis=1)
'''


def test_an_int8_file_is_counted_as_the_float64_it_becomes(tmp_path, monkeypatch, capsys):
    path = tmp_path / "int8.hdf5"
    with h5py.File(path, "w") as f:  # 200 x 201 x 1024 int8: 41 MB declared, 330 MB as float64
        f.create_dataset("tensor", shape=(200, 201, 1024), dtype=np.int8,
                         chunks=(1, 201, 1024), compression="gzip")
        f["t-coordinate"] = np.linspace(0.0, 2.0, 202)
        f["x-coordinate"] = (np.arange(1024) + 0.5) / 1024
    assert path.stat().st_size < 100_000
    monkeypatch.setattr(hdf5, "available_memory", lambda: 64_000_000)  # 51 MB usable

    def no_read(*args, **kwargs):
        raise AssertionError("a chunk was read")

    monkeypatch.setattr(h5py.Dataset, "__getitem__", no_read)
    solver = tmp_path / "solver.py"
    solver.write_text(SOLVER)
    try:
        code = main(["eval", str(solver), "--task", "advection", "--dev-data", str(path),
                     "--no-convergence"])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "as float64" in err and "declares 329.3 MB and 64.0 MB of memory is available" in err
