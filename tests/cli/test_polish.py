"""Issue 20.8: --version, broken pipes, translate without a model; `runs` at 80 columns."""

from __future__ import annotations

import subprocess
import sys

from cli_helpers import pdesharp

from pdesharp import __version__


def test_version():
    got = pdesharp("--version")
    assert got.returncode == 0 and got.stdout.strip() == f"pdesharp {__version__}"


def test_broken_pipe_exits_quietly():
    # `pdesharp tasks show burgers | head -1`: the reader leaves after one line
    got = subprocess.run(f"{sys.executable} -m pdesharp.cli tasks show burgers | head -1",
                         shell=True, capture_output=True, text=True, timeout=120)
    assert got.stdout.startswith("name: burgers")
    assert got.stderr == "", got.stderr  # no BrokenPipeError traceback


def test_translate_without_a_model_points_to_writing_the_yaml():
    got = pdesharp("translate", "heat equation on the unit interval")
    assert got.returncode == 2
    assert "tasks new" in got.stderr and "docs/tasks.md" in got.stderr
    assert "examples/tasks" in got.stderr


def test_runs_at_80_columns_keeps_the_scores(tmp_path):
    from pdesharp.pipeline import SolveConfig, dump_config
    from pdesharp.store import RunStore
    from pdesharp.task import load_task

    long_id = "advection-20260101-101010-abcd-with-a-long-suffix"
    store = RunStore.create(tmp_path, task=load_task("advection"),
                            config=dump_config(SolveConfig(task="advection")), run_id=long_id)
    store.set_status("finished")
    store.write_summary(best_dev_score=1.234567e-4, test_nrmse=9.876543e-5)
    store.close()
    got = pdesharp("runs", "--out", str(tmp_path), env={"COLUMNS": "80"})
    assert got.returncode == 0, got.stderr
    assert max(len(line) for line in got.stdout.splitlines()) <= 80
    assert "1.235e-04" in got.stdout and "9.877e-05" in got.stdout  # whole, not cut
    assert not list(tmp_path.glob(f"{long_id}/run.sqlite-*"))  # runs only reads


def test_show_and_runs_print_hostile_run_folder_text_inert(tmp_path):
    from pdesharp.pipeline import SolveConfig, dump_config
    from pdesharp.store import RunStore
    from pdesharp.task import load_task

    store = RunStore.create(tmp_path, task=load_task("advection"),
                            config=dump_config(SolveConfig(task="advection")), run_id="h")
    store.set_status("failed", "x")
    evil = "\x1b]52;c;ZXZpbA==\x07[green]ok[/green]\x1b[2A"
    store.write_summary(test_note=evil, stop_reason=evil)
    store.db.execute("UPDATE runs SET task=?", ("adv\x1b]0;title\x07ection",))
    store.close()
    for argv in (("runs", "--out", str(tmp_path)), ("show", str(tmp_path / "h"))):
        got = pdesharp(*argv)
        assert got.returncode == 0, got.stderr
        assert "\x1b" not in got.stdout and "\x07" not in got.stdout
