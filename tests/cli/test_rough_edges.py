"""The first hour's rough edges (issue 28, item 4): each as a newcomer met it.

report.md is written from a store filled by the test (fixed results, no execution); the CLI
checks run `pdesharp` in-process on files the test writes."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import h5py
import numpy as np
import pytest

from pdesharp.cli import main
from pdesharp.pipeline import SolveConfig, dump_config
from pdesharp.records import Analysis, Candidate, Classification, EvalResult, StabilityBound
from pdesharp.reporter import write_report
from pdesharp.store import RunStore
from pdesharp.task import load_task

LONG = ("pseudo-spectral, 2/3 dealiasing, integrating-factor RK4 (exact linear part), CFL 0.4, "
        "float64")  # a built-in design name: 90 characters, longer than the old 70-character cut
DIFFUSION = "explicit diffusion (central, forward Euler)"


def _report(tmp_path: Path) -> str:
    task = load_task("burgers")
    config = SolveConfig(task="burgers", model="builtin")
    store = RunStore.create(tmp_path / "runs", task=task, config=dump_config(config),
                            run_id="r")
    base = Candidate(id="g0", code="def solver(): pass\n", origin="genesis", title=LONG)
    patched = Candidate(id="c0r1-j1", code="def solver(): 1\n", origin="patch", parents=["g0"],
                        judge="judge-1", title="CFL -> 0.6")
    ok = {"g0": 3.1e-4, "c0r1-j1": 3.0e-4}

    class Fixed:  # fixed results: the report is what is tested
        async def evaluate(self, code, *, split, feedback, label="", warm=False):
            return EvalResult(status="ok", split=split, feedback=feedback, n_samples=2,
                              nrmse=ok[label], solver_seconds=0.1)

    for c in (base, patched):
        store.add_candidate(c)
        asyncio.run(store.evaluate(Fixed(), c, split="dev", feedback="nrmse"))
    analysis = Analysis(
        classification=Classification(time_order=1, space_order=2, linear=False,
                                      pde_type="parabolic", boundary="periodic"),
        source="builtin",
        stability=[StabilityBound(scheme=DIFFUSION, expression="1/(2*Max(Abs(nu))/dx**2)",
                                  value=0.000152)],
        key_facts=["type: parabolic, nonlinear, route numerical", f"{DIFFUSION}: dt <= 0.000152"])
    data = tmp_path / "machine" / "shared" / "data"
    final = {"best_id": "c0r1-j1", "best_dev_score": 3.0e-4, "test_nrmse": None,
             "best_solver": str(store.dir / "best_solver.py"), "budget_stop": False,
             "reference_audit": {"status": "none", "reason": (
                 f"no audit of {data}/burgers_dev.hdf5 is cached (computing it was stopped "
                 f"after 120 s, --audit auto's budget); `pdesharp data audit burgers "
                 f"--data-dir {data}` computes it")}}
    text = asyncio.run(write_report(task, store, analysis, config, None, final))
    store.close()
    assert text == (store.dir / "report.md").read_text()
    return text


def test_report_md_is_portable_plain_and_says_each_thing_once(tmp_path):
    text = _report(tmp_path)
    # no path of the machine it ran on: the solver beside report.md, the data by file name;
    # a suggested command keeps its paths, to run as written from any folder (issue 20.6)
    commands = re.findall(r"`(pdesharp [^`]*)`", text)
    prose = re.sub(r"`pdesharp [^`]*`", "", text)
    assert str(tmp_path) not in prose and str(Path.home()) not in prose
    assert "(`best_solver.py`)" in text and "no audit of burgers_dev.hdf5 is cached" in text
    assert f"pdesharp data audit burgers --data-dir {tmp_path}" in commands[0]
    # no HTML entities for the arrows and comparisons the designs and facts are written with
    assert not re.search(r"&(gt|lt|amp);", text)
    assert "CFL → 0.6" in text
    # design names whole in both tables (the tournament and the Pareto table), never cut
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert sum(LONG in line for line in rows) >= 2 and not any("…" in line for line in rows)
    # the stability bound once: the SymPy expression with its value, not again as a key fact
    assert text.count("1/(2*Max(Abs(nu))/dx**2)") == 1 and text.count("0.000152") == 1


def test_tasks_check_uses_the_tasks_own_generator_ranges(capsys):
    # fisher_robin1d states generator.ranges u: [0.1, 0.9] (no data here: the notes say so)
    assert main(["tasks", "check", str(Path(__file__).parents[2] / "examples" / "tasks"
                                         / "fisher_robin1d.yaml")]) == 0
    out = capsys.readouterr().out
    assert "range of u from the task's generator.ranges: [0.1, 0.9]" in out
    assert "assumed to be [-1, 1]" not in out


def test_unusable_data_is_refused_before_the_run_and_not_called_resumable(tmp_path, capsys):
    bad = tmp_path / "bad.hdf5"  # Burgers' keys, but 201 times for 5 frames
    with h5py.File(bad, "w") as h5:
        h5["tensor"] = np.zeros((2, 5, 16), dtype="f4")
        h5["x-coordinate"] = np.linspace(0, 1, 16)
        h5["t-coordinate"] = np.linspace(0, 2, 201)
    with pytest.raises(SystemExit) as stop:
        main(["solve", "burgers", "--dev-data", str(bad), "--out", str(tmp_path / "runs"),
              "--max-evals", "1", "--quiet"])
    err = capsys.readouterr().err
    assert stop.value.code not in (0, None)
    assert "201 time values for 5 frames" in err and "resumable" not in err
    assert not list((tmp_path / "runs").glob("burgers-*"))  # nothing begun, nothing left


def test_an_abandoned_audit_is_noted_at_once(tmp_path, shared_data, monkeypatch):
    """``--audit auto`` stops an audit at its budget (here 2 x 0.5 s; a Burgers audit takes
    tens of seconds anywhere): the display gets a note, printed as a log line when it comes,
    before the run goes on."""
    from pdesharp.audit import cost, runs
    from pdesharp.commands.solve_display import Display
    from pdesharp.progress import Progress

    monkeypatch.setenv("PDESHARP_AUDIT_DIR", str(tmp_path / "audits"))  # none cached
    monkeypatch.setenv(cost.AUTO_SECONDS_ENV, "0.5")
    monkeypatch.setattr(cost, "estimate_seconds", lambda *a, **k: 0.0)  # "cheap": computed
    task = load_task("burgers")
    config = SolveConfig(task="burgers", model="builtin", max_samples=2)
    store = RunStore.create(tmp_path, task=task, config=dump_config(config), run_id="a")

    class Data:  # what the audit lookup asks of an evaluator
        data_dir, max_samples, explicit = str(shared_data), 2, {}

        def data_path(self, split):
            return shared_data / "burgers_dev.hdf5"

    log = io.StringIO()
    display = Display("a", log=Progress("solve a", live=False, stream=log, heartbeat=None))
    progress = display.update(store)
    audit, reason, floor = asyncio.run(runs.attach(task, config, Data(), store, progress))
    store.close()
    assert audit is None and floor is None and "stopped after 1 s" in reason
    lines = log.getvalue().splitlines()
    noted = [line for line in lines if "reference audit stopped after 1 s" in line]
    assert noted and "goes on without the reference floor" in noted[0]
    assert display.state["note"] in noted[0]  # and on the terminal's panel


def test_data_audit_counts_samples_as_they_are_computed(monkeypatch):
    """The audit's integrations run in batches (at least 4) and the count says how many samples
    are done as each batch starts: 0, 2, 4, 6 of 8, not 8 of 8 from the start."""
    import pdesharp.data.generate.generic as generic
    from pdesharp.audit import spectral
    from pdesharp.commands.data import _audit_step
    from pdesharp.progress import Progress

    sizes = []

    def integrate(task, initial, times, **kw):  # stands in for the integrator: counts only
        sizes.append(len(initial["u"]))
        return {k: np.repeat(v[:, None], len(times), axis=1) for k, v in initial.items()}

    monkeypatch.setattr(generic, "simulate_task", integrate)
    log = io.StringIO()
    shown = Progress("data audit burgers", unit="samples", live=False, stream=log,
                     heartbeat=None)
    task = load_task("burgers")
    spectral._run(task, {"u": np.zeros((8, 16))}, np.linspace(0.0, 1.0, 3),
                  spectral.plan_for(task), lambda m: _audit_step(shown, m), "converged solution")
    assert sizes == [2, 2, 2, 2]
    assert re.findall(r"samples (\d+)/8 \| converged solution: samples (\d+)-", log.getvalue()) \
        == [("0", "1"), ("2", "3"), ("4", "5"), ("6", "7")]
