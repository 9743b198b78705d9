"""Issue 24, items 5 and 7: judge prompts a provider's prefix cache can serve, same decisions.

The real-reply Burgers run (tests/fixtures/bridge_burgers_codepde: 34 replies written by a model
through the llm_bridge loopback endpoint, not recordings of a commercial API; see its README) is
replayed in the paper's set-up (`--no-floor-saturation`, so the search runs the rounds it ran):
each call is answered with the next recorded reply of its role (analysis step, Genesis sample,
judge-N nominate/propose, reporter), each evaluation with the result the recorded prompts stated
for that code (evaluations.json, rebuilt by ../fixtures/bridge_stated_results.py), so nothing
executes.

The measure is the one a provider's prefix cache applies: a request's tokens that no earlier
request of the run began with (the longest common prefix with any earlier request, whole
tokens), with a fixed estimator of 4 characters a token (the ScriptedModel's). When recorded,
the judges' requests had 54k such tokens for 12 evaluations (4.5k per evaluation): their system
prompts began with the judge's name, every turn re-listed the pool, and the task and analysis
were in each judge's own system prompt.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path

import pytest
from llm_server import common_prefix
from test_bridge_replay import BridgeReplies, RecordedEvaluator

from pdesharp.llm.base import ModelError
from pdesharp.llm.scripted import ScriptedModel
from pdesharp.pipeline import SolveConfig, solve
from pdesharp.rolesets import build_roles
from pdesharp.store import RunStore
from pdesharp.task import load_task

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bridge_burgers_codepde"
CHARS_PER_TOKEN = 4
LIMIT = 2000  # issue 24's target: judge tokens no prefix cache serves, per evaluation
# The recorded run's decisions (its reporter prompt lists every solver it ran and its parents;
# the README the winner): the modifications that ran, with their parents, and the winner
RECORDED_PATCHES = {
    "c0r1-j1": ["g2"], "c0r1-j2": ["g1"],
    "c0r2-j1": ["c0r1-j2", "c0r1-j1"], "c0r2-j2": ["c0r1-j2", "c0r1-j1"],
    "c0r2-j3": ["c0r1-j1", "c0r1-j2"], "c1r1-j2": ["c0r2-j2"],
    "c1r2-j1": ["c1r1-j2"], "c1r2-j2": ["c1r1-j2"], "c1r2-j3": ["c1r1-j2"]}
RECORDED_WINNER = "c1r2-j1"
RECORDED_DECLINES = [(0, 1, "judge-3"), (1, 1, "judge-1"), (1, 1, "judge-3")]


def paper_setup(tmp: Path) -> tuple[SolveConfig, RunStore]:
    """The recorded command (`pdesharp solve burgers --task-facts codepde --candidates 4
    --max-samples 5 --max-evals 13`) in the paper's set-up."""
    task = load_task("burgers")
    config = SolveConfig(task="burgers", model="replay:bridge", candidates=4, max_samples=5,
                         max_evals=13, task_facts="codepde", floor_saturation=False,
                         data_dir=str(tmp / "no-data"), out=str(tmp))
    return config, RunStore.create(tmp, task=task, config=config.model_dump(), run_id="replay")


def run(config, store, model, evaluator):
    task = load_task("burgers")
    roles = build_roles(config, store, models={"replay:bridge": model}, task=task)
    return asyncio.run(solve(task, config, store, roles, evaluator))


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    config, store = paper_setup(tmp_path_factory.mktemp("economy"))
    replies, evaluator = BridgeReplies(FIXTURE), RecordedEvaluator(FIXTURE)
    result = run(config, store, ScriptedModel(replies.answer, name="replay:bridge"), evaluator)
    return store, result, replies, evaluator


def requests(store) -> list[tuple[str, str]]:
    """(tag, the request as one text) of every call in order: each message's role, then its
    content, as a chat template lays a conversation out."""
    return [(tag, "".join(f"<|{m['role']}|>{m['content']}" for m in json.loads(messages)))
            for tag, messages in store.db.execute(
                "SELECT tag, messages FROM model_calls WHERE error = '' ORDER BY seq")]


