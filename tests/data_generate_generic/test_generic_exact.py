"""Accuracy of the generic spectral generator against exact solutions.

Tolerances: the spatial error is at round-off level for every test (band-limited or analytic data
whose Fourier coefficients fall below 1e-15 well inside the 2/3 band), so what is measured is the
time integration: DOP853 at rtol 1e-12 (an RMS-norm tolerance; max-norm global errors measured
1e-12 – 3e-10), ETDRK4 at a 1e-9 Richardson tolerance (measured 4e-10), and ETDRK4 is exact to
round-off when the problem is linear (its linear part is integrated exactly).
"""

from __future__ import annotations

import numpy as np
import pytest

from pdesharp.data.generate.generic import simulate_task
from generic_tasks import make_task


def centres(n, lo=0.0, hi=1.0):
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


@pytest.mark.parametrize("method,tol", [("dop853", 1e-9), ("etdrk4", 1e-12)])
def test_heat_fourier_mode_decays_exactly(method, tol):
    nu = 0.01
    task = make_task(["dt(u) - nu*dx(u, 2)"], ["u"], {"nu": nu})
    x = centres(16)
    u0 = np.stack([np.sin(6 * np.pi * x), 0.5 * np.cos(2 * np.pi * x)])
    t = np.linspace(0.0, 1.0, 11)
    info = {}
    u = simulate_task(task, {"u": u0}, t, method=method, info=info)["u"]
    decay = np.exp(-nu * np.array([36.0, 4.0])[:, None, None] * np.pi ** 2 * t[None, :, None])
    exact = decay * u0[:, None, :]
    assert u.shape == (2, 11, 16) and info["method"] == method
    np.testing.assert_array_equal(u[:, 0], u0)
    assert np.abs(u - exact).max() < tol


def test_auto_picks_the_exponential_integrator_for_stiff_diffusion():
    # nu = 1 on the 4x grid: max|L| T / 3 ~ 1e5 explicit steps, so "auto" must choose ETDRK4
    task = make_task(["dt(u) = nu*dx(u, 2)"], ["u"], {"nu": 1.0}, time_span=(0.0, 0.01))
    x = centres(64)
    t = np.linspace(0.0, 0.01, 3)
    info = {}
    u = simulate_task(task, {"u": np.sin(2 * np.pi * x)[None]}, t, info=info)["u"]
    assert info["method"] == "etdrk4"
    exact = np.exp(-4 * np.pi ** 2 * t)[:, None] * np.sin(2 * np.pi * x)
    assert np.abs(u[0] - exact).max() < 1e-12  # linear: exact to round-off


def test_linear_advection_is_an_exact_shift():
    beta = 0.7
    task = make_task(["dt(u) + beta*dx(u)"], ["u"], {"beta": beta})
    x = centres(48)
    t = np.linspace(0.0, 1.0, 6)
    u = simulate_task(task, {"u": np.exp(np.sin(2 * np.pi * x))[None]}, t, method="dop853")["u"][0]
    exact = np.exp(np.sin(2 * np.pi * (x[None, :] - beta * t[:, None])))
    # exp(sin) has Fourier coefficients I_m(1) < 1e-30 beyond the 24 modes of the grid
    assert np.abs(u - exact).max() < 1e-9


