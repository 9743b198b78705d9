"""Anthropic adapter: message conversion and usage mapping with a fake client; the
missing-package message. (The ``anthropic`` package is not installed in CI.)"""

from __future__ import annotations

import asyncio
import builtins
import types

import pytest

from pdesharp.llm.anthropic_adapter import AnthropicModel, to_anthropic, usage_from_anthropic
from pdesharp.llm.base import ChatParams, Message, ModelError
from pdesharp.llm.prices import Price, PriceTable


class FakeMessages:
    def __init__(self, response=None, error=None):
        self.response, self.error, self.calls = response, error, []

    async def create(self, **body):
        self.calls.append(body)
        if self.error:
            raise self.error
        return self.response


def fake_response(text="ok", stop="end_turn"):
    usage = types.SimpleNamespace(input_tokens=100, output_tokens=20,
                                  cache_read_input_tokens=300, cache_creation_input_tokens=50)
    return types.SimpleNamespace(content=[types.SimpleNamespace(type="thinking", thinking="..."),
                                          types.SimpleNamespace(type="text", text=text)],
                                 usage=usage, model="claude-sonnet-4-20250514", stop_reason=stop)


def test_conversion_separates_system_and_merges_same_role_turns():
    system, msgs = to_anthropic([
        Message(role="system", content="S1"), Message(role="user", content="a"),
        Message(role="user", content="b"), Message(role="system", content="S2"),
        Message(role="assistant", content="c")])
    assert system == "S1\n\nS2"
    assert msgs == [{"role": "user", "content": "a\n\nb"}, {"role": "assistant", "content": "c"}]
    _, msgs = to_anthropic([Message(role="assistant", content="x")])
    assert msgs[0]["role"] == "user"


def test_usage_counts_cache_reads_and_writes_as_prompt():
    u = usage_from_anthropic(fake_response().usage)
    assert (u.prompt_tokens, u.cached_tokens, u.completion_tokens) == (450, 300, 20)


def test_chat_with_fake_client():
    messages = FakeMessages(fake_response(stop="max_tokens"))
    prices = PriceTable({"claude-sonnet-4": Price(input=3.0, output=15.0, cached_input=0.3)})
    model = AnthropicModel("claude-sonnet-4", client=types.SimpleNamespace(messages=messages),
                           prices=prices)
    reply = asyncio.run(model.chat(
        [Message(role="system", content="be brief"), Message(role="user", content="hi")],
        ChatParams(temperature=1.4, max_tokens=None)))
    body = messages.calls[0]
    assert body["system"] == "be brief" and body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 8192 and body["extra_body"] == {"temperature": 1.0}  # clipped to Anthropic's [0, 1]
    assert reply.text == "ok" and reply.finish_reason == "length" and model.name == "anthropic:claude-sonnet-4"
    # 150 uncached * 3 + 300 cached * 0.3 + 20 out * 15, per million
    assert reply.cost_usd == pytest.approx((150 * 3 + 300 * 0.3 + 20 * 15) / 1e6, rel=1e-12)


def test_sdk_style_errors_become_model_errors():
    class AuthenticationError(Exception):
        status_code = 401
    AuthenticationError.__module__ = "anthropic._exceptions"
    model = AnthropicModel("claude-sonnet-4", api_key_env="ANTHROPIC_API_KEY",
                           client=types.SimpleNamespace(messages=FakeMessages(error=AuthenticationError("bad key"))))
    with pytest.raises(ModelError, match=r"401.*\$ANTHROPIC_API_KEY"):
        asyncio.run(model.chat([Message(role="user", content="hi")]))


