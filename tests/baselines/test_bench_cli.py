"""``pdesharp bench`` and ``pdesharp report`` from the command line, with a scripted model file
(rules written by us) and the real evaluator on 2 dev samples."""

from __future__ import annotations

from pathlib import Path

from pdesharp.cli import main

RULES = Path(__file__).parent / "fixtures" / "codepde_rules.yaml"


def test_bench_then_report_from_the_cli(tmp_path, shared_data, capsys, monkeypatch):
    monkeypatch.setenv("PDESHARP_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / "bench"
    argv = ["bench", "--tasks", "advection", "--methods", "codepde", "--model",
            f"scripted:{RULES}", "--samples", "1", "--out", str(out), "--data-dir",
            str(shared_data), "--max-samples", "2"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| advection | codepde |" in printed
    row = [c.strip() for c in (out / "table.md").read_text().splitlines()[2].split("|")]
    assert row[4] == "n/a"  # test nRMSE: the shared data has no test split
    assert [c for c in row[8:11]] == ["1", "0.00", "1"]  # evals, debug/solver, calls
    assert float(row[7]) > 0  # the winner's solver time per sample (s/sample)
    # the bench audited the dev data (advection: the exact shift, cheap): the winner's distance
    # from the PDE's solution and the reference's own error are in the table
    dev, converged, reference = (float(row[k]) for k in (3, 5, 6))
    assert converged > 0 and reference > 0 and dev > 0
    assert main(["report", str(out), "--out", str(tmp_path / "b.html")]) == 0
    assert "comparison" in (tmp_path / "b.html").read_text()
    # A second bench run finds the cell finished and runs nothing.
    assert main(argv) == 0
    assert "already finished" in capsys.readouterr().err


def test_cli_errors_are_actionable(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["bench", "--tasks", "advection", "--methods", "codepde,best-of-all", "--model", "x",
              "--out", str(tmp_path)])
    assert "unknown method(s) best-of-all" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path)])
    assert "neither a run folder" in capsys.readouterr().err
