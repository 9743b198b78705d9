"""The default path on a fresh machine (issue 21, items 9 and 10): `pdesharp solve TASK` with no
model and an empty audit cache (HOME, XDG_CACHE_HOME and PDESHARP_AUDIT_DIR in a temporary
folder). `--audit auto` computes the
cheap audit itself, the search stops at the reference floor, and the run spends at most three
evaluations, each with its reason.
"""

from __future__ import annotations

import json

import pytest

from pdesharp.audit import cost, runs
from pdesharp.cli import main
from pdesharp.evaluate import Evaluator
from pdesharp.task import load_task


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    # an empty audit folder of its own (the suite's is shared by the session, conftest)
    monkeypatch.setenv("PDESHARP_AUDIT_DIR", str(home / "audits"))
    monkeypatch.delenv("PDESHARP_MODEL", raising=False)
    return home


def test_first_run_computes_the_cheap_audit_and_stops_at_the_floor(tmp_path, fresh_home,
                                                                   shared_data, capsys):
    out = tmp_path / "runs"
    code = main(["solve", "advection", "--data-dir", str(shared_data), "--out", str(out),
                 "--run-id", "r", "--no-convergence", "--max-samples", "2"])
    assert code == 0
    # the audit's own steps reach the log (stderr is not a terminal here: one line per step)
    printed = capsys.readouterr()
    log = printed.err
    assert "stage reference audit: exact translation of 2 initial conditions" in log, log
    summary = json.loads((out / "r" / "summary.json").read_text())
    audit = summary["reference_audit"]
    # no cache, and yet the floor: the audit was computed (the exact shift: well under a second)
    assert audit["status"] == "ok" and audit["stopped_at_floor"]
    assert list((fresh_home / "audits").glob("*/*.json"))
    # the best-predicted design (the exact Fourier propagator) ran first and is at the floor:
    # one evaluation, where the old default path spent 13 without a cached audit
    assert summary["feedback_evaluations"] <= 3
    assert summary["feedback_evaluations"] == 1
    assert audit["best_nrmse_vs_converged"] is not None
    # no loss against the converged solution: the exact propagator is far closer to it than the
    # reference is (measured on 20 samples: 1.3e-4 against the reference's 1.09e-3)
    assert audit["best_nrmse_vs_converged"] < 0.2 * audit["reference_error"]
    from pdesharp.store import RunStore

    store = RunStore.open(out / "r")
    (ev, warm) = [e for e in store.events("evaluation") if e.get("split", "dev") == "dev"]
    assert ev["reason"].startswith("Genesis candidate g0 nominated by judge-1")
    assert "reached the reference floor" in summary["stop_reason"]
    # then the winner's time taken apart: one more run, not a search evaluation (the end lines
    # count the search's evaluations first)
    assert warm["candidate"] == "g0#w" and warm["reason"].startswith("the winner's time taken")
    timed = summary["winner_time"]
    assert timed["warm_samples"] == 1 and timed["one_off_seconds"] >= 0.0
    assert "evaluations:    1 (+ 1 warm timing); debugging iterations 0" in printed.out
    assert "taken apart:    " in printed.out and "s per sample warm" in printed.out


def test_auto_does_not_start_with_minutes_of_auditing(fresh_home, shared_data):
    task = load_task("burgers")  # all 20 dev samples: 20 x 7 s
    ev = Evaluator(task, data_dir=shared_data, max_samples=20, convergence=False)
    estimate = cost.estimate_seconds(task, ev.data_path("dev"), 20)
    assert estimate is not None and estimate > cost.AUTO_SECONDS
    audit, reason = runs.find(task, ev, "auto")
    assert audit is None
    # find() says why; attach() (the run) adds the command that computes it (runs.NO_AUDIT_HINT)
    assert "computing it would take about 140 s, more than --audit auto spends" in reason
    assert "--audit" not in reason.replace("--audit auto", "")
    assert "--audit compute" in runs.NO_AUDIT_HINT


def test_auto_computes_the_cns_audit_of_the_readme_job(shared_data):
    # CNS's converged solution is spectral in primitive variables now (seconds per sample, where
    # the finite-volume one took minutes): the README's settings (5 samples) get the floor
    task = load_task("cns1d")
    ev = Evaluator(task, data_dir=shared_data, max_samples=5, convergence=False)
    assert cost.estimate_seconds(task, ev.data_path("dev"), 5) <= cost.AUTO_SECONDS


def test_the_estimate_covers_the_readme_job(shared_data):
    # the README's main job: burgers with --max-samples 5: about 35 s, computed by default
    task = load_task("burgers")
    ev = Evaluator(task, data_dir=shared_data, max_samples=5, convergence=False)
    assert cost.estimate_seconds(task, ev.data_path("dev"), 5) <= cost.AUTO_SECONDS


def _checkout_files() -> set[str]:
    """Every file under the checkout except Python's bytecode caches and git's own folder."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    return {str(p.relative_to(repo)) for p in repo.rglob("*")
            if ".git" not in p.parts and "__pycache__" not in p.parts and p.is_file()}


def test_a_run_that_audits_writes_nothing_into_the_checkout(tmp_path, example_data, audit_dir):
    # the example data live in the checkout (tests/builtin/data): `--audit auto` computes their
    # cheap audit, which goes to the suite's audit folder, not into a *.audit/ beside the data
    from pdesharp.examples import example_path

    before = _checkout_files()
    code = main(["solve", str(example_path("advection_diffusion1d")), "--dev-data",
                 str(example_data / "advection_diffusion1d" / "dev.hdf5"), "--out",
                 str(tmp_path / "runs"), "--run-id", "r", "--quiet", "--no-convergence",
                 "--max-evals", "1", "--candidates", "2"])
    assert code == 0
    summary = json.loads((tmp_path / "runs" / "r" / "summary.json").read_text())
    assert summary["reference_audit"]["status"] == "ok"  # an audit was used
    assert _checkout_files() == before
    assert list(audit_dir.rglob("*.json"))  # computed into the suite's folder (now or earlier)


def test_a_users_auto_budget_is_read_and_checked(monkeypatch):
    monkeypatch.delenv(cost.AUTO_SECONDS_ENV, raising=False)
    assert cost.auto_seconds() == cost.AUTO_SECONDS
    monkeypatch.setenv(cost.AUTO_SECONDS_ENV, "0")
    assert cost.auto_seconds() == 0.0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(cost.AUTO_SECONDS_ENV, bad)
        with pytest.raises(ValueError, match=cost.AUTO_SECONDS_ENV):
            cost.auto_seconds()
