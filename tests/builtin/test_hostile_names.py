"""Issue 26 item 4: generated code never collides with the user's names.

A parameter ``c`` in Kuramoto-Sivashinsky's fourth-order term crashed every evaluation
(``linear_parts`` rebinds ``c`` to its reaction list); a parameter ``U0`` in Burgers' flux ran and
returned a wrong answer (the conserved-quantity symbol of the same name). Each family's solver
is rendered for tasks whose names are hostile (single letters the code uses, ``np``, builtins,
keywords, derivative-like and underscore names) and must compute exactly what it computes for
the same task with plain names; one such task runs through `pdesharp solve` in the sandbox
against its closed-form solution."""

from __future__ import annotations

import re

import h5py
import numpy as np
import pytest

from pdesharp.builtin.author import problem, render
from pdesharp.builtin.code_names import needs_alias, renamed, user_names
from pdesharp.builtin.families import candidate_designs
from pdesharp.task import load_task, task_from_dict

from builtin_helpers import EXAMPLES, run_solver
from test_default_path import solve

# equations written with {name} slots: the plain task fills them with p0, p1, ...; the hostile one
# with the slot's own name. Every family appears at least once (comments).
CASES = {
    # spectral: c in the fourth-order term (the issue's crash), high, D, A: linear_parts' locals
    "ks": dict(equation="dt(u) + dx(u**2/2) + {A}*dx(u, 2) + {c}*dx(u, 4) + {D}*{high}*u = 0",
               parameters={"c": 1.0, "high": 1.0, "D": 0.1, "A": 1.0}, domain={"x": [0, 32]},
               boundary="periodic", time_span=[0, 0.2]),
    # split, spectral, fv: np (the module), dt (the operator's name), k; a keyword parameter
    "ac": dict(equation="dt(u) = {np}*dx(u, 2) + {dt}*(u - u**3) - {lambda}*u",
               parameters={"np": 1e-3, "dt": 1.0, "lambda": 0.5}, domain={"x": [0, 1]},
               boundary="periodic", time_span=[0, 0.1]),
    # exact, mol, fv between walls: builtins and a second keyword
    "heat": dict(equation="dt(u) = {float}*dx(u, 2) - {abs}*u + {max}*sin(pi*x) - {in}*u",
                 parameters={"float": 0.1, "abs": 0.5, "max": 1.0, "in": 0.2},
                 domain={"x": [0, 1]}, boundary="dirichlet: u = 0", time_span=[0, 0.1]),
    # wall_spectral, mol, fv between Neumann walls: the code's W, X, s, prm and an underscore
    "acn": dict(equation="dt(u) = {prm}*dx(u, 2) + {W}*u - {W}*u**3 + {s}*x*{X} + {_zero}*u",
                parameters={"prm": 0.01, "W": 1.0, "s": 0.1, "X": 1.0, "_zero": -0.1},
                domain={"x": [0, 1]}, boundary="neumann: dx(u) = 0", time_span=[0, 0.1]),
    # fv and spectral: U0 is the conserved-quantity symbol, u_x the gradient symbol of u
    "burgers": dict(equation="dt(u) + dx({U0}*u**2/2) = {u_x}*dx(u, 2)",
                    parameters={"U0": 1.0, "u_x": 0.01}, domain={"x": [0, 1]},
                    boundary="periodic", time_span=[0, 0.1]),
    # chebyshev and elliptic: S, t (the time argument's name), axis, fields
    "steady": dict(equation={"unknowns": ["u"], "equations": [
                       "-{S}*dx(u, 2) + {t}*u + {axis}*{fields}*u = 1 + x"]},
                   parameters={"S": 1.0, "t": 2.0, "axis": 0.5, "fields": 1.0},
                   domain={"x": [0, 1]}, boundary="dirichlet: u = 0"),
    # a system between walls (wall_spectral, mol, fv) whose unknowns are np and lambda
    "gp": dict(equation=["dt({u}) = -{c}*dx({v}, 2) + {k}*({u}**2 + {v}**2)*{v}",
                         "dt({v}) = {c}*dx({u}, 2) - {k}*({u}**2 + {v}**2)*{u}"],
               parameters={"c": 0.5, "k": 1.0}, domain={"x": [0, 1]},
               boundary="dirichlet: {u} = 0; dirichlet: {v} = 0", time_span=[0, 0.02]),
    # constrained (an elliptic constraint solved each step): the code's NVAR, PARITY, JETS_F
    "ns": dict(equation={"unknowns": ["{w}", "{psi}"], "space": ["x", "y"], "equations": [
                   "dt({w}) + dy({psi})*dx({w}) - dx({psi})*dy({w}) = {NVAR}*(dx({w}, 2)"
                   " + dy({w}, 2))",
                   "dx({psi}, 2) + dy({psi}, 2) = -{PARITY}*{w}"]},
               parameters={"NVAR": 0.01, "PARITY": 1.0, "JETS_F": 0.0},
               domain={"x": [0, 1], "y": [0, 1]}, boundary="periodic", time_span=[0, 0.05]),
    # collocation_system (a steady system, a condition coupling its unknowns): its residual,
    # slopes and condition functions
    "beam": dict(equation={"unknowns": ["{w}", "{theta}"], "time": None, "equations": [
                     "{slopes}*dx({theta}, 2) + {residual}*(dx({w}) - {theta}) = 0",
                     "{residual}*dx(dx({w}) - {theta}) + {condition} = 0"]},
                 parameters={"slopes": 1.0, "residual": 10.0, "condition": 1.0},
                 domain={"x": [0, 1]}, grid="nodes",
                 boundary="x = 0: {w} = 0, {theta} = 0; x = 1: dx({theta}) = 0, "
                          "dx({w}) - {theta} = 0"),
}
UNKNOWNS = {"gp": {"u": "np", "v": "lambda"}, "ns": {"w": "c", "psi": "k"},
            "beam": {"w": "float", "theta": "np"}}


