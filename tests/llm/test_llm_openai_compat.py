"""The real ``openai`` SDK transport, end to end over HTTP to the loopback test server.

Server replies are scripted by us for these tests, not recordings of a model.
"""

from __future__ import annotations

import asyncio
import socket

import pytest
from llm_server import LLMServer, ServerReply, llm_server  # noqa: F401  (fixture)

from pdesharp.llm.base import ChatModel, ChatParams, Message, ModelError
from pdesharp.llm.openai_compat import (
    OpenAICompatModel,
    has_system_role,
    is_reasoning_model,
    merge_system_into_user,
)
from pdesharp.llm.prices import Price, PriceTable

MSGS = [Message(role="system", content="You are a numerical analyst."),
        Message(role="user", content="Classify u_t + a u_x = 0.")]


def chat(model, params=None, messages=MSGS):
    return asyncio.run(model.chat(messages, params))


@pytest.fixture
def server():
    with LLMServer() as srv:
        yield srv


def make(srv, model="test-model", **kw):
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 10.0)
    return OpenAICompatModel(model, base_url=srv.url, **kw)


def test_round_trip_messages_params_usage_and_cost(server):
    server.script = [ServerReply("hyperbolic", prompt_tokens=1000, completion_tokens=200,
                                 cached_tokens=400, reasoning_tokens=50)]
    prices = PriceTable({"test-model": Price(input=2.0, output=10.0, cached_input=0.5)})
    model = make(server, prices=prices, name="compat:test-model")
    assert isinstance(model, ChatModel)
    reply = chat(model, ChatParams(temperature=0.3, max_tokens=512, tag="analysis.classification"))

    assert reply.text == "hyperbolic" and reply.finish_reason == "stop"
    assert reply.model == "test-model" and not reply.cached
    assert reply.usage.model_dump() == {"prompt_tokens": 1000, "completion_tokens": 200,
                                        "cached_tokens": 400, "cache_write_tokens": 0,
                                        "reasoning_tokens": 50}
    # 600 uncached * $2 + 400 cached * $0.5 + 200 out * $10, per million; exact up to float rounding.
    assert reply.cost_usd == pytest.approx((600 * 2 + 400 * 0.5 + 200 * 10) / 1e6, rel=1e-12)
    assert reply.latency_s > 0

    (req,) = server.chat_requests
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["model"] == "test-model"
    assert req.body["messages"] == [{"role": m.role, "content": m.content} for m in MSGS]
    assert req.body["temperature"] == 0.3 and req.body["max_tokens"] == 512
    assert "n" not in req.body and "max_completion_tokens" not in req.body
    assert "tag" not in req.body and "sample_index" not in req.body  # ours, not the API's


def test_reasoning_model_gets_max_completion_tokens_and_no_temperature(server):
    server.script = ["ok"]
    chat(make(server, model="o3-mini"), ChatParams(temperature=0.7, max_tokens=4096))
    body = server.chat_requests[0].body
    assert body["max_completion_tokens"] == 4096
    assert "temperature" not in body and "max_tokens" not in body
    assert body["messages"][0]["role"] == "system"  # o3 keeps the system role


def test_o1_family_merges_system_prompt_into_first_user_message(server):
    server.script = ["ok"]
    chat(make(server, model="o1-mini"))
    msgs = server.chat_requests[0].body["messages"]
    assert [m["role"] for m in msgs] == ["user"]
    assert msgs[0]["content"] == "You are a numerical analyst.\n\nClassify u_t + a u_x = 0."


def test_a_turn_of_several_messages_is_sent_as_one_message(server):
    # a judge's opening turn: what every judge is told, then its own request; some servers'
    # chat templates refuse two user messages in a row
    server.script = ["ok"]
    model = make(server)
    asyncio.run(model.chat([Message(role="system", content="S", cache=True),
                            Message(role="user", content="pool", cache=True),
                            Message(role="user", content="You are judge-2")]))
    msgs = server.chat_requests[0].body["messages"]
    assert msgs == [{"role": "system", "content": "S"},
                    {"role": "user", "content": "pool\n\nYou are judge-2"}]


