"""Issue 21, items 5-7 and the wording of 12: the base a judge patches is always in front of it
in full; a conversation does not repeat what it already said; a listing says why code is not
shown and lets a judge read the leader's parents; the prompts promise only what holds.

The judge is driven directly with a scripted model (replies written by us); the pool is built
here, nothing executes.
"""

from __future__ import annotations

import asyncio

from pipeline_scripts import nominate, patch, turn

from pdesharp.facts import TaskFacts, build_facts
from pdesharp.llm.scripted import ScriptedModel
from pdesharp.prompting import (constraints, offered_libraries, render, strip_label,
                                task_context)
from pdesharp.records import Candidate, EvalResult
from pdesharp.roles import PoolEntry, RoundInfo
from pdesharp.synthesis.judges import LLMJudge
from pdesharp.task import load_task

TASK = load_task("advection")


def code(tag: str, lines: int = 40) -> str:
    """A solver body of ``lines`` distinct lines (so diffs are small against near-copies)."""
    body = "\n".join(f"    x{i} = {i}  # {tag if i == 7 else 'common'}" for i in range(lines))
    return f"import numpy as np\n\ndef solver(u0_batch, t_coordinate, beta):\n{body}\n" \
           "    return None\n"


def unlike(c: Candidate) -> Candidate:
    """``c`` with code unlike every other solver's (no small diff against any of them)."""
    c.code = c.code.replace("common", f"{c.id} only " * 4)
    return c


def ok(score: float) -> EvalResult:
    return EvalResult(status="ok", split="dev", feedback="nrmse", n_samples=2, nrmse=score,
                      solver_seconds=0.02)


def cand(cid: str, tag: str, parents=(), origin="genesis", justification="") -> Candidate:
    return Candidate(id=cid, code=code(tag), origin=origin, parents=list(parents),
                     judge="judge-2" if origin == "patch" else None, title=f"design {cid}",
                     justification=justification or f"why {cid} is good: {tag}")


def judge_with(replies: dict, **kw) -> tuple[LLMJudge, ScriptedModel]:
    model = ScriptedModel(replies)
    judge = LLMJudge(model, "judge-1", facts=TaskFacts.from_spec(TASK), **kw)
    judge.observe(RoundInfo(cycle=0, round=1, max_rounds=2, cycles=2))
    return judge, model


def test_a_base_seen_only_as_a_diff_is_printed_as_a_diff_from_code_shown_in_full():
    g1, c1 = cand("g1", "g1"), cand("c1", "c1", parents=["g1"], origin="patch")
    pool = [PoolEntry(candidate=g1, result=ok(1e-3)), PoolEntry(candidate=c1, result=ok(2e-3))]
    judge, model = judge_with({"judge.nominate": [nominate("c1")],
                               "judge.propose": [patch("    x3 = 3  # common",
                                                       "    x3 = 4", "t", ["c1"])] * 3})
    asyncio.run(judge.nominate(TASK, None, pool))
    listed = turn(model.calls[0].messages)
    assert "Code: g1 with this change:" in listed and c1.code not in listed  # a diff only
    asyncio.run(judge.propose(TASK, pool[1], pool, "nrmse"))
    prompt = turn(model.calls[1].messages).split("## Your base solver")[1]
    # to be patched, the base is in front of the judge: g1 in full earlier, and the change
    assert "Its code is g1 (shown in full earlier in this conversation) with this change" \
        in prompt and "+    x7 = 7  # c1" in prompt and c1.code.strip() not in prompt
    # a base the conversation already showed in full is referred to, not printed again
    asyncio.run(judge.propose(TASK, pool[0], pool, "nrmse"))
    again = turn(model.calls[2].messages)
    assert "Its full code was shown earlier in this conversation" in again
    assert g1.code.strip() not in again


def test_a_base_far_from_any_code_shown_in_full_is_printed_in_full():
    g1 = unlike(cand("g1", "g1"))
    c1 = unlike(cand("c1", "c1", parents=["g1"], origin="patch"))  # a rewrite of g1
    g2 = cand("g2", "g2")
    pool = [PoolEntry(candidate=c1, result=ok(1e-3)), PoolEntry(candidate=g1, result=ok(2e-3)),
            PoolEntry(candidate=g2, result=ok(3e-3))]
    judge, model = judge_with({"judge.nominate": [nominate("c1")],
                               "judge.propose": [patch("    x3 = 3", "    x3 = 4", "t",
                                                       ["c1"])]}, code_budget=1800)
    asyncio.run(judge.nominate(TASK, None, pool))
    assert c1.code.strip() not in turn(model.calls[0].messages)  # over the budget
    asyncio.run(judge.propose(TASK, pool[0], pool, "nrmse"))
    prompt = turn(model.calls[1].messages).split("## Your base solver")[1]
    assert "Its full code:" in prompt and c1.code.strip() in prompt


