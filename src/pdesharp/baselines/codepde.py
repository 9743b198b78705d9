"""CodePDE repeated sampling (best-of-N) and CodePDE-R refinement, on our store and evaluator.

Repeated sampling: N independent conversations, each asked for a plan plus a solver; each solver
runs on the feedback split, with up to 4 debugging rounds in the same conversation; the best
dev score wins. Refinement: the best programs of a repeated-sampling run are shown (code plus
their one-line result) and the model writes new programs; the best of those wins.

Both are resumable: a sample whose ``sample_done`` event is in the store is not asked again.
"""

from __future__ import annotations

import asyncio
import random

from pdesharp.baselines.common import (
    BaselineConfig,
    EvalBudget,
    SampleOutcome,
    render,
    sample_and_debug,
)
from pdesharp.facts import TaskFacts, statement
from pdesharp.llm.base import ChatModel, Message
from pdesharp.prompting import facts_block, hardware, offered_libraries
from pdesharp.records import EvalResult
from pdesharp.task import Task
from pdesharp.untrusted import BLOCK_RULE


def prompt_context(task: Task, facts: TaskFacts | None) -> dict:
    """What the baselines' prompts say about the task: its description and template, and the
    same facts block PDE-SHARP's prompts carry (:func:`pdesharp.prompting.facts_block`)."""
    said = statement(task, facts)
    return {"task": task, "facts_block": facts_block(task, facts, "nrmse"),
            "description": said["description"], "template": said["template"].rstrip(),
            "libraries": offered_libraries(), "hardware": hardware(facts)}


def generation_messages(task: Task, facts: TaskFacts | None = None) -> list[Message]:
    return [Message(role="system", content=render("system", block_rule=BLOCK_RULE)),
            Message(role="user", content=render("generate", **prompt_context(task, facts)))]


def _done_samples(store, kind: str) -> dict[int, dict]:
    return {e["index"]: e for e in store.events("sample_done") if e.get("phase") == kind}


async def _run_samples(*, kind: str, n: int, prefix: str, make_messages, model: ChatModel,
                       store, evaluator, cfg: BaselineConfig, tag: str,
                       parents_for=None) -> list[dict]:
    """Run ``n`` samples with bounded concurrency; returns every sample's ``sample_done``
    record (including those finished in an earlier session of this run)."""
    done = _done_samples(store, kind)
    budget = EvalBudget(store, cfg.budget_evals, cfg.split)
    sem = asyncio.Semaphore(max(1, cfg.concurrency))

    async def one(i: int) -> None:
        async with sem:
            if budget.exhausted:  # not "done": a resumed run with a larger budget runs it
                store.event("sample_budget_stop", phase=kind, index=i, status="budget")
                return
            out: SampleOutcome = await sample_and_debug(
                index=i, prefix=f"{prefix}{i:02d}", messages=make_messages(i), model=model,
                store=store, evaluator=evaluator, cfg=cfg, budget=budget, tag=tag,
                parents=parents_for(i) if parents_for else None)
            if out.status != "budget":
                store.event("sample_done", phase=kind, **out.as_event())
            else:
                store.event("sample_budget_stop", phase=kind, **out.as_event())

    await asyncio.gather(*(one(i) for i in range(n) if i not in done))
    return list(_done_samples(store, kind).values())


async def repeated_sampling(task: Task, *, model: ChatModel, store, evaluator,
                            cfg: BaselineConfig, tag: str = "codepde",
                            facts: TaskFacts | None = None) -> list[dict]:
    """CodePDE's best-of-N sampling. ``model`` is the (recording) model to sample from; the
    OptiLLM baselines pass a technique wrapped around it."""
    return await _run_samples(kind="sample", n=cfg.samples, prefix="s",
                              make_messages=lambda i: generation_messages(task, facts), model=model,
                              store=store, evaluator=evaluator, cfg=cfg, tag=tag)


class Seed:
    """A program shown to the model in refinement: its code and its one-line result."""

    def __init__(self, cid: str, code: str, result: EvalResult):
        self.id, self.code, self.result = cid, code, result

    @property
    def result_line(self) -> str:
        return self.result.summary_line()


def best_programs(seed_store, k: int, split: str = "dev", feedback: str = "nrmse") -> list[Seed]:
    """The ``k`` best distinct programs (by score on ``split``) of a finished run."""
    rows = seed_store.db.execute(
        "SELECT candidate_id, code_sha256, result FROM evaluations WHERE split=? AND feedback=? "
        "AND status='ok' AND score IS NOT NULL ORDER BY score, seq", (split, feedback)).fetchall()
    seeds, seen = [], set()
    for r in rows:
        if r["code_sha256"] in seen:
            continue
        cand = seed_store.candidate(r["candidate_id"])
        if cand is None:
            continue
        seen.add(r["code_sha256"])
        seeds.append(Seed(cand.id, cand.code, EvalResult.model_validate_json(r["result"])))
        if len(seeds) == k:
            break
    return seeds


async def refinement(task: Task, seeds: list[Seed], *, model: ChatModel, store, evaluator,
                     cfg: BaselineConfig, tag: str = "codepde-r",
                     facts: TaskFacts | None = None) -> list[dict]:
    """CodePDE-R: ``cfg.refine_samples`` programs, each from a prompt showing all seeds in a
    fresh random order (CodePDE draws ``random.sample`` of the seeds for every prompt)."""
    if not seeds:
        raise ValueError("refinement needs at least one seed program that ran ok; the seed run "
                         "has none (run more codepde samples or check its failures)")
    from pdesharp.records import Candidate

    for s in seeds:  # the seeds are part of the lineage (not re-executed, as in CodePDE)
        if store.candidate(f"seed-{s.id}") is None:
            store.add_candidate(Candidate(id=f"seed-{s.id}", code=s.code, origin="seed",
                                          title=f"seed {s.id}: {s.result_line}"))
    orders = []
    rng = random.Random(cfg.seed)
    for _ in range(cfg.refine_samples):
        order = list(seeds)
        rng.shuffle(order)
        orders.append(order)

    def messages(i: int) -> list[Message]:
        return [Message(role="system", content=render("system", block_rule=BLOCK_RULE)),
                Message(role="user", content=render("refine", **prompt_context(task, facts),
                                                    seeds=orders[i]))]

    return await _run_samples(kind="refine", n=cfg.refine_samples, prefix="r",
                              make_messages=messages, model=model, store=store,
                              evaluator=evaluator, cfg=cfg, tag=tag,
                              parents_for=lambda i: [f"seed-{s.id}" for s in orders[i]])
