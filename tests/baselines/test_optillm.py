"""The OptiLLM baselines: our re-implementations of CoT-reflection, MoA and CePO (scripted
model, and over real HTTP against the loopback fake upstream of tests/llm_server.py), and the
path through a user-run OptiLLM proxy (the loopback server stands in for the proxy).
All replies are scripted by us; none is a recording of a real model."""

from __future__ import annotations

import asyncio

import pytest
from baseline_fakes import MarkerEvaluator, solver_reply
from llm_server import LLMServer, ServerReply

from pdesharp.baselines.common import BaselineConfig
from pdesharp.baselines.optillm import (
    MOA_FALLBACK_CRITIQUE,
    CePO,
    CepoConfig,
    CoTReflection,
    MixtureOfAgents,
    flatten,
    parse_rating,
)
from pdesharp.baselines.optillm_proxy import proxy_model_name
from pdesharp.baselines.runner import run_baseline
from pdesharp.llm import ChatParams, Message, Reply, ScriptedModel, Usage
from pdesharp.llm.openai_compat import OpenAICompatModel
from pdesharp.store import RunStore
from pdesharp.task import load_task

MSGS = [Message(role="system", content="SYS"), Message(role="user", content="Write a solver.")]


def chat(model, messages=MSGS, tag="cot.generate"):
    return asyncio.run(model.chat(messages, ChatParams(tag=tag, temperature=0.7, max_tokens=8192)))


def test_flatten_follows_optillm_conversation_format():
    msgs = MSGS + [Message(role="assistant", content="code"), Message(role="user", content="fix")]
    assert flatten(msgs) == ("SYS", "User: Write a solver.\nAssistant: code\nUser: fix")


def test_cot_reflection_one_call_returns_only_the_output_section():
    inner = ScriptedModel({"cot": ["<thinking>try ```python\nx=1\n```<reflection>ok</reflection>"
                                   "</thinking>\n<output>final ```python\ny=2\n```</output>"]})
    reply = chat(CoTReflection(inner))
    assert reply.text == "final ```python\ny=2\n```"  # code inside <thinking> is dropped
    (call,) = inner.calls
    assert call.tag == "cot.generate.cot_reflection"
    assert call.messages[0].content.startswith("SYS") and "<reflection>" in call.messages[0].content
    assert call.messages[1].content == "User: Write a solver."
    assert call.params.temperature == 0.7 and call.params.max_tokens == 8192  # request overrides
    assert reply.usage == inner.calls[0].reply.usage
    # No <output> tag: the whole reply comes back.
    inner2 = ScriptedModel({"*": ["just text"]})
    assert chat(CoTReflection(inner2)).text == "just text"


def test_moa_five_calls_critique_fallback_and_summed_usage():
    u = Usage(prompt_tokens=10, completion_tokens=5)
    inner = ScriptedModel({
        "cot.generate.moa.candidate": [Reply(text="A", model="m", usage=u),
                                       Reply(text="B-cut", model="m", usage=u, finish_reason="length"),
                                       Reply(text="C", model="m", usage=u)],
        "cot.generate.moa.critique": [Reply(text="long crit", model="m", usage=u, finish_reason="length")],
        "cot.generate.moa.final": [Reply(text="FINAL", model="m", usage=u)],
    })
    reply = chat(MixtureOfAgents(inner))
    inner.assert_exhausted()
    assert reply.text == "FINAL" and len(inner.calls) == 5
    assert reply.usage == Usage(prompt_tokens=50, completion_tokens=25)
    crit, final = inner.calls[3], inner.calls[4]
    assert crit.params.max_tokens == 512 and crit.params.temperature == 0.1
    # Truncated candidate B dropped, list padded with candidate A; fallback critique used.
    assert "Candidate 3:\nA" in final.messages[1].content and "B-cut" not in final.messages[1].content
    assert MOA_FALLBACK_CRITIQUE in final.messages[1].content
    assert all(c.params.temperature == 1.0 for c in inner.calls[:3])


def test_cepo_structure_call_count_and_rating_choice():
    plan_cut = Reply(text="plan", model="m", finish_reason="length")
    script = {
        # completion 0: one rejected plan then 3 accepted; completions 1 and 2: 3 accepted each
        "g.cepo.plan": [plan_cut] + ["plan"] * 9,
        "g.cepo.execute": ["exec"] * 9,
        "g.cepo.review": ["review"] * 3,
        "g.cepo.answer": ["answer-0", "answer-1", "answer-2"],
        "g.cepo.rating": ["good. Rating: [[0]]", "Rating: [[1]]", "no rating"],
    }
    inner = ScriptedModel(script)
    reply = chat(CePO(inner, CepoConfig()), tag="g")
    inner.assert_exhausted()
    assert reply.text == "answer-1"
    assert len(inner.calls) == 28  # 27 + the one rejected plan
    review = inner.calls_for("g.cepo.review")[0]
    assert review.messages[-1].content.count("Proposal ") == 3
    assert parse_rating("x Rating: [[0.5]] y") == 0.5 and parse_rating("none") == -1.0


