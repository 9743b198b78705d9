"""The run store: one folder and one SQLite database per run, the journal of everything.

Layout of a run folder (``<out>/<run_id>/``)::

    run.sqlite          tables runs, model_calls, candidates, evaluations, events (WAL mode)
    config.json         the SolveConfig (or any JSON-able config) the run was started with
    task.yaml           the task as solved
    candidates/<id>.py  every candidate's source, as written to the table
    logs/               free-form logs (evaluation stdout/stderr tails, ...)
    summary.json        accounting, rewritten by :meth:`RunStore.write_summary`
    report.md, best_solver.py   written by the pipeline at the end

Public API (used by the pipeline and the baselines)::

    store = RunStore.create(out_root, task=task, config={...})   # new run folder
    store = RunStore.open(run_dir)                               # an existing one (resume)
    store.add_candidate(candidate)              # upsert; also writes candidates/<id>.py
    result = await store.evaluate(evaluator, candidate, split="dev", feedback="nrmse")
    store.count_debug_iteration(candidate_id)   # one debugging model iteration
    store.record_model_call(model=..., tag=..., messages=[...], reply=Reply(...))
    store.event("nomination", judge="judge-1", nominee="g03")
    store.best_candidate(split="dev", feedback="nrmse") -> (Candidate, EvalResult) | None
    await store.retime(evaluator, candidate, 1, split="dev", feedback="nrmse")  # a re-timing run
    store.candidates(origin="patch"); store.lineage("p1-2"); store.results_for("g03")
    store.write_summary(best_dev_score=..., test_nrmse=..., best_solver=...) -> dict
    store.accounting() -> dict; store.eval_limit = 20  # --max-evals (feedback evaluations)
    store.set_status("finished"); store.update_config({...}); store.replayable_calls()

Resume contract: :meth:`evaluate` never executes the same (code sha256, split, feedback) twice
within one run. A second request for it, from the same or another candidate, returns the stored
result and is not counted. That is what lets ``pdesharp resume`` re-run the (deterministic)
pipeline from the start without repeating a single solver execution. The one exception is the
test split: the final test evaluation always runs fresh and is never read from a row (a row is
only a record of it), so no forged row can stand in for it.

Re-timing (:meth:`retime`, :mod:`pdesharp.synthesis.timing`) runs code that already ran once
more, to measure its time again: each such run is a counted evaluation with its own row, under
the id ``<candidate>#t<k>`` (:func:`retime_id`), and is looked up, not repeated, on resume.

Counts do not rest on the rows alone either: the store also counts the executions it ran in
this process, and :attr:`n_evaluations` / :attr:`n_feedback_evaluations` (and so
``--max-evals``) never report fewer than those, even if the table was rewritten meanwhile.

All writes happen on the event-loop thread; evaluations themselves run in the evaluator's child
processes, so one sqlite3 connection is enough.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import Any

from pdesharp.llm.base import BudgetExceeded, Message, Reply
from pdesharp.records import Candidate, EvalResult, Feedback, Split
from pdesharp.runlock import LOCK_NAME, RunBusy, claim, lock_owner  # noqa: F401 - re-exported

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, task TEXT, config TEXT, created TEXT, status TEXT,
    wall_seconds REAL DEFAULT 0, sessions INTEGER DEFAULT 0, note TEXT DEFAULT '');
CREATE TABLE IF NOT EXISTS model_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT, model TEXT, tag TEXT, sample_index INTEGER,
    messages TEXT, reply TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
    cost_usd REAL, latency_s REAL, cached INTEGER, error TEXT DEFAULT '',
    request_key TEXT DEFAULT '', source TEXT DEFAULT 'model');
CREATE TABLE IF NOT EXISTS candidates (
    id TEXT PRIMARY KEY, seq INTEGER, code TEXT, code_sha256 TEXT, origin TEXT, parents TEXT,
    judge TEXT, round INTEGER, cycle INTEGER, title TEXT, justification TEXT, static_check TEXT);
CREATE TABLE IF NOT EXISTS evaluations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT, candidate_id TEXT, code_sha256 TEXT,
    split TEXT, feedback TEXT, status TEXT, score REAL, result TEXT, counted INTEGER,
    UNIQUE(candidate_id, code_sha256, split, feedback));
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT, kind TEXT, data TEXT);
CREATE TABLE IF NOT EXISTS debug_iterations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT, candidate_id TEXT, key TEXT UNIQUE);
"""


