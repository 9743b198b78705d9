"""The names a task's symbols take in generated code: the user's own, unless the code needs them.

A task may call a parameter ``c``, ``np``, ``float`` or ``lambda``, an unknown ``W`` or ``U0``.
The generated solvers bind every user name as a local of the physics functions (``c =
prm['c']``), beside the names those functions use for themselves (``W``, ``X``, ``prm``,
``axis``, ``np``, the diagonal parts ``A``, ``D``, ``c`` of ``linear_parts``...), and the symbolic
work derives its own symbols from them (``u_x`` for the gradient of ``u``, ``U0`` for a conserved
quantity, ``s`` in the source ODE). :func:`code_task` is the task with every user name that could
meet one of those renamed (``c`` -> ``c_``), in the equations, the boundary and every key; the
solver's signature keeps the names the task gives it (the entry point delegates when one of them
would shadow what its body calls). Everything the built-in analyst derives starts from this task,
so no generated line can confuse a user's name with its own.
"""

from __future__ import annotations

import builtins
import keyword
import re

from pdesharp.task import Task, task_from_dict

# Names the functions that bind user names use for themselves (arguments, locals, the modules
# they call). tests/builtin/test_hostile_names.py renders every family with sentinel names and
# checks that each other name those functions use is covered by this set or the patterns below.
INTERNAL = frozenset({
    "np", "scipy", "math", "numba", "W", "U", "V", "X", "G", "S", "T", "J", "Jv", "WX", "A", "D",
    "c", "high", "lam", "prm", "axis", "fields", "out", "self", "args", "t", "s",
})
_PATTERNS = (
    re.compile(r"_.*"),  # the generated code's own helpers and locals (_zero, _evolve, _P...)
    re.compile(r"U\d+"),  # conserved quantities U0, U1...
    re.compile(r"[A-Z][A-Z0-9_]*[A-Z0-9]"),  # module constants (CFL, DOMAIN, PARITY...)
    re.compile(r".+_[txyz]+"),  # derivative symbols (u_x, u_xx, u_t)
)
_IDENT = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_])")


def needs_alias(name: str) -> bool:
    return (keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in INTERNAL
            or hasattr(builtins, name) or any(p.fullmatch(name) for p in _PATTERNS))


def user_names(task: Task) -> list[str]:
    eq = task.equation
    return [*eq.unknowns, *eq.coefficients, *task.parameters, *eq.constants,
            *([eq.time] if eq.time and eq.time != "t" else [])]


def aliases(task: Task) -> dict[str, str]:
    """{user name: code name} for the names that need one (empty for most tasks)."""
    names = user_names(task)
    taken = set(names) | set(task.equation.space) | {"t"}
    out: dict[str, str] = {}
    for name in names:
        if name in out or not needs_alias(name):
            continue
        alias = (name.lstrip("_") or "v") + "_"
        while needs_alias(alias) or alias in taken:
            alias += "_"
        taken.add(alias)
        out[name] = alias
    return out


def rename_text(text: str, ren: dict[str, str]) -> str:
    """``text`` with every name in ``ren`` replaced, except where it is called (``dt(u)`` keeps
    the operator when a parameter is named ``dt``)."""
    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in ren or text[m.end():].lstrip().startswith("("):
            return name
        return ren[name]

    return _IDENT.sub(sub, text)


def _rename_boundary(text: str, ren: dict[str, str]) -> str:
    """Only the conditions are renamed: the clause heads (``dirichlet at x = 0``) are grammar."""
    out = []
    for clause in re.split(r"([;\n])", text):
        head, colon, body = clause.partition(":")
        out.append(head + colon + rename_text(body, ren) if colon else clause)
    return "".join(out)


def code_task(task: Task) -> Task:
    """``task`` with the user names that generated code cannot use as written renamed (itself
    when none needs it)."""
    ren = aliases(task)
    return renamed(task, ren) if ren else task


def renamed(task: Task, ren: dict[str, str]) -> Task:
    """``task`` with its user names renamed by ``ren`` everywhere but in the solver's argument
    names (its interface)."""
    r = lambda n: ren.get(n, n)  # noqa: E731
    data = task.model_dump(mode="json")
    eq = data["equation"]
    eq["equations"] = [rename_text(e, ren) for e in eq["equations"]]
    for key in ("unknowns", "coefficients"):
        eq[key] = [r(n) for n in eq[key]]
    eq["constants"] = {r(k): v for k, v in eq["constants"].items()}
    if eq.get("time"):
        eq["time"] = r(eq["time"])
    data["parameters"] = {r(k): v for k, v in data["parameters"].items()}
    data["boundary"] = _rename_boundary(data["boundary"], ren)
    solver = data["solver"]
    for a in solver["args"]:
        if a["kind"] == "parameter":
            a["field"] = r(a.get("field") or a["name"])
        elif a.get("field"):
            a["field"] = r(a["field"])
    solver["returns"] = [r(n) for n in solver["returns"]]
    data["data"]["fields"] = {r(k): v for k, v in data["data"]["fields"].items()}
    data["data"]["coefficients"] = {r(k): v for k, v in data["data"]["coefficients"].items()}
    if data.get("generator"):
        data["generator"]["ranges"] = {r(k): v for k, v in data["generator"]["ranges"].items()}
    return task_from_dict(data, f"task {task.name!r} with code names")
