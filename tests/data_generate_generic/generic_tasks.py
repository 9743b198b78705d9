"""Small task specs built in Python for the generic generator's tests."""

from __future__ import annotations

from pdesharp.task import Task, task_from_dict


def make_task(equations, unknowns, parameters=None, *, space=("x",), domain=None, fields=None,
              boundary="periodic", time_span=(0.0, 1.0), n_frames=11, generator=None,
              name="generic_test", constants=None, coefficients=None, time="t",
              grid="cell_centres") -> Task:
    """A minimal valid task (the solver template is irrelevant to data generation)."""
    spec = {
        "name": name,
        "title": "test task",
        "description": "test task for the generic generator",
        "equation": {"unknowns": list(unknowns), "equations": list(equations),
                     "space": list(space), "time": time,
                     "constants": dict(constants or {}),
                     "coefficients": list(coefficients or [])},
        "parameters": dict(parameters or {}),
        "domain": domain or {a: [0.0, 1.0] for a in space},
        "boundary": boundary,
        "grid": grid,
        "time_span": list(time_span) if time_span else None,
        "n_frames": n_frames,
        "solver": {"args": [{"name": "t_coordinate", "kind": "time"}],
                   "returns": list(unknowns), "template": "def solver(t_coordinate): ..."},
        "data": {"fields": fields or {u: u for u in unknowns}},
    }
    if generator is not None:
        spec["generator"] = generator
    return task_from_dict(spec, "test spec")
