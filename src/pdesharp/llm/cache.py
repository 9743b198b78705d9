"""A persistent response cache: the same request to the same model is paid for once.

Storage is one SQLite file (stdlib, WAL journal, one commit per write), so it is safe to share
between concurrent coroutines, threads and processes, and a run killed with ``kill -9`` loses at
most the reply being written.

The key is the SHA-256 of canonical JSON of: the model's ``name`` ("provider:model"), the
messages, and every :class:`ChatParams` field — temperature, max_tokens, ``sample_index`` *and*
``tag``. ``sample_index`` keeps the N samples of one prompt distinct. ``tag`` (the calling role)
does not change what the endpoint sees, but keeping it in the key means two roles that happen to
send an identical prompt get independent samples, as they would without a cache; the price is
fewer hits, which we accept. The endpoint URL is not in the key: the same model name behind a
different URL is assumed to be the same model.

A hit returns the stored reply with ``cached=True``, ``cost_usd=0`` (nothing is spent in this
run) and ``saved_usd`` set to what the original call cost, which stays in the cache row.
Failed calls are never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

import platformdirs

from pdesharp.llm.base import ChatModel, ChatParams, Message, Reply

CACHE_ENV = "PDESHARP_LLM_CACHE"
KEY_VERSION = 1  # bump when the key recipe changes, so old rows are simply never hit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key        TEXT PRIMARY KEY,
    model      TEXT NOT NULL,
    tag        TEXT NOT NULL,
    reply_json TEXT NOT NULL,
    cost_usd   REAL NOT NULL,
    created    REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    """``$PDESHARP_LLM_CACHE`` or ``<user cache dir>/pdesharp/llm/responses.sqlite``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("pdesharp")) / "llm" / "responses.sqlite"


def cache_key(model_name: str, messages: list[Message], params: ChatParams) -> str:
    payload = {
        "v": KEY_VERSION,
        "model": model_name,
        "messages": [[m.role, m.content] for m in messages],
        "params": params.model_dump(mode="json"),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """The SQLite store. One connection guarded by a lock; every write commits at once."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode is durable against a killed process (not a power cut), which is
            # the case we care about, and much faster than FULL.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise OSError(f"cannot open the response cache {self.path}: {exc}; "
                          "use --no-cache or point the cache elsewhere") from exc
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def get(self, key: str) -> Reply | None:
        with self._lock:
            row = self._db.execute("SELECT reply_json FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return Reply.model_validate_json(row[0])
        except ValueError:
            return None  # a row from an incompatible version: treat as a miss, it gets replaced

    def put(self, key: str, reply: Reply, *, model: str, tag: str = "") -> None:
        stored = reply.model_copy(update={"cached": False})
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, model, tag, reply_json, cost_usd, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key, model, tag, stored.model_dump_json(), reply.cost_usd, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedModel:
    """Serves repeated requests from a :class:`ResponseCache`; ``enabled=False`` passes through
    (the pipeline's ``--no-cache``) without touching the file."""

    def __init__(self, inner: ChatModel, cache: ResponseCache | str | Path, *, enabled: bool = True):
        self.inner = inner
        self.name = inner.name
        self.enabled = enabled
        if isinstance(cache, ResponseCache):
            self.cache: ResponseCache | None = cache
        else:
            self.cache = ResponseCache(cache) if enabled else None

    def __repr__(self) -> str:
        return f"CachedModel({self.inner!r}, {self.cache!r}, enabled={self.enabled})"

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        if not self.enabled:
            return await self.inner.chat(messages, params)
        params = params or ChatParams()
        start = time.perf_counter()
        key = cache_key(self.name, messages, params)
        hit = self.cache.get(key)
        if hit is not None:
            self.cache.hits += 1
            return hit.model_copy(update={
                "cached": True, "cost_usd": 0.0, "saved_usd": hit.cost_usd,
                "latency_s": time.perf_counter() - start})
        self.cache.misses += 1
        reply = await self.inner.chat(messages, params)
        self.cache.put(key, reply, model=self.name, tag=params.tag)
        return reply
