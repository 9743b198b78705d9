"""The shared progress helper: log lines (one per step, never wrapped, heartbeat) and the live
line on a terminal."""

from __future__ import annotations

import io
import time

from pdesharp.progress import Progress, clock


def test_log_mode_prints_one_unwrapped_line_per_step_with_counts():
    out = io.StringIO()
    with Progress("solve", unit="evaluations", total=13, stream=out, heartbeat=None) as p:
        p.set(stage="synthesis")
        assert out.getvalue() == ""  # a state change alone prints nothing in a log
        long = "g03 ok " + "x" * 150
        for k in range(1, 4):
            p.step(long, done=k, best=1.5e-3 / k)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert "evaluations 3/13" in lines[-1] and "best 5.000e-04" in lines[-1]
    assert lines[0].startswith("[0:00] solve: evaluations 1/13")
    assert all(len(line) > 160 for line in lines)  # one line each, not wrapped at 80 columns


def test_log_mode_is_never_silent(monkeypatch):
    out = io.StringIO()
    with Progress("data audit", unit="samples", total=5, stream=out, heartbeat=0.2) as p:
        p.step("sample 0", done=1)
        # the heartbeat thread wakes every min(heartbeat, 5) s: wait for its line (the
        # deadline only stops a broken heartbeat; a loaded machine may delay the thread)
        deadline = time.monotonic() + 60
        while "still working" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    text = out.getvalue()
    assert "still working" in text and "samples 1/5" in text.splitlines()[-1]


def test_hostile_step_text_is_one_clean_line():
    out = io.StringIO()
    with Progress("eval", stream=out, heartbeat=None) as p:
        p.step("boom\x1b]52;c;ZXZpbA==\x07\n[green]ok[/green]\x1b[2A", done=1)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    assert text.count("\n") == 1


def test_live_mode_draws_elapsed_counts_and_best():
    from rich.console import Console

    out = io.StringIO()
    with Progress("solve", unit="evaluations", total=13, stream=out, live=True) as p:
        p.step("g06 ok", done=6, best=2.5e-4, stage="synthesis")
        console = Console(file=io.StringIO(), record=True, width=100)
        console.print(p)
    shown = console.export_text()
    assert "0:00" in shown and "evaluations 6/13" in shown and "2.500e-04" in shown
    assert "g06 ok" in shown


def test_clock():
    assert clock(5) == "0:05" and clock(212) == "3:32" and clock(3723) == "1:02:03"
