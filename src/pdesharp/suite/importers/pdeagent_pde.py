"""PDEAgent-Bench's PDE families and boundary data, for records with a manufactured solution u:
the coefficients a record gives, the spatial operator L (the task's equation is ``L(u) = f``,
or ``dt(u) + L(u) = f``), the source f = L(u) (+ u_t) derived from u, and the boundary clauses
derived from u, side by side. Whatever sign convention a family's reaction term has, the task
states its own operator and the f that goes with it, so its solution is the record's u.

Families: ``poisson`` and ``heat`` (-div(kappa grad u), kappa constant or a smooth expression
of the coordinates), ``convection_diffusion`` (-epsilon lap u + beta . grad u),
``reaction_diffusion`` (-epsilon lap u + R(u): linear alpha u, cubic alpha u^3, Allen-Cahn
lambda (u^3 - u), logistic rho u (1 - u)), ``helmholtz`` (-lap u - k^2 u). Refused with the
reason: the vector and mixed families (Stokes, Navier-Stokes, linear elasticity, Burgers'
vector form), wave (its initial velocity is no solver input here), biharmonic (two conditions
per side), a discontinuous coefficient (its source is singular at the interface).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy as sp

from pdesharp.expression import ExpressionError, read
from pdesharp.untrusted import one_line

FAMILIES = ("poisson", "heat", "convection_diffusion", "reaction_diffusion", "helmholtz")
TRANSIENT_ONLY = ("heat",)
REFUSED = {
    "stokes": "a vector velocity with a pressure (saddle point): one scalar unknown only",
    "navier_stokes": "a vector velocity with a pressure: one scalar unknown only",
    "linear_elasticity": "a vector displacement: one scalar unknown only",
    "burgers": "Burgers' vector form: one scalar unknown only",
    "wave": "second order in time: the initial velocity is no solver input of a task here",
    "biharmonic": "fourth order: two boundary conditions per side, which the boundary grammar "
                  "(one condition per unknown and side) cannot state",
}
REACTIONS = {  # type -> (record key, parameter name, R(u) with the parameter named p)
    "linear": ("alpha", "alpha", "p*u"),
    "cubic": ("alpha", "alpha", "p*u**3"),
    "allen_cahn": ("lambda", "reaction_lambda", "p*(u**3 - u)"),
    "logistic": ("rho", "rho", "p*u*(1 - u)"),
}
SIDE_NAMES = {"left": ("x", 0), "right": ("x", 1), "bottom": ("y", 0), "top": ("y", 1),
              "front": ("z", 0), "back": ("z", 1)}


class Refused(ValueError):
    """The record's PDE or boundary data have no task form; the message says why."""


