"""What every baseline shares: prompts, code extraction, call recording, the evaluation budget,
and CodePDE's generate-then-debug loop for one sample.

Accounting is the same as for ``sharp``: every model call goes through the pipeline's
:class:`pdesharp.recording.RecordingModel` into the run store's ``model_calls`` table (which
also replays a killed run's own replies when it is resumed), every solver execution through
:meth:`pdesharp.store.RunStore.evaluate` (one counted *solver evaluation* per execution on the
feedback split, debugging re-runs included), and every request to the model to fix a failed
solver is one *debugging iteration* (``RunStore.count_debug_iteration``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jinja2
from pydantic import BaseModel, ConfigDict

from pdesharp.facts import FactsLevel
from pdesharp.prompting import extract_code  # one extraction rule for every method
from pdesharp.llm.base import ChatModel, ChatParams, Message, ModelError
from pdesharp.records import Candidate, EvalResult, Feedback, Origin, Split
from pdesharp.store import SEARCH_ROWS
from pdesharp.untrusted import BLOCK_RULE, one_line, prompt_block

OUTPUT_TAIL = 5000  # characters of solver output fed back when debugging (as CodePDE does)

@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("pdesharp", "prompts/baselines"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, **context: Any) -> str:
    """Render ``prompts/baselines/<name>.j2`` (StrictUndefined: a missing variable is an error)."""
    return _env().get_template(f"{name}.j2").render(**context).strip() + "\n"


class BaselineConfig(BaseModel):
    """Settings shared by the baselines. Defaults follow CodePDE (see docs/baselines.md)."""

    model_config = ConfigDict(extra="forbid")

    samples: int = 32  # independent samples (repeated sampling); cot/moa/cepo use it too
    debug_rounds: int = 4  # CodePDE: 5 trials per sample = 1 generation + 4 debugging rounds
    refine_seeds: int = 5  # codepde-r: best programs of a codepde run shown as seeds
    refine_samples: int = 12  # codepde-r: refined programs written
    split: Split = "dev"  # the feedback split; test results are never shown to a model
    feedback: Feedback = "nrmse"
    temperature: float | None = 0.7
    max_tokens: int | None = 8192
    concurrency: int = 4  # samples in flight at once (model calls overlap, executions queue)
    budget_evals: int | None = None  # stop starting new executions once this many were counted
    test: bool = True  # evaluate the winner on the test split when that data exists
    seed: int = 0  # for the seed order shown in refinement prompts
    task_facts: FactsLevel = "full"  # what the prompts state about the task (pdesharp.facts)
    # The winner: the lowest score (CodePDE's rule) under "accuracy"; under a fastest-*
    # objective the same rule and re-timing as PDE-SHARP's (pdesharp.synthesis.ranking/timing)
    objective: str = "accuracy"
    time_margin: float = 0.3
    retime: int | None = None


class EvalBudget:
    """The ``--budget-evals`` limit: counted executions on the feedback split, in flight included.

    asyncio runs one coroutine at a time, so a plain counter is race-free."""

    def __init__(self, store, limit: int | None, split: Split):
        self.store, self.limit, self.split = store, limit, split
        self.in_flight = 0

    def used(self) -> int:
        return counted_evaluations(self.store, self.split) + self.in_flight

    def try_reserve(self) -> bool:
        if self.limit is not None and self.used() >= self.limit:
            return False
        self.in_flight += 1
        return True

    def release(self) -> None:
        self.in_flight -= 1

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.used() >= self.limit


def counted_evaluations(store, split: str | None = None) -> int:
    """Counted solver executions in a run, optionally on one split only."""
    if split is None:
        return store.n_evaluations
    return store.db.execute(f"SELECT COUNT(*) FROM evaluations WHERE {SEARCH_ROWS} AND split=?",
                            (split,)).fetchone()[0]


@dataclass
class SampleOutcome:
    """How one sample (generation plus its debugging rounds) ended."""

    index: int
    status: str  # "ok", "failed" (last trial did not run ok), "no_code", "model_error", "budget"
    candidate_id: str | None = None  # the last candidate written (None if no code ever came)
    result: EvalResult | None = None
    trials: int = 0
    note: str = ""
    candidate_ids: list[str] = field(default_factory=list)

    def as_event(self) -> dict:
        return {"index": self.index, "status": self.status, "candidate": self.candidate_id,
                "trials": self.trials, "note": self.note, "candidates": self.candidate_ids,
                "score": self.result.score if self.result else None}


def debug_prompt(result: EvalResult) -> str:
    """CodePDE's feedback after a failed run: NaN/inf gets the stability prompt, anything else
    (exception, timeout, memory, wrong shape) the execution-error prompt. The output and error
    text (the last 5000 characters, as CodePDE) are the solver's: each is an untrusted block
    (:func:`pdesharp.untrusted.prompt_block`); the failure itself is pdesharp's message."""
    output = prompt_block(result.stdout_tail or "", "stdout of your solver", limit=OUTPUT_TAIL)
    if result.status == "nan":
        return render("debug_nan", output=output)
    error = prompt_block("\n".join(s for s in (result.detail, result.stderr_tail) if s),
                         "error output of your solver", limit=OUTPUT_TAIL)
    return render("debug_error", summary=f"{result.status}: {one_line(result.message, 300)}",
                  output=output, error=error)


