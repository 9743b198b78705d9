"""Progress of long work, the same way for every command (solve, bench, data audit, data generate).

On a terminal: one live status line (what, elapsed time, k of N, the current best, the stage and
the last step), redrawn in place. In a log (stderr is not a terminal): one plain line per step,
never wrapped, each with the elapsed time and the counts; and a "still working" line when nothing
was printed for ``heartbeat`` seconds, so a log is never silent for minutes::

    with Progress("solve", unit="evaluations", total=13) as p:   # total None: no limit known
        p.set(stage="synthesis")                                  # the live line only
        p.step("g03 ok, nRMSE 1.2e-03", done=6, best=1.2e-3)      # a log line (and the live one)

    [0:03:12] solve: evaluations 6/13, best 1.200e-03 | g03 ok, nRMSE 1.2e-03

Every text shown goes through :func:`pdesharp.untrusted.one_line` (a step may quote a solver's
status), and the live line is printed with Rich markup off. Methods may be called from any one
thread; the heartbeat runs on its own daemon thread.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

from pdesharp.untrusted import one_line


def clock(seconds: float) -> str:
    """``h:mm:ss`` (``m:ss`` under an hour)."""
    s = int(max(seconds, 0))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def _value(v: Any) -> str:
    return f"{v:.3e}" if isinstance(v, float) else str(v)


class Progress:
    """Elapsed, k of N and the best so far, live on a terminal and line by line in a log."""

    def __init__(self, what: str, *, unit: str = "steps", total: int | None = None,
                 stream: TextIO | None = None, live: bool | None = None,
                 heartbeat: float | None = 60.0, best_label: str = "best"):
        self.what, self.unit, self.best_label = what, unit, best_label
        self.stream = stream if stream is not None else sys.stderr
        self.live = is_terminal(self.stream) if live is None else live
        self.heartbeat = heartbeat
        self.done: int = 0
        self.total: int | None = total
        self.best: Any = None
        self.stage: str = ""
        self.last: str = ""
        self.extra: dict[str, Any] = {}  # further "label value" pairs for the status line
        self.start = time.monotonic()
        self._last_print = self.start
        self._lock = threading.RLock()
        self._live = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    # -- state ---------------------------------------------------------------------------
    def set(self, *, done: int | None = None, total: int | None = None, best: Any = None,
            stage: str | None = None, **extra: Any) -> None:
        """Update what the status line shows (None leaves a value as it is)."""
        with self._lock:
            if done is not None:
                self.done = done
            if total is not None:
                self.total = total
            if best is not None:
                self.best = best
            if stage is not None:
                self.stage = one_line(stage, 80)
            self.extra.update({k: v for k, v in extra.items() if v is not None})
            self._refresh()

    def step(self, text: str = "", **state: Any) -> None:
        """One step done: update the state; in a log print one line, on a terminal show
        ``text`` as the last step."""
        with self._lock:
            self.last = one_line(text, 300)
            self.set(**state)
            if not self.live:
                self._print(self.line(with_last=True))

    def note(self, text: str) -> None:
        """A line that stays (above the live line on a terminal; in the log as it is)."""
        with self._lock:
            if self._live is not None:
                self._live.console.print(one_line(text, 1000), markup=False, highlight=False,
                                         soft_wrap=True)
            else:
                self._print(f"[{clock(self.elapsed)}] {self.what}: {one_line(text, 1000)}")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def counts(self) -> str:
        """``6/13 evaluations`` or ``6 evaluations`` (no limit known)."""
        total = f"/{self.total}" if self.total is not None else ""
        return f"{self.unit} {self.done}{total}"

    def line(self, *, with_last: bool = False) -> str:
        parts = [self.counts()]
        if self.best is not None:
            parts.append(f"{self.best_label} {_value(self.best)}")
        parts += [f"{k} {_value(v)}" for k, v in self.extra.items()]
        if self.stage and not with_last:
            parts.append(f"({self.stage})")
        text = f"[{clock(self.elapsed)}] {self.what}: " + ", ".join(parts)
        if with_last and self.last:
            text += f" | {self.last}"
        return text

    def __rich__(self):
        from rich.text import Text

        text = Text(self.line(), no_wrap=True, overflow="ellipsis")
        if self.last:
            text.append("\n  last: " + self.last)
        return text

    # -- output --------------------------------------------------------------------------
    def _print(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except (BrokenPipeError, ValueError, OSError):  # a closed log: progress is optional
            pass
        self._last_print = time.monotonic()

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def _beat_loop(self) -> None:
        while not self._stop.wait(min(self.heartbeat, 5.0)):
            with self._lock:
                if time.monotonic() - self._last_print >= self.heartbeat:
                    self._print(self.line() + " - still working")

    def __enter__(self) -> "Progress":
        if self.live:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self.stream, markup=False, highlight=False)
            self._live = Live(self, console=console, refresh_per_second=2, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        elif self.heartbeat:
            self._beat = threading.Thread(target=self._beat_loop, daemon=True,
                                          name=f"progress-{self.what}")
            self._beat.start()
        return self

    def __exit__(self, *exc) -> bool:
        self._stop.set()
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._beat is not None:
            self._beat.join(timeout=6)
        return False
