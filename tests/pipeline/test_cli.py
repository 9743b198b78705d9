"""CLI pieces that need no model: the live display, run lookup, budget raise on resume."""

from __future__ import annotations

import json

from rich.console import Console

from pdesharp.cli import main
from pdesharp.commands.solve import Display
from pdesharp.pipeline import SolveConfig, dump_config
from pdesharp.store import RunStore
from pdesharp.task import load_task


def test_display_shows_progress(tmp_path):
    store = RunStore.create(tmp_path, task=load_task("advection"), config={}, run_id="d")
    display = Display("d")
    progress = display.update(store)
    progress(stage="genesis")
    for _ in range(3):
        progress(last_call="genesis")  # what RecordingModel.on_call reports per reply
    assert display.state["written"] == 3
    progress(stage="genesis", written=32)
    progress(stage="synthesis", cycle=0, round=2, best=1.5e-3)
    console = Console(record=True, width=80)
    console.print(display)
    text = console.export_text()
    for expected in ("synthesis", "32", "cycle 0, round 2", "1.500e-03", "0/0", "$0.0000"):
        assert expected in text


def test_resume_raises_budget_and_show(tmp_path, capsys):
    config = SolveConfig(task="advection", model="scripted:/nonexistent.yaml", max_evals=2,
                         out=str(tmp_path))
    store = RunStore.create(tmp_path, task=load_task("advection"), config=dump_config(config),
                            run_id="b")
    store.set_status("finished")
    store.write_summary(best_dev_score=0.5)
    (store.dir / "report.md").write_text("# report written by the test\n")
    store.close()
    assert main(["resume", "b", "--out", str(tmp_path)]) == 0  # finished: nothing to do
    assert "already finished" in capsys.readouterr().out
    assert main(["show", str(tmp_path / "b")]) == 0
    assert "5.000e-01" in capsys.readouterr().out
    store = RunStore.open(tmp_path / "b")
    store.set_status("budget_stop")
    store.close()
    # no dev data and a missing scripted file: the resume fails before it starts, and a failed
    # command changes nothing (issue 20: it used to write the raised budget anyway)
    before = (tmp_path / "b" / "config.json").read_text()
    try:
        main(["resume", "b", "--out", str(tmp_path), "--max-evals", "9", "--quiet"])
    except SystemExit:
        pass
    assert (tmp_path / "b" / "config.json").read_text() == before
    assert json.loads(before)["max_evals"] == 2
    store = RunStore.open(tmp_path / "b")
    assert store.config["max_evals"] == 2 and store.status == "budget_stop"
    assert [e["kind"] for e in store.events()] == []
    store.close()


def test_a_live_run_cannot_be_resumed_twice(tmp_path, capsys):
    import os
    import subprocess
    import sys

    import pytest

    store = RunStore.create(tmp_path, task=load_task("advection"),
                            config=dump_config(SolveConfig(task="advection", model="x")),
                            run_id="live")
    store.close()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / "live" / "run.lock").write_text(str(sleeper.pid))
        with pytest.raises(SystemExit):
            main(["resume", str(tmp_path / "live"), "--quiet"])
        assert f"process {sleeper.pid}" in capsys.readouterr().err
    finally:
        sleeper.kill()
        sleeper.wait()
    assert os.path.exists(tmp_path / "live" / "run.lock")  # the live owner's lock is kept