def test_quirks_can_be_declared_for_any_model(server):
    server.script = ["ok"]
    chat(make(server, model="my-local-reasoner", reasoning=True, system_role=False),
         ChatParams(max_tokens=None))
    body = server.chat_requests[0].body
    assert set(body) == {"model", "messages"}  # no temperature, no token limit at all
    assert [m["role"] for m in body["messages"]] == ["user"]


@pytest.mark.parametrize("model,reasoning,system", [
    ("o1", True, False), ("o1-preview-2024-09-12", True, False), ("o3", True, True),
    ("o4-mini-2025-04-16", True, True), ("gpt-5-mini", True, True), ("openai/o3-mini", True, True),
    ("gpt-5-chat-latest", False, True), ("gpt-4o", False, True), ("deepseek-chat", False, True),
    ("qwen2.5-coder:7b", False, True), ("llama3.1-o1-style", False, True),
])
def test_quirk_detection(model, reasoning, system):
    assert is_reasoning_model(model) is reasoning
    assert has_system_role(model) is system


def test_merge_without_user_message_makes_one():
    out = merge_system_into_user([Message(role="system", content="S")])
    assert [(m.role, m.content) for m in out] == [("user", "S")]


def test_sdk_retries_500_within_one_logical_call(server):
    from pdesharp.llm.budget import Budget, MeteredModel

    server.script = [ServerReply("recovered", prompt_tokens=7, completion_tokens=3)]
    server.fail_next(500, times=2)
    budget = Budget()
    model = MeteredModel(make(server, max_retries=2), budget)
    reply = chat(model)
    assert reply.text == "recovered"
    assert [r.status for r in server.chat_requests] == [500, 500, 200]
    # Three HTTP requests, one logical call: charged once, with the successful reply's tokens.
    assert budget.spent.calls == 1 and budget.spent.tokens == 10
    # The latency covers the whole logical call, including the SDK's backoff between retries.
    assert reply.latency_s >= 0.5 * 2 * 0.25  # SDK backoff starts at 0.5 s with jitter down to 0.75x


def test_500_after_retries_is_a_model_error_naming_the_endpoint(server):
    server.fail_next(503, times=2, message="overloaded")
    with pytest.raises(ModelError) as info:
        chat(make(server, max_retries=1))
    msg = str(info.value)
    assert server.url in msg and "503" in msg and "overloaded" in msg and "after 1 retry" in msg
    assert len(server.chat_requests) == 2


def test_401_names_the_key_variable(server, monkeypatch):
    monkeypatch.setenv("MY_TEST_KEY", "wrong")
    server.api_key = "right"
    with pytest.raises(ModelError) as info:
        chat(make(server, api_key=None, api_key_env="MY_TEST_KEY", max_retries=2))
    msg = str(info.value)
    assert "401" in msg and "$MY_TEST_KEY" in msg and server.url in msg
    assert len(server.chat_requests) == 1  # auth errors are not retried


def test_missing_key_variable_fails_at_construction(server, monkeypatch):
    monkeypatch.delenv("MY_ABSENT_KEY", raising=False)
    with pytest.raises(ModelError, match=r"\$MY_ABSENT_KEY is not set"):
        make(server, api_key=None, api_key_env="MY_ABSENT_KEY")


def test_429_and_404_and_400_messages(server):
    model = make(server)
    server.fail_next(429)
    with pytest.raises(ModelError, match="rate limiting or out of quota"):
        chat(model)
    server.fail_next(404)
    with pytest.raises(ModelError, match=r"check the model name \(GET .*/v1/models"):
        chat(model)
    server.fail_next(400, message="Unsupported parameter: 'temperature'")
    with pytest.raises(ModelError, match="reasoning=True"):
        chat(model)


def test_malformed_json_is_a_model_error(server):
    server.malformed_next()
    with pytest.raises(ModelError, match="not a valid chat completion"):
        chat(make(server))


