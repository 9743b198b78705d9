"""The generic generator beyond periodic boxes: 1D Dirichlet, Neumann and Robin boundaries
(Chebyshev collocation + Radau) and second time derivatives, checked against exact solutions."""

from __future__ import annotations

import numpy as np
import pytest

from generic_tasks import make_task
from pdesharp.data.generate.generic import generate_task, simulate_task

N = 64
X = (np.arange(N) + 0.5) / N
T = np.linspace(0.0, 0.5, 11)


def test_heat_with_dirichlet_walls_matches_the_sine_series():
    nu = 0.1
    task = make_task(["dt(u) - nu*dx(u, 2)"], ["u"], {"nu": nu}, boundary="dirichlet: u = 0")
    u0 = np.sin(np.pi * X) + 0.5 * np.sin(3 * np.pi * X)
    info: dict = {}
    u = simulate_task(task, {"u": u0[None]}, T, info=info)["u"][0]
    exact = (np.exp(-nu * np.pi**2 * T)[:, None] * np.sin(np.pi * X)
             + 0.5 * np.exp(-9 * nu * np.pi**2 * T)[:, None] * np.sin(3 * np.pi * X))
    assert info["method"].startswith("chebyshev")
    # the cell-centre data reach the collocation points by cubic splines, an O(h^4) step
    # (measured 2e-7 at N = 64); the time integration itself is at rtol 1e-12
    assert np.abs(u - exact).max() < 1e-6


def test_time_dependent_robin_data_and_a_source_in_x_and_t_are_exact():
    # u = exp(-t) (1 + x^2) solves u_t = nu u_xx - exp(-t) (1 + x^2) - 2 nu exp(-t) with
    # u_x - u = -exp(-t) at x = 0 and u_x + 2u = 6 exp(-t) at x = 1 (a polynomial in x: the
    # splines and the collocation are exact, only the time integration errs)
    nu = 0.1
    task = make_task(["dt(u) - nu*dx(u, 2) + exp(-t)*(1 + x**2) + 2*nu*exp(-t)"], ["u"],
                     {"nu": nu}, boundary="x = 0: dx(u) - u = -exp(-t); x = 1: dx(u) + 2*u = 6*exp(-t)")
    exact = np.exp(-T)[:, None] * (1 + X**2)
    u = simulate_task(task, {"u": exact[:1]}, T)["u"][0]
    assert np.abs(u - exact).max() < 1e-9


def test_generated_neumann_data_conserve_the_mean():
    heat = make_task(["dt(u) - nu*dx(u, 2)"], ["u"], {"nu": 0.1}, boundary="neumann: dx(u) = 0",
                     fields={"u": "tensor"})
    out = generate_task(heat, 2, seed=1, nx=N)
    v = out["tensor"]
    assert v.shape == (2, 11, N) and out["x-coordinate"] == pytest.approx(X)
    mean = v.mean(axis=2)
    # insulated walls conserve the integral; the mean over the output cells is the midpoint rule,
    # whose O(h^2) error scales with the curvature, which decays (measured drift 4e-14). A wrong
    # wall condition (any inflow) changes the mean at O(1) rates.
    assert np.abs(mean - mean[:, :1]).max() < 1e-6
    assert np.ptp(v[:, -1], axis=1).max() < np.ptp(v[:, 0], axis=1).min()  # and it diffuses


def test_second_time_derivative_is_rewritten_and_starts_at_rest():
    c = 0.5
    task = make_task(["dt(u, 2) - c**2*dx(u, 2)"], ["u"], {"c": c}, time_span=(0.0, 1.0))
    u0 = np.sin(2 * np.pi * X) + 0.3 * np.cos(4 * np.pi * X)
    u = simulate_task(task, {"u": u0[None]}, np.linspace(0, 1, 6))["u"][0]
    t = np.linspace(0, 1, 6)[:, None]
    f = lambda s: np.sin(2 * np.pi * s) + 0.3 * np.cos(4 * np.pi * s)  # noqa: E731
    exact = 0.5 * (f(X - c * t) + f(X + c * t))  # d'Alembert, zero initial velocity
    assert np.abs(u - exact).max() < 1e-8


@pytest.mark.parametrize("boundary", ["dirichlet: u = 1", "x = 0: u = 1; x = 1: dx(u) = 0"])
def test_a_steady_state_stays_put(boundary):
    task = make_task(["dt(u) - dx(u, 2)"], ["u"], boundary=boundary)
    u = simulate_task(task, {"u": np.ones((1, N))}, T)["u"]
    assert np.abs(u - 1.0).max() < 1e-10
