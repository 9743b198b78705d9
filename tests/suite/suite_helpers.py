"""Helpers of the suite tests (also used by tests/cluster/test_suite_ray.py)."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def record(id_: str, family: str, u: str, *, nx: int = 9, time: dict | None = None,
           dim: int = 1, **pde) -> dict:
    """A PDEAgent-Bench-format record written by us (for tests): a manufactured solution on
    the unit interval (dim 1) or square (dim 2), Dirichlet data from it."""
    bbox = [0, 1] if dim == 1 else [0, 1, 0, 1]
    grid = {"bbox": bbox, "nx": nx} | ({"ny": nx} if dim == 2 else {})
    body = {"type": family, "manufactured_solution": {"u": u}, **pde}
    if time:
        body["time"] = time
    return {"id": id_, "oracle_config": {
        "pde": body, "domain": {"type": "unit_interval" if dim == 1 else "unit_square"},
        "bc": {"dirichlet": {"on": "all", "value": "u"}}, "output": {"grid": grid}},
        "evaluation_config": {"timeout_sec": 120}}


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records))
    return path


# two cheap 1D cases with exact references (written by us in PDEAgent-Bench's format)
ONE_D = [
    record("c1_heat1d", "heat", "exp(-t)*sin(pi*x)", time={"t0": 0.0, "t_end": 0.1, "dt": 0.05},
           coefficients={"kappa": {"type": "constant", "value": 0.5}}),
    record("c3_poisson1d", "poisson", "sin(pi*x) + x",
           coefficients={"kappa": {"type": "constant", "value": 1.0}}),
]




def import_one_d(root: Path) -> Path:
    """The two 1D cases as a suite folder under ``root``."""
    from pdesharp.suite.importers.pdeagent import import_jsonl

    got = import_jsonl(write_jsonl(root / "records.jsonl", ONE_D), root / "suite")
    assert got.written == ["c1_heat1d", "c3_poisson1d"] and not got.refused
    return root / "suite"
