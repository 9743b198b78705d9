"""Issue 24.5: a run reads the provider's cached-token counts and prices them at the cached rate.

A whole `solve` through the real openai SDK transport to a loopback server that emulates a
provider's prefix cache (tests/llm_server.py: ``prompt_tokens_details.cached_tokens`` is the
longest common prefix, in whole 4-character tokens, with a request answered earlier). The
replies are written by us (pipeline_scripts.py), chosen by what the prompt asks; they are not
recordings of a real model. Nothing executes (MarkerEvaluator).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ for llm_server

from llm_server import LLMServer  # noqa: E402
from pipeline_scripts import (  # noqa: E402
    MarkerEvaluator,
    analysis_replies,
    analysis_reply,
    genesis_reply,
    nominate,
    patch,
    shift,
)

from pdesharp.llm import set_default_prices  # noqa: E402
from pdesharp.llm.prices import Price, PriceTable  # noqa: E402
from pdesharp.pipeline import SolveConfig, solve  # noqa: E402
from pdesharp.rolesets import build_roles  # noqa: E402
from pdesharp.store import RunStore  # noqa: E402
from pdesharp.task import load_task  # noqa: E402

ANALYSIS = analysis_replies("numerical")
PRICE = Price(input=2.0, output=8.0, cached_input=0.5)  # USD per million tokens


def reply_for(body: dict, index: int) -> str:
    last = body["messages"][-1]["content"]
    if (answer := analysis_reply(last, ANALYSIS)) is not None:
        return answer
    if "Write candidate solver #1 " in last:
        return genesis_reply(shift(0.8), "damped shift")
    if "Write candidate solver #2 " in last:
        return genesis_reply(shift(0.5), "half shift")
    if ": nominate" in last:
        return nominate("g1")
    if "results and your modification" in last:
        return patch("    scale = 0.8", "    scale = 0.9", "less damped", ["g1"])
    if "short narrative" in last:
        return "Narrative written by the test server."
    raise AssertionError(f"unexpected prompt: {last[:200]}")


@pytest.fixture
def priced():
    set_default_prices(PriceTable({"test-model": PRICE}))
    yield
    set_default_prices(None)


def test_a_runs_cost_prices_cached_prompt_tokens_at_the_cached_rate(tmp_path, priced):
    task = load_task("advection")
    with LLMServer(reply_for, prefix_cache=True) as srv:
        config = SolveConfig(task="advection", model="compat:test-model", base_url=srv.url,
                             candidates=2, max_rounds=1, rejudge_cycles=1,
                             no_cache=True, out=str(tmp_path), max_samples=2,
                             convergence=False, retime=0)
        store = RunStore.create(tmp_path, task=task, config=config.model_dump(), run_id="c")
        roles = build_roles(config, store)
        res = asyncio.run(solve(task, config, store, roles, MarkerEvaluator(has_test=False)))
        answered = [r for r in srv.chat_requests if r.status == 200]
    assert res.status == "finished"
    # what the server reported for each answered request, by its order of arrival
    rows = store.db.execute("SELECT tag, prompt_tokens, completion_tokens, cached_tokens, "
                            "cost_usd FROM model_calls WHERE error = '' ORDER BY seq").fetchall()
    assert len(rows) == len(answered) == store.accounting()["model_calls"]
    expected = 0.0
    for tag, prompt, completion, cached, cost in rows:
        assert 0 <= cached <= prompt
        # the cached part at $0.5, the rest at $2, the reply at $8 per million tokens
        want = ((prompt - cached) * 2.0 + cached * 0.5 + completion * 8.0) / 1e6
        assert cost == pytest.approx(want, rel=1e-12, abs=1e-15), tag
        expected += want
    summary = json.loads((store.dir / "summary.json").read_text())
    assert summary["cost_usd"] == pytest.approx(expected, abs=1e-6)  # summary: 6 decimals
    cached_total = sum(r[3] for r in rows)
    assert summary["tokens_in_cached"] == cached_total
    full_rate = sum((r[1] * 2.0 + r[2] * 8.0) / 1e6 for r in rows)
    # the judges' conversations are mostly served from the cache: the run costs far less than
    # it would at the full input rate
    judges = [r for r in rows if r[0].startswith("judge")]
    assert sum(r[3] for r in judges) > 0.6 * sum(r[1] for r in judges)
    assert expected < 0.7 * full_rate
    # each cycle's first judge goes first: the other two find the shared prefix (system prompt,
    # Genesis, the pool now) cached and pay only their own name and request
    nominations = [r for r in rows if r[0] == "judge.nominate"]
    assert len(nominations) == 6
    for first, *others in (nominations[0:3], nominations[3:6]):
        for r in others:
            assert r[1] - r[3] < 100, r
    report = (store.dir / "report.md").read_text()
    assert f"({cached_total} of the input from the providers' prompt caches)" in report
    assert "| cached (mean) |" in report


def test_a_run_recorded_before_cached_tokens_opens_and_resumes(tmp_path):
    from pdesharp.llm.base import Message, Reply, Usage
    from pdesharp.report.tables import call_rows

    store = RunStore.create(tmp_path, task=load_task("advection"), config={}, run_id="old")
    store.record_model_call(model="m", tag="judge.nominate", messages=[
        Message(role="user", content="hi")], reply=Reply(text="x", model="m", usage=Usage(
            prompt_tokens=10, completion_tokens=2)))
    for column in ("cached_tokens", "cache_write_tokens"):  # the schema before issue 24.5
        store.db.execute(f"ALTER TABLE model_calls DROP COLUMN {column}")
    store.close()
    old = RunStore.open(tmp_path / "old", readonly=True)  # `pdesharp show`: reads, never writes
    assert old.accounting()["tokens_in"] == 10 and old.accounting()["tokens_in_cached"] == 0
    assert [r.cached_mean for r in call_rows(old.db)] == [0.0]
    old.close()
    resumed = RunStore.open(tmp_path / "old")  # a resume: the columns are added
    resumed.record_model_call(model="m", tag="judge.propose", messages=[
        Message(role="user", content="hi")], reply=Reply(text="y", model="m", usage=Usage(
            prompt_tokens=10, completion_tokens=2, cached_tokens=8)))
    assert resumed.accounting()["tokens_in_cached"] == 8
    resumed.close()
