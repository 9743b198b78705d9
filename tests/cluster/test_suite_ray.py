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
SAME = ("case", "method", "state", "status", "score_split", "evaluations",
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
    # Scores agree to round-off, not bit for bit: heat1d's Genesis solver and its judge's
    # patch tie on dev (3.801e-08 both), the rule keeps the faster, and which one is faster is
    # the machine's clock; the two differ by ~1e-15 in the solution, ~1e-7 relative in an
    # nRMSE of 3.5e-8. rel 1e-5 leaves a factor 100 on that and still fails a different scheme.
    assert [r["nrmse"] for r in ray] == pytest.approx([r["nrmse"] for r in serial], rel=1e-5)
    assert [r["state"] for r in ray] == ["done", "done"]
    assert json.loads((tmp_path / "ray" / "suite.json").read_text())["executor"] == "ray"
    for r in ray:  # a case's evaluations ran sealed where the case ran (the local executor)
        assert json.loads((Path(r["runs"][0]) / "config.json").read_text())["executor"] == "local"