def test_a_conversation_does_not_repeat_descriptions_and_says_why_code_is_withheld():
    genesis = [PoolEntry(candidate=unlike(cand("g1", "g1")), result=ok(9e-3))]
    # five patches of g1, each unlike it (no small diff): the 3 best and the leader's parent
    # (g1, in the Genesis message) are shown in full, the other two are summarised
    patches = [PoolEntry(candidate=unlike(cand(f"c{i}", f"c{i}", parents=["g1"],
                                               origin="patch")), result=ok(i * 1e-3))
               for i in range(1, 6)]
    pool = patches + genesis
    judge, model = judge_with({"judge.nominate": [nominate("c1")],
                               "judge.propose": [patch("    x3 = 3  # common", "    x3 = 4",
                                                       "t", ["c1"])]})
    asyncio.run(judge.nominate(TASK, None, pool))
    asyncio.run(judge.propose(TASK, pool[0], pool, "nrmse"))
    conversation = "\n".join(m.content for m in model.calls[-1].messages)
    for e in pool:  # each justification once in the whole conversation
        assert conversation.count(e.candidate.justification) == 1, e.candidate.id
    propose = turn(model.calls[-1].messages)
    # nothing is new since the nomination: no solver is listed again, the ranking line has all
    assert "### Solver" not in propose
    assert "1. c1, 2. c2, 3. c3, 4. c4, 5. c5, 6. g1." in propose
    nominate_prompt = turn(model.calls[0].messages)
    # c4, c5 rank below the 3 shown in full: the listing says so (not "prompt budget")
    assert "prompt budget" not in nominate_prompt
    assert nominate_prompt.count("Code: not shown: full code goes to the 3 best-ranked "
                                 "solvers and the leader's parents") == 2


def test_a_judges_own_patch_is_listed_with_its_result_only():
    # the judge proposed it in this conversation: its title, justification and SEARCH/REPLACE
    # blocks are in the judge's own reply; only the result is news
    g1 = cand("g1", "g1")
    mine = cand("c1", "c1", parents=["g1"], origin="patch", justification="my reasons")
    mine.judge = "judge-1"
    theirs = cand("c2", "c2", parents=["g1"], origin="patch", justification="their reasons")
    pool = [PoolEntry(candidate=mine, result=ok(1e-3)),
            PoolEntry(candidate=theirs, result=ok(2e-3)), PoolEntry(candidate=g1, result=ok(3e-3))]
    judge, model = judge_with({"judge.nominate": [nominate("g1"), nominate("c1")],
                               "judge.propose": [patch("    x3 = 3  # common", "    x3 = 4",
                                                       "t", ["g1"])]})
    asyncio.run(judge.nominate(TASK, None, pool[2:]))
    asyncio.run(judge.propose(TASK, pool[2], pool[2:], "nrmse"))
    judge.observe(RoundInfo(cycle=0, round=2, max_rounds=2, cycles=2))
    asyncio.run(judge.nominate(TASK, None, pool))
    text = turn(model.calls[2].messages)
    assert "Origin: your modification of g1 (cycle 0, round 0), as you proposed it." in text
    assert "my reasons" not in text and "+    x7 = 7  # c1" not in text
    assert "their reasons" in text and "+    x7 = 7  # c2" in text  # c2: a diff from g1
    assert "1. c1, 2. c2, 3. g1." in text


def test_the_budget_reason_is_given_when_the_budget_is_what_withholds_code():
    g1 = unlike(cand("g1", "g1"))
    pool = [PoolEntry(candidate=unlike(cand(f"c{i}", f"c{i}", parents=["g1"], origin="patch")),
                      result=ok(i * 1e-3)) for i in range(1, 4)]
    pool.append(PoolEntry(candidate=g1, result=ok(9e-3)))
    judge, model = judge_with({"judge.nominate": [nominate("c1")]}, code_budget=2500)
    asyncio.run(judge.nominate(TASK, None, pool))
    text = turn(model.calls[0].messages)
    assert "this prompt's code budget (2,500 characters) was spent" in text


