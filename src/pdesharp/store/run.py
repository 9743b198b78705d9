"""The run store itself (:class:`RunStore`): the run folder, its database, config, status and
candidates; the evaluations journal and the rest of the journal are its two parts
(:mod:`.evaluations`, :mod:`.journal`). See :mod:`pdesharp.store` for the layout and contracts."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pdesharp.records import Candidate, EvalResult
from pdesharp.runlock import RunBusy, claim, lock_owner
from pdesharp.store.evaluations import EvaluationJournal
from pdesharp.store.journal import Journal
from pdesharp.store.schema import SCHEMA, code_sha256, migrate, new_run_id, now as _now
from pdesharp.untrusted import json_data, one_line, path_component


class RunStoreError(RuntimeError):
    """A run folder is missing or is not a pdesharp run."""


class RunStore(EvaluationJournal, Journal):
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
            migrate(self.db)
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
        run_id = path_component(run_id or new_run_id(task.name), "run id")
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
        if (run_dir / cls.DB_NAME).is_symlink():  # a folder is untrusted: no link is followed
            raise RunStoreError(f"{one_line(run_dir, 300)}/{cls.DB_NAME} is a symbolic link")
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
        try:  # a run folder may have been handed over: bounded, and a dict or nothing
            config = json_data(row["config"] or "{}")
        except (ValueError, TypeError) as exc:
            raise RunStoreError(f"{self.dir}: the run's recorded configuration cannot be read "
                                f"({exc})") from None
        if not isinstance(config, dict):
            raise RunStoreError(f"{self.dir}: the run's recorded configuration is not a mapping")
        return config

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
                         parents=parents_of(row["parents"]), judge=row["judge"],
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


def parents_of(text) -> list[str]:
    """A candidate row's parents: a JSON list of ids. A run folder may have been handed over:
    anything else, or too long or too deep, is no parents."""
    try:
        value = json_data(text or "[]")
    except (ValueError, TypeError):
        return []
    return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []
