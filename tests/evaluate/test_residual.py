"""The normalised PDE residual: ~0 for exact solutions, >= 100x larger for perturbed ones."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from pdesharp.data.reference import ReferenceData
from pdesharp.evaluate.residual import spectral_derivative, time_derivative
from pdesharp.evaluate.residual_score import residual
from pdesharp.task import load_task, task_from_dict

sys.path.insert(0, str(Path(__file__).parent / "solvers"))


def _grid(n=256, lo=0.0, hi=1.0, t_end=2.0, nt=201):
    x = lo + (np.arange(n) + 0.5) * (hi - lo) / n
    t = np.linspace(0.0, t_end, nt)
    return x, t


def _ref(fields, x=None, t=None, coefficients=None):
    return ReferenceData(path=Path("synthetic"), fields=fields, coefficients=coefficients or {},
                         t=t, x=x)


def _variant(name: str, **parameters):
    data = load_task(name).model_dump(mode="json")
    data["parameters"].update(parameters)
    return task_from_dict(data)


def test_building_blocks_are_high_order():
    x, t = _grid(n=64, t_end=1.0, nt=101)
    f = np.sin(2 * np.pi * x)[None]
    d2 = spectral_derivative(f, 1, 1.0, 2)
    assert np.allclose(d2, -(2 * np.pi) ** 2 * f, atol=1e-9)
    g = np.exp(-t)[None, :, None] * np.ones((1, 1, 3))
    # fourth-order differences with dt = 0.01: error ~ dt^4 / 5 = 2e-9 (interior), ~1e-8 at ends
    assert np.allclose(time_derivative(g, t), -g, atol=5e-8)


def test_advection_exact_shift_vs_wrong_speed():
    task = load_task("advection")
    beta = task.parameters["beta"]
    x, t = _grid()
    u0 = lambda s: np.sin(2 * np.pi * s) + 0.5 * np.cos(4 * np.pi * s)
    exact = u0(x[None, None] - beta * t[None, :, None]) * np.ones((2, 1, 1))
    wrong = u0(x[None, None] - 1.05 * beta * t[None, :, None]) * np.ones((2, 1, 1))
    r_exact = residual(task, {"u": exact}, _ref({"u": exact}, x, t))
    r_wrong = residual(task, {"u": wrong}, _ref({"u": wrong}, x, t))
    # smooth periodic data: spectral space derivative is exact, fourth-order time differences
    # with beta*k*dt ~ 0.025: measured 3e-10
    assert r_exact < 1e-7
    assert r_wrong > 100 * r_exact and r_wrong > 1e-2


def test_heat_fourier_mode():
    task = _variant("reacdiff1d", nu=0.05, rho=0.0)  # reaction off: the heat equation
    x, t = _grid(n=128, t_end=1.0, nt=101)
    lam = 0.05 * (2 * np.pi) ** 2
    exact = 0.5 + 0.3 * np.sin(2 * np.pi * x)[None, None] * np.exp(-lam * t)[None, :, None]
    wrong = 0.5 + 0.3 * np.sin(2 * np.pi * x)[None, None] * np.exp(-1.2 * lam * t)[None, :, None]
    r_exact = residual(task, {"u": exact}, _ref({"u": exact}, x, t))
    r_wrong = residual(task, {"u": wrong}, _ref({"u": wrong}, x, t))
    assert r_exact < 1e-7  # lam*dt = 0.02: fourth-order time differences; measured 2.7e-9
    assert r_wrong > 100 * r_exact


def test_logistic_growth_uses_the_reaction_term():
    task = load_task("reacdiff1d")  # nu = 0.5, rho = 1; a uniform state has no diffusion
    x, t = _grid(n=64, t_end=1.0, nt=101)
    logistic = lambda rho: (1 / (1 + (1 / 0.2 - 1) * np.exp(-rho * t)))[None, :, None] * np.ones((1, 1, 64))
    exact, wrong = logistic(1.0), logistic(1.1)
    r_exact = residual(task, {"u": exact}, _ref({"u": exact}, x, t))
    r_wrong = residual(task, {"u": wrong}, _ref({"u": wrong}, x, t))
    assert r_exact < 1e-8  # measured 7e-11
    assert r_wrong > 100 * r_exact


def test_cns_density_wave_satisfies_all_three_equations():
    """rho(x - v t) with constant v and p is an exact solution of the system (viscosity idle)."""
    task = load_task("cns1d")
    x, t = _grid(n=128, lo=-1.0, hi=1.0, t_end=1.0, nt=101)
    v0, p0 = 0.3, 5.0
    rho = lambda c: 2.0 + 0.5 * np.sin(np.pi * (x[None, None] - c * t[None, :, None]))
    ones = np.ones((1, len(t), len(x)))
    exact = {"rho": rho(v0), "v": v0 * ones, "p": p0 * ones}
    wrong = {"rho": rho(1.1 * v0), "v": v0 * ones, "p": p0 * ones}
    r_exact = residual(task, exact, _ref(exact, x, t))
    r_wrong = residual(task, wrong, _ref(wrong, x, t))
    assert r_exact < 1e-8  # measured 1.4e-10
    assert r_wrong > 100 * r_exact


def test_darcy_discrete_solution_vs_perturbed():
    """Non-periodic, steady, variable coefficient: the conservative (staggered) evaluation
    reproduces the 5-point finite-volume operator, so its exact solution has round-off residual."""
    from darcy_fd import solver

    task = load_task("darcy")
    rng = np.random.default_rng(3)
    a = np.where(rng.normal(size=(1, 6, 6)) >= 0, 12.0, 3.0).repeat(8, 1).repeat(8, 2)  # 48x48
    u = solver(a)
    ref = _ref({"u": u}, coefficients={"a": a})
    r_exact = residual(task, {"u": u}, ref)
    x = (np.arange(48) + 0.5) / 48
    bumped = u * (1 + 0.01 * np.sin(np.pi * x)[None, :, None])
    r_wrong = residual(task, {"u": bumped}, ref)
    assert r_exact < 1e-10  # direct sparse solve: round-off only; measured 4e-14
    assert r_wrong > 100 * r_exact and r_wrong > 1e-4


def test_darcy_solution_with_other_boundary_values_loses():
    """u + c solves -div(a grad u) = 1 too (the PDE holds to round-off), but not u = 0 on the
    boundary: the residual score adds that mismatch (issue 18: scores a solver cannot game),
    while the honest discrete solution, whose wall value is zero to the grid's resolution,
    adds nothing."""
    from darcy_fd import solver

    from pdesharp.evaluate.residual_score import residual_parts

    task = load_task("darcy")
    rng = np.random.default_rng(3)
    a = np.where(rng.normal(size=(1, 6, 6)) >= 0, 12.0, 3.0).repeat(8, 1).repeat(8, 2)
    u = solver(a)
    ref = _ref({"u": u}, coefficients={"a": a})
    honest = residual_parts(task, {"u": u}, ref)
    shifted = residual_parts(task, {"u": u + 0.1 * np.abs(u).max()}, ref)
    assert honest["boundary"] == 0.0 and honest["initial"] == 0.0
    assert shifted["pde"] < 1e-10  # another exact solution of the PDE (measured 5e-14)
    # the offset is 10 % of max|u| on every wall; relative to rms(u) + rms(g = 0): measured 0.10
    assert shifted["boundary"] > 0.05
    assert residual(task, {"u": u + 0.1 * np.abs(u).max()}, ref) > 1e6 * residual(task, {"u": u}, ref)