def test_no_choices_is_a_model_error(server):
    server.script = lambda body, i: ServerReply(text="x")
    model = make(server)

    class Empty:
        choices: list = []
    with pytest.raises(ModelError, match="returned no choices"):
        model._reply(Empty(), 0.0)


def test_dead_endpoint_message():
    # A port nobody listens on: bind, note the port, close.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    model = OpenAICompatModel("m", base_url=url, api_key="k", max_retries=0, timeout=5)
    with pytest.raises(ModelError) as info:
        chat(model)
    assert str(info.value).startswith(f"cannot reach {url} (connection refused): is the server running?")


def test_timeout_is_a_model_error(server):
    server.script = [ServerReply("late", delay_s=1.5)]
    model = make(server, timeout=0.3)
    with pytest.raises(ModelError, match=r"timed out after 0.3 s"):
        chat(model)


def test_empty_content_and_length_finish_reason_pass_through(server):
    # A reasoning model that spent its budget thinking returns no text and finish_reason length.
    server.script = [ServerReply("", finish_reason="length", reasoning_tokens=100, completion_tokens=100)]
    reply = chat(make(server))
    assert reply.text == "" and reply.finish_reason == "length" and reply.usage.reasoning_tokens == 100


def test_free_endpoint_costs_nothing_and_unknown_price_warns_once(server, caplog):
    server.script = ["a", "b", "c"]
    free = make(server, free=True, prices=PriceTable({}))
    with caplog.at_level("WARNING", logger="pdesharp.llm"):
        assert chat(free).cost_usd == 0.0
        assert not caplog.records
        paid = make(server, prices=PriceTable({}))
        chat(paid)
        chat(paid)
    warnings = [r for r in caplog.records if "no price known" in r.getMessage()]
    assert len(warnings) == 1 and "test-model" in warnings[0].getMessage()


def test_model_survives_repeated_asyncio_run(server):
    server.script = ["1", "2", "3"]
    model = make(server)
    assert [chat(model).text for _ in range(3)] == ["1", "2", "3"]


def test_concurrent_calls_over_http(server):
    server.script = lambda body, i: body["messages"][-1]["content"].upper()
    model = make(server)

    async def main():
        return await asyncio.gather(*[
            model.chat([Message(role="user", content=f"q{i}")]) for i in range(6)])

    assert sorted(r.text for r in asyncio.run(main())) == [f"Q{i}" for i in range(6)]


def test_extra_body_reaches_the_server(server):
    server.script = ["ok"]
    chat(make(server, extra_body={"optillm_approach": "moa"}))
    assert server.chat_requests[0].body["optillm_approach"] == "moa"


def test_models_endpoint_is_served(server):
    import openai

    client = openai.OpenAI(base_url=server.url, api_key="k")
    assert [m.id for m in client.models.list()] == ["test-model"]


def test_refusal_is_reported_as_finish_reason(server):
    server.script = lambda body, i: ServerReply("")
    model = make(server)

    class Msg:
        content = None
        refusal = "I can't help with that."

    class Choice:
        message = Msg()
        finish_reason = "stop"

    class Resp:
        choices = [Choice()]
        usage = None
        model = "test-model"

    reply = model._reply(Resp(), 0.1)
    assert reply.text == "" and reply.finish_reason == "refusal"


def test_exhausted_server_script_fails_fast_with_a_clear_message(llm_server):
    llm_server.script = ["only"]
    model = make(llm_server, max_retries=2)
    assert chat(model).text == "only"
    with pytest.raises(ModelError, match=r"script exhausted: request #1 but only 1 scripted"):
        chat(model)
    assert len(llm_server.chat_requests) == 2  # a 400 is not retried


def test_tls_context_is_built_once_and_is_a_verifying_context():
    import ssl

    import openai

    from pdesharp.llm.http import shared_ssl_context

    ctx = shared_ssl_context(openai.DefaultAsyncHttpxClient)
    assert ctx is shared_ssl_context(openai.DefaultAsyncHttpxClient)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
