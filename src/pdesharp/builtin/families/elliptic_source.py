"""What the steady families share: the operator's coefficients generated from the equation with
SymPy, and the driver that solves every sample (or the one problem of a task whose solver takes
only the grid) and returns the solution at the output points.

A family's block defines ``_solve_one(fields, prm, shape, pts)``: the solution at the points
``pts`` (one coordinate array per axis; ``None``: the data's own points, the task's convention
at ``shape``).
"""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.elliptic_problem import EllipticProblem
from pdesharp.builtin.physics import npcode, params_lines, safe


def _unpack_fields(prob: EllipticProblem, exprs) -> str:
    used = set().union(*[sp.sympify(e).free_symbols for e in exprs])
    out = "".join(f"    {safe(f.name)} = fields[{f.name!r}]\n" for f in prob.fields if f in used)
    if any(c in used for c in prob.coords):
        names = [safe(c.name) for c in prob.coords]
        out += f"    {', '.join(names)}{',' if len(names) == 1 else ''} = X\n"
    return out


def _lst(exprs) -> str:
    return "[" + ", ".join(f"({npcode(e)}) * _one" for e in exprs) + "]"


def coefficient_source(prob: EllipticProblem, slopes: bool = False) -> str:
    """NumPy source of the operator's coefficients, reaction and boundary data; with ``slopes``
    also ``conductivity_slope`` (dK_a/da, for a non-divergence discretisation: no fields)."""
    u = prob.unknown
    one = "    _one = np.ones(np.broadcast(*X, *fields.values()).shape)\n"
    out = ["# ---- the operator, generated from the equation with SymPy ----\n"]
    body = "def conductivity(fields, X, prm, axis):\n    \"\"\"K_axis of -d(K du) at the points X.\"\"\"\n"
    body += one + params_lines(prob.params, prob.K) + _unpack_fields(prob, prob.K)
    body += "    return [" + ", ".join(f"({npcode(k)}) * _one" for k in prob.K) + "][axis]\n\n\n"
    out.append(body)
    if slopes:
        dk = [sp.diff(k, c) for k, c in zip(prob.K, prob.coords)]
        body = ("def conductivity_slope(fields, X, prm):\n    \"\"\"dK_a/da per axis at the points"
                " X (-d(K du) = -K d2u - dK du).\"\"\"\n" + one + params_lines(prob.params, dk)
                + _unpack_fields(prob, dk) + f"    return {_lst(dk)}\n\n\n")
        out.append(body)
    terms = list(prob.N) + list(prob.b) + [prob.forcing]
    body = ("def operator_terms(fields, X, prm):\n    \"\"\"Non-divergence coefficients N, convection b"
            " (per axis) and the forcing f at X.\"\"\"\n" + one + params_lines(prob.params, terms)
            + _unpack_fields(prob, terms))
    body += f"    return {_lst(prob.N)}, {_lst(prob.b)}, ({npcode(prob.forcing)}) * _one\n\n\n"
    out.append(body)
    r, dr = prob.reaction, sp.diff(prob.reaction, u)
    body = ("def reaction(_u, fields, X, prm):\n    \"\"\"The local reaction r(u) and dr/du.\"\"\"\n"
            "    _one = np.ones(np.broadcast(_u, *X, *fields.values()).shape)\n"
            + params_lines(prob.params, [r, dr]) + _unpack_fields(prob, [r, dr])
            + (f"    {safe(u.name)} = _u\n" if r.has(u) or dr.has(u) else ""))
    body += f"    return ({npcode(r)}) * _one, ({npcode(dr)}) * _one\n\n\n"
    out.append(body)
    body = ("def boundary_data(axis, side, T, prm):\n    \"\"\"(a, b, g) of a*u + b*du/d(axis) = g on a"
            " side; g over the tangential coordinate T.\"\"\"\n"
            + params_lines(prob.params, [e for c in prob.boundary.conditions for e in (c.a, c.b, c.g)]))
    names = [c.name for c in prob.coords]
    for a, axis in enumerate(names):
        for s in (0, 1):
            c = prob.boundary.condition(prob.name, axis, s)
            other = [n for n in names if n != axis]
            body += f"    if (axis, side) == ({a}, {s}):  # {c.text}\n"
            if other and c.g.has(sp.Symbol(other[0], real=True)):
                body += f"        {safe(other[0])} = T\n"
            body += (f"        return {npcode(c.a)}, {npcode(c.b)}, ({npcode(c.g)}) + 0.0 * T\n")
    body += "    raise ValueError((axis, side))\n\n\n"
    out.append(body)
    return "".join(out)


DRIVER = '''
# ---- block: every sample (or the one problem), the solution at the output points ----


def _points(n, lo, hi, nodes):
    return np.linspace(lo, hi, n) if nodes else lo + (np.arange(n) + 0.5) * (hi - lo) / n


def _solve_batch(fields, prm, points=None):
    """Solve for every sample of the fields [B, N...]; without fields (the solver takes only
    the grid) the one problem, returned without a batch axis, at the given points."""
    pts = None if points is None else [np.asarray(p, dtype=np.float64).ravel() for p in points]
    if not fields:
        return _solve_one({}, prm, tuple(len(p) for p in pts), pts)
    first = np.asarray(next(iter(fields.values())))
    out = np.empty(first.shape, dtype=np.float64)
    for s in range(first.shape[0]):
        out[s] = _solve_one({k: np.asarray(v[s], dtype=np.float64) for k, v in fields.items()},
                            prm, first.shape[1:], pts)
    return out
'''
