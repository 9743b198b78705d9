"""``pdesharp eval``: table on stdout, full result as JSON, exit codes."""

from __future__ import annotations

import json

import pytest

from pdesharp.cli import main

KEYS = {"status", "nrmse", "nrmse_per_sample", "residual", "convergence_order", "solver_seconds",
        "peak_memory_mb", "stdout_tail", "stderr_tail", "split", "n_samples", "wall_seconds"}


def test_eval_writes_json_and_table(shared_data, tmp_path, capsys):
    solver = tmp_path / "shift.py"
    solver.write_text("import numpy as np\n"
                      "def solver(u0_batch, t_coordinate, beta):\n"
                      "    return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)\n")
    out = tmp_path / "result.json"
    code = main(["eval", str(solver), "--task", "advection", "--data-dir", str(shared_data),
                 "--max-samples", "2", "--no-convergence", "--json", str(out),
                 "--feedback", "residual"])
    assert code == 0
    data = json.loads(out.read_text())
    assert KEYS <= set(data)
    assert data["status"] == "ok" and data["n_samples"] == 2 and len(data["nrmse_per_sample"]) == 2
    assert data["feedback"] == "residual" and data["residual"] > 0.01  # frozen u0 is not a solution
    text = capsys.readouterr().out
    assert "nRMSE" in text and "PDE residual" in text and "status" in text


def test_eval_missing_data_exits_with_hint(tmp_path, capsys):
    solver = tmp_path / "s.py"
    solver.write_text("def solver(*a):\n    pass\n")
    try:
        main(["eval", str(solver), "--task", "advection", "--data-dir", str(tmp_path)])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("expected SystemExit")
    assert "pdesharp data download advection" in capsys.readouterr().err


def test_eval_unreadable_solver(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["eval", str(tmp_path / "nope.py"), "--task", "advection"])
    assert stop.value.code == 2
    assert "cannot read solver file" in capsys.readouterr().err
