"""ScriptedModel: tag routing, call recording, exhaustion errors, usage and cost.

All replies below are written by us for the test, not recordings of a model.
"""

from __future__ import annotations

import asyncio

import pytest

from pdesharp.llm.base import ChatModel, ChatParams, Message, ModelError, Reply, Usage
from pdesharp.llm.prices import Price
from pdesharp.llm.scripted import ScriptedModel, ScriptExhausted


def ask(model, text: str, tag: str = "", **kw) -> Reply:
    return asyncio.run(model.chat([Message(role="user", content=text)], ChatParams(tag=tag, **kw)))


def test_is_a_chat_model():
    assert isinstance(ScriptedModel({}), ChatModel)


def test_replies_by_exact_tag_then_prefix_then_catch_all_in_call_order():
    model = ScriptedModel({
        "analysis.classification": ["hyperbolic"],
        "analysis": ["generic-1", "generic-2"],
        "*": ["anything"],
    })
    assert ask(model, "q", "analysis.classification").text == "hyperbolic"
    assert ask(model, "q", "analysis.classification").text == "generic-1"  # exact key used up
    assert ask(model, "q", "analysis.stability").text == "generic-2"
    assert ask(model, "q", "judge.propose").text == "anything"
    assert [c.key for c in model.calls] == ["analysis.classification", "analysis", "analysis", "*"]
    model.assert_exhausted()


def test_prefix_matches_only_whole_dotted_segments():
    model = ScriptedModel({"judge": ["x"]})
    with pytest.raises(ScriptExhausted):
        ask(model, "q", "judgement")


def test_exhaustion_names_tag_and_call_number_and_is_not_a_model_error():
    model = ScriptedModel({"genesis": ["only one"]})
    ask(model, "q", "genesis")
    with pytest.raises(ScriptExhausted) as info:
        ask(model, "q", "genesis")
    msg = str(info.value)
    assert "call #1" in msg and "'genesis'" in msg and "used up after 1" in msg
    assert not isinstance(info.value, ModelError)


def test_callable_script_sees_messages_params_and_global_index():
    seen = []

    def script(messages, params, index):
        seen.append((messages[-1].content, params.tag, index))
        return f"reply {index}"

    model = ScriptedModel(script)
    assert ask(model, "a", "genesis").text == "reply 0"
    assert ask(model, "b", "judge.nominate").text == "reply 1"
    assert seen == [("a", "genesis", 0), ("b", "judge.nominate", 1)]


def test_records_calls_and_scripted_exceptions_are_raised():
    model = ScriptedModel({"x": ["fine", ModelError("cannot reach http://h/v1")]})
    ask(model, "first", "x", temperature=0.1)
    with pytest.raises(ModelError, match="cannot reach"):
        ask(model, "second", "x")
    assert [c.prompt for c in model.calls] == ["first", "second"]
    assert model.calls[0].params.temperature == 0.1
    assert model.calls[1].reply is None
    assert len(model.calls_for("x")) == 2


def test_usage_estimate_and_cost():
    # 40-char prompt and 8-char reply -> 10 and 2 tokens at 4 chars/token.
    free = ScriptedModel({"*": ["12345678"]})
    r = ask(free, "x" * 40)
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (10, 2)
    assert r.cost_usd == 0.0 and r.model == "scripted:test" and r.finish_reason == "stop"
    priced = ScriptedModel({"*": ["12345678"]}, price=Price(input=1.0, output=5.0))
    r = ask(priced, "x" * 40)
    assert r.cost_usd == pytest.approx((10 * 1.0 + 2 * 5.0) / 1e6, rel=1e-12)


def test_full_reply_objects_pass_through():
    scripted = Reply(text="cut", model="m", usage=Usage(prompt_tokens=3, completion_tokens=7),
                     finish_reason="length")
    model = ScriptedModel({"*": [scripted]})
    r = ask(model, "q")
    assert r.finish_reason == "length" and r.usage.completion_tokens == 7
    assert r is not scripted  # a copy: the script is not mutated by consumers


def test_concurrent_calls_consume_in_call_order():
    model = ScriptedModel({"genesis": [f"s{i}" for i in range(5)]})

    async def main():
        return await asyncio.gather(*[
            model.chat([Message(role="user", content=str(i))], ChatParams(tag="genesis"))
            for i in range(5)])

    replies = asyncio.run(main())
    assert [r.text for r in replies] == [f"s{i}" for i in range(5)]


def test_assert_exhausted_reports_unused_replies():
    model = ScriptedModel({"a": ["1", "2"]})
    ask(model, "q", "a")
    with pytest.raises(AssertionError, match="'a': 1"):
        model.assert_exhausted()


def test_string_instead_of_list_is_rejected():
    with pytest.raises(TypeError, match="list of replies"):
        ScriptedModel({"genesis": "oops"})


def test_delay_interleaves_concurrent_callers():
    # With a real await inside chat(), 5 calls of 0.05 s overlap: all start before any ends.
    model = ScriptedModel({"*": ["a"] * 5}, delay_s=0.05)
    order = []

    async def one(i):
        order.append(("start", i))
        await model.chat([Message(role="user", content=str(i))])
        order.append(("end", i))

    async def main():
        await asyncio.gather(*[one(i) for i in range(5)])

    asyncio.run(main())
    assert [kind for kind, _ in order[:5]] == ["start"] * 5


def test_a_rules_reply_held_until_a_file_exists_answers_when_it_appears(tmp_path):
    """The rules model's `until_file`: a reply delayed by up to 60 s is answered as soon as the
    file appears (written 0.3 s after the call here), and a rule without it still waits its
    delay. Bounds: 30 s and 0.25 s, far from both the 60 s delay and the 0.3 s write even on a
    loaded machine."""
    import threading
    import time

    from pdesharp.rolesets import RulesModel

    go = tmp_path / "go"
    model = RulesModel([{"tag": "held", "delay_s": 60, "until_file": str(go), "reply": "late"},
                        {"tag": "slow", "delay_s": 0.3, "reply": "slow"}])
    timer = threading.Timer(0.3, go.touch)
    timer.start()
    start = time.monotonic()
    try:
        assert ask(model, "q", tag="held").text == "late"
    finally:
        timer.cancel()
    assert time.monotonic() - start < 30
    start = time.monotonic()
    assert ask(model, "q", tag="slow").text == "slow"
    assert time.monotonic() - start >= 0.25
