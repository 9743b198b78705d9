"""The run database's schema and the ids it keys rows by (code hashes, re-timing rows, run
ids, timestamps)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timezone

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, task TEXT, config TEXT, created TEXT, status TEXT,
    wall_seconds REAL DEFAULT 0, sessions INTEGER DEFAULT 0, note TEXT DEFAULT '');
CREATE TABLE IF NOT EXISTS model_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT, model TEXT, tag TEXT, sample_index INTEGER,
    messages TEXT, reply TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
    cost_usd REAL, latency_s REAL, cached INTEGER, error TEXT DEFAULT '',
    request_key TEXT DEFAULT '', source TEXT DEFAULT 'model', cached_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0);
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


# columns added since the first release: (table, column, declaration), added to an older run's
# database when it is opened for writing (a resumed run), read as their default when absent
ADDED_COLUMNS = [("model_calls", "cached_tokens", "INTEGER DEFAULT 0"),
                 ("model_calls", "cache_write_tokens", "INTEGER DEFAULT 0")]


def migrate(db) -> None:
    """Add the :data:`ADDED_COLUMNS` an older run's database lacks."""
    for table, column, decl in ADDED_COLUMNS:
        if not has_column(db, table, column):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")


def has_column(db, table: str, column: str) -> bool:
    return any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})"))


def code_sha256(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


RETIME_MARK = "#t"  # a re-timing row's id: "<candidate id>#t<k>" (no candidate id has a "#")
WARM_RETIME_MARK = "#v"  # a warm re-timing row's id (a time-tied finalist): "<id>#v<k>"
WARM_MARK = "#w"  # the winner's warm timing's id: "<candidate id>#w"


def retime_id(cid: str, k: int) -> str:
    """The journal id of the k-th re-timing run (k >= 1) of candidate ``cid``."""
    return f"{cid}{RETIME_MARK}{k}"


def warm_retime_id(cid: str, k: int) -> str:
    """The journal id of the k-th warm re-timing run (k >= 1) of candidate ``cid``: a warm
    timing that decides between time-tied finalists (synthesis.timing)."""
    return f"{cid}{WARM_RETIME_MARK}{k}"


def warm_id(cid: str) -> str:
    """The journal id of candidate ``cid``'s warm timing (Evaluator.evaluate(warm=True))."""
    return f"{cid}{WARM_MARK}"


# the evaluations rows that count as search evaluations on a split (``AND split = ?``): counted
# executions but the winner's warm timing, which feeds no decision (every count reads this)
SEARCH_ROWS = f"counted=1 AND candidate_id NOT LIKE '%{WARM_MARK}'"


def parse_run_id(label: str) -> tuple[str, str, int]:
    """(candidate id, mark, k) of a journal id: mark "" and k = 0 for a candidate's own
    evaluation, :data:`RETIME_MARK` or :data:`WARM_RETIME_MARK` and k >= 1 for its k-th
    (warm) re-timing run, :data:`WARM_MARK` and k = 0 for its warm timing."""
    if label.endswith(WARM_MARK):
        return label[:-len(WARM_MARK)], WARM_MARK, 0
    for mark in (RETIME_MARK, WARM_RETIME_MARK):
        cid, found, k = label.rpartition(mark)
        if found and k.isdigit():
            return cid, mark, int(k)
    return label, "", 0


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id(task_name: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{task_name}-{stamp}-{secrets.token_hex(2)}"


