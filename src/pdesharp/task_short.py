"""The short task format: what a minimal task leaves out, derived by fixed rules.

A minimal task states the mathematics only::

    name: heat_walls
    equation: dt(u) = nu*dx(u, 2)
    parameters: {nu: 0.01}
    domain: {x: [0, 1]}
    boundary: "dirichlet: u = 0"
    time_span: [0, 1]

:func:`expand` turns it into the long form (the one :class:`~pdesharp.task.Task` validates) before
validation, so a short and a long file that say the same thing load to equal tasks, and
``pdesharp tasks show FILE`` prints what was derived. The rules (docs/tasks.md, "The short
form") fill a key only when it is absent; anything written is kept as written:

* ``equation`` may be one string or a list of strings (the ``equations``); ``space`` is the
  domain's axes in x, y, z order; ``time`` is ``t`` if an equation has a ``dt(...)``, else the task
  is steady; ``unknowns`` are the names inside ``dt(...)`` that are not parameters, constants or
  coordinates, in order of first appearance (a steady task must list them);
* ``title`` is the name; ``description`` is written from the equation, domain, boundary,
  parameters, initial data and the shapes;
* ``solver.args``: one ``<unknown>0_batch`` (kind ``initial``) per unknown, then
  ``t_coordinate``, then every parameter (a steady task: every coefficient, or the ``grid`` when
  it has none, then every parameter); ``returns``: the unknowns; ``template``: a stub with that
  signature and the shapes;
* ``data.fields``: ``{u: tensor}`` for one unknown (PDEBench's key; ``sol`` for a steady task, the
  FNO data's), else each unknown under its own name; ``coefficients`` under their own names;
  ``dev``/``test``: ``<name>/dev.hdf5`` and ``<name>/test.hdf5`` under the data directory; a
  steady task has no ``t_key``.

The equation text is only scanned for names here (no parsing, nothing evaluated); the task's
own validation parses it afterwards and reports any error in it.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from typing import Any

SPACE_ORDER = ("x", "y", "z")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_EQUATION = 20_000  # characters scanned per equation; longer text is left to validation
_MAX_CALLS = 100  # dt(...) calls scanned per equation


class ShortFormError(ValueError):
    """The short form cannot be completed; the message says what to write."""


def expand(data: dict) -> dict:
    """The long form of a task mapping: ``data`` with every omitted derivable key filled in."""
    out = dict(data)
    equation = _equation(out)
    out["equation"] = equation
    if "title" not in out and isinstance(out.get("name"), str):
        out["title"] = out["name"]
    steady = equation.get("time", "t") is None
    unknowns = [u for u in equation.get("unknowns") or [] if isinstance(u, str)]
    coefficients = [c for c in equation.get("coefficients") or [] if isinstance(c, str)]
    parameters = list(out.get("parameters") or {}) if isinstance(out.get("parameters"), dict) else []
    dim = len(equation.get("space") or ["x"])
    solver = dict(out["solver"]) if isinstance(out.get("solver"), dict) else {}
    if "solver" not in out or isinstance(out.get("solver"), dict):
        if "args" not in solver:
            # initial data for the unknowns inside dt(...): a constrained one follows from them
            texts = [e for e in equation.get("equations") or [] if isinstance(e, str)] \
                if isinstance(equation, dict) else []
            timed = {n for e in texts for inner in _calls(e, "dt") for n in _names(inner)}
            initial = [u for u in unknowns if u in timed] or unknowns
            solver["args"] = _args(initial, coefficients, parameters, steady, dim)
        solver.setdefault("returns", list(unknowns))
        if "template" not in solver:
            solver["template"] = _template(out, solver, steady, dim)
        out["solver"] = solver
    if "data" not in out:
        out["data"] = {"fields": _fields(unknowns, steady),
                       **({"coefficients": {c: c for c in coefficients}} if coefficients else {}),
                       **({"t_key": None} if steady else {}),
                       **({} if not isinstance(out.get("name"), str) else
                          {"dev": {"files": [f"{out['name']}/dev.hdf5"]},
                           "test": {"files": [f"{out['name']}/test.hdf5"]}})}
    elif isinstance(out["data"], dict) and "fields" not in out["data"]:
        out["data"] = {"fields": _fields(unknowns, steady), **out["data"]}
    if "description" not in out:
        out["description"] = _description(out, steady, dim)
    return out


def _fields(unknowns: list[str], steady: bool) -> dict[str, str]:
    if len(unknowns) == 1:  # PDEBench's key (time-dependent), the FNO data's (steady)
        return {unknowns[0]: "sol" if steady else "tensor"}
    return {u: u for u in unknowns}


def _batched(solver: dict, steady: bool) -> bool:
    """Does the solver take a batch (initial data or coefficient fields)? A steady task given by
    formulas is one problem: no batch axis."""
    args = [a for a in solver.get("args") or [] if isinstance(a, dict)]
    return not steady or any(a.get("kind") in ("initial", "coefficient") for a in args)


def _equation(data: dict) -> dict:
    """The ``equation`` mapping, with ``space``, ``time`` and ``unknowns`` derived if absent."""
    raw = data.get("equation")
    if isinstance(raw, str):
        equation: dict[str, Any] = {"equations": [raw]}
    elif isinstance(raw, list):
        equation = {"equations": list(raw)}
    elif isinstance(raw, dict):
        equation = dict(raw)
    else:
        return raw  # absent or malformed: the task's validation says so
    texts = [e for e in equation.get("equations") or [] if isinstance(e, str)]
    domain = data.get("domain")
    if "space" not in equation and isinstance(domain, dict) and domain \
            and set(domain) <= set(SPACE_ORDER):
        equation["space"] = [a for a in SPACE_ORDER if a in domain]
    if "time" not in equation:
        has_dt = any(_calls(t, "dt") for t in texts)
        equation["time"] = "t" if has_dt or not texts else None
    if "unknowns" not in equation and texts:
        time = equation.get("time")
        if time is None:
            raise ShortFormError(
                "equation: a steady task (no dt(...)) must list its unknowns: write "
                "equation: {unknowns: [u], equations: [...]}")
        declared = set(data.get("parameters") or {}) | set(equation.get("constants") or {}) \
            | set(equation.get("space") or ["x"]) | {time}
        found: list[str] = []
        for text in texts:
            for inner in _calls(text, "dt"):
                for name in _names(inner):
                    if name not in declared and name not in found:
                        found.append(name)
        if not found:
            raise ShortFormError(
                "equation: no unknown found inside dt(...); write equation: {unknowns: [u], "
                "equations: [...]}")
        if len(texts) > len(found):  # constraints: the other unknowns are differentiated in x
            declared |= set(equation.get("coefficients") or [])
            for text in texts:
                for op in ("dx", "dy", "dz"):
                    for inner in _calls(text, op):
                        found += [n for n in _names(inner) if n not in declared
                                  and n not in found]
        equation["unknowns"] = found
    return equation


def _calls(text: str, op: str) -> list[str]:
    """The first argument of every ``op(...)`` call in ``text`` (balanced parentheses)."""
    text = text[:_MAX_EQUATION]
    out = []
    for k, m in enumerate(re.finditer(rf"(?<![A-Za-z0-9_]){op}\s*\(", text)):
        if k >= _MAX_CALLS:  # bounded work on hostile text; validation reports the rest
            break
        depth, start = 1, m.end()
        for i in range(start, len(text)):
            ch = text[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    out.append(text[start:i])
                    break
            elif ch == "," and depth == 1:
                out.append(text[start:i])
                break
    return out


def _names(text: str) -> list[str]:
    """Identifiers in ``text`` that are not function names (not followed by '(')."""
    names = []
    for m in _IDENT.finditer(text):
        rest = text[m.end():].lstrip()
        if not rest.startswith("(") and not text[:m.start()].rstrip().endswith("."):
            names.append(m.group())
    return names


def _shape(dim: int, *, time: bool, batched: bool = True) -> str:
    space = ", ".join(["N"] * dim)
    if not batched:
        return f"[{space}]"
    return f"[batch_size, T+1, {space}]" if time else f"[batch_size, {space}]"


def _args(unknowns, coefficients, parameters, steady: bool, dim: int) -> list[dict]:
    args: list[dict] = []
    if not steady:
        args += [{"name": f"{u}0_batch", "kind": "initial", "field": u,
                  "doc": f"initial {u}, shape {_shape(dim, time=False)}"} for u in unknowns]
        args.append({"name": "t_coordinate", "kind": "time",
                     "doc": "output times, shape [T+1], starting at t0"})
    else:
        args += [{"name": c, "kind": "coefficient", "field": c,
                  "doc": f"coefficient {c}, shape {_shape(dim, time=False)}"}
                 for c in coefficients]
        if not coefficients:  # one problem given by formulas: the grid
            axes = "x [N]" if dim == 1 else "a tuple (" + ", ".join("xyz"[:dim]) + ") of [N]"
            args.append({"name": "grid", "kind": "grid", "doc": f"the output points: {axes}"})
    # a parameter named as a Python keyword (lambda) is the argument lambda_
    args += [{"name": p, "kind": "parameter", "doc": f"parameter {p}"} if not keyword.iskeyword(p)
             else {"name": f"{p}_", "kind": "parameter", "field": p, "doc": f"parameter {p}"}
             for p in parameters]
    return args


def _equations_text(data: dict) -> list[str]:
    """The equations as the description and the template state them: an expression written
    without "=" is the residual, so it reads "... = 0" (a bridge review asked whether the
    fourth-derivative term of KdV damped: its sign depends on what the expression equals)."""
    eq = data.get("equation")
    texts = [e for e in (eq.get("equations") or []) if isinstance(e, str)] \
        if isinstance(eq, dict) else []
    return [e if "=" in e else f"{e} = 0" for e in texts]


def _template(data: dict, solver: dict, steady: bool, dim: int) -> str:
    args = [a for a in solver.get("args") or [] if isinstance(a, dict) and "name" in a]
    returns = [r for r in solver.get("returns") or [] if isinstance(r, str)]
    name = solver.get("name", "solver")
    eqs = "; ".join(_equations_text(data))
    lines = ["import numpy as np", "", "",
             f"def {name}({', '.join(str(a['name']) for a in args)}):",
             f'    """Solve {eqs}; boundary: {data.get("boundary", "?")}.', "", "    Args:"]
    lines += [f"        {a['name']}: {a.get('doc') or a.get('kind', '')}" for a in args]
    lines += ["", "    Returns:"]
    out_shape = _shape(dim, time=not steady, batched=_batched(solver, steady))
    if len(returns) == 1:
        lines.append(f"        {returns[0]}, shape {out_shape}"
                     + ("" if steady else ", first frame equal to the initial data"))
    else:
        lines.append(f"        the tuple ({', '.join(returns)}), each of shape {out_shape}")
    lines += ['    """', "    # TODO: implement the solver.",
              f"    return {', '.join(returns) or 'None'}", ""]
    return "\n".join(lines)


