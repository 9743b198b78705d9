"""Issue 25 item 4: a prediction that overflows (finite values, ±1e308 after frame 0) used to
score a PDE residual of 0.0 (its non-finite points were dropped) and an infinite nRMSE that
crashed the run later. Now a non-finite value where the equation is evaluated makes the
residual infinite, and a non-finite nRMSE or residual is a failed evaluation (status "nan",
with a message); points are left out only on the boundary ring a stencil cannot cover."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pdesharp.data.reference import ReferenceData
from pdesharp.evaluate.residual_score import residual
from pdesharp.evaluate.scoring import score_prediction
from pdesharp.task import load_task


def _advection(n=128, nt=201):
    task = load_task("advection")
    beta = task.parameters["beta"]
    x = (np.arange(n) + 0.5) / n
    t = np.linspace(0.0, 2.0, nt)
    u0 = lambda s: np.sin(2 * np.pi * s) + 0.5 * np.cos(4 * np.pi * s)  # noqa: E731
    exact = u0(x[None, None] - beta * t[None, :, None]) * np.ones((2, 1, 1))
    ref = ReferenceData(path=Path("synthetic"), fields={"u": exact}, coefficients={}, t=t, x=x)
    return task, exact, ref


def overflowing(exact: np.ndarray) -> np.ndarray:
    bad = exact.copy()
    bad[:, 1:] = np.where(np.arange(bad.shape[-1]) % 2, 1e308, -1e308)
    return bad


def test_an_overflowing_prediction_has_an_infinite_residual():
    task, exact, ref = _advection()
    honest = residual(task, {"u": exact}, ref)
    # the exact shift on 128 points: fourth-order time differences at dt = 0.01, ~1e-6
    assert 0 <= honest < 1e-3
    with np.errstate(all="ignore"):
        assert residual(task, {"u": overflowing(exact)}, ref) == np.inf


def test_an_overflowing_prediction_fails_with_a_clear_status():
    task, exact, ref = _advection()
    with np.errstate(all="ignore"):
        s = score_prediction(task, ref, {"u": overflowing(exact)}, residual=True, plot_path=None)
    assert s.status == "nan" and "not finite" in s.message and "overflows" in s.message
    assert s.residual is None or not np.isfinite(s.residual)
    # values whose squares overflow only inside the residual (1e152: the nRMSE is ~1e152, the
    # time derivative ~1e154, its square past the double range)
    big = exact.copy()
    big[:, 1:] *= 1e152
    with np.errstate(all="ignore"):
        s = score_prediction(task, ref, {"u": big}, residual=True, plot_path=None)
    assert s.status == "nan" and "PDE residual is not finite" in s.message
    ok = score_prediction(task, ref, {"u": exact}, residual=True, plot_path=None)
    assert ok.status == "ok" and ok.residual is not None and ok.residual < 1e-3


def test_the_boundary_ring_of_a_non_periodic_stencil_is_still_left_out():
    """Darcy (steady, Dirichlet): the second-difference stencil leaves out the boundary ring
    (NaN there by construction); that must not count as an overflow."""
    task = load_task("darcy")
    n = 32
    x = (np.arange(n) + 0.5) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    u = (X * (1 - X) * Y * (1 - Y))[None]
    a = np.ones((1, n, n))
    ref = ReferenceData(path=Path("synthetic"), fields={"u": u}, coefficients={"a": a},
                        t=None, x=x)
    value = residual(task, {"u": u}, ref)
    assert np.isfinite(value)
