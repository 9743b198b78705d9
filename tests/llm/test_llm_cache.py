"""Response cache: keys, hits, cost accounting, concurrency, and durability across a kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from pdesharp.llm.base import ChatParams, Message, Reply, Usage
from pdesharp.llm.cache import CachedModel, ResponseCache, cache_key
from pdesharp.llm.prices import Price
from pdesharp.llm.scripted import ScriptedModel

MSGS = [Message(role="user", content="write a solver")]


def ask(model, params=None, messages=MSGS):
    return asyncio.run(model.chat(messages, params))


def counting_model(price=Price(input=1.0, output=2.0)):
    return ScriptedModel(lambda m, p, i: f"reply {i}", name="openai:gpt-test", price=price)


def test_key_depends_on_everything_that_can_change_the_reply():
    p = ChatParams(tag="genesis")
    base = cache_key("a:m", MSGS, p)
    assert base == cache_key("a:m", [Message(role="user", content="write a solver")], ChatParams(tag="genesis"))
    variants = [
        cache_key("a:other", MSGS, p),
        cache_key("a:m", [Message(role="system", content="write a solver")], p),
        cache_key("a:m", [Message(role="user", content="write a solver ")], p),
        cache_key("a:m", MSGS, p.model_copy(update={"temperature": 0.2})),
        cache_key("a:m", MSGS, p.model_copy(update={"max_tokens": 10})),
        cache_key("a:m", MSGS, p.model_copy(update={"sample_index": 1})),
        cache_key("a:m", MSGS, p.model_copy(update={"tag": "judge.propose"})),
    ]
    assert len({base, *variants}) == 1 + len(variants)


def test_hit_returns_stored_reply_marked_cached_with_zero_cost(tmp_path):
    inner = counting_model()
    model = CachedModel(inner, tmp_path / "c.sqlite")
    first = ask(model, ChatParams(tag="genesis"))
    second = ask(model, ChatParams(tag="genesis"))
    assert len(inner.calls) == 1
    assert second.text == first.text == "reply 0"
    assert not first.cached and first.cost_usd > 0
    assert second.cached and second.cost_usd == 0.0 and second.saved_usd == first.cost_usd
    assert second.usage == first.usage  # tokens stay visible for reports
    assert model.cache.hits == 1 and model.cache.misses == 1
    # The original cost is kept in the cache row.
    row = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT cost_usd, tag FROM replies").fetchone()
    assert row == (pytest.approx(first.cost_usd, rel=1e-12), "genesis")


def test_sample_index_gives_distinct_samples(tmp_path):
    inner = counting_model()
    model = CachedModel(inner, tmp_path / "c.sqlite")
    texts = [ask(model, ChatParams(sample_index=k)).text for k in range(3)]
    assert texts == ["reply 0", "reply 1", "reply 2"]
    assert [ask(model, ChatParams(sample_index=k)).text for k in range(3)] == texts
    assert len(inner.calls) == 3


def test_cache_persists_across_instances_and_disabled_passes_through(tmp_path):
    path = tmp_path / "c.sqlite"
    ask(CachedModel(counting_model(), path))
    again = counting_model()
    assert ask(CachedModel(again, path)).cached and not again.calls
    off = counting_model()
    m = CachedModel(off, tmp_path / "never.sqlite", enabled=False)
    assert not ask(m).cached and not ask(m).cached and len(off.calls) == 2
    assert not (tmp_path / "never.sqlite").exists() and m.cache is None


def test_failed_calls_are_not_cached(tmp_path):
    from pdesharp.llm.base import ModelError

    inner = ScriptedModel({"*": [ModelError("down"), "ok"]})
    model = CachedModel(inner, tmp_path / "c.sqlite")
    with pytest.raises(ModelError):
        ask(model)
    assert ask(model).text == "ok" and len(model.cache) == 1


def test_concurrent_distinct_requests(tmp_path):
    inner = counting_model()
    model = CachedModel(inner, tmp_path / "c.sqlite")

    async def main():
        return await asyncio.gather(*[model.chat(MSGS, ChatParams(sample_index=k)) for k in range(20)])

    replies = asyncio.run(main())
    assert len({r.text for r in replies}) == 20 and len(model.cache) == 20


def test_corrupt_row_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    key = cache_key("x", MSGS, ChatParams())
    cache.put(key, Reply(text="t", model="x", usage=Usage(prompt_tokens=1)), model="x")
    cache._db.execute("UPDATE replies SET reply_json = '{\"bogus\": 1}'")
    assert cache.get(key) is None


def test_unopenable_cache_says_what_to_do(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match="--no-cache"):
        ResponseCache(blocker / "sub" / "c.sqlite")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_rows_survive_kill_9(tmp_path):
    # A child writes one row, reports it, and waits to be killed; the row must be readable after.
    path = tmp_path / "c.sqlite"
    code = textwrap.dedent(f"""
        import sys, time
        from pdesharp.llm.base import Reply
        from pdesharp.llm.cache import ResponseCache
        c = ResponseCache({str(path)!r})
        c.put("k1", Reply(text="survivor", model="m"), model="m")
        print("written", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "written"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert ResponseCache(path).get("k1").text == "survivor"
