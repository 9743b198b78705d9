"""Budgets (USD, tokens, evaluations) and the concurrency limit."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pdesharp.llm.base import BudgetExceeded, ChatParams, Message, Reply, Usage
from pdesharp.llm.budget import Budget, ConcurrencyLimit, LimitedModel, MeteredModel, shared_limit
from pdesharp.llm.scripted import ScriptedModel

MSGS = [Message(role="user", content="q")]


def reply(cost=0.0, tokens=(0, 0), cached=False):
    return Reply(text="r", model="m", cost_usd=cost, cached=cached,
                 usage=Usage(prompt_tokens=tokens[0], completion_tokens=tokens[1]))


def test_usd_limit_stops_the_next_call_not_the_paid_one():
    inner = ScriptedModel({"*": [reply(cost=0.6), reply(cost=0.6), reply(cost=0.6)]})
    model = MeteredModel(inner, Budget(max_usd=1.0))
    asyncio.run(model.chat(MSGS))
    paid = asyncio.run(model.chat(MSGS))  # starts at $0.6 < $1: allowed, overshoots to $1.2
    assert paid.text == "r"
    with pytest.raises(BudgetExceeded, match=r"USD budget spent: \$1.2000 of max \$1.0000"):
        asyncio.run(model.chat(MSGS))
    assert len(inner.calls) == 2  # the refused call never reached the model
    assert model.budget.remaining["usd"] == 0.0


def test_token_limit_counts_prompt_and_completion_but_not_cache_hits():
    b = Budget(max_tokens=100)
    b.charge(reply(tokens=(30, 20)))
    b.charge(reply(tokens=(500, 500), cached=True))
    assert b.spent.tokens == 50 and b.remaining["tokens"] == 50 and b.exhausted() is None
    b.charge(reply(tokens=(40, 10)))
    with pytest.raises(BudgetExceeded, match="token budget spent: 100 of max 100"):
        b.check()
    assert b.spent.calls == 3 and b.spent.cached_calls == 1


def test_cached_replies_cost_nothing_against_usd():
    b = Budget(max_usd=0.01)
    b.charge(reply(cost=5.0, cached=True))  # a hit carries cost 0 by contract; be robust anyway
    assert b.spent.usd == 0.0


def test_eval_limit_is_exact_under_threads():
    b = Budget(max_evals=50)
    refused = []

    def worker():
        for _ in range(20):
            try:
                b.charge_eval()
            except BudgetExceeded:
                refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert b.spent.evals == 50 and len(refused) == 80 - 50
    with pytest.raises(BudgetExceeded, match="evaluation budget spent: 50 of max 50"):
        b.charge_eval()


def test_unlimited_budget_and_validation():
    b = Budget()
    for _ in range(3):
        b.charge_eval()
        b.charge(reply(cost=100.0, tokens=(10**6, 10**6)))
    b.check()
    assert b.remaining == {"usd": None, "tokens": None, "evals": None}
    with pytest.raises(ValueError, match="max_usd"):
        Budget(max_usd=-1)


def test_limited_model_caps_calls_in_flight():
    in_flight = peak = 0

    class Slow:
        name = "slow:test"

        async def chat(self, messages, params=None):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return reply()

    model = LimitedModel(Slow(), 3)

    async def main():
        await asyncio.gather(*[model.chat(MSGS, ChatParams(sample_index=i)) for i in range(12)])

    asyncio.run(main())
    assert peak == 3
    asyncio.run(main())  # a second event loop works with the same limit object
    assert peak == 3 and model.name == "slow:test"


def test_shared_limit_is_per_endpoint_key():
    a = shared_limit("http://endpoint-a.test/v1", 4)
    assert shared_limit("http://endpoint-a.test/v1", 99) is a and a.n == 4
    assert shared_limit("http://endpoint-b.test/v1", 2) is not a
    with pytest.raises(ValueError):
        ConcurrencyLimit(0)
