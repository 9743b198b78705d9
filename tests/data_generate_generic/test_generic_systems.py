"""Systems with conserved variables: dt(h*v) is solved for v_t through the symbolic mass matrix."""

from __future__ import annotations

import numpy as np
import pytest

from generic_tasks import make_task
from pdesharp.data.generate.generic import simulate_task
from pdesharp.data.generate.generic_symbolic import compile_system
from pdesharp.task import load_task

CONSERVED = ["dt(h) + dx(h*v)", "dt(h*v) + dx(h*v**2 + g*h**2/2)"]
PRIMITIVE = ["dt(h) + dx(h*v)", "dt(v) + v*dx(v) + g*dx(h)"]


def shallow_water(equations):
    return make_task(equations, ["h", "v"], {"g": 1.0}, time_span=(0.0, 0.3), n_frames=7)


@pytest.fixture(scope="module")
def initial():
    # small smooth perturbations of a lake at rest: no shock before t ~ 2, so the solution stays
    # analytic over the 0.3 time units simulated here
    x = (np.arange(32) + 0.5) / 32
    return {"h": (1 + 0.05 * np.sin(2 * np.pi * x) + 0.02 * np.cos(4 * np.pi * x))[None],
            "v": (0.05 * np.cos(2 * np.pi * x))[None]}


def test_mass_matrix_inverse_is_the_chain_rule():
    system = compile_system(shallow_water(CONSERVED))
    assert not system.mass_is_identity
    # (h v)_t = h v_t + v h_t = -R1 and h_t = -R0  =>  v_t = (v R0 - R1)/h
    h, v, r0, r1 = 1.3, -0.4, 0.7, 0.2
    values = system.ut_fn(h, v, 0.0, 0.0, r0, r1)
    assert values[0] == pytest.approx(-r0) and values[1] == pytest.approx((v * r0 - r1) / h)


def test_conserved_and_primitive_forms_agree(initial):
    t = np.linspace(0.0, 0.3, 7)
    cons = simulate_task(shallow_water(CONSERVED), initial, t)
    prim = simulate_task(shallow_water(PRIMITIVE), initial, t)
    finer = simulate_task(shallow_water(CONSERVED), initial, t, nx=64)
    for name in ("h", "v"):
        assert cons[name].shape == (1, 7, 32)
        # the same smooth solution; the forms differ only by time-integration error (DOP853 at
        # rtol 1e-12 on values of size ~1: measured 5e-9 between the two, dominated by the
        # different nonlinear truncation of the two forms being below that)
        assert np.abs(cons[name] - prim[name]).max() < 5e-8
        # self-convergence in space: internal grids of 4x and 2x agree (spectral accuracy)
        assert np.abs(cons[name] - finer[name]).max() < 5e-8
        assert np.abs(cons[name][:, -1] - initial[name]).max() > 1e-3  # it did evolve


def test_mass_is_conserved_to_round_off(initial):
    t = np.linspace(0.0, 0.3, 7)
    # on the output grid itself (nx = N) the grid mean is the k = 0 mode, which the spectral
    # divergence dx(h v) leaves untouched: the total mass can only change by round-off
    h = simulate_task(shallow_water(CONSERVED), initial, t, nx=32)["h"][0]
    mass = h.mean(axis=-1)
    assert np.abs(mass - mass[0]).max() < 1e-13


def test_cns_system_compiles_with_a_three_by_three_mass_matrix():
    # the built-in CNS task: dt(rho v) and dt(E(rho, v, p)) -> u_t = -M^{-1} rest in closed form
    system = compile_system(load_task("cns1d"))
    assert system.unknowns == ("rho", "v", "p") and not system.mass_is_identity
    rho, v, p, r = 1.5, 0.3, 2.0, (0.1, -0.2, 0.4)
    rho_t, v_t, p_t = system.ut_fn(rho, v, p, 0.0, 0.0, *r)
    gamma = 5.0 / 3.0
    # check M u_t = -R with M the Jacobian of (rho, rho v, p/(Gamma-1) + rho v^2/2)
    assert rho_t == pytest.approx(-r[0])
    assert rho * v_t + v * rho_t == pytest.approx(-r[1])
    assert p_t / (gamma - 1) + v ** 2 / 2 * rho_t + rho * v * v_t == pytest.approx(-r[2])
