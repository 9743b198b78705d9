"""What ``pdesharp solve`` / ``resume`` show while they work.

On a terminal, a live panel (:class:`Display`): stage, elapsed time, evaluations k of N (N is
``--max-evals``; without a limit the count alone), the lowest score so far, the evaluations
running, the last result, tokens and cost. In a log (stderr not a terminal), one line per stage,
per model call and per evaluation through :class:`pdesharp.progress.Progress`, plus its
"still working" heartbeat. Counts come from the run store, so a resumed run starts from the
evaluations it already has; results a resumed run looks up instead of running are shown as
reused, not counted.

Every string a solver or a model could have written (a result's message) is shown through
:mod:`pdesharp.untrusted` and printed with Rich markup off.
"""

from __future__ import annotations

import time

from rich.table import Table
from rich.text import Text

from pdesharp.progress import Progress, clock
from pdesharp.records import EvalResult
from pdesharp.store import RunStore
from pdesharp.untrusted import one_line


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3e}"


def result_words(label: str, split: str, result: EvalResult) -> str:
    """One line about one evaluation (the message is the solver's: made one clean line)."""
    sps = result.seconds_per_sample
    time_ = f", {sps:.3g} s per sample" if sps is not None else ""
    if result.ok:
        score = result.score
        what = (f"{'nRMSE' if result.feedback == 'nrmse' or split == 'test' else result.feedback}"
                f" {_fmt(result.nrmse if split == 'test' else score)}"
                if (score is not None or split == "test") else "ran")
        return f"{label} ({split}): ok, {what}{time_}"
    return f"{label} ({split}): {result.status}: {one_line(result.message, 160)}"


class Display:
    """The live status panel; updated from the pipeline's progress callback and the store's
    evaluation observer. ``log`` (a :class:`Progress` writing to a log) gets one line per
    step; None on a terminal or under ``--quiet``."""

    def __init__(self, run_id: str, *, limit: int | None = None, log: Progress | None = None):
        self.state: dict = {"run": run_id, "stage": "starting"}
        self.limit = limit
        self.log = log
        self.start = time.monotonic()
        self.running: list[str] = []
        self.lowest: float | None = None
        self.done = 0
        self._store: RunStore | None = None

    # -- inputs --------------------------------------------------------------------------
    def update(self, store: RunStore):
        """The pipeline's ``progress(**info)`` callback (also called on every model call)."""
        self._store = store
        self.done = store.n_feedback_evaluations
        best = store.best_candidate("dev", store.config.get("feedback", "nrmse"))
        if best is not None and best[1].score is not None:
            self.lowest = best[1].score

        def progress(**info) -> None:
            stage_before = self.state.get("stage")
            self.state.update({k: v for k, v in info.items() if v is not None})
            if info.get("last_call") == "genesis":
                self.state["written"] = self.state.get("genesis_replies", 0) + 1
                self.state["genesis_replies"] = self.state["written"]
            acc = store.accounting()  # on the event-loop thread, where the store lives
            self.state.update(tokens=f"{acc['tokens_in']}/{acc['tokens_out']}",
                              cost=f"${acc['cost_usd']:.4f}", evaluations=acc["evaluations"])
            if info.get("note"):  # a line that stays: above the panel, or in the log
                self.state["note"] = info["note"]
                if self.log is not None:
                    self.log.note(info["note"])
            if self.log is not None:
                if info.get("stage") and info["stage"] != stage_before:
                    self.log.step(self._stage_words(), **self._counts())
                elif info.get("last_call"):
                    self.log.step(f"model call: {one_line(info['last_call'], 60)} "
                                  f"(tokens {self.state['tokens']}, {self.state['cost']})",
                                  **self._counts())
        return progress

    def observe(self, what: str, label: str, split: str, result: EvalResult | None) -> None:
        """:attr:`RunStore.observer`: one evaluation started, finished or was looked up."""
        if what == "start":
            self.running.append(label)
            return
        if label in self.running:
            self.running.remove(label)
        if self._store is not None:
            self.done = self._store.n_feedback_evaluations
        score = result.score if result is not None and split != "test" else None
        if score is not None and (self.lowest is None or score < self.lowest):
            self.lowest = score
        words = result_words(label, split, result) if result is not None else label
        if what == "reused":
            words += " (stored result reused, not counted)"
        self.state["last"] = words
        if self.log is not None:
            self.log.step(words, **self._counts())

    def _counts(self) -> dict:
        return {"done": self.done, "best": self.lowest}

    def _stage_words(self) -> str:
        s = self.state
        words = f"stage {s.get('stage')}"
        if "round" in s and s.get("stage") == "synthesis":
            words += f", cycle {s['cycle']} round {s['round']}"
        return words

    # -- the panel -----------------------------------------------------------------------
    def evaluations_words(self) -> str:
        if self.limit is not None:
            return f"{self.done}/{self.limit} (--max-evals)"
        return f"{self.done} (no --max-evals limit)"

    def __rich__(self) -> Table:
        t = Table(show_header=False, title="pdesharp solve", box=None)
        s = self.state
        rows = [("run", s.get("run")), ("stage", s.get("stage")), ("note", s.get("note")),
                ("elapsed", clock(time.monotonic() - self.start)),
                ("candidates", s.get("written", s.get("candidates"))),
                ("round", f"cycle {s['cycle']}, round {s['round']}" if "round" in s else None),
                ("lowest score", _fmt(self.lowest) if self.lowest is not None else None),
                ("best score", _fmt(s["best"]) if s.get("best") is not None else None),
                ("evaluations", self.evaluations_words()),
                ("running", ", ".join(self.running) or None),
                ("last result", s.get("last")),
                ("last model call", s.get("last_call")),
                ("tokens in/out", s.get("tokens")),
                ("cost", s.get("cost"))]
        for k, v in rows:
            if v is not None:  # Text, not markup: a label or message may hold "[...]"
                t.add_row(k, Text(one_line(v, 200)))
        return t


def log_progress(run_id: str, limit: int | None) -> Progress:
    """The log-mode writer of a solve (one line per step, heartbeat every minute)."""
    return Progress(f"solve {run_id}", unit="evaluations", total=limit, live=False,
                    best_label="lowest score")