def _description(data: dict, steady: bool, dim: int) -> str:
    eq = data.get("equation") if isinstance(data.get("equation"), dict) else {}
    texts = _equations_text(data)
    domain = data.get("domain") if isinstance(data.get("domain"), dict) else {}
    space = eq.get("space") or list(domain)
    box = ", ".join(f"{a} in ({domain[a][0]}, {domain[a][1]})" for a in space
                    if a in domain and isinstance(domain[a], (list, tuple)) and len(domain[a]) == 2)
    params = data.get("parameters") if isinstance(data.get("parameters"), dict) else {}
    lines = ["Solve the " + ("steady " if steady else "") + "PDE"
             + (" system" if len(texts) > 1 else ""), ""]
    lines += [f"    {t}" for t in texts]
    lines += [""]
    place = [box] if box else []
    span = data.get("time_span")
    if not steady and isinstance(span, (list, tuple)) and len(span) == 2:
        place.append(f"t in ({span[0]}, {span[1]}]")
    lines.append(("For " + ", ".join(place) + ", w" if place else "W")
                 + f"ith boundary conditions: {data.get('boundary', '?')}.")
    if eq.get("constants"):
        lines.append("Constants: " + ", ".join(f"{k} = {v}" for k, v in eq["constants"].items())
                     + ".")
    if params:
        lines.append("Parameters (passed to the solver): "
                     + ", ".join(f"{k} = {v}" for k, v in params.items()) + ".")
    if data.get("initial_condition"):
        lines.append(f"Initial data: {data['initial_condition']}")
    grid = data.get("grid", "cell_centres")
    where_pts = "cell centres" if grid == "cell_centres" else "nodes (both ends included)"
    n = " x ".join(["N"] * dim)
    solver = data.get("solver") if isinstance(data.get("solver"), dict) else {}
    args = [a for a in solver.get("args") or [] if isinstance(a, dict)]
    returns = [r for r in solver.get("returns") or [] if isinstance(r, str)]
    inputs = ", ".join(str(a.get("name")) for a in args)
    batched = _batched(solver, steady)
    call = f"The solver {solver.get('name', 'solver')}({inputs})"
    if batched:
        lines.append(f"{call} receives fields sampled at the {n} {where_pts} of a uniform grid, "
                     f"shape {_shape(dim, time=False)}"
                     + ("" if steady else ", and the output times t_coordinate (shape [T+1], "
                        "the first the initial time)") + ".")
    else:
        lines.append(f"{call} solves one problem (no batch axis) on the {n} {where_pts} of a "
                     "uniform grid" + (", given as its grid argument" if any(
                         a.get("kind") == "grid" for a in args) else "") + ".")
    what = ", ".join(returns)
    lines.append(f"It returns {what} " + (f"of shape {_shape(dim, time=True)} at every "
                                          "requested time, the first frame equal to the initial "
                                          "data" if not steady else
                                          f"of shape {_shape(dim, time=False, batched=batched)}")
                 + (" (a tuple in that order)" if len(returns) > 1 else "")
                 + (". Accept any N and any batch size." if batched else ". Accept any N."))
    prose = [textwrap.fill(line, 100) if line and not line.startswith("    ") else line
             for line in lines]
    return "\n".join(prose) + "\n"