def uncacheable(sent: list[tuple[str, str]]) -> list[tuple[str, int]]:
    """(tag, tokens of the request that no earlier request began with) for every call: its
    tokens less the whole tokens of its longest common prefix with any earlier request."""
    out = []
    for i, (tag, text) in enumerate(sent):
        served = max((common_prefix(text, earlier) for _, earlier in sent[:i]), default=0)
        out.append((tag, math.ceil(len(text) / CHARS_PER_TOKEN) - served // CHARS_PER_TOKEN))
    return out


def test_judge_tokens_no_prefix_cache_serves_are_at_most_2000_per_evaluation(replayed):
    store = replayed[0]
    evaluations = store.n_feedback_evaluations
    assert evaluations == 12
    judges = [(tag, n) for tag, n in uncacheable(requests(store)) if tag.startswith("judge")]
    assert len(judges) == 24
    new = sum(n for _, n in judges)
    assert new / evaluations <= LIMIT, (new, judges)
    # what the cache serves: most of what the judges send (the recorded run: 29 %)
    total = sum(math.ceil(len(text) / CHARS_PER_TOKEN) for tag, text in requests(store)
                if tag.startswith("judge"))
    assert new < 0.15 * total


def test_the_judges_opening_requests_differ_only_from_the_judges_name_on(replayed):
    store = replayed[0]
    opening = [json.loads(m) for (m,) in store.db.execute(
        "SELECT messages FROM model_calls WHERE tag = 'judge.nominate' ORDER BY seq")]
    # each cycle's first three nominations: system, Genesis, the pool now, then the judge
    for cycle in (opening[:3], opening[6:9]):
        assert [m["role"] for m in cycle[0]] == ["system", "user", "user", "user"]
        for messages in cycle[1:]:
            assert messages[:3] == cycle[0][:3]
        names = [m[3]["content"].split(",", 1)[0] for m in cycle]
        assert sorted(names) == ["You are judge-1", "You are judge-2", "You are judge-3"]
        assert all("You are judge-" not in m["content"] for m in cycle[0][:3])
    # the system prompt and the Genesis message are the same in both cycles
    assert opening[0][:2] == opening[6][:2]
    assert all(m.get("cache") for m in opening[0])  # cache points for explicit-cache providers


def test_the_replay_makes_the_recorded_decisions(replayed):
    store, result, replies, evaluator = replayed
    assert result.status == "finished"
    # every recorded reply was asked for, once, by the role and judge that received it
    assert sum(replies.used.values()) == 34 == sum(len(q) for q in replies.queues.values())
    # every solver the run executed was produced again, byte for byte, and nothing else ran
    assert sorted(evaluator.calls) == sorted(evaluator.recorded_as.values())
    # the nominations: each judge's nominee as its recorded reply names it
    calls = json.loads((FIXTURE / "calls.json").read_text())
    recorded = {}
    for c in calls:
        if c["tag"] == "judge.nominate":
            text = (FIXTURE / c["file"]).read_text()
            nominee = re.findall(r'"nominee"\s*:\s*"([^"]+)"', text)[-1]
            recorded.setdefault(c["judge"], []).append(nominee)
    made = {}
    for e in store.events("nomination"):
        made.setdefault(e["judge"], []).append(e["nominee"])
    assert made == recorded
    patches = {c.id: c.parents for c in store.candidates(origin="patch")}
    assert patches == RECORDED_PATCHES
    assert not store.events("patch_failed")
    assert sorted((e["cycle"], e["round"], e["judge"]) for e in store.events("no_change")) \
        == RECORDED_DECLINES
    assert result.best_id == RECORDED_WINNER
    assert "saturation in cycle 1, round 2" in result.stop_reason


def test_a_run_killed_mid_tournament_resumes_by_replaying_every_judge_turn(tmp_path):
    # the judges' conversations are rebuilt on resume from the replayed calls: every request
    # of the killed session must come again, byte for byte, or its reply would be asked anew
    config, store = paper_setup(tmp_path)
    replies = BridgeReplies(FIXTURE)

    def dies_in_cycle_1(messages, params, index):
        if params.tag == "judge.propose" and "cycle 1" in messages[-1].content:
            raise ModelError("endpoint http://127.0.0.1:9 refused the connection")
        return replies.answer(messages, params, index)

    with pytest.raises(ModelError):
        run(config, store, ScriptedModel(dies_in_cycle_1, name="replay:bridge"),
            RecordedEvaluator(FIXTURE))
    answered = store.db.execute("SELECT COUNT(*) FROM model_calls WHERE error = ''").fetchone()[0]
    assert answered >= 24  # through cycle 1's nominations
    reached: list[str] = []

    def healthy(messages, params, index):
        reached.append(params.tag)
        return replies.answer(messages, params, index)

    evaluator = RecordedEvaluator(FIXTURE)
    result = run(config, RunStore.open(store.dir),
                 ScriptedModel(healthy, name="replay:bridge"), evaluator)
    replayed = store.db.execute("SELECT COUNT(*) FROM model_calls WHERE source = 'replay'"
                                ).fetchone()[0]
    assert replayed == answered  # each call of the killed session came again and was replayed
    assert len(reached) == 34 - answered and sum(replies.used.values()) == 34
    assert result.best_id == RECORDED_WINNER
    assert not evaluator.calls or set(evaluator.calls) <= {
        "c1r1-j2", "c1r2-j1", "c1r2-j2", "c1r2-j3"}  # only what the killed session never ran