def spec(case: str, hostile: bool) -> dict:
    c = {k: v for k, v in CASES[case].items()}
    names = {k: (k if hostile else f"p{i}") for i, k in enumerate(c["parameters"])}
    names.update(UNKNOWNS.get(case, {}) if hostile else
                 {u: u for u in ("u", "v", "w", "psi", "theta")})
    fill = lambda s: re.sub(r"\{(\w+)\}", lambda m: names.get(m.group(1), m.group(1)), s)  # noqa
    eq = c["equation"]
    c["equation"] = ([fill(e) for e in eq] if isinstance(eq, list) else fill(eq)
                     if isinstance(eq, str) else {**eq, "equations": [fill(e) for e in eq["equations"]],
                                                  "unknowns": [fill(u) for u in eq["unknowns"]]})
    c["parameters"] = {names[k]: v for k, v in c["parameters"].items()}
    c["boundary"] = fill(c["boundary"])
    c["name"] = f"{case}_{'hostile' if hostile else 'plain'}"
    if "time_span" in c:
        c["n_frames"] = 3
    return c


def first_per_family(p):
    seen, out = set(), []
    for d in candidate_designs(p):
        if d.family not in seen:
            seen.add(d.family)
            out.append(d)
    return out


def outputs(task, n: int = 32) -> dict[str, np.ndarray]:
    """Each family's first design run on smooth data at n points: {family: prediction}."""
    p = problem(task)
    u0 = 1.0
    for axis in task.equation.space:  # a product of smooth bumps, one per axis
        lo, hi = task.domain[axis]
        x = lo + (hi - lo) * (np.arange(n) + 0.5) / n
        u0 = np.multiply.outer(u0, 0.5 * np.sin(np.pi * (x - lo) / (hi - lo)) ** 2)
    shape = np.shape(u0)
    t = None if task.steady else np.linspace(*task.time_span, task.n_frames)
    ref = {key: np.zeros((1, *shape)) if task.steady else np.zeros((1, task.n_frames, *shape))
           for key in task.data.fields.values()}
    for arr in ref.values():
        if not task.steady:
            arr[:, 0] = u0
    out = {}
    for d in first_per_family(p):
        pred, _ = run_solver(render(task, d, p), task, ref, t)
        out[d.family] = pred
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_family_computes_the_same_with_hostile_names(case):
    plain = outputs(task_from_dict(spec(case, False)))
    hostile = outputs(task_from_dict(spec(case, True)))
    assert sorted(hostile) == sorted(plain) and plain
    for fam, pred in plain.items():
        assert np.all(np.isfinite(pred)), fam
        # the same arithmetic in the same order: only the names differ (a solver that confuses
        # a name with its own computes something else, or crashes before this line)
        np.testing.assert_allclose(hostile[fam], pred, rtol=1e-12, atol=1e-14, err_msg=fam)


