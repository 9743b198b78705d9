"""Hand-written reference solvers for the five tasks, scored through the sandbox on the shared
dev data. The nRMSE the evaluator reports must equal an independent computation of CodePDE's
formula on the saved prediction (read straight from the HDF5 file with h5py, float64 loops).

Numbers measured when this was written (shared dev data, first n samples):
  advection  exact Fourier shift, 20 samples        nRMSE 1.088e-3  (the data's MUSCL floor)
  burgers    pseudo-spectral IF-RK4, 1 sample        nRMSE 2.4e-4    residual 5.0e-4
  reacdiff1d Strang (exact logistic + Fourier), 4    nRMSE 4.8e-6    residual 5.7e-3
  cns1d      MUSCL/Rusanov FV, 2 samples, t<=0.1,
             256-cell block average of the dev data  nRMSE 3.4e-3    residual 4.1e-2
  darcy      5-point FV direct solve, 1 sample       nRMSE 2.0e-4    residual 2.7e-12
"""

from __future__ import annotations

import math
from pathlib import Path

import h5py
import numpy as np
import pytest

from pdesharp.evaluate import Evaluator
from pdesharp.task import load_task


def independent_nrmse(pred: np.ndarray, ref: np.ndarray) -> float:
    """CodePDE's nRMSE in float64 with an explicit loop over samples."""
    ratios = []
    for b in range(ref.shape[0]):
        p = pred[b].astype(np.float64).ravel()
        r = ref[b].astype(np.float64).ravel()
        ratios.append(math.sqrt(np.sum((p - r) ** 2) / r.size) / math.sqrt(np.sum(r * r) / r.size))
    return float(np.mean(ratios))


def first_samples(path: Path, keys: list[str], n: int) -> np.ndarray:
    with h5py.File(path, "r") as f:
        arrays = [np.asarray(f[k][:n]) for k in keys]
    return arrays[0] if len(arrays) == 1 else np.stack(arrays, axis=-1)


CASES = [
    # task, solver file, data file, HDF5 keys in solver.returns order, samples, nRMSE bound
    # all 20 samples: the exact shift sits on the data's own floor, ~1.06e-3 per the data README
    # (CodePDE's exact solver: 1.055e-3 on this file; its exact seeds: 9.7e-4..1.05e-3)
    ("advection", "advection_exact", "advection_dev.hdf5", ["tensor"], 20, 1.15e-3),
    ("burgers", "burgers_spectral", "burgers_dev.hdf5", ["tensor"], 1, 1e-3),
    ("reacdiff1d", "reacdiff_strang", "reacdiff1d_dev.hdf5", ["tensor"], 4, 1e-4),
    ("darcy", "darcy_fd", "darcy_dev.hdf5", ["sol"], 1, 1e-3),
]


@pytest.mark.parametrize("task_name,solver,data_file,keys,n,bound", CASES)
def test_reference_solver(task_name, solver, data_file, keys, n, bound, shared_data,
                          solver_code, tmp_path):
    task = load_task(task_name)
    ev = Evaluator(task, data_dir=shared_data, max_samples=n, convergence=False, timeout=300)
    pred_path = tmp_path / "prediction.npz"
    r = ev.evaluate_sync(solver_code(solver), split="dev", feedback="nrmse",
                         prediction_path=pred_path)
    assert r.status == "ok", r.message + r.stderr_tail
    assert r.n_samples == n and len(r.nrmse_per_sample) == n
    pred = np.load(pred_path)
    stacked = np.stack([pred[k] for k in task.solver.returns], axis=-1) if len(keys) > 1 \
        else pred[task.solver.returns[0]]
    ref = first_samples(shared_data / data_file, keys, n)
    expect = independent_nrmse(stacked, ref)
    # the evaluator keeps the float32 reference (CodePDE does); float64 loops here: ~1e-7 rel.
    assert r.nrmse == pytest.approx(expect, rel=1e-6)
    assert r.nrmse < bound
    if task_name == "advection":
        assert r.nrmse > 1.0e-3  # below the MUSCL reference's own error would be suspicious
    assert r.residual is not None and r.residual < 1e-2
    assert r.solver_seconds is not None and r.peak_memory_mb and r.peak_memory_mb > 10
    print(f"{task_name}: nRMSE {r.nrmse:.3e}  residual {r.residual:.2e}  "
          f"solver {r.solver_seconds:.2f}s  wall {r.wall_seconds:.2f}s")


