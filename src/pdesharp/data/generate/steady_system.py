"""Reference data for steady systems of several unknowns given by formulas (Stokes flow, coupled
elliptic systems, beams with coupled end conditions, linear marching problems): one solution,
computed by the built-in Chebyshev collocation of :mod:`pdesharp.builtin.families.
collocation_system` at rising degrees (16, 24, 32, 48, 64 in 1D up to 128; 2D up to 48) until two
successive solutions agree at the output points to ``tol`` (1e-10) of the solution's maximum.
The file records the degree and that difference: the reference's own error bound. The method is
the built-in family's, so a dev score against such data measures agreement with it; check a new
task once against a closed form (the tests do, with manufactured solutions).
"""

from __future__ import annotations

import numpy as np

from pdesharp.data.generate.generic_symbolic import UnsupportedTask
from pdesharp.grid import output_grid
from pdesharp.task import Task

DEFAULT_NX = {1: 256, 2: 64}
DEGREES = {1: (16, 24, 32, 48, 64, 96, 128), 2: (16, 24, 32, 40, 48)}
ATTRS = {"name": "Chebyshev collocation of a steady system (the built-in family's, degree"
                 " raised until two degrees agree)", "solve": "Newton, sparse direct"}


def law_of(task: Task):
    from pdesharp.builtin.refusal import UnsupportedTask as Refused
    from pdesharp.builtin.structure import SteadySystem, structure

    try:
        law = structure(task)
    except Refused as exc:
        raise UnsupportedTask(f"task {task.name!r}: {exc}") from None
    if not isinstance(law, SteadySystem):
        raise UnsupportedTask(f"task {task.name!r} is not a steady system")
    return law


def check_steady_system(task: Task) -> None:
    law_of(task)


def generate_steady_system(task: Task, n_samples: int, seed: int = 0, nx: int | None = None, *,
                           tol: float = 1e-10, info: dict | None = None, **_: object) -> dict:
    law_of(task)
    dim = len(task.equation.space)
    nx = int(nx or DEFAULT_NX[dim])
    pts = output_grid(task, (nx,) * dim)
    key = (task.model_dump_json(), nx, tol)  # one solution whatever the seed: solved once
    if key not in _SOLVED:
        _SOLVED.clear()
        _SOLVED[key] = _solve(task, dim, nx, tol)
    out, degree, change = _SOLVED[key]
    if info is not None:
        info.update(degree=degree, change=change, converged=bool(change <= tol), **ATTRS)
    res = {task.data.fields[r]: np.broadcast_to(o, (n_samples, *o.shape)).copy()
           for r, o in zip(task.solver.returns, out)}
    res[task.data.x_key or "x-coordinate"] = pts[0]
    if dim == 2:
        res["y-coordinate"] = pts[1]
    return res


_SOLVED: dict = {}


def _solve(task: Task, dim: int, nx: int, tol: float):
    from pdesharp.builtin.author import problem, render
    from pdesharp.builtin.families import family
    from pdesharp.grid import grid_value

    p = problem(task)
    fam = family("collocation_system")
    prev, change, degree = None, np.inf, 0
    args = {a.name: (grid_value(task, (nx,) * dim) if a.kind == "grid" else
                     task.parameters[a.field or a.name]) for a in task.solver.args}
    for degree in DEGREES[dim]:
        ns: dict = {}
        exec(compile(render(task, fam.design(DEGREE=degree), p), "<steady system>", "exec"), ns)
        out = ns[task.solver.name](**args)
        out = np.stack([np.asarray(o, float) for o in (out if isinstance(out, tuple) else (out,))])
        if prev is not None:
            change = float(np.max(np.abs(out - prev)) / max(np.max(np.abs(out)), 1e-300))
            if change <= tol:
                break
        prev = out
    if not np.all(np.isfinite(out)):
        raise UnsupportedTask(f"task {task.name!r}: the collocation solution is not finite")
    return out, degree, change
