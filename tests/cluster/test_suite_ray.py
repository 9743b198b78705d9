"""`pdesharp suite run --executor ray`: whole cases on the session's local Ray instance
(conftest.py), each case's evaluations sealed on the worker that runs it; the table is the
serial run's (same statuses, scores, evaluation and model-call counts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pdesharp.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))

from suite_helpers import import_one_d  # noqa: E402

pytestmark = pytest.mark.slow
ARGS = ["--candidates", "2", "--max-rounds", "1", "--budget-evals", "3", "--no-convergence"]
SAME = ("case", "method", "state", "status", "nrmse", "score_split", "evaluations",
        "model_calls", "tokens_in", "tokens_out")


def test_suite_on_ray_matches_the_serial_table(ray_cluster, tmp_path):
    suite = import_one_d(tmp_path)
    assert main(["suite", "run", str(suite), "--out", str(tmp_path / "serial"), *ARGS]) == 0
    assert main(["suite", "run", str(suite), "--out", str(tmp_path / "ray"), *ARGS,
                 "--executor", "ray"]) == 0
    serial, ray = (json.loads((tmp_path / d / "table.json").read_text())["rows"]
                   for d in ("serial", "ray"))
    assert [{k: r.get(k) for k in SAME} for r in ray] == \
        [{k: r.get(k) for k in SAME} for r in serial]
    assert [r["state"] for r in ray] == ["done", "done"]
    assert json.loads((tmp_path / "ray" / "suite.json").read_text())["executor"] == "ray"
    for r in ray:  # a case's evaluations ran sealed where the case ran (the local executor)
        assert json.loads((Path(r["runs"][0]) / "config.json").read_text())["executor"] == "local"
