"""`pdesharp tasks check FILE`: before a run, whether the built-in analyst supports a task, with
what, and why not; refusals name the construct and the rewrite the catalogue supports."""

from __future__ import annotations

import pytest
import yaml

from pdesharp.builtin import UnsupportedTask, structure
from pdesharp.cli import main
from pdesharp.task import load_task, task_from_dict

from builtin_helpers import EXAMPLES


def _spec(equations, unknowns=("u",), boundary="periodic", space=("x",), coefficients=()):
    spec = load_task("burgers").model_dump(mode="json")
    spec.update(name="check_me", boundary=boundary, domain={a: [0.0, 1.0] for a in space})
    spec["equation"] = {"unknowns": list(unknowns), "equations": list(equations),
                        "space": list(space), "coefficients": list(coefficients)}
    spec["solver"]["returns"] = list(unknowns)[:1]
    spec["data"]["fields"] = {unknowns[0]: "tensor"}
    return spec


def test_check_says_a_supported_task_is_supported_and_how(capsys):
    code = main(["tasks", "check", str(EXAMPLES / "wave1d.yaml")])
    out = capsys.readouterr().out
    assert code == 0
    assert "supported by the built-in analyst" in out and "route analytical" in out
    assert "exact Fourier propagator" in out  # the first design Genesis would write
    assert "u_t = 0 at t = 0" in out  # the rewrite and its convention, said up front


def test_check_says_why_not_and_exits_non_zero(tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(_spec(["dt(u) + u*dx(u, 3)"])))
    code = main(["tasks", "check", str(path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "not supported" in out and "-u*dx(u, 3) in dt(u)" in out and "--model openai:gpt-4o" in out


def test_a_refusal_says_the_users_names_not_the_codes(tmp_path, capsys, shared_data):
    """An unknown named W is renamed for the generated code (W_, builtin.code_names);
    `tasks check` and `solve` read the law once, on the code's names, and say the user's."""
    path = tmp_path / "t.yaml"
    spec = _spec(["dt(W) + W*dx(W, 3)"], unknowns=("W",))
    for a in spec["solver"]["args"]:
        if a.get("field") == "u":
            a["field"] = "W"
    path.write_text(yaml.safe_dump(spec))
    assert main(["tasks", "check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "-W*dx(W, 3) in dt(W)" in out and "W_" not in out, out
    with pytest.raises(SystemExit) as exit_:
        main(["solve", str(path), "--out", str(tmp_path / "runs"), "--quiet",
              "--dev-data", str(shared_data / "burgers_dev.hdf5")])
    code = exit_.value.code
    err = capsys.readouterr().err
    assert code != 0 and "-W*dx(W, 3) in dt(W)" in err and "W_" not in err, err


@pytest.mark.parametrize("spec,construct,hint", [
    (_spec(["dt(u)*dt(u) - dx(u, 2)"]), "the time derivative inside", "dt(u**2/2)"),
    (_spec(["dt(u) - dx(a*dx(u))"], coefficients=("a",)),
     "coefficient fields ['a']", "expression of x"),
    (_spec(["dt(u) - dx(u, 2)"], boundary="closed walls"), "the boundary 'closed walls'",
     "dirichlet: u = 0"),
    (_spec(["dt(u*dx(u)) - dx(u, 2)"]), "the time derivative of u*dx(u)",
     "linear constant-coefficient differential operator"),
    # a constraint (no time derivative) outside the class: nonlinear in its unknown
    (_spec(["dt(u) - dx(u, 2)", "dx(u) - v**3"], unknowns=("u", "v")),
     "not linear with constant coefficients in the unknowns without a time derivative",
     "use a language model"),
])
def test_refusals_name_the_construct_and_the_rewrite(spec, construct, hint):
    with pytest.raises(UnsupportedTask) as err:
        structure(task_from_dict(spec))
    msg = str(err.value)
    assert construct in msg and hint in msg, msg


def test_fourth_order_terms_are_supported_when_linear_with_constant_coefficients():
    law = structure(load_task(EXAMPLES / "kuramoto_sivashinsky1d.yaml"))
    assert law.has_high and law.high[0] == [(-1, 0, (4,))]
