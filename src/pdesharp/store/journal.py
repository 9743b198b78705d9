"""The rest of a run's journal (:class:`Journal`, a part of :class:`~pdesharp.store.RunStore`):
debugging iterations, model calls, events, and the accounting written to ``summary.json``."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from pdesharp.llm.base import Message, Reply
from pdesharp.store.schema import has_column, now as _now
from pdesharp.untrusted import MAX_JSON_BYTES, UnsafeFolder, json_data, read_text_inside


class Journal:
    """Model calls, events and accounting of a :class:`~pdesharp.store.RunStore` (uses its
    ``db``, ``dir``, ``run_id``, ``readonly`` and ``_session_start``)."""

    # -- debugging iterations --------------------------------------------------------------
    def count_debug_iteration(self, candidate_id: str, key: str | None = None) -> None:
        """One debugging model iteration on ``candidate_id``. ``key`` makes it idempotent on a
        resumed run (the pipeline passes e.g. ``"<failed id>#<attempt>"``)."""
        self.db.execute("INSERT OR IGNORE INTO debug_iterations(ts, candidate_id, key) "
                        "VALUES (?,?,?)", (_now(), candidate_id, key or f"{time.time_ns()}"))

    @property
    def n_debug_iterations(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM debug_iterations").fetchone()[0]

    # -- model calls and events ----------------------------------------------------------
    def record_model_call(self, *, model: str, tag: str, messages: list[Message],
                          reply: Reply | None, sample_index: int = 0, error: str = "",
                          request_key: str = "", source: str | None = None) -> None:
        """One chat call. ``source``: "model" (a paid call), "cache" (the cross-run response
        cache answered) or "replay" (a resumed run re-used this run's own earlier reply)."""
        usage = reply.usage if reply else None
        if source is None:
            source = "cache" if reply is not None and reply.cached else "model"
        self.db.execute(
            "INSERT INTO model_calls(ts, model, tag, sample_index, messages, reply, "
            "prompt_tokens, completion_tokens, cost_usd, latency_s, cached, error, request_key, "
            "source, cached_tokens, cache_write_tokens) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (_now(), reply.model if reply else model, tag, sample_index,
             json.dumps([m.record() for m in messages]), reply.text if reply else None,
             usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0,
             reply.cost_usd if reply else 0.0, reply.latency_s if reply else 0.0,
             int(source != "model"), error, request_key, source,
             usage.cached_tokens if usage else 0, usage.cache_write_tokens if usage else 0))
        self._flush_wall()

    def replayable_calls(self) -> dict[str, list[sqlite3.Row]]:
        """Completed calls of this run by request key, in call order (for resume)."""
        out: dict[str, list[sqlite3.Row]] = {}
        for r in self.db.execute("SELECT * FROM model_calls WHERE source != 'replay' AND "
                                 "error = '' AND request_key != '' ORDER BY seq"):
            out.setdefault(r["request_key"], []).append(r)
        return out

    def event(self, kind: str, **data: Any) -> None:
        """A tournament event: nomination, proposal, patch_failed, saturation, budget_stop..."""
        self.db.execute("INSERT INTO events(ts, kind, data) VALUES (?,?,?)",
                        (_now(), kind, json.dumps(data, default=str)))
        self._flush_wall()  # a running run's wall time is current up to its last step

    def events(self, kind: str | None = None) -> list[dict]:
        return read_events(self.db, kind)

    # -- accounting ----------------------------------------------------------------------
    def _flush_wall(self) -> None:
        if self.readonly:
            return
        now = time.monotonic()
        self.db.execute("UPDATE runs SET wall_seconds = wall_seconds + ? WHERE id=?",
                        (now - self._session_start, self.run_id))
        self._session_start = now

    def accounting(self) -> dict:
        # a run written before cached tokens were recorded, opened read-only: none recorded
        cached = ("COALESCE(SUM(cached_tokens) FILTER (WHERE cached=0), 0)"
                  if has_column(self.db, "model_calls", "cached_tokens") else "0")
        q = self.db.execute(
            "SELECT COUNT(*) FILTER (WHERE cached=0 AND error=''), "  # paid calls only
            "COUNT(*) FILTER (WHERE cached=1), COALESCE(SUM(prompt_tokens) FILTER (WHERE cached=0), 0),"
            " COALESCE(SUM(completion_tokens) FILTER (WHERE cached=0), 0), "
            f"COALESCE(SUM(cost_usd) FILTER (WHERE cached=0), 0), {cached} FROM model_calls"
        ).fetchone()
        self._flush_wall()
        wall = self.db.execute("SELECT wall_seconds FROM runs WHERE id=?",
                               (self.run_id,)).fetchone()[0]
        n_all, n_feedback = self.n_evaluations, self.n_feedback_evaluations
        n_test = self.db.execute("SELECT COUNT(*) FROM evaluations WHERE counted=1 AND "
                                 "split='test'").fetchone()[0]
        return {"evaluations": n_all, "feedback_evaluations": n_feedback,
                "test_evaluations": n_test,
                # the winner's time taken apart (RunStore.warm_timing): fed no decision
                "warm_timing_evaluations": max(n_all - n_feedback - n_test, 0),
                "debug_iterations": self.n_debug_iterations,
                "model_calls": q[0], "cached_model_calls": q[1], "tokens_in": q[2],
                # the part of tokens_in the providers served from their prompt caches
                "tokens_in_cached": q[5],
                "tokens_out": q[3], "cost_usd": round(q[4], 6), "wall_seconds": round(wall, 2)}

    def write_summary(self, **extra: Any) -> dict:
        """Write ``summary.json``: accounting plus ``extra`` (best_dev_score, test_nrmse,
        best_solver, status, ...). Returns what was written."""
        summary = {"run_id": self.run_id, "task": self.task_name, "status": self.status,
                   **self.accounting(), "best_dev_score": None, "test_nrmse": None,
                   "best_solver": None, **extra}
        (self.dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        return summary

    def summary(self) -> dict | None:
        """summary.json, read as untrusted (no link followed); None if absent or unreadable."""
        try:
            text = read_text_inside(self.dir, "summary.json")
            data = json.loads(text) if text is not None else None
        except (UnsafeFolder, ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None


def read_events(db: sqlite3.Connection, kind: str | None = None) -> list[dict]:
    """The run's events (of ``kind``, if given) in order, each its data with its ``kind``. A
    run folder may have been handed over: a row whose data is too long, too deep, not JSON or
    not a JSON object is left out, never parsed at any size or depth."""
    sql, args = "SELECT kind, data FROM events WHERE length(data) <= ?", (MAX_JSON_BYTES,)
    if kind:
        sql, args = sql + " AND kind=?", args + (kind,)
    out = []
    for k, data in db.execute(sql + " ORDER BY seq", args):
        try:
            item = json_data(data)
        except (ValueError, TypeError):
            continue
        if isinstance(item, dict):
            out.append({**item, "kind": k})
    return out
