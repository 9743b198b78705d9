"""Task specs: the five built-ins load, round-trip, and bad specs fail with clear messages."""

import pytest
import sympy as sp
import yaml

from pdesharp.equation import EquationError, parse_system
from pdesharp.task import TaskError, builtin_task_names, load_task, task_from_dict


def test_builtin_tasks_are_the_five_codepde_tasks():
    assert builtin_task_names() == ["advection", "burgers", "cns1d", "darcy", "reacdiff1d"]


@pytest.mark.parametrize("name", ["advection", "burgers", "cns1d", "darcy", "reacdiff1d"])
def test_builtin_round_trips_through_yaml(name):
    task = load_task(name)
    assert task_from_dict(yaml.safe_load(task.to_yaml())) == task


def test_parameters_are_as_passed_to_the_solver():
    # CodePDE's evaluator passes nu/pi for Burgers (peers.md section 1.2).
    assert load_task("burgers").parameters["nu"] == pytest.approx(0.01 / 3.141592653589793, rel=1e-15)
    assert load_task("advection").parameters == {"beta": 0.1}
    assert load_task("cns1d").parameters == {"eta": 0.1, "zeta": 0.1}


def test_signatures_match_codepde_templates():
    sigs = {n: load_task(n).solver.signature for n in builtin_task_names()}
    assert sigs["advection"] == "solver(u0_batch, t_coordinate, beta)"
    assert sigs["cns1d"] == "solver(Vx0, density0, pressure0, t_coordinate, eta, zeta)"
    assert sigs["darcy"] == "solver(a)"
    assert load_task("cns1d").solver.returns == ["v", "rho", "p"]


def test_cns_equation_is_density_weighted():
    # The reference's viscous momentum flux is (zeta + 4 eta/3) * rho * v_x (PDEBench generator).
    system = load_task("cns1d").system
    q, rest = system.split_time_derivative(1)
    rho, v = system.function("rho"), system.function("v")
    x = system.coords[0]
    eta, zeta = sp.Symbol("eta", real=True), sp.Symbol("zeta", real=True)
    assert sp.simplify(q - rho * v) == 0
    expected = sp.Derivative(rho * v**2 + system.function("p"), x) - sp.Derivative(
        (zeta + 4 * eta / 3) * rho * sp.Derivative(v, x), x)
    assert sp.simplify((rest - expected).doit()) == 0


def test_burgers_time_split():
    system = load_task("burgers").system
    q, rest = system.split_time_derivative(0)
    u = system.function("u")
    assert q == u
    x = system.coords[0]
    expanded = sp.expand(rest.doit())
    nu = sp.Symbol("nu", real=True)
    assert sp.simplify(expanded - (u * sp.Derivative(u, x) - nu * sp.Derivative(u, (x, 2)))) == 0


def test_undeclared_name_is_reported():
    with pytest.raises(EquationError, match="kappa is not declared; declare kappa under parameters"):
        parse_system(["dt(u) - kappa*dx(u, 2)"], ["u"], space=["x"])


def test_a_typo_gets_a_did_you_mean_and_a_syntax_error_the_users_column():
    """Issue 26 item 7: the closest known name for a misspelt function or parameter, and the
    column of the whole equation (the sides are parsed apart) with the text found there."""
    cases = [("dt(u) = nu*dx(u, 2) + tanhh(u)", "tanhh(...) is not a known function (did you mean tanh?)"),
             ("dt(u) = nuu*dx(u, 2)", "nuu is not declared (did you mean nu?)"),
             ("dt(u) = Sin(u)", "did you mean sin?"),
             ("dt(u) = lapalce(u)", "did you mean laplace?"),
             # the dangling + is the 21st character; a missing comma stops the parser at 'u 2'
             ("dt(u) = nu*dx(u, 2) +", "column 21, at `+`"),
             ("dt(u) = nu*dx(u 2)", "column 15, at `u 2)`"),
             ("dt(u) = nu*dx(u, 2)) + u", "an extra ')' at column 20"),
             ("dt(u) =   u.x", "attribute access `.x` is not allowed in equation 1 (column 12)")]
    for text, said in cases:
        with pytest.raises(EquationError) as err:
            parse_system([text], ["u"], space=["x"], parameters=["nu"])
        assert said in str(err.value), (text, str(err.value))


def test_bad_spec_lists_each_problem():
    data = yaml.safe_load(load_task("advection").to_yaml())
    del data["domain"]
    data["solver"]["args"][2]["name"] = "speed"
    with pytest.raises(TaskError) as err:
        task_from_dict(data, "my.yaml")
    assert "my.yaml" in str(err.value) and "domain" in str(err.value)


def test_parameter_argument_must_exist():
    data = yaml.safe_load(load_task("advection").to_yaml())
    data["parameters"] = {"speed": 0.1}
    data["equation"]["equations"] = ["dt(u) + speed*dx(u)"]
    with pytest.raises(TaskError, match="names no parameter"):
        task_from_dict(data)


def test_unknown_task_name_suggests_builtins(tmp_path):
    with pytest.raises(TaskError, match="built-in tasks are advection"):
        load_task("heat")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(TaskError, match="not valid YAML"):
        load_task(str(bad))


def test_time_derivative_with_unknown_coefficient_is_refused():
    system = parse_system(["u*dt(u) + dx(u)"], ["u"], space=["x"])
    with pytest.raises(EquationError, match="conservative form"):
        system.split_time_derivative(0)
    # A constant or parameter coefficient is fine: 2*dt(u) conserves 2*u.
    system = parse_system(["2*dt(u) + dx(u)"], ["u"], space=["x"])
    assert system.split_time_derivative(0)[0] == 2 * system.function("u")


def test_a_codepde_statement_must_keep_the_solver_interface():
    from pdesharp.task import TaskError, load_task, task_from_dict

    spec = load_task("advection").model_dump(mode="json")
    spec["codepde"]["template"] = spec["codepde"]["template"].replace("beta)", "speed)")
    with pytest.raises((TaskError, ValueError), match="codepde.template: solver takes"):
        task_from_dict(spec)
    for name in ("advection", "burgers", "reacdiff1d", "cns1d", "darcy"):
        assert load_task(name).codepde is not None, name