def test_every_family_covers_the_names_its_physics_functions_use():
    """With every user name a sentinel, each function that binds one uses no other name that
    :func:`needs_alias` would let a user's name collide with (a guard for new families)."""
    import ast

    for example in ("allen_cahn1d", "gross_pitaevskii1d", "tm_cavity2d", "kpz_neumann1d",
                    "convection_diffusion1d", "cahn_hilliard1d"):
        task = load_task(EXAMPLES / f"{example}.yaml")
        ren = {n: f"zq{i}" for i, n in enumerate(user_names(task))}
        task = renamed(task, ren)
        p = problem(task)
        mine = re.compile(r"(zq\d+)(_[txyz]+)?|[xyzt]")
        for d in candidate_designs(p):
            for fn in ast.walk(ast.parse(render(task, d, p))):
                if not isinstance(fn, ast.FunctionDef):
                    continue
                ids = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
                ids |= {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
                if not any(re.fullmatch(r"zq\d+(_[txyz]+)?", i) for i in ids):
                    continue
                loose = {i for i in ids if not mine.fullmatch(i) and not needs_alias(i)}
                assert not loose, (example, d.family, fn.name, loose)


HEAT = {"name": "heat_hostile", "equation": "dt(u) = c*dx(u, 2) - (lambda + np*float)*u",
        "parameters": {"c": 0.1, "lambda": 0.5, "np": 2.0, "float": 0.25},
        "domain": {"x": [0, 1]}, "boundary": "dirichlet: u = 0", "time_span": [0, 0.5],
        "n_frames": 6}


def test_hostile_names_through_the_real_pipeline(tmp_path, monkeypatch):
    """`pdesharp solve` on a heat equation whose parameters are c, lambda, np and float, scored
    against its sine-series solution: every evaluation runs (none crashes) and the winner is
    the exact propagator's accuracy."""
    import yaml

    path = tmp_path / "heat_hostile.yaml"
    path.write_text(yaml.safe_dump(HEAT))
    n, k = 64, np.arange(1, 4)
    x = (np.arange(n) + 0.5) / n
    t = np.linspace(0, 0.5, 6)
    amp = np.array([[1.0, -0.5, 0.25], [0.3, 0.6, -0.2]])
    rate = 0.1 * (k * np.pi) ** 2 + 0.5 + 2.0 * 0.25
    u = np.einsum("bk,tk,kx->btx", amp, np.exp(-np.outer(t, rate)), np.sin(np.outer(k, np.pi * x)))
    with h5py.File(tmp_path / "dev.hdf5", "w") as h5:
        h5["tensor"], h5["t-coordinate"], h5["x-coordinate"] = u, t, x
    code, summary, run = solve(tmp_path, monkeypatch, str(path), "--dev-data",
                               str(tmp_path / "dev.hdf5"), "--audit", "off", evals=3)
    assert code == 0, summary
    rows = [r.split("|") for r in (run / "report.md").read_text().splitlines()
            if re.match(r"\| \d+ \| `g\d+`( \([a-z -]+\))? \| dev \|", r)]
    assert len(rows) == summary["evaluations"] >= 1, rows
    assert all(r[4].strip() == "ok" for r in rows), rows
    # the sine-series propagator is exact up to round-off of a few exponentials (measured 1e-15)
    assert summary["best_dev_score"] < 1e-10, summary