@pytest.mark.parametrize("method", ["dop853", "etdrk4"])
def test_advection_diffusion_2d_on_a_rectangle(method):
    cx, cy, nu = 0.3, -0.2, 0.01
    task = make_task(["dt(u) + cx*dx(u) + cy*dy(u) - nu*(dx(u, 2) + dy(u, 2))"], ["u"],
                     {"cx": cx, "cy": cy, "nu": nu}, space=("x", "y"),
                     domain={"x": [0.0, 1.0], "y": [0.0, 2.0]})
    n = 16
    X, Y = np.meshgrid(centres(n), centres(n, 0.0, 2.0), indexing="ij")
    modes = [(1, 1, 1.0), (2, -1, 0.5), (0, 3, 0.3)]  # (m_x, m_y, amplitude); L_y = 2

    def exact(t):
        u = np.zeros_like(X)
        for mx, my, amp in modes:
            kx, ky = 2 * np.pi * mx, np.pi * my
            decay = np.exp(-nu * (kx ** 2 + ky ** 2) * t)
            u += amp * decay * np.sin(kx * (X - cx * t) + ky * (Y - cy * t))
        return u

    t = np.linspace(0.0, 0.5, 6)
    u = simulate_task(task, {"u": exact(0.0)[None]}, t, method=method)["u"][0]
    assert u.shape == (6, n, n)
    err = max(np.abs(u[i] - exact(s)).max() for i, s in enumerate(t))
    assert err < (1e-9 if method == "dop853" else 1e-12)  # ETDRK4: all terms linear -> exact


@pytest.mark.parametrize("method", ["dop853", "etdrk4"])
def test_viscous_burgers_matches_cole_hopf(method):
    # u = -2 nu phi_x / phi with phi_t = nu phi_xx, phi = a + exp(-nu t) cos x: a smooth but
    # steep periodic solution (Fourier coefficients decay like 0.54^m, below 1e-9 for m >= 32)
    nu, a = 0.1, 1.2
    task = make_task(["dt(u) + dx(u**2/2) - nu*dx(u, 2)"], ["u"], {"nu": nu},
                     domain={"x": [0.0, 2 * np.pi]})
    x = centres(64, 0.0, 2 * np.pi)

    def exact(t):
        e = np.exp(-nu * t)
        return 2 * nu * e * np.sin(x) / (a + e * np.cos(x))

    t = np.linspace(0.0, 0.5, 6)
    info = {}
    u = simulate_task(task, {"u": exact(0.0)[None]}, t, method=method, info=info)["u"][0]
    ref = np.stack([exact(s) for s in t])
    rel = np.abs(u - ref).max() / np.abs(ref).max()
    # the initial data on 64 points carry a ~1e-9 interpolation error; ETDRK4 adds its 1e-9
    # Richardson tolerance (measured: 3e-12 DOP853, 4e-10 ETDRK4)
    assert rel < 5e-9, (rel, info)
    if method == "etdrk4":
        assert info["error_estimate"] <= 1e-9 and info["steps_per_frame"] >= 2


def test_explicit_coordinates_and_time_in_a_source_term():
    # u_t = cos(2 pi x) cos(t)  ->  u = u0 + cos(2 pi x) sin(t)
    task = make_task(["dt(u) - cos(2*pi*x)*cos(t)"], ["u"])
    x = centres(16)
    t = np.linspace(0.0, 1.0, 5)
    u = simulate_task(task, {"u": np.zeros((1, 16))}, t)["u"][0]
    assert np.abs(u - np.cos(2 * np.pi * x)[None] * np.sin(t)[:, None]).max() < 1e-10


def test_2d_nonlinear_the_two_integrators_agree():
    # 2D Allen-Cahn-type reaction-diffusion, no exact solution: DOP853 (rtol 1e-12) and ETDRK4
    # (Richardson tolerance 1e-9) are independent time integrators of the same semi-discrete
    # system, so they must agree to about the looser tolerance
    task = make_task(["dt(u) - nu*(dx(u, 2) + dy(u, 2)) - u + u**3"], ["u"], {"nu": 0.02},
                     space=("x", "y"), time_span=(0.0, 0.2))
    X, Y = np.meshgrid(centres(12), centres(12), indexing="ij")
    u0 = (0.8 * np.sin(2 * np.pi * X) * np.cos(2 * np.pi * Y) + 0.3 * np.cos(4 * np.pi * Y))[None]
    t = np.linspace(0.0, 0.2, 3)
    a = simulate_task(task, {"u": u0}, t, method="dop853")["u"]
    b = simulate_task(task, {"u": u0}, t, method="etdrk4")["u"]
    assert np.abs(a[:, -1] - u0).max() > 1e-2  # it evolved
    assert np.abs(a - b).max() < 5e-9
