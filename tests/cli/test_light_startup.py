"""Commands that parse no equation and read no data start without SymPy, SciPy, h5py or NumPy.

Every ``pdesharp COMMAND`` is a fresh process: importing SymPy alone costs about a second of CPU,
and the whole pipeline two, before a word is printed. The argument parser, ``--help`` and the
run-folder commands (``runs``, ``show``, a refused ``resume``) need none of them.
This asserts what is imported, not a time: a time depends on the machine and its load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sympy", "scipy", "h5py", "numpy", "numba")

# One process; each command runs in a forked child of it, so that what one command imports
# cannot hide what another imports, without paying an interpreter start (and the light
# imports every command shares) per command.
PROBE = r"""
import contextlib, io, json, os, sys
from pdesharp.cli import build_parser, main

heavy = json.loads(sys.argv[1])
# the whole command line (`pdesharp --help`), built once here: it must be light too, and the
# children then pay only for what running their command imports
build_parser()
out = {"(the whole parser)": {"heavy": [m for m in heavy if m in sys.modules]}}
for argv in json.loads(sys.argv[2]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        text, code = io.StringIO(), None
        try:
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                code = main(argv)
        except SystemExit as exc:
            code = exc.code
        report = {"code": code, "text": text.getvalue()[:4000],
                  "heavy": [m for m in heavy if m in sys.modules]}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        out[" ".join(argv)] = json.loads(f.read() or b"null")
    os.waitpid(pid, 0)
print(json.dumps(out))
"""


def finished_run(folder: Path) -> Path:
    """A run folder with a summary, made here (this process may import anything: the commands
    run in a fresh one)."""
    from pdesharp.pipeline import SolveConfig, dump_config
    from pdesharp.store import RunStore
    from pdesharp.task import load_task

    store = RunStore.create(folder, task=load_task("advection"),
                            config=dump_config(SolveConfig(task="advection")), run_id="done")
    store.set_status("finished")
    store.write_summary(best_dev_score=1.234567e-4, test_nrmse=9.876543e-5)
    store.close()
    return folder / "done"


def test_help_and_run_folder_commands_import_no_numerical_library(tmp_path) -> None:
    missing = str(tmp_path / "no-such-run")
    runs = tmp_path / "runs"
    run = finished_run(runs)
    commands = [
        ["solve", "--help"], ["resume", "--help"], ["runs", "--help"], ["show", "--help"],
        ["report", "--help"], ["eval", "--help"], ["data", "--help"], ["tasks", "--help"],
        ["bench", "--help"], ["suite", "--help"], ["models", "--help"],
        ["translate", "--help"], ["sandbox", "--help"],
        ["runs", "--out", str(runs)],              # the runs are listed from the store alone
        ["show", str(run)],
        ["show", missing],                         # refused before any task is read
        ["resume", missing],
    ]
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), json.dumps(commands)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert results["(the whole parser)"]["heavy"] == [], results["(the whole parser)"]
    for argv in commands:
        r = results[" ".join(argv)]
        assert r is not None, f"pdesharp {' '.join(argv)} died without a report"
        if "--help" in argv:  # the help really was printed, and the command exited 0
            assert r["code"] == 0 and "usage: pdesharp" in r["text"], r
        elif missing in argv:  # a missing run folder: refused, non-zero
            assert r["code"] not in (0, None), r
        else:  # the run is listed and shown, with its score
            assert r["code"] in (0, None) and "1.235e-04" in r["text"], r
        assert r["heavy"] == [], f"pdesharp {' '.join(argv)} imported {r['heavy']}"


def test_a_task_is_still_parsed_when_it_is_read(tmp_path) -> None:
    """The other side: reading a task still parses its equation (the import moved into the
    validator, the check did not go): an undeclared name is refused when the file is read."""
    from pdesharp.task import TaskError, load_task

    text = ("name: a\nequation: dt(u) = nu*dx(u, 2)\nparameters: {nu: 0.1}\n"
            "domain: {x: [0, 1]}\nboundary: periodic\ntime_span: [0, 1]\n")
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(text)
    bad.write_text(text.replace("nu*dx", "nuu*dx"))
    assert list(load_task(good).system.unknowns) == ["u"]
    with pytest.raises(TaskError, match=r"nuu is not declared"):
        load_task(bad)
