"""The CNS and Darcy kinds of CodePDE's convergence test, driven in-process with cheap solvers."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from pdesharp.evaluate.convergence import (analytic_ics, cell_centres, convergence_order,
                                           output_times, random_hd_ics)
from pdesharp.evaluate.spec import ChildSpec
from pdesharp.task import load_task

sys.path.insert(0, str(Path(__file__).parent / "solvers"))


def test_time_grid_matches_codepde_frame_counts():
    # t_last stored as float32, divided by 10 in float32: 22 frames for t_last = 2 (seed logs
    # show solutions of shape (5, 22, N)), 12 for t_last = 1
    assert len(output_times(np.float32(0), np.float32(2.0) / 10)) == 22
    assert len(output_times(np.float32(0), np.float32(1.0) / 10)) == 12
    xc = cell_centres(np.float32(0.00048828125), np.float32(0.9995117), 256)
    assert len(xc) == 256 and xc[0] > 0.00048828125 and xc[-1] < 0.9995117
    assert analytic_ics(xc).shape == (5, 256)


def test_random_hd_ics_are_deterministic_and_not_renormalised():
    xc = cell_centres(-1.0, 1.0, 2048)
    a, b = random_hd_ics(xc), random_hd_ics(xc)
    assert a.shape == (8, 2048) and np.array_equal(a, b)
    assert a.min() < 0  # CodePDE's if_renorm=False: "density" and "pressure" may be negative


def _cns_shift_solver(Vx0, density0, pressure0, t_coordinate, eta, zeta):
    """Stand-in for a CNS solver: checks CodePDE's identical-IC quirk, transports each field."""
    assert np.array_equal(Vx0, density0) and np.array_equal(density0, pressure0)
    n = Vx0.shape[-1]
    k = 2 * np.pi * np.fft.rfftfreq(n, d=2.0 / n)
    phase = np.exp(-1j * k[None, :] * 0.5 * np.asarray(t_coordinate)[:, None])
    out = np.fft.irfft(np.fft.rfft(Vx0)[:, None] * phase[None], n=n)
    return out, out.copy(), out.copy()


def test_cns_kind_runs_codepde_protocol():
    task = load_task("cns1d")
    x = cell_centres(-1.0, 1.0, 1024).astype(np.float32)
    t = (np.arange(101) * 0.01).astype(np.float32)
    inputs = {"time": t, "x": x}
    order, note = convergence_order(ChildSpec.from_task(task), _cns_shift_solver, inputs, pred_full=[])
    # the ICs are interpolated from 2048 points, so coarse and fine runs see slightly different
    # data: the measured rate is finite and positive (linear interpolation: about 2)
    assert order is not None and note == ""
    assert 0.5 < order < 4


def test_darcy_kind_downsamples_own_prediction():
    from darcy_fd import solver

    task = load_task("darcy")
    rng = np.random.default_rng(0)
    a = np.where(rng.normal(size=(2, 5, 5)) >= 0, 12.0, 3.0).repeat(12, 1).repeat(12, 2)
    a = np.pad(a, ((0, 0), (0, 1), (0, 1)), mode="edge")  # 61 x 61, like 421 = 6*70 + 1
    full = solver(a)
    order, note = convergence_order(ChildSpec.from_task(task), solver, {"coefficient:a": a},
                                    pred_full=[full])
    assert order is not None and np.isfinite(order), note
    # a consistent solver approaches its own fine solution: errors shrink as the grid refines
    assert order > 0.3


def test_non_finite_rate_becomes_none_with_note():
    task = load_task("darcy")
    a = np.full((1, 13, 13), 3.0)
    order, note = convergence_order(ChildSpec.from_task(task), lambda a: np.zeros_like(a),
                                    {"coefficient:a": a}, pred_full=[np.zeros_like(a)])
    assert order is None and "not finite" in note  # zero errors: log(0/0)