def upstream_reply(body: dict, index: int) -> str:
    """The fake upstream answers by what the request asks (it sees no pipeline tags)."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    last = body["messages"][-1]["content"]
    code = solver_reply("# SCORE 2e-3")
    if "<reflection>" in system:
        return f"<thinking>shift<reflection>fine</reflection></thinking><output>{code}</output>"
    if "Rating: [[1]]" in last:
        return "Correct. Rating: [[1]]"
    if "concise plan" in last or "Carry out the plan" in last or "Review the proposals" in last:
        return "scripted intermediate text"
    if "Critique each one" in last:
        return "scripted critique"
    return code  # MoA candidates and final, CePO answer


@pytest.mark.parametrize("method,calls", [("cot", 1), ("moa", 5), ("cepo", 27)])
def test_reimplementation_over_http_against_loopback_upstream(tmp_path, method, calls):
    """Each re-implemented technique as a whole baseline on a real HTTP transport against the
    loopback fake upstream model; every internal call is one request and one journal row."""
    with LLMServer(upstream_reply) as srv:
        model = OpenAICompatModel("test-model", base_url=srv.url, api_key="x", free=True)
        summary = asyncio.run(run_baseline(
            method, load_task("advection"), model=model,
            evaluator=MarkerEvaluator(test_data=False), out_root=tmp_path,
            cfg=BaselineConfig(samples=1)))
        bodies = [r.body for r in srv.chat_requests]
    assert len(bodies) == calls == summary["model_calls"]
    assert all(b["model"] == "test-model" for b in bodies)
    assert summary["implementation"] == "reimplementation"
    assert "re-implementation of OptiLLM" in summary["method_label"]
    assert summary["best_dev_score"] == 2e-3 and summary["tokens_in"] > 0
    if method == "moa":
        assert [b.get("max_tokens") for b in bodies][3] == 512  # the critique's limit


def test_real_optillm_proxy_path_records_summed_tokens(tmp_path):
    """``--optillm-url``: one baseline call is one proxy request with the approach prefix; the
    proxy's summed completion tokens (and no prompt tokens, as OptiLLM reports) are recorded.
    The loopback server plays the proxy here."""
    proxy_reply = ServerReply(text=solver_reply("# SCORE 1e-3"), prompt_tokens=0,
                              completion_tokens=4321, model="test-model")
    with LLMServer([proxy_reply]) as srv:
        summary = asyncio.run(run_baseline(
            "moa", load_task("advection"), model=ScriptedModel({}, name="compat:test-model"),
            evaluator=MarkerEvaluator(test_data=False), out_root=tmp_path,
            cfg=BaselineConfig(samples=1), optillm_url=srv.url, upstream_model="test-model"))
        (req,) = srv.chat_requests
    assert req.body["model"] == "moa-test-model" == proxy_model_name("moa", "compat:test-model")
    assert summary["model_calls"] == 1 and summary["tokens_out"] == 4321
    assert summary["tokens_in"] == 0 and summary["tokens_in_reported"] is False
    assert summary["implementation"] == "optillm-proxy"
    assert "OptiLLM proxy" in summary["method_label"]
    store = RunStore.open(tmp_path / "advection-moa")
    row = store.db.execute("SELECT model, tag FROM model_calls").fetchone()
    assert row["tag"] == "moa.generate"


def test_bench_with_optillm_url_needs_no_upstream_key(tmp_path, monkeypatch):
    """``pdesharp bench --optillm-url``: the default model factory builds no upstream client
    (the proxy holds the key); the table labels the rows as OptiLLM and shows tokens in n/a."""
    from pdesharp.bench import BenchConfig, run_bench

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PDESHARP_OPTILLM_KEY", "proxy-key")
    reply = ServerReply(text="<output>" + solver_reply("# SCORE 1e-3") + "</output>",
                        prompt_tokens=0, completion_tokens=99)
    with LLMServer([reply], api_key="proxy-key") as srv:
        cfg = BenchConfig(tasks=["advection"], methods=["cot"], model="openai:gpt-4o-mini",
                          out=str(tmp_path), samples=1, optillm_url=srv.url)
        (row,) = asyncio.run(run_bench(cfg, evaluator_factory=lambda t: MarkerEvaluator(False)))
        (req,) = srv.chat_requests
    assert req.body["model"] == "cot_reflection-gpt-4o-mini"
    assert row["label"] == "cot (OptiLLM)" and row["tokens_in"] is None
    assert row["tokens_out"] == 99 and row["model_calls"] == 1
    assert "| n/a |" in (tmp_path / "table.md").read_text()


def test_cepo_answers_directly_when_every_plan_is_cut_off():
    cut = Reply(text="a plan that never ends", model="m", finish_reason="length")
    inner = ScriptedModel({"g.cepo.plan": [cut] * 2, "g.cepo.direct": ["direct answer"],
                           "g.cepo.rating": ["Rating: [[1]]"]})
    reply = chat(CePO(inner, CepoConfig(bestofn_n=1, planning_m=2)), tag="g")
    inner.assert_exhausted()
    assert reply.text == "direct answer" and len(inner.calls) == 4
