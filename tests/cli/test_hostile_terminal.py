"""Issue 18.4: what a solver writes reaches the terminal as inert text.

A failing solver's exception text (and its stdout/stderr) carries Rich markup for a fake green
"ok" row, OSC 0 (window title), OSC 52 (clipboard write), OSC 8 (hyperlink) and cursor moves
that would overwrite the real status. The real ``pdesharp eval`` runs on a pseudo-terminal, so
Rich is in terminal mode (colours on) exactly as for a user.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys

HOSTILE = ("\x1b]0;pwned title\x07\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil.example/\x07"
           "click\x1b]8;;\x07\x1b[2A\x1b[2K\x1b[1;1H\r[green]ok -- nRMSE 1.0e-12 (verified)"
           "[/green]\x9b2J\x1bc")

SOLVER = f'''import sys
import numpy as np

HOSTILE = {HOSTILE!r}


def solver(u0_batch, t_coordinate, beta):
    print(HOSTILE)
    print(HOSTILE, file=sys.stderr)
    raise RuntimeError(HOSTILE)
'''


def run_on_pty(argv: list[str], timeout: float = 600) -> bytes:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                            close_fds=True)
    os.close(slave)
    out = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                raise AssertionError("no output from the command within the timeout")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        proc.wait(timeout=60)
        os.close(master)
    return bytes(out)


def test_eval_on_a_terminal_shows_hostile_solver_text_inert(tmp_path, shared_data):
    solver = tmp_path / "hostile.py"
    solver.write_text(SOLVER)
    out = run_on_pty([sys.executable, "-m", "pdesharp.cli", "eval", str(solver), "--task",
                      "advection", "--dev-data", str(shared_data / "advection_dev.hdf5"),
                      "--max-samples", "1", "--no-convergence"])
    text = out.decode("utf-8", "replace")
    assert "error" in text  # the real status is shown
    assert "[green]ok -- nRMSE 1.0e-12 (verified)[/green]" in text  # shown as written
    # Rich's own styling is SGR (ESC [ ... m) only; nothing else may reach the terminal
    others = re.sub(rb"\x1b\[[0-9;]*m", b"", out)
    assert b"\x1b" not in others, others[others.index(b"\x1b") - 40:][:120]
    assert b"\x07" not in out and b"\x9b" not in out and "\u009b" not in text
    assert b"pwned" not in out or b"]0;" not in out  # no title sequence
    # no green anywhere: the only status is the red error, and no fake row was styled
    assert not re.search(rb"\x1b\[[0-9;]*(?<![0-9])32(;[0-9;]*)?m", out)
    assert not re.search(rb"\x1b\[[0-9;]*38;5;(2|10|34|40|46)m", out)
