"""The APEBench -> task mapping, without APEBench or JAX: exponax's documented conversions
(difficulty and normalized modes to physical coefficients), the task each stepper form becomes,
exponax's grid, and the refusals. The expected numbers are worked by hand from the formulas in
exponax's documentation (gamma_j = alpha_j N^j 2^(j-1) D, delta_1 = beta_1 M N D, ...) and from
APEBench's published scenario defaults (diff_adv: gamma_1 = -4, N = 160; diff_burgers: gamma_2 =
1.5, delta = -1.5)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pdesharp.grid import axis_points
from pdesharp.suite.importers import apebench_map as am
from pdesharp.task import task_from_dict

REL = 1e-14  # the conversions are a few float multiplications: a few ulps


def test_difficulty_to_physical_matches_the_worked_numbers():
    # diff_adv in 1D: gamma_1 = -4, N = 160 -> alpha_1 = -4 / (160 * 2**0 * 1) = -0.025
    a = am.linear_from_difficulty((0.0, -4.0, 0.0, 0.0, 0.0), points=160, dims=1)
    assert a[1] == pytest.approx(-0.025, rel=REL) and a[0] == a[2] == 0.0
    # diffusion gamma_2 = 1.5 in 1D: 1.5 / (160**2 * 2) = 2.9296875e-05; in 2D half that
    assert am.linear_from_difficulty((0, 0, 1.5), points=160, dims=1)[2] == \
        pytest.approx(2.9296875e-05, rel=REL)
    assert am.linear_from_difficulty((0, 0, 1.5), points=160, dims=2)[2] == \
        pytest.approx(2.9296875e-05 / 2, rel=REL)
    # hyper-diffusion gamma_4 = -9 (KdV's): -9 / (160**4 * 8) = -1.71661376953125e-09
    assert am.linear_from_difficulty((0, 0, 0, 0, -9.0), points=160, dims=1)[4] == \
        pytest.approx(-1.71661376953125e-09, rel=REL)
    # the zeroth order is not scaled (Fisher-KPP's drag 0.02)
    assert am.linear_from_difficulty((0.02, 0, 0.2), points=160, dims=1)[0] == 0.02
    # delta_1 = -1.5 -> beta_1 = -1.5 / 160 = -0.009375; delta_2 = -6 -> -6 / 160**2
    b = am.nonlinear_from_difficulty((-0.02, -1.5, -6.0), points=160, dims=1)
    assert b == pytest.approx((-0.02, -0.009375, -6.0 / 25600), rel=REL)


def test_normalized_to_physical():
    # alpha_j = a_j dt / L^j  <=>  a_j = alpha_j L^j / dt
    a = am.linear_from_normalized((0.0, -0.025, 8e-4), extent=2.0, dt=0.5)
    assert a == pytest.approx((0.0, -0.1, 8e-4 * 4 / 0.5), rel=REL)


def _problem(**kw) -> am.ApeProblem:
    base = dict(name="1d_diff_adv_diff", dims=1, points=160, extent=1.0, dt=1.0, frames=200,
                linear=(0.0, -0.025, 7.8125e-05, 0.0, 0.0), ic="fourier;5;true;true",
                stepper="DifficultyLinearStepper")
    return am.ApeProblem(**{**base, **kw})


def _task(data: dict):
    return task_from_dict(json.loads(json.dumps(data)), "test")


def test_a_linear_scenario_becomes_a_periodic_task_on_exponax_points():
    p = _problem()
    data = am.spec(p)
    assert data["equation"]["equations"] == ["dt(u) = a1*dx(u) + a2*dx(u, 2)"]
    assert data["parameters"] == {"a1": -0.025, "a2": 7.8125e-05}
    assert data["grid"] == "periodic_nodes" and data["boundary"] == "periodic"
    assert data["time_span"] == [0.0, 200.0] and data["n_frames"] == 201
    assert "zero mean" in data["initial_condition"] and "5" in data["initial_condition"]
    task = _task(data)
    assert task.equation.unknowns == ["u"] and task.domain == {"x": (0.0, 1.0)}
    # exponax's grid: N points from 0, the end point left out (numpy's endpoint=False)
    assert np.array_equal(axis_points(0.0, 1.0, 160, task.grid),
                          np.linspace(0.0, 1.0, 160, endpoint=False))


def test_two_dimensional_terms_are_applied_axis_by_axis():
    p = _problem(name="2d_x", dims=2, linear=(0.02, -0.01, 0.0, 0.0, -1e-9))
    eq = am.spec(p)["equation"]["equations"][0]
    # exponax's isotropic operators: no mixed derivative; the zeroth order counts per axis
    assert eq == "dt(u) = 2*a0*u + a1*(dx(u) + dy(u)) + a4*(dx(u, 4) + dy(u, 4))"
    assert _task(am.spec(p)).equation.space == ["x", "y"]


def test_nonlinear_and_convection_forms():
    kdv = _problem(name="1d_diff_kdv", kind="nonlinear", linear=(0, 0, 0, -8.5e-07, -1.7e-09),
                   convection=-0.0125)
    assert am.spec(kdv)["equation"]["equations"] == \
        ["dt(u) = a3*dx(u, 3) + a4*dx(u, 4) + b1/2*dx(u**2)"]
    fisher = _problem(name="1d_diff_fisher", kind="nonlinear", linear=(0.02, 0, 3.9e-06),
                      quadratic=-0.02)
    assert am.spec(fisher)["equation"]["equations"] == \
        ["dt(u) = a0*u + a2*dx(u, 2) + b0*u**2"]
    burgers2 = _problem(name="2d_diff_burgers", dims=2, kind="convection", channels=2,
                        linear=(0, 0, 1.5e-05), convection_scale=0.0047)
    data = am.spec(burgers2)
    assert data["equation"]["equations"] == [
        "dt(u) + c/2*(dx(u**2) + dy(u*v)) = a2*(dx(u, 2) + dy(u, 2))",
        "dt(v) + c/2*(dx(v*u) + dy(v**2)) = a2*(dx(v, 2) + dy(v, 2))"]
    assert data["parameters"] == {"c": 0.0047, "a2": 1.5e-05}
    assert _task(data).equation.unknowns == ["u", "v"]
    # trailing zero coefficients (APEBench pads its tuples) do not count as higher orders
    assert am.spec(_problem(linear=(0, 0, 0, 0, -1e-9, 0.0)))["parameters"] == {"a4": -1e-9}


@pytest.mark.parametrize("change, words", [
    (dict(kind="nonlinear", gradient_norm=-2e-4), "mean removed"),
    (dict(linear=(0, 0, 0, 0, 0, 1e-12)), "order above 4"),
    (dict(kind="convection", dims=2, channels=1, convection_scale=0.1), "channels"),
    (dict(kind="nonlinear", channels=2), "channels"),
    (dict(kind="vorticity"), "stepper kind"),
    (dict(linear=(0.0,)), "no term"),
    (dict(linear=(0, float("nan"))), "not finite"),
])
def test_what_a_task_cannot_state_is_refused_with_the_reason(change, words):
    with pytest.raises(am.NotMapped, match=words):
        am.spec(_problem(**change))


def test_initial_condition_words_and_hostile_configs():
    assert "clipped to [0.0, 1.0]" in am.initial_words("clamp;0.0;1.0;fourier;5;false;false", 0)
    assert "advanced 500 steps" in am.initial_words("fourier;5;true;true", 500)
    odd = am.initial_words("x" * 5000 + "\x1b[2J", 0)
    assert len(odd) < 300 and "\x1b" not in odd