def test_cns_reference_solver(cns_small, solver_code, tmp_path):
    task = load_task("cns1d")
    ev = Evaluator(task, dev_data=cns_small, convergence=False, timeout=300)
    pred_path = tmp_path / "prediction.npz"
    r = ev.evaluate_sync(solver_code("cns_fv"), split="dev", feedback="nrmse",
                         prediction_path=pred_path)
    assert r.status == "ok", r.message + r.stderr_tail
    pred = np.load(pred_path)
    stacked = np.stack([pred["v"], pred["rho"], pred["p"]], axis=-1)
    ref = first_samples(cns_small, ["Vx", "density", "pressure"], 10)
    assert stacked.shape == ref.shape == (2, 11, 256, 3)
    expect = independent_nrmse(stacked, ref)
    assert r.nrmse == pytest.approx(expect, rel=1e-6)  # float32 reference norm, as above
    # the wrong field order would be a gross error: (density, Vx, pressure) scores far worse
    swapped = independent_nrmse(stacked[..., [1, 0, 2]], ref)
    assert swapped > 10 * r.nrmse
    assert r.nrmse < 2e-2
    print(f"cns1d (t<=0.1, 256 cells): nRMSE {r.nrmse:.3e}  residual {r.residual}  "
          f"solver {r.solver_seconds:.2f}s")


def _rate_independent(solver_fn, beta: float, x: np.ndarray, t_last: np.float32) -> float:
    """CodePDE's 1D convergence test written out with np.interp loops (advection: vs finest)."""
    grids = [256, 512, 1024, 2048]
    x_min, x_max = x[0], x[-1]
    n_steps = np.ceil((t_last / 10 - 0) / 0.01) + 1
    tc = np.arange(n_steps + 1) * 0.01
    sols, xs = [], []
    for nx in grids:
        dx = (x_max - x_min) / nx
        xc = np.linspace(x_min, x_max, nx + 1)[:-1] + 0.5 * dx
        s = np.sin((xc + 1) * np.pi)
        u0 = np.stack([s, s + 0.1 * np.sin((xc + 1) * np.pi * 8),
                       np.exp(-(xc**2) * np.pi / 4) / np.sqrt(2),
                       np.exp(-0.5 * (xc - np.pi) ** 2 / (0.25 * np.pi) ** 2), np.abs(s)])
        sols.append(np.asarray(solver_fn(u0, tc, beta)))
        xs.append(xc)
    errors = []
    for i in range(3):
        fine, xf = sols[-1], xs[-1]
        coarse, xcc = sols[i], xs[i]
        on_coarse = np.empty_like(coarse)
        for b in range(coarse.shape[0]):
            for j in range(coarse.shape[1]):
                # coarse centres lie inside the fine centres' span: no extrapolation needed;
                # the output times coincide, so the time interpolation is the identity
                on_coarse[b, j] = np.interp(xcc, xf, fine[b, j])
        norms = [np.linalg.norm(coarse[b] - on_coarse[b]) for b in range(coarse.shape[0])]
        errors.append(np.mean(norms) / np.sqrt(coarse.size))
    rates = [np.log(errors[i] / errors[i + 1]) / np.log(grids[i + 1] / grids[i]) for i in range(2)]
    return float(np.mean(rates))


def test_convergence_path_matches_independent_computation(shared_data, solver_code, tmp_path):
    task = load_task("advection")
    ev = Evaluator(task, data_dir=shared_data, max_samples=1, convergence=True, residual=False)
    r = ev.evaluate_sync(solver_code("advection_exact"), split="dev", feedback="nrmse",
                         plot_path=tmp_path / "plot.png")
    assert r.status == "ok" and r.convergence_order is not None, r.convergence_note
    namespace: dict = {}
    exec(compile(solver_code("advection_exact"), "advection_exact.py", "exec"), namespace)
    with h5py.File(shared_data / "advection_dev.hdf5", "r") as f:
        x, t = np.asarray(f["x-coordinate"]), np.asarray(f["t-coordinate"])
    expect = _rate_independent(namespace["solver"], 0.1, x, t[-1])
    # same arithmetic up to interpolation round-off: 1e-6 absolute on a rate of order 1
    assert r.convergence_order == pytest.approx(expect, abs=1e-6)
    assert "Average rate" not in r.message
    assert (tmp_path / "plot.png").stat().st_size > 10_000  # a real picture, not an empty file
    print(f"advection exact shift: convergence order {r.convergence_order:.3f}")


def test_convergence_failure_keeps_nrmse(shared_data):
    """A solver that only works at N = 1024 fails CodePDE's test; we keep its nRMSE."""
    code = (
        "import numpy as np\n"
        "def solver(u0_batch, t_coordinate, beta):\n"
        "    assert u0_batch.shape[-1] == 1024, 'only N = 1024 supported'\n"
        "    return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)\n"
    )
    ev = Evaluator(load_task("advection"), data_dir=shared_data, max_samples=1, residual=False)
    r = ev.evaluate_sync(code, split="dev", feedback="nrmse")
    assert r.status == "ok" and r.nrmse is not None
    assert r.convergence_order is None
    # the note is pdesharp's (the exception's class); the solver's own words are detail
    assert "the solver raised AssertionError" in r.convergence_note
    assert "only N = 1024 supported" in r.detail and "N = 1024" not in r.convergence_note