def number(value: Any, what: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Refused(f"{what} must be a finite number")
    if positive and value <= 0:
        raise Refused(f"{what} must be positive")
    return float(value)


def check_family(family: str) -> None:
    if family in REFUSED:
        raise Refused(f"the PDE family {family!r} is not imported: {REFUSED[family]}")
    if family not in FAMILIES:
        raise Refused(f"the PDE family {one_line(family, 40)!r} is not imported (supported: "
                      f"{', '.join(FAMILIES)})")


def coefficients(pde: dict, family: str, space: list[str], names: dict
                 ) -> tuple[dict[str, float], dict[str, sp.Expr]]:
    """(constant parameters, coefficient expressions of the coordinates)."""
    dim = len(space)
    params: dict[str, float] = {}
    fields: dict[str, sp.Expr] = {}
    pp = pde.get("pde_params") or {}
    if not isinstance(pp, dict):
        raise Refused("pde.pde_params must be an object")
    if family in ("poisson", "heat"):
        coeffs = pde.get("coefficients") or {}
        kappa = coeffs.get("kappa", {"type": "constant", "value": 1.0}) \
            if isinstance(coeffs, dict) else None
        kind = kappa.get("type") if isinstance(kappa, dict) else None
        if kind == "constant":
            params["kappa"] = number(kappa.get("value"), "kappa", positive=True)
        elif kind == "expr" and isinstance(kappa.get("expr"), str):
            space_names = {a: names[a] for a in space}
            try:
                k = read(kappa["expr"], where="the coefficient kappa", names=space_names)
            except ExpressionError as exc:
                raise Refused(str(exc)) from None
            fields["kappa"] = k
        elif kind in ("piecewise_x", "piecewise"):
            raise Refused("a discontinuous kappa: with a smooth manufactured u its source "
                          "-div(kappa grad u) is singular at the interface")
        else:
            raise Refused(f"the kappa type {one_line(kind, 30)!r} is not imported (constant "
                          "or expr)")
    elif family in ("convection_diffusion", "reaction_diffusion"):
        params["epsilon"] = number(pp.get("epsilon"), "epsilon", positive=True)
        if family == "convection_diffusion":
            beta = pp.get("beta")
            if not isinstance(beta, list) or len(beta) != dim:
                raise Refused(f"beta must be a list of {dim} numbers")
            for a, b in zip(space, beta):
                params[f"beta_{a}"] = number(b, "beta")
        else:
            reaction = pp.get("reaction") or pde.get("reaction")
            kind = reaction.get("type") if isinstance(reaction, dict) else None
            if kind not in REACTIONS:
                raise Refused(f"the reaction {one_line(kind, 30)!r} is not imported (known: "
                              f"{', '.join(REACTIONS)})")
            key, name, _ = REACTIONS[kind]
            params[name] = number(reaction.get(key, 1.0), f"the reaction's {key}")
            params["_reaction"] = kind  # type: ignore[assignment] - popped by the caller
    elif family == "helmholtz":
        params["k"] = number(pp.get("k"), "k", positive=True)
    return params, fields


def _lap(u, X):
    return sum(sp.diff(u, x, 2) for x in X)


def operator(family: str, u: sp.Expr, X: list, P: dict, fields: dict, reaction: str | None
             ) -> sp.Expr:
    """L(u), the parameters as the symbols ``P``."""
    if family in ("poisson", "heat"):
        if "kappa" in fields:
            return -sum(sp.diff(fields["kappa"] * sp.diff(u, x), x) for x in X)
        return -P["kappa"] * _lap(u, X)
    if family == "convection_diffusion":
        return -P["epsilon"] * _lap(u, X) + sum(P[f"beta_{x}"] * sp.diff(u, x) for x in X)
    if family == "reaction_diffusion":
        _, name, r = REACTIONS[reaction]
        return -P["epsilon"] * _lap(u, X) + sp.sympify(r).subs(
            {sp.Symbol("p"): P[name], sp.Symbol("u"): u})
    if family == "helmholtz":
        return -_lap(u, X) - P["k"] ** 2 * u
    raise Refused(f"no operator for {family!r}")


def operator_text(family: str, space: list[str], fields: dict, reaction: str | None) -> str:
    lap = " + ".join(f"d{a}(u, 2)" for a in space)
    if family in ("poisson", "heat"):
        if "kappa" in fields:
            k = sp.sstr(fields["kappa"])
            return "-" + " - ".join(f"d{a}(({k})*d{a}(u))" for a in space)
        return f"-kappa*({lap})"
    if family == "convection_diffusion":
        return f"-epsilon*({lap}) + " + " + ".join(f"beta_{a}*d{a}(u)" for a in space)
    if family == "reaction_diffusion":
        _, name, r = REACTIONS[reaction]
        return f"-epsilon*({lap}) + " + r.replace("p*", f"{name}*")
    return f"-({lap}) - k**2*u"


# -- boundary data ----------------------------------------------------------------------------
def _sides(on: Any, space: list[str], box: dict) -> list[tuple[str, int]]:
    """``"all"``, a side name or a list of them -> [(axis, 0 lo / 1 hi)]."""
    every = [(a, e) for a in space for e in (0, 1)]
    if on in (None, "all", "boundary"):
        return every
    items = [on] if isinstance(on, str) else on
    if not isinstance(items, list) or not items or len(items) > 6:
        raise Refused("bc.*.on must be 'all', a side name or a list of side names")
    out = []
    for s in items:
        s = str(s).lower()
        side = SIDE_NAMES.get(s)
        if side is None and len(s) == 2 and s[0] in space and s[1] in "01":
            side = (s[0], int(s[1]))
        if side is None or side[0] not in space:
            raise Refused(f"unknown side {one_line(s, 20)!r} (left, right, bottom, top, front, "
                          "back, or x0, x1, y0, ...)")
        out.append(side)
    return out


def boundary(bc: Any, u: sp.Expr, names: dict, space: list[str], box: dict,
             times: tuple[float, float] | None) -> str:
    """The task's boundary clauses, every side covered once, the data derived from u (a value
    the record writes out must agree with u's)."""
    if bc is None:
        bc = {"dirichlet": {"on": "all", "value": "u"}}
    if not isinstance(bc, dict) or not bc or set(bc) - {"dirichlet", "neumann", "robin"}:
        raise Refused("bc must hold dirichlet, neumann and/or robin entries")
    assigned: dict[tuple[str, int], tuple[str, dict]] = {}
    for kind, entry in bc.items():
        if not isinstance(entry, dict):
            raise Refused(f"bc.{kind} must be an object")
        for side in _sides(entry.get("on", "all"), space, box):
            if side in assigned:
                raise Refused(f"two conditions on the side {side[0]} = {box[side[0]][side[1]]:g}")
            assigned[side] = (kind, entry)
    missing = [f"{a} = {box[a][e]:g}" for a in space for e in (0, 1) if (a, e) not in assigned]
    if missing:
        raise Refused(f"no boundary condition on {', '.join(missing)}")
    if {k for k, _ in assigned.values()} == {"dirichlet"} and all(
            _value(e) == "u" for _, e in assigned.values()):
        return f"dirichlet: u = {sp.sstr(u)}"  # the common case, in one clause
    clauses = []
    for a in space:
        for e in (0, 1):
            kind, entry = assigned[(a, e)]
            clauses.append(_clause(kind, entry, a, e, u, names, space, box, times))
    return "; ".join(clauses)


def _value(entry: dict) -> Any:
    return entry.get("value", "u")


def _clause(kind, entry, a, e, u, names, space, box, times) -> str:
    x = names[a]
    at = box[a][e]
    normal = sp.diff(u, x) * (1 if e else -1)  # outward normal derivative
    if kind == "dirichlet":
        g, lhs = u, "u"
    elif kind == "neumann":
        g, lhs = normal, "dn(u)"
    else:
        alpha = number(entry.get("alpha"), "bc.robin.alpha")
        g, lhs = normal + alpha * u, f"dn(u) + {alpha!r}*u"
    g = sp.simplify(g.subs(x, at))
    given = _value(entry)
    if given != "u":
        if not isinstance(given, str):
            raise Refused(f"bc.{kind}.value must be 'u' or an expression")
        try:
            written = read(given, where=f"the {kind} data", names=names)
        except ExpressionError as exc:
            raise Refused(str(exc)) from None
        _agree(written.subs(x, at), g, names, space, a, box, times, f"the {kind} data on "
               f"{a} = {at:g}")
    return f"{a} = {at!r}: {lhs} = {sp.sstr(g)}"


def _agree(written, derived, names, space, a, box, times, what) -> None:
    """``written`` equals ``derived`` on the side (at a few points and times)."""
    args = [names[b] for b in space if b != a] + ([names["t"]] if "t" in names else [])
    rng = np.random.default_rng(1)
    lo = [box[b][0] for b in space if b != a] + ([times[0]] if times else [])
    hi = [box[b][1] for b in space if b != a] + ([times[1]] if times else [])
    f = sp.lambdify(args, written - derived, "numpy")
    s = sp.lambdify(args, derived, "numpy")
    pts = rng.uniform(lo, hi, size=(6, len(args))) if args else np.zeros((1, 0))
    scale = max(1.0, max(abs(float(s(*p))) for p in pts))
    if max(abs(float(f(*p))) for p in pts) > 1e-9 * scale:
        raise Refused(f"{what} disagree with the manufactured solution")
