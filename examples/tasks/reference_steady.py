"""Manufactured references for the steady example tasks of issue 19 (items 3 and 4).

Each example has a closed-form solution u, written here; the operator is applied to it by hand
with SymPy and the result checked against the forcing and the side data the task's YAML states
(so a typo in a YAML formula fails here, not as a mysterious solver error). The arrays are the
closed form evaluated at the task's output grid in float64: cell centres (i + 1/2)/N or nodes
i/(N - 1). Tasks whose solver takes only the grid have one problem: one sample. The dev and
test files use different N (the solver must accept any N).

Nothing here uses pdesharp: the YAML's formulas are read with SymPy from our own example
files (trusted text).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sympy as sp
import yaml

HERE = Path(__file__).resolve().parent
X, Y = sp.symbols("x y", real=True)
_FUNCS = {"pi": sp.pi, "exp": sp.exp, "sin": sp.sin, "cos": sp.cos, "sqrt": sp.sqrt}


def _spec(name: str) -> dict:
    return yaml.safe_load((HERE / f"{name}.yaml").read_text())


def _read(text: str, spec: dict):
    names = {**_FUNCS, "x": X, "y": Y, **{k: sp.Float(v) for k, v in
                                         (spec.get("parameters") or {}).items()}}
    return sp.sympify(text, locals=names)


def _same(a, b, what: str, name: str) -> None:
    """a == b as functions of x, y (random points; both are smooth here)."""
    rng = np.random.default_rng(0)
    fa, fb = (sp.lambdify((X, Y), e, "numpy") for e in (a, b))
    for px, py in rng.uniform(0.02, 0.98, size=(40, 2)):
        va, vb = float(fa(px, py)), float(fb(px, py))
        if abs(va - vb) > 1e-9 * (1.0 + abs(va)):
            raise AssertionError(f"{name}: the YAML's {what} is not the manufactured one "
                                 f"({va} vs {vb} at ({px:.3f}, {py:.3f}))")


def _check(name: str, u, operator, sides: dict) -> dict:
    """The YAML's forcing (right-hand side of its equation) and side data against the ones the
    manufactured u gives; returns the spec."""
    spec = _spec(name)
    rhs = spec["equation"]["equations"][0].split("=")[1]
    _same(_read(rhs, spec), operator(u), "forcing", name)
    clauses = dict(c.split(":", 1) for c in spec["boundary"].split(";"))
    clauses = {k.strip(): v.split("=")[1] for k, v in clauses.items()}
    for side, expected in sides.items():
        _same(_read(clauses[side], spec), expected, f"data at {side}", name)
    return spec


def _points(spec: dict, n: int):
    axes = list(spec["equation"].get("space", ["x"]))
    out = []
    for a in axes:
        lo, hi = spec["domain"][a]
        out.append(np.linspace(lo, hi, n) if spec.get("grid") == "nodes"
                   else lo + (np.arange(n) + 0.5) * (hi - lo) / n)
    return out


def _one_problem(name: str, u, n: int) -> dict:
    spec = _spec(name)
    pts = _points(spec, n)
    if len(pts) == 1:
        val = sp.lambdify(X, u, "numpy")(pts[0]) * np.ones(n)
        out = {"sol": val[None], "x-coordinate": pts[0]}
    else:
        mx, my = np.meshgrid(*pts, indexing="ij")
        val = sp.lambdify((X, Y), u, "numpy")(mx, my) * np.ones((n, n))
        out = {"sol": val[None], "x-coordinate": pts[0], "y-coordinate": pts[1]}
    out["_method"] = f"manufactured: the closed form {sp.sstr(u)} at the output grid (float64)"
    return out


def _lap(u):
    return sp.diff(u, X, 2) + sp.diff(u, Y, 2)


def poisson_formula2d(n, samples, seed):
    kappa = 1.0
    u = sp.sin(sp.pi * X) * sp.sin(sp.pi * Y) / kappa
    _check("poisson_formula2d", u, lambda u: -kappa * _lap(u), {})
    return _one_problem("poisson_formula2d", u, n)


def diffusion_variable2d(n, samples, seed):
    K = 1 + X * Y + sp.sin(sp.pi * X) / 2
    u = sp.exp(X) * sp.cos(sp.pi * Y / 2) + X * Y**2
    _check("diffusion_variable2d", u,
           lambda u: -sp.diff(K * sp.diff(u, X), X) - sp.diff(K * sp.diff(u, Y), Y),
           {"x = 0": u.subs(X, 0), "x = 1": (sp.diff(u, X) + u).subs(X, 1),
            "y = 0": sp.diff(u, Y).subs(Y, 0), "y = 1": u.subs(Y, 1)})
    return _one_problem("diffusion_variable2d", u, n)


def _layer(s, eps):
    return s - (sp.exp((s - 1) / eps) - sp.exp(-1 / eps)) / (1 - sp.exp(-1 / eps))


def convection_diffusion1d(n, samples, seed):
    eps = sp.Rational(1, 100)
    u = _layer(X, eps)
    _check("convection_diffusion1d", u, lambda u: -eps * sp.diff(u, X, 2) + sp.diff(u, X), {})
    return _one_problem("convection_diffusion1d", u, n)


def convection_diffusion2d(n, samples, seed):
    eps = sp.Rational(1, 100)
    u = _layer(X, eps) * _layer(Y, eps)
    _check("convection_diffusion2d", u,
           lambda u: -eps * _lap(u) + sp.diff(u, X) + sp.diff(u, Y), {})
    return _one_problem("convection_diffusion2d", u, n)


def helmholtz2d(n, samples, seed):
    u = sp.sin(sp.pi * X) * (sp.cos(2 * Y) + Y)
    _check("helmholtz2d", u, lambda u: -_lap(u) - 30 * u,
           {"x = 0": u.subs(X, 0), "x = 1": u.subs(X, 1), "y = 0": sp.diff(u, Y).subs(Y, 0),
            "y = 1": (sp.diff(u, Y) + 2 * u).subs(Y, 1)})
    return _one_problem("helmholtz2d", u, n)


def reaction_nonlinear1d(n, samples, seed):
    u = sp.cos(sp.pi * X / 2) + X**2
    _check("reaction_nonlinear1d", u, lambda u: -sp.diff((1 + X) * sp.diff(u, X), X) + u**3,
           {"x = 0": sp.diff(u, X).subs(X, 0), "x = 1": (sp.diff(u, X) + u).subs(X, 1)})
    return _one_problem("reaction_nonlinear1d", u, n)


def _jump(name: str, n: int, seed: int, across: str) -> dict:
    """-div(a grad u) = f, a = a1 / a2 on either side of the line {across} = 1/2:
    u = psi / a with psi vanishing on the line (continuous u, continuous flux a du/dn)."""
    spec = _spec(name)
    psi = sp.sin(2 * sp.pi * X) * sp.sin(sp.pi * Y) if across == "x" else \
        sp.sin(sp.pi * X) * sp.sin(2 * sp.pi * Y)
    # on each side a is constant, so -div(a grad(psi / a)) = -lap(psi): one smooth forcing
    _check(name, psi, lambda p: -_lap(p), {})
    pts = _points(spec, n)
    mx, my = np.meshgrid(*pts, indexing="ij")
    pairs = [(1.0, 1e6), (1e6, 1.0)] if seed == 0 else [(2.0, 2e6), (3e6, 3.0)]
    coeff, sol = np.empty((len(pairs), n, n)), np.empty((len(pairs), n, n))
    side = (mx if across == "x" else my) < 0.5
    vals = sp.lambdify((X, Y), psi, "numpy")(mx, my)
    for k, (a1, a2) in enumerate(pairs):
        coeff[k] = np.where(side, a1, a2)
        sol[k] = vals / coeff[k]
    return {"coeff": coeff, "sol": sol, "x-coordinate": pts[0], "y-coordinate": pts[1],
            "_method": f"manufactured: u = ({sp.sstr(psi)}) / a, a piecewise constant across"
                       f" {across} = 1/2 (float64)"}


def kappa_jump2d(n, samples, seed):
    return _jump("kappa_jump2d", n, seed, "x")


def kappa_jump_nodes2d(n, samples, seed):
    return _jump("kappa_jump_nodes2d", n, seed, "y")


# name: (function, dev N, test N)
STEADY = {
    "poisson_formula2d": (poisson_formula2d, 50, 64),
    "diffusion_variable2d": (diffusion_variable2d, 50, 64),
    "convection_diffusion1d": (convection_diffusion1d, 128, 200),
    "convection_diffusion2d": (convection_diffusion2d, 50, 64),
    "helmholtz2d": (helmholtz2d, 50, 64),
    "reaction_nonlinear1d": (reaction_nonlinear1d, 128, 200),
    "kappa_jump2d": (kappa_jump2d, 50, 64),
    "kappa_jump_nodes2d": (kappa_jump_nodes2d, 50, 64),
}
