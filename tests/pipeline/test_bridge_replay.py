"""Regression test: the bridge run on Burgers, replayed through the real pipeline.

The 28 replies in tests/fixtures/bridge_burgers were written by a model (a helper agent playing
a strong LLM) through the llm_bridge loopback endpoint, 2026-11-22; they are not recordings of a
commercial API (see the fixture's README). Each call is answered by tag, judge and call order;
solver evaluations are answered from the run's recorded EvalResults by code sha256, so nothing
executes and the test is fast and deterministic. Producing code the run never executed (a patch
applied differently, a genesis block extracted differently) fails the test loudly.

Call sequence: the prompts have changed since the run (score statement, task notes, NO_CHANGE
option, ancestry tree), but no reply in the fixture declines or names a bad id, so the call
sequence per tag and judge is the recorded one: 5 analysis, 4 genesis, 3 x (nominate, propose)
in each of 3 rounds, 1 reporter.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pipeline_scripts import judge_of

from pdesharp.llm.scripted import ScriptedModel
from pdesharp.pipeline import SolveConfig, solve
from pdesharp.records import EvalResult
from pdesharp.rolesets import build_roles
from pdesharp.store import RunStore, code_sha256
from pdesharp.task import load_task

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bridge_burgers"
RECORDED_WINNER = "c1r1-j1"  # 2.50099e-4 nRMSE in 65.2 s (the recorded run had no tie-break)
FASTEST_TIED = "c1r1-j2"  # 2.50280e-4 (0.07 % worse) in 19.7 s


def by_sample(tag: str) -> bool:
    """Calls made concurrently from one prompt, told apart by their sample index."""
    return tag == "genesis" or tag.endswith(".generate")


class BridgeReplies:
    """Answers each call with the recorded reply for (tag, judge) in call order; genesis and a
    baseline's sampling (``*.generate``) by sample index. Judges are told apart by the words
    "You are judge-N," that open their own part of the conversation."""

    def __init__(self, fixture: Path = FIXTURE):
        calls = json.loads((fixture / "calls.json").read_text())
        self.queues: dict[tuple, list[str]] = {}
        for c in calls:
            key = (c["tag"], c["sample_index"] if by_sample(c["tag"]) else c["judge"])
            self.queues.setdefault(key, []).append((fixture / c["file"]).read_text())
        self.used: dict[tuple, int] = {}

    def answer(self, messages, params, index) -> str:
        judge = ""
        if params.tag.startswith("judge."):
            judge = judge_of(messages)
        key = (params.tag, params.sample_index if by_sample(params.tag) else judge)
        n = self.used.get(key, 0)
        replies = self.queues.get(key, [])
        if n >= len(replies):
            raise AssertionError(f"replay: call #{n + 1} for {key} was never made in the "
                                 f"bridge run (it made {len(replies)})")
        self.used[key] = n + 1
        return replies[n]


class RecordedEvaluator:
    """The bridge run's own results, looked up by code sha256; executes nothing."""

    has_test = False  # the bridge run had no test split

    def __init__(self, fixture: Path = FIXTURE):
        data = json.loads((fixture / "evaluations.json").read_text())
        self.results = {sha: EvalResult.model_validate(v["result"]) for sha, v in data.items()}
        self.recorded_as = {sha: v["candidate"] for sha, v in data.items()}
        self.calls: list[str] = []

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        sha = code_sha256(code)
        if sha not in self.results:
            raise AssertionError(f"replay: {label} has code (sha256 {sha[:12]}) that the bridge "
                                 "run never executed: a reply was parsed or a patch applied "
                                 "differently")
        self.calls.append(label)
        return self.results[sha]


def replay(tmp_path, **cfg):
    task = load_task("burgers")
    config = SolveConfig(task="burgers", model="replay:bridge", candidates=4, max_rounds=2,
                         rejudge_cycles=1, convergence=False, max_samples=5,
                         data_dir=str(tmp_path / "no-data"), out=str(tmp_path), **cfg)
    store = RunStore.create(tmp_path, task=task, config=config.model_dump(), run_id="replay")
    replies = BridgeReplies()
    model = ScriptedModel(replies.answer, name="replay:bridge")
    roles = build_roles(config, store, models={"replay:bridge": model})
    evaluator = RecordedEvaluator()
    result = asyncio.run(solve(task, config, store, roles, evaluator))
    return store, result, replies, evaluator


