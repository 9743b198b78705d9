"""Analysis facts of the five built-in tasks, with the stability bounds checked numerically."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from pdesharp.builtin import BuiltinAnalyst, DataBounds, UnsupportedTask, compare_analyses
from pdesharp.builtin.compare import bound_kind
from pdesharp.records import Analysis, Classification, StabilityBound
from pdesharp.task import load_task, task_from_dict

N = 1024
DX = 1.0 / N


def analyse(name, fields, n=N):
    return BuiltinAnalyst(data_bounds=DataBounds(fields=fields, n={"x": n, "y": n})).analyse_sync(
        load_task(name))


def bound(a: Analysis, kind: str) -> StabilityBound:
    return next(b for b in a.stability if bound_kind(b) == kind)


def test_advection_is_linear_hyperbolic_with_exact_route():
    a = analyse("advection", {"u": (-1.0, 1.0)})
    c = a.classification
    assert (c.time_order, c.space_order, c.linear, c.pde_type) == (1, 1, True, "hyperbolic")
    assert a.route == "analytical" and a.source == "builtin"
    # upwind / Rusanov at Courant number 1: dt = dx / |beta|, beta = 0.1
    assert bound(a, "advective").value == pytest.approx(DX / 0.1, rel=1e-9)
    assert a.recommended_schemes[0].startswith("exact Fourier propagator")


def test_burgers_bounds_follow_the_field_range():
    a = analyse("burgers", {"u": (-1.5, 2.0)})
    c = a.classification
    assert (c.linear, c.pde_type, c.space_order) == (False, "parabolic", 2)
    assert a.route == "numerical"
    nu = load_task("burgers").parameters["nu"]
    # advective: dx / max|f'(u)| = dx / max|u| = dx / 2 on [-1.5, 2]
    assert bound(a, "advective").value == pytest.approx(DX / 2.0, rel=1e-9)
    # explicit central diffusion: dx^2 / (2 nu)
    assert bound(a, "diffusive").value == pytest.approx(DX**2 / (2 * nu), rel=1e-9)


def test_reaction_diffusion_is_hybrid_with_a_stable_exact_logistic_step():
    a = analyse("reacdiff1d", {"u": (0.0, 1.0)})
    assert a.route == "hybrid" and a.classification.linear is False
    dec = next(s for s in a.steps if s.name == "decomposition")
    step = sp.sympify(dec.facts["source_exact"])
    f = sp.lambdify([sp.Symbol(n) for n in ("_q0", "rho", "_tau")], step, "numpy")
    # the closed form must equal the logistic solution and stay finite at u = 0 and large times
    q0, rho, tau = 0.3, 1.0, 0.7
    exact = q0 * math.exp(rho * tau) / (1 - q0 + q0 * math.exp(rho * tau))
    assert f(q0, rho, tau) == pytest.approx(exact, rel=1e-12)
    with np.errstate(all="raise"):
        assert f(0.0, 1.0, 5.0) == 0.0 and f(0.5, 1.0, 700.0) == pytest.approx(1.0)
    # explicit diffusion dx^2/(2 nu) is far below the output step: the analysis says so
    assert bound(a, "diffusive").value == pytest.approx(DX**2 / (2 * 0.5), rel=1e-9)
    assert bound(a, "source").value == pytest.approx(1.0, rel=1e-9)  # 1/max|rho (1 - 2u)|
    assert "Fourier" in next(s for s in a.steps if s.name == "stability").text


def test_cns_sound_speed_bound_and_mixed_type():
    bounds = {"rho": (1.0, 4.0), "v": (-1.0, 2.0), "p": (10.0, 40.0)}
    a = BuiltinAnalyst(data_bounds=DataBounds(fields=bounds, n={"x": N})).analyse_sync(load_task("cns1d"))
    assert a.classification.pde_type == "mixed" and a.classification.linear is False
    dx = 2.0 / N
    gamma = 5.0 / 3.0
    lam = 2.0 + math.sqrt(gamma * 40.0 / 1.0)  # max |v| + c at the box corner
    assert bound(a, "advective").value == pytest.approx(dx / lam, rel=1e-6)
    # density-weighted viscosity: the diffusivity of v is zeta + 4 eta / 3, independent of rho
    assert bound(a, "diffusive").value == pytest.approx(dx**2 / (2 * (0.1 + 0.4 / 3)), rel=1e-9)
    # the stated formula is the same bound: it parses, and at the box corner it gives the value
    # (it was cut at the first '/' of the sound speed sqrt(Gamma*p/rho) and read p*rho)
    expr = sp.sympify(bound(a, "advective").expression)  # our own text, not a model's
    rho, v, p, dx_, g = sp.symbols("rho v p dx Gamma")
    assert expr.free_symbols <= {rho, v, p, dx_, g}
    at = {rho: 1.0, v: 2.0, p: 40.0, dx_: dx, g: gamma}
    assert float(expr.subs(at)) == pytest.approx(dx / lam, rel=1e-9)
    assert float(expr.subs({**at, rho: 4.0})) == pytest.approx(
        dx / (2.0 + math.sqrt(gamma * 40.0 / 4.0)), rel=1e-9)


def test_darcy_is_linear_elliptic():
    a = BuiltinAnalyst().analyse_sync(load_task("darcy"))
    c = a.classification
    assert (c.time_order, c.linear, c.pde_type) == (None, True, "elliptic")
    assert a.stability == [] and a.route == "numerical"


def test_missing_bounds_are_assumed_and_said():
    a = BuiltinAnalyst().analyse_sync(load_task("burgers"))
    assert any("assumed" in k for k in a.key_facts)


def test_wrong_llm_stability_bound_is_flagged():
    builtin = analyse("burgers", {"u": (-1.0, 1.0)})
    # a scripted stand-in for an LLM analysis (written by us, not a model's output): it states
    # the advective bound 5x too large (and, after the first check, the diffusive one 4x)
    llm = Analysis(
        classification=Classification(time_order=1, space_order=2, linear=False, pde_type="parabolic",
                                      boundary="periodic"),
        stability=[StabilityBound(scheme="explicit diffusion", expression="0.8*dx**2/(2*nu)"),
                   StabilityBound(scheme="upwind advection CFL", expression="5*dx", value=5 * DX)],
        route="numerical")
    found = {d.fact: d for d in compare_analyses(llm, builtin, load_task("burgers"))}
    assert "stability[advective].value" in found and found["stability[advective].value"].severity == "error"
    # 0.8 dx^2/(2 nu) is within the factor-2 tolerance (a safety factor), not flagged
    assert "stability[diffusive].value" not in found
    llm.stability[0] = StabilityBound(scheme="explicit diffusion", expression="2*dx**2/nu")
    found = {d.fact for d in compare_analyses(llm, builtin, load_task("burgers"))}
    assert "stability[diffusive].value" in found


def test_agreeing_llm_analysis_has_no_disagreement_and_type_errors_are_caught():
    builtin = analyse("advection", {"u": (-1.0, 1.0)})
    same = builtin.model_copy(update={"source": "llm"})
    assert compare_analyses(same, builtin, load_task("advection")) == []
    wrong = builtin.model_copy(update={"route": "numerical", "classification": builtin.classification.model_copy(
        update={"linear": False, "pde_type": "parabolic"})})
    facts = {d.fact for d in compare_analyses(wrong, builtin, load_task("advection"))}
    assert {"classification.linear", "classification.pde_type", "route"} <= facts


def _task_with(equation: str, boundary: str = "periodic", space=("x",)) -> dict:
    t = load_task("burgers").model_dump(mode="json")
    t["equation"]["equations"] = [equation]
    t["equation"]["space"] = list(space)
    t["domain"] = {a: [0.0, 1.0] for a in space}
    t["boundary"] = boundary
    return t


@pytest.mark.parametrize("equation,boundary,space,needle", [
    # a nonlinear third derivative nothing implicit holds: refused by its step count
    ("dt(u) + u*dx(u, 3)", "periodic", ("x",), "-u*dx(u, 3) in dt(u) as it stands"),
    ("dt(u) + sin(dt(u)) - dx(u, 2)", "periodic", ("x",), "the time derivative inside"),
    ("dt(u) - nu*dx(u, 2)", "reflective walls", ("x",), "boundary"),
    ("dt(u, 3) - dx(u, 2)", "periodic", ("x",), "order 3"),
])
def test_unsupported_pdes_get_a_clear_message(equation, boundary, space, needle):
    task = task_from_dict(_task_with(equation, boundary, space))
    with pytest.raises(UnsupportedTask) as err:
        BuiltinAnalyst().analyse_sync(task)
    msg = str(err.value)
    assert needle in msg and "--model openai:gpt-4o" in msg


def test_bounds_are_read_from_the_dev_data(shared_data):
    b = DataBounds.from_reference(load_task("burgers"), shared_data, limit=3)
    lo, hi = b.fields["u"]
    assert b.n == {"x": 1024} and lo < 0 < hi and hi - lo < 10


def test_a_steady_analysis_quotes_no_value_of_the_reference_solution(tmp_path):
    # a steady task's stored fields are the reference solution: the analysis may read their
    # grid size, never their values (the prompts and the report show the analysis)
    import h5py

    from pdesharp.examples import example_path

    task = load_task(example_path("poisson1d"))
    n = 37
    path = tmp_path / "dev.hdf5"
    with h5py.File(path, "w") as f:  # the solution's extremes are numbers no formula makes
        f["sol"] = np.linspace(-4321.987, 8765.4321, 2 * n).reshape(2, n)
        f["f"] = np.ones((2, n))
        f["x-coordinate"] = (np.arange(n) + 0.5) / n
    b = DataBounds.from_reference(task, explicit=path)
    assert b.fields == {} and b.n == {"x": n}
    a = BuiltinAnalyst(dev_data=path).analyse_sync(task)
    text = a.model_dump_json()
    assert "4321" not in text and "8765" not in text and "4.322e" not in text
    assert "range of u assumed" not in text  # nothing to assume: no range is used


def test_time_dependent_bounds_say_what_they_are_computed_from(shared_data):
    a = BuiltinAnalyst(data_dir=shared_data).analyse_sync(load_task("burgers"))
    note = bound(a, "advective").note
    assert "range of the initial conditions in the dev data (the solver's inputs)" in note


def test_pipeline_hook_gives_builtin_roles(shared_data):
    from pdesharp.pipeline import SolveConfig
    from pdesharp.rolesets import builtin_roles

    roles = builtin_roles(SolveConfig(task="burgers", data_dir=str(shared_data)))
    assert isinstance(roles.analyst, BuiltinAnalyst) and roles.analyst.data_dir == str(shared_data)
    assert [j.strategy for j in roles.judges] == ["accuracy", "robust", "hybrid"]


def test_pipeline_hook_refuses_an_unsupported_task_up_front(tmp_path):
    from pdesharp.pipeline import SolveConfig
    from pdesharp.rolesets import builtin_roles

    path = tmp_path / "kdv.yaml"
    spec = _task_with("dt(u) + u*dx(u, 3)")
    spec["name"] = "nonlinear_dispersion"
    import yaml

    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(UnsupportedTask, match=r"u\*dx\(u, 3\) in dt\(u\) as it stands"):
        builtin_roles(SolveConfig(task=str(path)))
