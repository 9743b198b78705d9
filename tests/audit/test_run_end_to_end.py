"""`pdesharp solve` as users run it (built-in analyst, real sandboxed evaluations) with
`--audit compute`: the audit is computed and cached beside the data, the summary and report carry
the reference error and the winner's distance to the converged solution, and the floor stops the
search."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from audit_helpers import advection_exact, write_1d

from pdesharp.audit import cached_audit
from pdesharp.task import load_task

TIMES = np.arange(21) * 0.1


@pytest.mark.slow  # `pdesharp solve --audit compute` in a subprocess
def test_solve_reports_the_audit_and_stops_at_the_floor(tmp_path, monkeypatch):
    monkeypatch.delenv("PDESHARP_AUDIT_DIR")  # the default place: beside the (temporary) data
    data = tmp_path / "data"
    data.mkdir()
    # the exact solution plus a drifting mean: reference error ~1e-2, well above what the
    # built-in analyst's first candidate (the exact Fourier propagator, ~3e-3 from the converged
    # solution on this coarse grid) adds, so its first round reaches the floor
    clean = advection_exact(128, 3, 21, TIMES)
    path = write_1d(data / "advection_dev.hdf5", clean + 1e-2 * TIMES[None, :, None], TIMES)
    run = subprocess.run(
        [sys.executable, "-m", "pdesharp.cli", "solve", "advection", "--model", "builtin",
         "--data-dir", str(data), "--candidates", "4", "--max-evals", "8", "--no-convergence",
         "--quiet", "--out", str(tmp_path / "runs"), "--run-id", "r", "--audit", "compute"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert run.returncode == 0, run.stderr
    assert "reference err:" in run.stdout
    cached = cached_audit(load_task("advection"), path)
    assert cached is not None and cached.path.parent == data / "advection_dev.hdf5.audit"
    audit = cached.report
    summary = json.loads((tmp_path / "runs" / "r" / "summary.json").read_text())
    block = summary["reference_audit"]
    assert block["status"] == "ok" and block["reference_error"] == audit.reference_error
    best, vs_conv, ref_err = block["best_nrmse"], block["best_nrmse_vs_converged"], \
        block["reference_error"]
    assert best == summary["best_dev_score"] and vs_conv is not None
    # the evaluator scored the prediction against the converged solution: the three distances
    # obey the triangle inequality (5 % slack for the three normalisations)
    assert abs(vs_conv - ref_err) <= 1.05 * best and best <= 1.05 * (vs_conv + ref_err)
    assert block["stopped_at_floor"] and best <= block["floor"]
    assert summary["feedback_evaluations"] < 8
    report = (tmp_path / "runs" / "r" / "report.md").read_text()
    assert "Reference error of the dev data" in report
    assert "Best solver against the converged solution" in report