def test_the_leaders_parents_are_readable():
    # the leader h is a hybrid of p1 and p2, which rank 4th and 5th: past the top-3 rule
    parents = [unlike(cand("p1", "p1")), unlike(cand("p2", "p2"))]
    h = unlike(cand("h", "h", parents=["p1", "p2"], origin="patch"))
    others = [unlike(cand("g1", "g1")), unlike(cand("g2", "g2"))]
    pool = [PoolEntry(candidate=h, result=ok(1e-4)),
            *(PoolEntry(candidate=c, result=ok(s)) for c, s in zip(others, (2e-4, 3e-4))),
            *(PoolEntry(candidate=p, result=ok(s)) for p, s in zip(parents, (4e-4, 5e-4)))]
    judge, model = judge_with({"judge.nominate": [nominate("h")]})
    asyncio.run(judge.nominate(TASK, None, pool))
    text = turn(model.calls[0].messages)
    for p in parents:
        assert p.code.strip() in text, p.id


def test_every_cycle_opens_with_the_same_genesis_message():
    # the Genesis solvers as written, no result: the same text in every cycle, so a
    # provider's prefix cache serves it to every judge after the first request (a solver
    # nobody nominated is there too: its code costs a cache read, not a withheld listing)
    ran, never = unlike(cand("g1", "g1")), unlike(cand("g2", "g2"))
    pool = [PoolEntry(candidate=ran, result=ok(1e-3)), PoolEntry(candidate=never)]
    judge, model = judge_with({"judge.nominate": [nominate("g1"), nominate("g1")]})
    asyncio.run(judge.nominate(TASK, None, pool))
    judge.reset()
    judge.observe(RoundInfo(cycle=1, round=1, max_rounds=2, cycles=2))
    asyncio.run(judge.nominate(TASK, None, pool))
    first, second = model.calls[0].messages, model.calls[1].messages
    assert first[:2] == second[:2]
    genesis = first[1].content
    assert never.code.strip() in genesis and ran.code.strip() in genesis
    assert "Result" not in genesis and "1.000e-03" not in genesis
    # the pool now: g1's result (its code is in the Genesis message), g2 not run yet
    assert "1.000e-03" in second[2].content and "Not executed yet: g2." in second[2].content
    assert second[2].content.count(ran.code.strip()) == 0


# -- promises that hold ----------------------------------------------------------------------
def _system(facts: TaskFacts) -> str:
    judge, model = judge_with({"judge.nominate": [nominate("g1")]})
    judge.facts = facts
    asyncio.run(judge.nominate(TASK, None, [PoolEntry(candidate=cand("g1", "g1"))]))
    return model.calls[0].messages[0].content


def test_the_final_test_is_promised_only_when_there_is_a_test_split():
    without = _system(TaskFacts.from_spec(TASK).model_copy(update={"test_split": False}))
    with_test = _system(TaskFacts.from_spec(TASK).model_copy(update={"test_split": True}))
    assert "held-out test data" not in without and "There is no held-out test split" in without
    assert "scored once on held-out test data that no judge sees" in with_test


def test_no_robustness_claim_without_the_refinement_study(shared_data):
    darcy = load_task("darcy")
    for convergence in (False, True):
        facts = build_facts(darcy, data_dir=shared_data, max_samples=1, convergence=convergence)
        text = render("_task", **task_context(darcy, "nrmse", facts))
        assert ("subsampled" in text) == convergence
        assert "robustness test" not in text
        assert "calls `solver(a)` once with the one sample of the development split" in text


def test_wording_fixes():
    from pdesharp.prompting import analysis_context
    from pdesharp.records import Analysis, Classification

    assert strip_label("**Justification.** - conservative", "justification") == "- conservative"
    libs = offered_libraries()  # no plotting, no file I/O: those libraries are not offered
    assert "h5py" not in libs and "matplotlib" not in libs and "numpy" in libs
    assert not any("output frame" in c for c in constraints(load_task("darcy")))
    analysis = Analysis(classification=Classification(space_order=2, linear=True,
                                                      pde_type="elliptic", boundary="u = 0"))
    darcy = load_task("darcy")
    genesis = render("genesis", **task_context(darcy, "nrmse"), **analysis_context(analysis),
                     index=1, total=1, earlier=[], diverse=False)
    assert "Vectorise over the batch" not in genesis
    assert "a system built from that sample's own coefficient or a time step set by that " \
        "sample's own wave speeds, is done per sample" in " ".join(genesis.split())
    info = RoundInfo(cycle=0, round=2, max_rounds=2, cycles=1, ranking_floor=1e-3,
                     best_score=5e-4)
    text = render("judge_propose", info=info, base_id="g1", base_title="t", base_code="x",
                  base_shown=False, base_against="", base_diff="", base_result="r",
                  entries=[], ranking={"ranked": []})
    assert "A pure speed-up that leaves the output unchanged is welcome" in " ".join(text.split())