async def sample_and_debug(*, index: int, prefix: str, messages: list[Message], model: ChatModel,
                           store, evaluator, cfg: BaselineConfig, budget: EvalBudget,
                           tag: str, origin: Origin = "baseline", parents: list[str] | None = None,
                           title: str = "") -> SampleOutcome:
    """One CodePDE sample: ask, extract the code, run it on the feedback split, and on an
    execution error or NaN continue the same conversation with the error for up to
    ``cfg.debug_rounds`` more rounds. Never raises for a bad reply or a dead model."""
    messages = list(messages)
    out = SampleOutcome(index=index, status="failed")
    prev_id: str | None = None
    for trial in range(cfg.debug_rounds + 1):
        if budget.exhausted:
            out.status, out.note = "budget", "evaluation budget spent"
            break
        params = ChatParams(temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                            sample_index=index, tag=f"{tag}.{'generate' if trial == 0 else 'debug'}")
        try:
            reply = await model.chat(messages, params)
        except ModelError as exc:
            out.status, out.note = "model_error", str(exc)[:500]
            break
        code = extract_code(reply.text)
        if code is None:
            # CodePDE loses the sample here (ValueError, no retry); we record why and move on.
            out.status = "no_code"
            out.note = "reply has no ```python block" + (
                f" (finish_reason={reply.finish_reason})" if reply.finish_reason not in (None, "stop") else "")
            break
        cid = prefix if trial == 0 else f"{prefix}.d{trial}"
        cand = Candidate(id=cid, code=code, origin=origin if trial == 0 else "debug",
                         parents=(parents or []) if trial == 0 else [prev_id],
                         round=trial, title=title or f"{tag} sample {index}")
        store.add_candidate(cand)
        out.candidate_id, prev_id = cid, cid
        out.candidate_ids.append(cid)
        if not budget.try_reserve():
            out.status, out.note = "budget", "evaluation budget spent"
            break
        try:
            result = await store.evaluate(evaluator, cand, split=cfg.split, feedback=cfg.feedback)
        finally:
            budget.release()
        out.result, out.trials = result, trial + 1
        if result.ok:
            out.status = "ok"
            break
        if trial == cfg.debug_rounds:
            out.status, out.note = "failed", result.summary_line()
            break
        store.count_debug_iteration(cid, key=f"{cid}#debug")
        messages += [Message(role="assistant", content=reply.text),
                     Message(role="user", content=debug_prompt(result))]
    return out

