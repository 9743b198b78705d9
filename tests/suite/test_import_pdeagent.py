"""The PDEAgent-Bench importer on records written by us in that benchmark's format
(fixtures/pdeagent_records.jsonl; see fixtures/README.md), and on hostile records.

Expected values are computed here independently of the importer: the manufactured solutions
and their sources by hand, the grids as both-ends-included linspace (PDEAgent-Bench's output
grid convention).
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import yaml
from suite_helpers import FIXTURES, record, write_jsonl

from pdesharp.suite.cases import discover
from pdesharp.suite.importers.pdeagent import MAX_LINE_BYTES, import_jsonl
from pdesharp.task import load_task_file

# float32 storage of values of size <= 1: relative rounding 2**-24 ~ 6e-8 (a margin of 4x)
F32 = 4 * 2.0**-24


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("pdeagent") / "suite"
    return import_jsonl(FIXTURES / "pdeagent_records.jsonl", out), out


def test_fixture_records_become_cases_with_exact_references(imported):
    got, out = imported
    assert got.written == ["poisson_sin", "heat_exp", "convdiff_mild"]
    assert [r["name"] for r in got.refused] == ["stokes_cavity"]
    assert "stokes" in got.refused[0]["reason"]
    suite = discover(out)
    assert [c.name for c in suite.cases] == ["convdiff_mild", "heat_exp", "poisson_sin"]
    assert [r.name for r in suite.refused] == ["stokes_cavity"]  # shown in the suite's table
    for case in suite.cases:
        assert case.reference.kind == "exact" and case.reference.error == pytest.approx(2.0**-24, rel=0.01)
        assert case.task.grid == "nodes" and case.dev_data and case.test_data


def test_poisson_reference_and_source(imported):
    _, out = imported
    task = load_task_file(out / "poisson_sin" / "task.yaml")
    assert task.steady and task.parameters == {"kappa": 2.0}
    # -kappa lap(sin(pi x) sin(pi y)) = 2 pi^2 kappa sin(pi x) sin(pi y): the source, read back
    # by the task parser, against our own derivation at a point
    rhs = task.equation.equations[0].split("=", 1)[1]
    import sympy as sp

    x, y, kappa = sp.symbols("x y kappa")
    value = sp.sympify(rhs).subs({x: 0.3, y: 0.7, kappa: 2.0})
    assert float(value) == pytest.approx(2 * np.pi**2 * 2.0 * np.sin(0.3 * np.pi)
                                         * np.sin(0.7 * np.pi), rel=1e-12)
    assert task.boundary == "dirichlet: u = sin(pi*x)*sin(pi*y)"
    with h5py.File(out / "poisson_sin" / "test.hdf5") as f:  # the record's 17 x 17 nodes
        u = f["sol"][...]
        xs = np.linspace(0.0, 1.0, 17)  # both ends included
        np.testing.assert_allclose(f["x-coordinate"][...], xs, atol=1e-7)
    expected = np.sin(np.pi * xs)[:, None] * np.sin(np.pi * xs)[None, :]  # axis 0 is x
    assert u.shape == (1, 17, 17)
    np.testing.assert_allclose(u[0], expected, atol=F32)
    with h5py.File(out / "poisson_sin" / "dev.hdf5") as f:  # the nested grid: every 2nd node
        np.testing.assert_allclose(f["sol"][0], expected[::2, ::2], atol=F32)


def test_heat_frames_initial_data_and_final_frame_scoring(imported):
    _, out = imported
    task = load_task_file(out / "heat_exp" / "task.yaml")
    assert task.time_span == (0.0, 0.1) and task.n_frames == 6  # t0..t_end in steps of dt
    assert task.evaluation.score_frames == "final"
    with h5py.File(out / "heat_exp" / "test.hdf5") as f:
        u, t = f["tensor"][...], f["t-coordinate"][...]
    xs = np.linspace(0.0, 1.0, 17)
    np.testing.assert_allclose(t, np.linspace(0.0, 0.1, 6), atol=1e-8)
    for k, tk in enumerate(np.linspace(0.0, 0.1, 6)):
        np.testing.assert_allclose(u[0, k], np.exp(-tk) * np.outer(np.sin(np.pi * xs),
                                                                   np.sin(np.pi * xs)), atol=F32)


def test_final_frame_scoring_ignores_earlier_frames():
    """score_frames: final compares the last frame alone (PDEAgent-Bench's transient score);
    the default compares every frame (CodePDE's)."""
    from pdesharp.data.reference import ReferenceData
    from pdesharp.evaluate.scoring import score_prediction

    from pdesharp.task import load_task

    task = load_task("heat_dirichlet2d")
    final = task.model_copy(update={"evaluation": task.evaluation.model_copy(
        update={"score_frames": "final"})})
    ref = np.ones((1, 4, 5, 5))
    pred = ref.copy()
    pred[0, 1] = 2.0  # wrong in an inner frame only
    data = ReferenceData(path=FIXTURES, fields={"u": ref}, t=np.linspace(0, 1, 4))
    every = score_prediction(task, data, {"u": pred}, residual=False, plot_path=None)
    last = score_prediction(final, data, {"u": pred}, residual=False, plot_path=None)
    assert every.nrmse == pytest.approx(0.5)  # sqrt(mean over 4 frames of (0,1,0,0)) / 1
    assert last.nrmse == 0.0


def test_hostile_records_are_refused_with_reasons(tmp_path):
    """An id with '..', a huge line, deep nesting, a formula that tries to run code, an
    unsupported coefficient: each refused alone, the good record still imported."""
    good = record("ok_case", "poisson", "x*(1-x)")
    lines = [
        good,
        record("../escape", "poisson", "x"),
        record("a..b", "poisson", "x"),
        "{" + '"id": "big", "pad": "' + "x" * (MAX_LINE_BYTES + 10) + '"}',
        "[" * 5000 + "]" * 5000,
        record("code", "poisson", "__import__('os').system('touch /tmp/pwned')"),
        record("attr", "poisson", "x.__class__"),
        record("piecewise_kappa", "poisson", "x",
               coefficients={"kappa": {"type": "piecewise_x", "left": 1, "right": 2}}),
        record("nan_grid", "poisson", "1/x"),
        "not json",
    ]
    got = import_jsonl(write_jsonl(tmp_path / "r.jsonl", lines), tmp_path / "s")
    assert got.written == ["ok_case"]
    reasons = {r["name"]: r["reason"] for r in got.refused}
    assert len(reasons) == len(lines) - 1
    assert "not a usable name" in reasons["../escape"] and "not a usable name" in reasons["a..b"]
    assert any(f"longer than {MAX_LINE_BYTES}" in r for r in reasons.values())
    assert any("nested" in r for r in reasons.values())
    assert "discontinuous kappa" in reasons["piecewise_kappa"]
    assert "not finite" in reasons["nan_grid"]
    assert not (tmp_path / "escape").exists() and not (tmp_path.parent / "escape").exists()
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == \
        ["ok_case", "refused.json", "suite.yaml"]
    assert json.loads((tmp_path / "s" / "refused.json").read_text()) == got.refused
    assert yaml.safe_load((tmp_path / "s" / "suite.yaml").read_text())["name"] == "pdeagent-r"


# -- more of PDEAgent-Bench's families (fixtures/pdeagent_records_v2.jsonl, written by us) ----
@pytest.fixture(scope="module")
def imported_v2(tmp_path_factory):
    out = tmp_path_factory.mktemp("pdeagent2") / "suite"
    return import_jsonl(FIXTURES / "pdeagent_records_v2.jsonl", out), out


def test_more_families_import_and_the_rest_is_refused_with_one_line_each(imported_v2):
    got, _ = imported_v2
    assert got.written == ["poisson_varkappa", "heat_rect_tbc", "reaction_logistic_mixed",
                           "helmholtz_k2", "poisson_cube"]
    reasons = {r["name"]: r["reason"] for r in got.refused}
    assert "initial velocity" in reasons["wave_basic"]
    assert "two boundary conditions per side" in reasons["biharmonic_basic"]
    assert "disagree with the manufactured solution" in reasons["poisson_wrong_bc"]
    assert "no manufactured solution" in reasons["poisson_no_exact"]
    assert "no boundary condition on y = 1" in reasons["poisson_open_side"]
    assert all("\n" not in r for r in reasons.values())


def _rhs_at(task, **point) -> float:
    import sympy as sp

    rhs = sp.sympify(task.equation.equations[0].split("=", 1)[1])
    values = {sp.Symbol(k): v for k, v in {**task.parameters, **point}.items()}
    return float(rhs.subs(values))


def test_variable_coefficient_source_by_hand(imported_v2):
    _, out = imported_v2
    task = load_task_file(out / "poisson_varkappa" / "task.yaml")
    # u = sin(pi x) sin(pi y), kappa = 1 + x/2: -div(kappa grad u) = -kappa_x u_x - kappa lap u
    x, y = 0.3, 0.6
    kappa, u = 1 + 0.5 * x, np.sin(np.pi * x) * np.sin(np.pi * y)
    expected = -0.5 * np.pi * np.cos(np.pi * x) * np.sin(np.pi * y) + kappa * 2 * np.pi**2 * u
    assert _rhs_at(task, x=x, y=y) == pytest.approx(expected, rel=1e-12)
    assert "(0.5*x + 1)*dx(u)" in task.equation.equations[0]


def test_rectangle_with_time_dependent_boundary_data(imported_v2):
    _, out = imported_v2
    task = load_task_file(out / "heat_rect_tbc" / "task.yaml")
    assert task.domain == {"x": (0.0, 2.0), "y": (-1.0, 1.0)}
    assert "x = 2.0: u = (y + 4.0)*exp(-t)" in task.boundary
    with h5py.File(out / "heat_rect_tbc" / "test.hdf5") as f:
        u, t = f["tensor"][0, -1], f["t-coordinate"][-1]
        xs, ys = np.linspace(0, 2, 9), np.linspace(-1, 1, 9)
    np.testing.assert_allclose(u, np.exp(-t) * (xs[:, None] ** 2 + ys[None, :]),
                               atol=F32 * 5)  # values up to 5: float32 rounding relative


def test_mixed_neumann_robin_sides_and_a_nonlinear_reaction(imported_v2):
    from pdesharp.boundary import parse_boundary

    _, out = imported_v2
    task = load_task_file(out / "reaction_logistic_mixed" / "task.yaml")
    # u = 1/2 + x^2 y / 4: at x = 0 the outward derivative -u_x = 0; at y = 0 the Robin data
    # -u_y + 2 u = -x^2/4 + 1; Dirichlet at x = 1 and y = 1
    assert task.boundary == ("x = 0.0: dn(u) = 0; x = 1.0: u = 0.25*y + 0.5; "
                             "y = 0.0: dn(u) + 2.0*u = 1.0 - 0.25*x**2; "
                             "y = 1.0: u = 0.25*x**2 + 0.5")
    parsed = parse_boundary(task.boundary, unknowns=["u"], space=["x", "y"],
                            domain=task.domain, names=list(task.parameters))
    assert parsed is not None
    # u_t - eps lap u + rho u (1 - u) = f, at a point, by hand (u_t = 0, lap u = y / 2)
    x, y = 0.4, 0.7
    u = 0.5 + 0.25 * x**2 * y
    assert _rhs_at(task, x=x, y=y, t=0.05) == \
        pytest.approx(-0.1 * 0.5 * y + 2.0 * u * (1 - u), rel=1e-12)


def test_helmholtz_and_a_cube(imported_v2):
    _, out = imported_v2
    task = load_task_file(out / "helmholtz_k2" / "task.yaml")
    x, y = 0.2, 0.9
    u = np.sin(np.pi * x) * np.sin(np.pi * y)
    assert _rhs_at(task, x=x, y=y) == pytest.approx((2 * np.pi**2 - 4) * u, rel=1e-12)
    cube = load_task_file(out / "poisson_cube" / "task.yaml")
    assert cube.equation.space == ["x", "y", "z"]
    with h5py.File(out / "poisson_cube" / "test.hdf5") as f:
        u = f["sol"][0]
    g = np.linspace(0, 1, 5)
    np.testing.assert_allclose(u, g[:, None, None] * g[None, :, None] * g[None, None, :],
                               atol=F32)


def test_a_record_past_its_clock_is_refused_and_leaves_no_case(tmp_path, monkeypatch):
    """The per-record clock (SymPy's work on a record's solution has no bound of its own): with
    the limit set below what any record needs, every record is refused with the reason and no
    case folder, finished or half-written, is left."""
    from pdesharp.suite.importers import pdeagent

    monkeypatch.setattr(pdeagent, "RECORD_SECONDS", 1e-4)
    out = tmp_path / "suite"
    got = import_jsonl(FIXTURES / "pdeagent_records.jsonl", out)
    assert got.written == []
    timed = [r for r in got.refused if "not imported within" in r["reason"]]
    assert {r["name"] for r in timed} >= {"poisson_sin", "heat_exp", "convdiff_mild"}
    assert sorted(p.name for p in out.iterdir()) == ["refused.json", "suite.yaml"]
