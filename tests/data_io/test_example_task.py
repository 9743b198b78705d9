"""The documented example of a user-defined PDE (examples/tasks/allen_cahn1d.yaml) loads and parses."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

from pdesharp.data.paths import DataNotFound, resolve_split
from pdesharp.task import load_task

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "allen_cahn1d.yaml"


def test_allen_cahn_example_parses_to_the_intended_pde(tmp_path):
    task = load_task(str(EXAMPLE))
    assert task.name == "allen_cahn1d" and not task.steady
    assert task.parameters == {"epsilon": 0.02}
    assert task.solver.signature == "solver(u0_batch, t_coordinate, epsilon)"
    sys_ = task.system
    assert sys_.unknowns == ("u",) and sys_.space == ("x",) and sys_.parameters == ("epsilon",)
    t, x = sp.Symbol("t", real=True), sp.Symbol("x", real=True)
    eps = sp.Symbol("epsilon", real=True)
    u = sp.Function("u")(t, x)
    expected = sp.diff(u, t) - eps**2 * sp.diff(u, x, 2) - u + u**3
    assert sp.simplify(sys_.exprs[0].doit() - expected) == 0
    q, rest = sys_.split_time_derivative(0)
    assert q == u  # u_t = -rest: the right-hand side is eps^2 u_xx + u - u^3
    assert sp.simplify(-rest.doit() - (eps**2 * sp.diff(u, x, 2) + u - u**3)) == 0
    # no published data: the error says how to supply it
    try:
        resolve_split(task, "dev", data_dir_override=tmp_path)
    except DataNotFound as exc:
        # a user task's data are made from its YAML file; `data download` knows only published
        # files and `data generate NAME` only built-in names
        assert "pdesharp data generate TASK.yaml" in str(exc) and "--dev-data FILE" in str(exc)
        assert "data download" not in str(exc) and f"data generate {task.name}" not in str(exc)
    else:
        raise AssertionError("expected DataNotFound")
    with pytest.raises(DataNotFound, match=r"`pdesharp data download burgers` or `pdesharp data "
                                           r"generate burgers`"):
        resolve_split(load_task("burgers"), "dev", data_dir_override=tmp_path)