def test_missing_package_message(monkeypatch):
    real_import = builtins.__import__

    def no_anthropic(name, *args, **kw):
        if name == "anthropic" or name.startswith("anthropic."):
            raise ImportError("No module named 'anthropic'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_anthropic)
    from pdesharp.llm import make_model

    with pytest.raises(ImportError, match=r"pip install 'pdesharp\[anthropic\]'"):
        make_model("anthropic:claude-sonnet-4")


def test_real_sdk_over_loopback_http():
    """End to end through the installed ``anthropic`` SDK (skipped without the extra)."""
    pytest.importorskip("anthropic")
    from llm_server import LLMServer, ServerReply

    with LLMServer([ServerReply("hello", prompt_tokens=100, cached_tokens=40, completion_tokens=5),
                    "again"], api_key="sk-a") as srv:
        prices = PriceTable({"claude-sonnet-4": Price(input=3.0, output=15.0, cached_input=0.3)})
        model = AnthropicModel("claude-sonnet-4", base_url=srv.root_url, api_key="sk-a",
                               max_retries=1, prices=prices)
        reply = asyncio.run(model.chat([Message(role="system", content="S"),
                                        Message(role="user", content="hi")],
                                       ChatParams(temperature=0.2, max_tokens=64)))
        body = srv.chat_requests[0].body
        assert srv.chat_requests[0].path == "/v1/messages"
        assert body["system"] == "S" and body["max_tokens"] == 64 and body["temperature"] == 0.2
        assert reply.text == "hello" and reply.finish_reason == "stop"
        assert (reply.usage.prompt_tokens, reply.usage.cached_tokens) == (100, 40)
        # 60 uncached * 3 + 40 cached * 0.3 + 5 out * 15, per million
        assert reply.cost_usd == pytest.approx((60 * 3 + 40 * 0.3 + 5 * 15) / 1e6, rel=1e-12)
        srv.fail_next(500)
        assert asyncio.run(model.chat([Message(role="user", content="x")])).text == "again"
        assert [r.status for r in srv.chat_requests] == [200, 500, 200]  # the SDK's own retry
        bad = AnthropicModel("claude-sonnet-4", base_url=srv.root_url, api_key="wrong", max_retries=0)
        with pytest.raises(ModelError, match="401"):
            asyncio.run(bad.chat([Message(role="user", content="x")]))


# -- prompt caching (issue 24.5) ------------------------------------------------------------
def test_marked_messages_get_cache_breakpoints_at_most_four():
    # a judge's later turn: system, Genesis, pool, its name and request, then turns; every
    # message it sends is marked, the system prompt too
    turns = [Message(role="system", content="rules", cache=True),
             Message(role="user", content="genesis", cache=True),
             Message(role="user", content="pool", cache=True),
             Message(role="user", content="you are judge-2", cache=True),
             Message(role="assistant", content="nominee g1"),
             Message(role="user", content="results", cache=True),
             Message(role="assistant", content="patch"),
             Message(role="user", content="round 2", cache=True)]
    system, msgs = to_anthropic(turns)
    assert system == [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}]
    # one user turn of three blocks (the API wants alternating roles), then the replies
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["text"] for b in msgs[0]["content"]] == ["genesis", "pool", "you are judge-2"]
    marked = [b["text"] for m in msgs for b in m["content"] if "cache_control" in b]
    # the system prompt and the last three marks: four, the API's limit; the API looks back
    # from each breakpoint for an earlier cached prefix, so older marks add nothing
    assert marked == ["you are judge-2", "results", "round 2"]
    assert "cache_control" not in msgs[1]["content"][0]
    # nothing marked: plain strings, as before
    assert to_anthropic([Message(role="user", content="a")]) == (
        None, [{"role": "user", "content": "a"}])


def test_cache_reads_and_writes_are_priced_at_their_rates():
    messages = FakeMessages(fake_response())  # 100 new, 300 read, 50 written, 20 out
    prices = PriceTable({"claude-sonnet-4": Price(input=3.0, output=15.0, cached_input=0.3,
                                                  cache_write=3.75)})
    model = AnthropicModel("claude-sonnet-4", client=types.SimpleNamespace(messages=messages),
                           prices=prices)
    reply = asyncio.run(model.chat([Message(role="system", content="s", cache=True),
                                    Message(role="user", content="hi", cache=True)]))
    u = reply.usage
    assert (u.prompt_tokens, u.cached_tokens, u.cache_write_tokens) == (450, 300, 50)
    assert reply.cost_usd == pytest.approx((100 * 3.0 + 300 * 0.3 + 50 * 3.75 + 20 * 15.0) / 1e6,
                                           rel=1e-12)
    body = messages.calls[0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_cache_breakpoints_and_cache_usage_over_loopback_http():
    """Through the installed ``anthropic`` SDK (skipped without the extra): the marks reach
    the wire as ``cache_control`` blocks, and cache reads and writes come back priced."""
    pytest.importorskip("anthropic")
    from llm_server import LLMServer, ServerReply

    with LLMServer([ServerReply("ok", prompt_tokens=1000, cached_tokens=700,
                                cache_write_tokens=200, completion_tokens=10)]) as srv:
        prices = PriceTable({"claude-sonnet-4": Price(input=3.0, output=15.0, cached_input=0.3,
                                                      cache_write=3.75)})
        model = AnthropicModel("claude-sonnet-4", base_url=srv.root_url, api_key="k",
                               max_retries=0, prices=prices)
        reply = asyncio.run(model.chat([Message(role="system", content="S", cache=True),
                                        Message(role="user", content="pool", cache=True),
                                        Message(role="user", content="you are judge-2")]))
        body = srv.chat_requests[0].body
        assert body["system"] == [{"type": "text", "text": "S",
                                   "cache_control": {"type": "ephemeral"}}]
        assert body["messages"] == [{"role": "user", "content": [
            {"type": "text", "text": "pool", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "you are judge-2"}]}]
        u = reply.usage
        assert (u.prompt_tokens, u.cached_tokens, u.cache_write_tokens) == (1000, 700, 200)
        assert reply.cost_usd == pytest.approx(
            (100 * 3.0 + 700 * 0.3 + 200 * 3.75 + 10 * 15.0) / 1e6, rel=1e-12)