def code_sha256(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


RETIME_MARK = "#t"  # a re-timing row's id: "<candidate id>#t<k>" (no candidate id has a "#")


def retime_id(cid: str, k: int) -> str:
    """The journal id of the k-th re-timing run (k >= 1) of candidate ``cid``."""
    return f"{cid}{RETIME_MARK}{k}"


def parse_retime_id(label: str) -> tuple[str, int]:
    """(candidate id, k) of a journal id: k = 0 for a candidate's own evaluation."""
    cid, mark, k = label.rpartition(RETIME_MARK)
    return (cid, int(k)) if mark and k.isdigit() else (label, 0)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id(task_name: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{task_name}-{stamp}-{secrets.token_hex(2)}"


class RunStoreError(RuntimeError):
    """A run folder is missing or is not a pdesharp run."""


class RunStore:
    """The journal of one run. Create with :meth:`create`, reopen with :meth:`open`."""

    DB_NAME = "run.sqlite"

    def __init__(self, run_dir: Path, run_id: str, *, readonly: bool = False):
        self.dir = Path(run_dir)
        self.run_id = run_id
        self.readonly = readonly
        if readonly:  # show / runs: look, never write (not even the wall time)
            self.db = sqlite3.connect(f"file:{self.dir / self.DB_NAME}?mode=ro", uri=True)
        else:
            self.db = sqlite3.connect(self.dir / self.DB_NAME, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        if not readonly:
            # WAL while the run is open (readers never block the writer); close() goes back
            # to a rollback journal, which leaves no run.sqlite-wal / -shm files behind
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        self._inflight: dict[tuple[str, str, str], asyncio.Future] = {}
        # executions counted at open and run since, by split kind: a floor for the table's counts
        self._floor = {"all": self._count_rows(False), "feedback": self._count_rows(True)}
        # Feedback evaluations allowed in this run (None: unlimited). The one final test-split
        # evaluation is outside this budget: it is the number the run reports.
        self.eval_limit: int | None = None
        self._session_start = time.monotonic()
        # Told of every evaluation request (progress display): observer(what, label, split,
        # result), what = "start" | "done" (a counted execution) | "reused" (a stored result).
        self.observer: Callable[[str, str, str, EvalResult | None], None] | None = None
        self._own_lock: Path | None = None  # a lock this store took (see set_status)
        if not readonly:
            (self.dir / "candidates").mkdir(exist_ok=True)
            (self.dir / "logs").mkdir(exist_ok=True)

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def create(cls, out_root: str | Path, *, task: Any, config: dict,
               run_id: str | None = None) -> "RunStore":
        """A new run folder under ``out_root`` for ``task`` (a Task), recording ``config``."""
        run_id = run_id or new_run_id(task.name)
        run_dir = Path(out_root).expanduser() / run_id
        run_dir.mkdir(parents=True, exist_ok=False)
        (run_dir / "config.json").write_text(json.dumps(config, indent=2, default=str))
        (run_dir / "task.yaml").write_text(task.to_yaml())
        store = cls(run_dir, run_id)
        store.db.execute(
            "INSERT INTO runs(id, task, config, created, status) VALUES (?,?,?,?,?)",
            (run_id, task.name, json.dumps(config, default=str), _now(), "created"),
        )
        return store

    @classmethod
    def open(cls, run_dir: str | Path, *, readonly: bool = False) -> "RunStore":
        """An existing run folder; ``readonly`` for commands that only look at it."""
        run_dir = Path(run_dir).expanduser()
        if not (run_dir / cls.DB_NAME).is_file():
            raise RunStoreError(f"{run_dir} is not a pdesharp run folder (no {cls.DB_NAME})")
        db = sqlite3.connect(f"file:{run_dir / cls.DB_NAME}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT id FROM runs LIMIT 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"{run_dir}/{cls.DB_NAME} is not a pdesharp run ({exc})") from None
        finally:
            db.close()
        if row is None:
            raise RunStoreError(f"{run_dir}/{cls.DB_NAME} has no run record")
        return cls(run_dir, row[0], readonly=readonly)

    @property
    def config(self) -> dict:
        row = self.db.execute("SELECT config FROM runs WHERE id=?", (self.run_id,)).fetchone()
        return json.loads(row["config"])

    def update_config(self, config: dict, changed: list[str] | None = None) -> None:
        """Replace the stored config (``pdesharp resume --max-usd ...`` raises a budget,
        ``--data-dir`` says where the data are now); the event records the ``changed`` keys
        (default: the budgets)."""
        keys = changed if changed is not None else ["max_usd", "max_tokens", "max_evals"]
        self.db.execute("UPDATE runs SET config=? WHERE id=?",
                        (json.dumps(config, default=str), self.run_id))
        (self.dir / "config.json").write_text(json.dumps(config, indent=2, default=str))
        self.event("config_updated", **{k: config.get(k) for k in keys})

    @property
    def task_name(self) -> str:
        return self.db.execute("SELECT task FROM runs WHERE id=?", (self.run_id,)).fetchone()[0]

    def set_status(self, status: str, note: str = "") -> None:
        """``running`` / ``finished`` / ``budget_stop`` / ``failed`` (+ a one-line note).
        A run set ``running`` by a process that holds no lock (a bench cell, the Python API)
        takes one, so that :attr:`shown_status` can tell it from a run whose process died."""
        self.db.execute("UPDATE runs SET status=?, note=? WHERE id=?", (status, note, self.run_id))
        if status == "running" and self._own_lock is None and lock_owner(self.dir) is None:
            try:
                self._own_lock = claim(self.dir)
            except (RunBusy, OSError):
                pass

    @property
    def status(self) -> str:
        return self.db.execute("SELECT status FROM runs WHERE id=?", (self.run_id,)).fetchone()[0]

    @property
    def shown_status(self) -> str:
        """The status to show a user: a run recorded as ``running`` whose process is gone (it
        was killed, or a full disk kept it from recording its end) is ``interrupted``."""
        status = self.status
        if status == "running" and lock_owner(self.dir) is None:
            return "interrupted"
        return status

    def close(self) -> None:
        try:
            if not self.readonly:
                self._flush_wall()
        finally:
            if not self.readonly:
                try:  # checkpoint and drop the WAL: no -wal/-shm files left in the folder
                    self.db.execute("PRAGMA journal_mode=DELETE")
                except sqlite3.Error:  # another process reads it now: it stays until then
                    pass
            self.db.close()
            if self._own_lock is not None:
                self._own_lock.unlink(missing_ok=True)
                self._own_lock = None

    # -- candidates ----------------------------------------------------------------------
    def add_candidate(self, c: Candidate) -> None:
        """Insert or update a candidate (same id = same candidate on a resumed run)."""
        seq = self.db.execute("SELECT seq FROM candidates WHERE id=?", (c.id,)).fetchone()
        if seq is None:
            seq_v = self.db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM candidates").fetchone()[0]
        else:
            seq_v = seq[0]
        self.db.execute(
            "INSERT OR REPLACE INTO candidates VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (c.id, seq_v, c.code, code_sha256(c.code), c.origin, json.dumps(c.parents), c.judge,
             c.round, c.cycle, c.title, c.justification, c.static_check),
        )
        (self.dir / "candidates" / f"{c.id}.py").write_text(c.code)

    @staticmethod
    def _candidate(row: sqlite3.Row) -> Candidate:
        return Candidate(id=row["id"], code=row["code"], origin=row["origin"],
                         parents=json.loads(row["parents"]), judge=row["judge"],
                         round=row["round"], cycle=row["cycle"], title=row["title"],
                         justification=row["justification"], static_check=row["static_check"])

    def candidate(self, cid: str) -> Candidate | None:
        row = self.db.execute("SELECT * FROM candidates WHERE id=?", (cid,)).fetchone()
        return self._candidate(row) if row else None

    def candidates(self, origin: str | None = None) -> list[Candidate]:
        """All candidates in insertion order, optionally only one origin."""
        if origin is None:
            rows = self.db.execute("SELECT * FROM candidates ORDER BY seq")
        else:
            rows = self.db.execute("SELECT * FROM candidates WHERE origin=? ORDER BY seq", (origin,))
        return [self._candidate(r) for r in rows]

    def lineage(self, cid: str) -> list[Candidate]:
        """The candidate and all its ancestors, breadth first (each once)."""
        out, seen, queue = [], set(), [cid]
        while queue:
            cur = queue.pop(0)
            if cur in seen:
                continue
            seen.add(cur)
            c = self.candidate(cur)
            if c is not None:
                out.append(c)
                queue.extend(c.parents)
        return out

    # -- evaluations ---------------------------------------------------------------------
    def stored_result(self, code: str, split: Split, feedback: Feedback) -> EvalResult | None:
        row = self.db.execute(
            "SELECT result FROM evaluations WHERE code_sha256=? AND split=? AND feedback=? "
            "ORDER BY seq LIMIT 1", (code_sha256(code), split, feedback)).fetchone()
        return EvalResult.model_validate_json(row["result"]) if row else None

    async def evaluate(self, evaluator, candidate: Candidate, *, split: Split,
                       feedback: Feedback) -> EvalResult:
        """The candidate's result on ``split``: stored if this code was already run, else run
        (one counted evaluation). Concurrent requests for the same code share one execution."""
        sha = code_sha256(candidate.code)
        key = (sha, split, feedback)
        fresh = split == "test"  # the reported number: always measured now, never looked up
        stored = None if fresh else self.stored_result(candidate.code, split, feedback)
        if stored is not None:
            self._insert_eval(candidate.id, sha, split, feedback, stored, counted=False)
            self._observe("reused", candidate.id, split, stored)
            return stored
        if key in self._inflight and not fresh:
            result = await asyncio.shield(self._inflight[key])
            self._insert_eval(candidate.id, sha, split, feedback, result, counted=False)
            self._observe("reused", candidate.id, split, result)
            return result
        if self.eval_limit is not None and split != "test" and \
                self.n_feedback_evaluations + len(self._inflight) >= self.eval_limit:
            raise BudgetExceeded(f"evaluation budget spent: {self.eval_limit} solver evaluations"
                                 " (--max-evals)")
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        self._observe("start", candidate.id, split, None)
        try:
            result = await evaluator.evaluate(candidate.code, split=split, feedback=feedback,
                                              label=candidate.id)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            self._inflight.pop(key, None)
        self._floor["all"] += 1
        if split != "test":
            self._floor["feedback"] += 1
        self._insert_eval(candidate.id, sha, split, feedback, result, counted=True,
                          replace=fresh)
        fut.set_result(result)
        self._observe("done", candidate.id, split, result)
        if not result.ok:
            log = self.dir / "logs" / f"{candidate.id}.{split}.log"
            log.write_text(f"{result.summary_line()}\n--- stdout ---\n{result.stdout_tail}\n"
                           f"--- stderr ---\n{result.stderr_tail}\n")
        return result

    async def retime(self, evaluator, candidate: Candidate, k: int, *, split: Split = "dev",
                     feedback: Feedback = "nrmse") -> EvalResult:
        """The k-th re-timing run (k >= 1) of ``candidate``'s code: executed and counted once,
        recorded under :func:`retime_id`; on resume the recorded run is returned instead."""
        if k < 1 or split == "test":
            raise ValueError("re-timing runs are numbered from 1 and use the feedback split")
        label, sha = retime_id(candidate.id, k), code_sha256(candidate.code)
        row = self.db.execute("SELECT result FROM evaluations WHERE candidate_id=? AND "
                              "code_sha256=? AND split=? AND feedback=?",
                              (label, sha, split, feedback)).fetchone()
        if row is not None:
            stored = EvalResult.model_validate_json(row["result"])
            self._observe("reused", label, split, stored)
            return stored
        if self.eval_limit is not None and \
                self.n_feedback_evaluations + len(self._inflight) >= self.eval_limit:
            raise BudgetExceeded(f"evaluation budget spent: {self.eval_limit} solver evaluations"
                                 " (--max-evals)")
        self._observe("start", label, split, None)
        result = await evaluator.evaluate(candidate.code, split=split, feedback=feedback,
                                          label=label)
        self._floor["all"] += 1
        self._floor["feedback"] += 1
        self._insert_eval(label, sha, split, feedback, result, counted=True)
        self._observe("done", label, split, result)
        return result

    def _observe(self, what: str, label: str, split: str, result: EvalResult | None) -> None:
        if self.observer is not None:
            try:
                self.observer(what, label, split, result)
            except Exception:  # noqa: BLE001 - a display must never cost a result
                pass

    def retimings(self, split: Split = "dev", feedback: Feedback = "nrmse"
                  ) -> dict[str, list[EvalResult]]:
        """Candidate id -> its re-timing runs on ``split``, in order."""
        out: dict[str, list[EvalResult]] = {}
        for r in self.db.execute("SELECT candidate_id, result FROM evaluations WHERE split=? "
                                 "AND feedback=? AND candidate_id LIKE ? ORDER BY seq",
                                 (split, feedback, f"%{RETIME_MARK}%")):
            cid, k = parse_retime_id(r["candidate_id"])
            if k:
                out.setdefault(cid, []).append(EvalResult.model_validate_json(r["result"]))
        return out

    def _insert_eval(self, cid, sha, split, feedback, result: EvalResult, *, counted: bool,
                     replace: bool = False):
        """One journal row per (candidate, code, split, feedback). A repeated request is not
        inserted at all (an ignored INSERT would still consume an AUTOINCREMENT number and
        leave gaps in ``seq``); rows with ``counted = 0`` are reuses of an earlier result.
        ``replace`` (the final test evaluation, always run afresh) overwrites the row's result
        in place, keeping its number."""
        row = self.db.execute("SELECT seq FROM evaluations WHERE candidate_id=? AND "
                              "code_sha256=? AND split=? AND feedback=?",
                              (cid, sha, split, feedback)).fetchone()
        if row is not None:
            if replace:
                self.db.execute("UPDATE evaluations SET ts=?, status=?, score=?, result=?, "
                                "counted=? WHERE seq=?",
                                (_now(), result.status, result.score, result.model_dump_json(),
                                 int(counted), row["seq"]))
            return
        self.db.execute(
            "INSERT INTO evaluations(ts, candidate_id, code_sha256, split, feedback, "
            "status, score, result, counted) VALUES (?,?,?,?,?,?,?,?,?)",
            (_now(), cid, sha, split, feedback, result.status, result.score,
             result.model_dump_json(), int(counted)))

    def counted(self, cid: str, split: Split, feedback: Feedback) -> bool:
        """Was ``cid``'s result on ``split`` a counted execution (not a look-up)?"""
        row = self.db.execute("SELECT counted FROM evaluations WHERE candidate_id=? AND "
                              "split=? AND feedback=?", (cid, split, feedback)).fetchone()
        return bool(row and row["counted"])

    def results_for(self, cid: str) -> list[EvalResult]:
        rows = self.db.execute("SELECT result FROM evaluations WHERE candidate_id=? ORDER BY seq",
                               (cid,))
        return [EvalResult.model_validate_json(r["result"]) for r in rows]

    def result_for(self, cid: str, split: Split, feedback: Feedback) -> EvalResult | None:
        row = self.db.execute(
            "SELECT result FROM evaluations WHERE candidate_id=? AND split=? AND feedback=? "
            "ORDER BY seq DESC LIMIT 1", (cid, split, feedback)).fetchone()
        return EvalResult.model_validate_json(row["result"]) if row else None

    def best_candidate(self, split: Split = "dev", feedback: Feedback = "nrmse"
                       ) -> tuple[Candidate, EvalResult] | None:
        """Lowest score among ok results (earliest wins ties); with no score (feedback
        ``none``), the earliest candidate that ran ok."""
        rows = self.db.execute(
            "SELECT candidate_id, result, score FROM evaluations WHERE split=? AND feedback=? "
            "AND status='ok' ORDER BY (score IS NULL), score, seq", (split, feedback)).fetchall()
        for r in rows:
            c = self.candidate(r["candidate_id"])
            if c is not None:
                return c, EvalResult.model_validate_json(r["result"])
        return None

    def _count_rows(self, feedback_only: bool) -> int:
        sql = "SELECT COUNT(*) FROM evaluations WHERE counted=1"
        return self.db.execute(sql + (" AND split != 'test'" if feedback_only else "")
                               ).fetchone()[0]

    @property
    def n_evaluations(self) -> int:
        """Every counted execution of the run (feedback split and final test run)."""
        return max(self._count_rows(False), self._floor["all"])

    @property
    def n_feedback_evaluations(self) -> int:
        """Counted executions that fed the search (every split but the final test split):
        PDE-SHARP's cost metric, and what ``--max-evals`` limits."""
        return max(self._count_rows(True), self._floor["feedback"])

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
            "source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (_now(), reply.model if reply else model, tag, sample_index,
             json.dumps([m.model_dump() for m in messages]), reply.text if reply else None,
             usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0,
             reply.cost_usd if reply else 0.0, reply.latency_s if reply else 0.0,
             int(source != "model"), error, request_key, source))
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
        sql, args = "SELECT kind, data FROM events", ()
        if kind:
            sql, args = sql + " WHERE kind=?", (kind,)
        return [{"kind": r["kind"], **json.loads(r["data"])}
                for r in self.db.execute(sql + " ORDER BY seq", args)]

    # -- accounting ----------------------------------------------------------------------
    def _flush_wall(self) -> None:
        if self.readonly:
            return
        now = time.monotonic()
        self.db.execute("UPDATE runs SET wall_seconds = wall_seconds + ? WHERE id=?",
                        (now - self._session_start, self.run_id))
        self._session_start = now

    def accounting(self) -> dict:
        q = self.db.execute(
            "SELECT COUNT(*) FILTER (WHERE cached=0 AND error=''), "  # paid calls only
            "COUNT(*) FILTER (WHERE cached=1), COALESCE(SUM(prompt_tokens) FILTER (WHERE cached=0), 0),"
            " COALESCE(SUM(completion_tokens) FILTER (WHERE cached=0), 0), "
            "COALESCE(SUM(cost_usd) FILTER (WHERE cached=0), 0) FROM model_calls").fetchone()
        self._flush_wall()
        wall = self.db.execute("SELECT wall_seconds FROM runs WHERE id=?",
                               (self.run_id,)).fetchone()[0]
        n_all, n_feedback = self.n_evaluations, self.n_feedback_evaluations
        return {"evaluations": n_all, "feedback_evaluations": n_feedback,
                "test_evaluations": n_all - n_feedback,
                "debug_iterations": self.n_debug_iterations,
                "model_calls": q[0], "cached_model_calls": q[1], "tokens_in": q[2],
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
        path = self.dir / "summary.json"
        return json.loads(path.read_text()) if path.is_file() else None