def replay_fixture(fixture: Path, tmp, evaluator=None, **cfg):
    """Replay a bridge fixture folder that holds its own task.yaml and task_facts.json (the
    later fixtures): the solve options are ``cfg``; the evaluator answers from the fixture's
    recorded results (``RecordedEvaluator(fixture)`` unless one is given)."""
    from pdesharp.facts import TaskFacts
    from pdesharp.task import load_task_file

    task = load_task_file(fixture / "task.yaml")
    facts = TaskFacts.model_validate_json((fixture / "task_facts.json").read_text())
    config = SolveConfig(task=str(fixture / "task.yaml"), model="replay:bridge",
                         data_dir=str(tmp / "no-data"), out=str(tmp), **cfg)
    store = RunStore.create(tmp, task=task, config=config.model_dump(), run_id="replay")
    replies = BridgeReplies(fixture)
    roles = build_roles(config, store, models={"replay:bridge": ScriptedModel(
        replies.answer, name="replay:bridge")}, task=task, facts=facts)
    evaluator = evaluator or RecordedEvaluator(fixture)
    result = asyncio.run(solve(task, config, store, roles, evaluator))
    return store, result, replies, evaluator


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    return replay(tmp_path_factory.mktemp("bridge"))


def test_replay_reproduces_the_bridge_run(default_run):
    store, result, replies, evaluator = default_run
    assert result.status == "finished" and store.status == "finished"
    assert sum(replies.used.values()) == 28 == sum(len(q) for q in replies.queues.values())

    analysis = json.loads((store.dir / "analysis.json").read_text())
    assert analysis["route"] == "numerical"
    bounds = {b["expression"]: b for b in analysis["stability"]}
    assert len(bounds) == 5
    # the bound with pi is now a number: 2.78 dx^2 / (pi^2 nu) at dx = 1/1024 (no data here,
    # so the reference grid); umax-dependent bounds stay symbolic without the data's scales
    nu = load_task("burgers").parameters["nu"]
    assert bounds["2.78*dx**2/(pi**2*nu)"]["value"] == pytest.approx(
        2.78 / 1024 ** 2 / (3.141592653589793 ** 2 * nu), rel=1e-12)
    assert bounds["0.6*dx**2/nu"]["value"] == pytest.approx(0.6 / 1024 ** 2 / nu, rel=1e-12)
    assert bounds["0.5*dx/umax"]["value"] is None

    genesis = store.candidates(origin="genesis")
    assert [c.id for c in genesis] == ["g1", "g2", "g3", "g4"]
    assert all(c.static_check == "ok" for c in genesis)
    assert len(genesis[0].justification) > 600  # stored in full, no longer cut at 600

    patches = store.candidates(origin="patch")
    assert len(patches) == 9 and not store.events("patch_failed")  # every patch applied
    # every solver the run executed was produced again, byte for byte, and run once
    assert sorted(evaluator.calls) == sorted(evaluator.recorded_as.values())
    # the hybrids keep every parent the judge named (g3/g4 never ran but were named)
    assert store.candidate("c0r2-j1").parents == ["c0r1-j1", "g1", "g3"]
    assert store.candidate("c0r2-j3").parents == ["g1", "g4"]
    assert store.candidate("c1r1-j2").parents == ["g1", "c0r2-j1", "g3"]
    assert not store.events("invalid_parents")
    assert (store.dir / "report.md").is_file() and store.summary()["status"] == "finished"


def test_winner_recorded_without_tie_break_and_fastest_with_it(default_run, tmp_path):
    _, result, _, _ = default_run
    # default 1 % tie tolerance: g1, c0r2-j2, c1r1-j1 and c1r1-j2 are within 0.07 %; the
    # fastest of them (19.7 s against 48-68 s) wins
    assert result.best_id == FASTEST_TIED
    tie = result.summary["tie_break"]  # the report says why it is not the lowest score
    assert tie["lowest_id"] == RECORDED_WINNER and tie["best_seconds"] < tie["lowest_seconds"]
    _, exact, _, _ = replay(tmp_path, tie_tolerance=0.0)
    assert exact.best_id == RECORDED_WINNER  # the recorded run's winner
