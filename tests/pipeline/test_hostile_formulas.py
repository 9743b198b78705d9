"""A formula that smuggles Python runs nowhere: not from a task YAML (tasks show/check, solve,
data generate), a model's translation, a model's stability bound (the cross-check), or a run
folder's task.yaml (resume, report). Each entry point is driven as a user drives it (the CLI);
the attack writes a marker file if it runs.

Scripted model replies here were written by us for these tests, not recorded from a model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from pipeline_scripts import analysis_replies, genesis_reply, js, nominate, patch, shift

from pdesharp.cli import main
from pdesharp.task import load_task

FIXED = "attribute access `.system` is not allowed in equation 1"


# Bounds of bounded size that SymPy evaluates without end (or gives up on with NoConvergence):
# the first is refused as it is read, the others when evaluated at the grid values (the clock).
SLOW_BOUNDS = ["dx/abs(beta) + 0*Abs(sin(exp(10**50)))", "dx**16*sin(exp(1/dx**16))",
               "dx*besselj(1/dx**2, 1/dx**2)"]


def payload(marker) -> str:
    return f"dt(u) + beta*dx(u) + 0*__import__('os').system('id > {marker}')"


def hostile_task(marker) -> dict:
    data = load_task("advection").model_dump(mode="json")
    data["name"] = "advection_evil"
    data["equation"]["equations"] = [payload(marker)]
    return data


def cli(*argv, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdesharp.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.mark.parametrize("command", [
    ["tasks", "show", "{yaml}"],
    ["tasks", "check", "{yaml}"],
    ["solve", "{yaml}", "--out", "{tmp}/runs", "--quiet"],
    ["data", "generate", "{yaml}", "--samples", "1", "--seed", "0", "--out", "{tmp}/g.hdf5"],
])
def test_a_task_yaml_formula_never_runs(tmp_path, command):
    marker = tmp_path / "MARKER"
    spec = tmp_path / "evil.yaml"
    spec.write_text(yaml.safe_dump(hostile_task(marker), sort_keys=False))
    proc = cli(*[a.format(yaml=spec, tmp=tmp_path) for a in command])
    assert not marker.exists()
    assert proc.returncode != 0
    assert FIXED in proc.stderr and "Traceback" not in proc.stderr


def test_a_translation_reply_formula_never_runs(tmp_path):
    marker = tmp_path / "MARKER"
    reply = "```yaml\n" + yaml.safe_dump(hostile_task(marker), sort_keys=False) + "```"
    rules = tmp_path / "rules.yaml"
    rules.write_text("# written by us for this test\n" + yaml.safe_dump(
        {"rules": [{"tag": "translate", "reply": reply}]}))
    proc = cli("translate", "Solve the advection equation.", "--model", f"scripted:{rules}",
               "--out", tmp_path / "out.yaml")
    assert not marker.exists()
    assert proc.returncode != 0 and not (tmp_path / "out.yaml").exists()
    assert FIXED in proc.stderr or FIXED in proc.stdout


@pytest.fixture(scope="module")
def hostile_bound_run(tmp_path_factory, shared_data):
    """One scripted `pdesharp solve` whose stability-analysis reply carries the attack in its
    bound expression; the cross-check reads it before any solver runs."""
    tmp = tmp_path_factory.mktemp("bound")
    marker = tmp / "MARKER"
    analysis = analysis_replies("numerical")
    analysis["analysis.stability"] = ["Explicit upwind.\n" + js({
        "bounds": [{"scheme": "explicit upwind",
                    "expression": f"dx/abs(beta) + 0*__import__('os').system('id > {marker}')",
                    "note": "CFL 1"}] + [
                   {"scheme": "explicit upwind", "expression": e, "note": "issue 25"}
                   for e in SLOW_BOUNDS],
        "recommended_schemes": ["exact spectral shift"], "key_facts": []})]
    rules = [{"tag": tag, "reply": replies[0]} for tag, replies in analysis.items()]
    rules += [{"tag": "genesis", "reply": genesis_reply(shift(1.0), "exact")},
              {"tag": "judge.nominate", "reply": nominate("g1")},
              {"tag": "judge.propose",
               "reply": patch("    scale = 1.0", "    scale = 1.0  # same", "same", ["g1"])},
              {"tag": "reporter", "reply": "Narrative written by the test."}]
    script = tmp / "rules.yaml"
    script.write_text("# replies written by us for this test\n"
                      + yaml.safe_dump({"rules": rules}, sort_keys=False))
    proc = cli("solve", "advection", "--model", f"scripted:{script}", "--candidates", "1",
               "--max-rounds", "1", "--rejudge-cycles", "0",
               "--dev-data", shared_data / "advection_dev.hdf5", "--data-dir", tmp,
               "--max-samples", "2", "--no-convergence", "--out", tmp / "runs",
               "--run-id", "bound", "--quiet")
    return tmp, marker, proc


def test_a_stability_bound_formula_never_runs_in_the_cross_check(hostile_bound_run):
    tmp, marker, proc = hostile_bound_run
    assert not marker.exists()
    # the bound is advice: the run goes on, the unreadable bound is recorded with the reason
    assert proc.returncode == 0, proc.stderr[-2000:]
    analysis = json.loads((tmp / "runs" / "bound" / "analysis.json").read_text())
    bound = analysis["stability"][0]
    assert bound["value"] is None
    assert "not readable: attribute access `.system` is not allowed in the stability bound" \
        in bound["note"]


def test_a_slow_stability_bound_is_a_verdict_not_a_hang(hostile_bound_run):
    """Issue 25: each bound used to hang `solve` at the cross-check (or kill it with
    NoConvergence). Now each is a one-line note, and the run finishes (the fixture's 600 s
    subprocess limit would fail it; each evaluation has a 2 s clock)."""
    tmp, _, proc = hostile_bound_run
    assert proc.returncode == 0, proc.stderr[-2000:]
    analysis = json.loads((tmp / "runs" / "bound" / "analysis.json").read_text())
    notes = {b["expression"]: b for b in analysis["stability"][1:]}
    assert set(notes) == set(SLOW_BOUNDS)
    refused = notes[SLOW_BOUNDS[0]]
    assert refused["value"] is None and "sin of a number beyond 1e+308" in refused["note"]
    for expression in SLOW_BOUNDS[1:]:  # evaluated at dx = 1/1024: no number within the clock
        bound = notes[expression]
        assert bound["value"] is None and "not evaluable" in bound["note"], bound
        assert "\n" not in bound["note"]


def test_a_planted_run_folder_task_never_runs_in_report(hostile_bound_run):
    tmp, _, proc = hostile_bound_run
    assert proc.returncode == 0
    run = tmp / "report-run"
    shutil.copytree(tmp / "runs" / "bound", run)
    shutil.rmtree(run / "plots", ignore_errors=True)  # so the report draws, reading task.yaml
    marker = tmp / "REPORT-MARKER"
    (run / "task.yaml").write_text(yaml.safe_dump(hostile_task(marker), sort_keys=False))
    out = cli("report", run, "--out", tmp / "r.html")
    assert not marker.exists()
    # the report is still written from what the run computed; the figure says why it is missing
    assert out.returncode == 0, out.stderr[-2000:]
    html = (tmp / "r.html").read_text()
    assert "plot not drawn" in html and "is not allowed in equation 1" in html


def test_a_planted_run_folder_task_never_runs_in_resume(hostile_bound_run, tmp_path):
    # a run that must be resumed (its report is missing: resume redoes the final steps), then a
    # hostile task.yaml planted in its folder (a dead-endpoint run leaves no folder to plant in)
    tmp, _, proc = hostile_bound_run
    assert proc.returncode == 0
    shutil.copytree(tmp / "runs" / "bound", tmp_path / "dead")
    (tmp_path / "dead" / "report.md").unlink()
    marker = tmp_path / "MARKER"
    (tmp_path / "dead" / "task.yaml").write_text(
        yaml.safe_dump(hostile_task(marker), sort_keys=False))
    proc = cli("resume", tmp_path / "dead", "--quiet")
    assert not marker.exists()
    assert proc.returncode != 0 and FIXED in proc.stderr and "Traceback" not in proc.stderr
