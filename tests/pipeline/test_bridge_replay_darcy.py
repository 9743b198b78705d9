"""Regression test: the real-reply check of the prompts branch, a codepde-facts Darcy run.

The 32 replies in tests/fixtures/bridge_darcy_codepde were written by a model (a helper agent
playing a strong LLM) through the llm_bridge loopback endpoint, 2026-11-25; they are not
recordings of a commercial API (see the fixture's README). Calls are answered by tag, judge and
call order; evaluations from the run's recorded results by code sha256, so nothing executes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_scripts import calls, prompts
from test_bridge_replay import replay_fixture
from test_prompt_facts import CODEPDE_FACTS, TIME_STEPPING

from pdesharp.task import load_task_file
from pdesharp.untrusted import BLOCK_RULE

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bridge_darcy_codepde"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    return replay_fixture(FIXTURE, tmp_path_factory.mktemp("darcy"), candidates=3,
                          max_samples=3, task_facts="codepde")


def test_replay_reproduces_the_run(replayed):
    store, result, replies, evaluator = replayed
    assert result.status == "finished"
    assert sum(replies.used.values()) == 32 == sum(len(q) for q in replies.queues.values())
    assert sorted(evaluator.calls) == sorted(evaluator.recorded_as.values())  # each once
    # c0r3-j1 and c0r2-j2 tie at the float32 floor (c0r3-j1 lower by round-off) and
    # c0r3-j1 is faster (8.47 against 14.5 s per sample)
    assert result.best_id == "c0r3-j1" and result.best_dev_score == pytest.approx(2.5529e-8,
                                                                                  rel=1e-4)
    assert "every judge declined" in result.stop_reason
    analysis = json.loads((store.dir / "analysis.json").read_text())
    (stability,) = [s for s in analysis["steps"] if s["name"] == "stability"]
    assert stability["skipped"].startswith("the task is steady")


def test_every_prompt_states_codepde_facts_only(replayed):
    store = replayed[0]
    task = load_task_file(FIXTURE / "task.yaml")
    messages = [m["content"] for tag in ("analysis", "genesis", "judge", "reporter")
                for c in calls(store, tag) for m in c]
    whole = "\n".join(messages)
    for fact in CODEPDE_FACTS["darcy"]:
        assert fact in whole, fact
    # what only the task spec or the data could have told (the judges' own words, quoted in
    # later prompts, name grid conventions and splines: they inferred them from the scores)
    forbidden = ["Reference data:", "Initial conditions of the data", "How a solver is evaluated",
                 "Parameters passed to the solver", "PDEBench", "FNO", "Gaussian random field",
                 "421", *TIME_STEPPING, task.title, task.reference, task.initial_condition,
                 *task.notes]
    for m in messages:
        for fact in filter(None, forbidden):
            assert fact not in m, fact
    for c in calls(store, "judge"):
        assert BLOCK_RULE in c[0]["content"]


def test_a_base_seen_as_a_diff_is_printed_as_a_diff_from_code_shown_in_full(replayed):
    store = replayed[0]
    # round 2: judge-1's base c0r1-j1 was listed as a diff against g1 in its nomination
    # prompt; the modification prompt puts it in front of the judge to be quoted: the diff
    # from g1, which the conversation has in full (issue 24.5: not printed again in full)
    propose = [p for p in prompts(store, "judge.propose") if "# Round 2 of cycle 0" in p
               and "## Your base solver\n\nc0r1-j1" in p]
    assert propose and all("Its code is g1 (shown in full earlier in this conversation) with "
                           "this change" in p and "```diff\n--- g1.py\n+++ c0r1-j1.py" in p
                           for p in propose)
    rejudge = [p for p in prompts(store, "judge.nominate") if "cycle 1: nominate" in p]
    assert rejudge and all("nominated it in an earlier cycle" not in p for p in rejudge)
