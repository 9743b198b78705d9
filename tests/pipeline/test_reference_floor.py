"""Runs with a reference audit: the floor stops the tournament, the report says where the
floor is, and LLM judges see the reference error only when asked.

Scripted models (replies written by us, see pipeline_scripts) and MarkerEvaluator (executes
nothing); the audit is a record made by the test, put in place of the cache lookup.
"""

from __future__ import annotations

import json

import pytest
from pipeline_scripts import MarkerEvaluator
from test_pipeline import GENESIS3, rules_for, run, tournament_rules

from pdesharp.audit import runs
from pdesharp.audit.records import AuditReport
from pdesharp.pipeline import SolveConfig
from pdesharp.synthesis import run_rule


@pytest.fixture
def audit_of(monkeypatch):
    def install(error: float):
        report = AuditReport(task="advection", task_fingerprint="test", data_file="dev.h5",
                             data_sha256="0", samples=[0, 1], reference_error=error,
                             float32_floor=3e-8, method="an audit record written by the test")

        def find(task, evaluator, mode, progress=None):
            audit = runs.RunAudit(report=report, path="dev.h5.audit/test.json", indices=[0, 1],
                                  reference_error=error, converged=None)
            return (None, "off") if mode == "off" else (audit, "")

        monkeypatch.setattr(runs, "find", find)
    return install


def _dev_runs(ev):
    return [c for c in ev.calls if c[1] == "dev"]


def test_floor_saturation_stops_the_tournament(tmp_path, audit_of):
    audit_of(1e-3)
    ev = MarkerEvaluator()
    store, res = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()), ev,
                     candidates=3, max_rounds=3, rejudge_cycles=1, floor_saturation=True)
    # without the floor this run makes 7 dev evaluations over two cycles
    # (test_numerical_route_full_tournament); round 1 reaches 1e-3 <= 1e-3/0.9 and stops
    assert len(_dev_runs(ev)) == 6 and res.best_id == "c0r1-j3"
    (sat,) = store.events("saturation")
    assert sat["round"] == 1 and sat["floor"] == pytest.approx(1e-3 / 0.9)
    assert not store.events("rejudge")
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["reference_audit"]
    assert block["stopped_at_floor"] and block["reference_error"] == 1e-3
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Reference error of the dev data: 1.000e-03" in report
    assert "stopped at the reference floor" in report


def test_llm_roles_have_no_floor_by_default_and_the_report_says_below_the_floor(
        tmp_path, audit_of):
    audit_of(2e-3)
    ev = MarkerEvaluator()
    store, _ = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()), ev,
                   candidates=3, max_rounds=3, rejudge_cycles=1)
    assert len(_dev_runs(ev)) == 7  # the run is unchanged by the audit
    assert all(e.get("floor") is None for e in store.events("saturation"))
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["reference_audit"]
    assert block["floor"] is None and not block["stopped_at_floor"]
    assert block["best_below_reference_error"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "agrees with the reference (1.000e-03) better than the reference agrees with the " \
           "PDE (2.000e-03)" in report
    prompts = "".join(r[0] for r in store.db.execute("SELECT messages FROM model_calls"))
    assert "Reference audit" not in prompts and "2.00e-03" not in prompts


def test_judges_are_told_the_reference_error_only_when_asked(tmp_path, audit_of):
    audit_of(2e-3)
    store, _ = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                   MarkerEvaluator(), candidates=3, max_rounds=1, rejudge_cycles=0,
                   judges_see_reference_error=True)
    systems = [json.loads(r[0])[0]["content"] for r in store.db.execute(
        "SELECT messages FROM model_calls WHERE tag LIKE 'judge%'")]
    assert systems and all("converged float64 solution of the PDE by nRMSE 2.00e-03" in s
                           for s in systems)
    analysis = "".join(r[0] for r in store.db.execute(
        "SELECT messages FROM model_calls WHERE tag NOT LIKE 'judge%'"))
    assert "Reference audit" not in analysis  # only the judges, and only this line


def test_no_audit_is_recorded_and_reported(tmp_path):
    store, _ = run(tmp_path, rules_for("numerical", GENESIS3, tournament_rules()),
                   MarkerEvaluator(), candidates=3, max_rounds=1, rejudge_cycles=0,
                   audit="off")
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["reference_audit"]
    assert block["status"] == "none" and "off" in block["reason"]
    assert store.events("reference_audit")[0]["status"] == "none"


@pytest.mark.parametrize("model,choice,expected", [
    (None, None, True), ("builtin", None, True), ("openai:gpt-4o", None, False),
    ("builtin", False, False), ("openai:gpt-4o", True, True)])
def test_floor_default_is_on_for_the_builtin_analyst_only(model, choice, expected):
    config = SolveConfig(model=model, floor_saturation=choice)
    assert run_rule.floor_saturation_enabled(config) is expected
    assert run_rule.floor_factor(config) == pytest.approx(1 / 0.9)


def test_a_resumed_run_keeps_the_audit_decision_it_started_with(tmp_path, audit_of, monkeypatch):
    import asyncio

    from pdesharp.store import RunStore
    from pdesharp.task import load_task

    task = load_task("advection")
    config = SolveConfig(model="builtin")
    started = RunStore.create(tmp_path, task=task, config={}, run_id="with")
    audit_of(1e-3)
    _, _, floor = asyncio.run(runs.attach(task, config, MarkerEvaluator(), started))
    assert floor == pytest.approx(1e-3 / 0.9)
    monkeypatch.setattr(runs, "find", lambda *a, **k: (None, "no audit cached"))
    audit, reason, again = asyncio.run(runs.attach(task, config, MarkerEvaluator(), started))
    assert audit is None and again == floor and "no longer cached" in reason
    # a run that started without an audit stays without one when an audit appears later
    without = RunStore.create(tmp_path, task=task, config={}, run_id="without")
    asyncio.run(runs.attach(task, config, MarkerEvaluator(), without))
    audit_of(1e-3)
    audit, _, floor = asyncio.run(runs.attach(task, config, MarkerEvaluator(), without))
    assert audit is None and floor is None
    assert len(without.events("reference_audit")) == 1
