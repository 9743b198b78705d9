"""The LLM judge: nominates from the pool, proposes SEARCH/REPLACE modifications, debugs.

A judge keeps one conversation per tournament cycle (so it remembers what it nominated and why,
and which of its ideas failed); :meth:`LLMJudge.reset` starts a fresh context for a rejudging
cycle. Code already shown in the current context is not repeated, to keep prompts short.
Malformed nominations get one re-ask and then a documented fallback (the judge's first valid
ranked id, else the best-scoring solver); an unusable proposal surfaces as a patch failure,
which the tournament hands back once through :meth:`repair_patch`.
"""

from __future__ import annotations

import re

from pdesharp.llm.base import Message
from pdesharp.prompting import ask, extract_code, extract_json, render, task_context
from pdesharp.records import Analysis, EvalResult, Feedback
from pdesharp.roles import Nomination, PoolEntry, Proposal
from pdesharp.synthesis.patch import has_blocks
from pdesharp.task import Task

MAX_CODE_CHARS = 16000  # per solver in a pool listing: one runaway reply must not flood a prompt

FEEDBACK_NOTES = {
    "nrmse": "the nRMSE of each executed solver against the dev-split reference data and its "
             "run time",
    "residual": "the normalised PDE residual of each executed solver's output (no reference "
                "data) and its run time",
    "none": "only whether each solver executed successfully; no accuracy numbers",
}
CONVERGENCE_NOTE = ", and its empirical convergence rate (from a refinement study)"

# A judge that expects no modification to help says so with this marker on a line of its own
# (or "no_change": true in its JSON); that is recorded, and no evaluation is spent.
NO_CHANGE = "NO_CHANGE"
_NO_CHANGE_LINE = re.compile(r"^[\s*`_#>]*NO_CHANGE[\s*`_.]*$", re.MULTILINE)


def feedback_note(feedback: Feedback, convergence: bool) -> str:
    """What the judges will see of each result; the convergence rate only when it is
    actually measured (``convergence`` on and the task defines a refinement study)."""
    note = FEEDBACK_NOTES[feedback]
    return note + CONVERGENCE_NOTE if convergence and feedback != "none" else note


def describe_result(result: EvalResult | None, feedback: Feedback) -> str:
    """What a judge may see of a result. With feedback "none", only the execution status."""
    if result is None:
        return "not executed yet"
    if feedback == "none":
        return "ran successfully" if result.ok else f"failed to execute ({result.status})"
    return result.summary_line()


class LLMJudge:
    """Implements :class:`pdesharp.roles.Judge` on a ChatModel."""

    def __init__(self, model, name: str, *, feedback: Feedback = "nrmse", top_k: int = 5,
                 convergence: bool = True):
        self.model = model
        self.name = name
        self.feedback = feedback
        self.convergence = convergence  # whether results carry a convergence rate
        self.top_k = top_k
        self.debug_attempts = 2  # set by the tournament (its K), shown in the debug prompt
        self.reference_note = ""  # the reference audit's error, when the run tells judges
        self.round = 1
        self.cycle = 0
        self.reset()

    # -- context -------------------------------------------------------------------------
    def reset(self) -> None:
        self.messages: list[Message] = []
        self._shown: set[str] = set()
        self._task: Task | None = None
        self._debug_attempts: dict[str, int] = {}

    def _start(self, task: Task, analysis: Analysis | None) -> None:
        if self.messages:
            return
        self._task = task
        convergence = self.convergence and task.evaluation.convergence.kind != "none"
        system = render("judge_system", judge=self.name, **task_context(task, self.feedback),
                        route=analysis.route if analysis else "numerical",
                        key_facts=analysis.key_facts if analysis else [],
                        feedback_note=feedback_note(self.feedback, convergence),
                        reference_note=self.reference_note)
        self.messages.append(Message(role="system", content=system))

    async def _ask(self, prompt: str, tag: str) -> str:
        self.messages.append(Message(role="user", content=prompt))
        text = await ask(self.model, self.messages, tag)
        self.messages.append(Message(role="assistant", content=text))
        return text

    def _entries(self, pool: list[PoolEntry], *, code: bool) -> list[dict]:
        out = []
        for e in pool:
            c = e.candidate
            show = code and c.id not in self._shown and bool(c.code.strip())
            if show:
                self._shown.add(c.id)
            code_text = c.code if len(c.code) <= MAX_CODE_CHARS else (
                c.code[:MAX_CODE_CHARS] + f"\n# ... ({len(c.code) - MAX_CODE_CHARS} more characters)")
            out.append({"id": c.id, "title": c.title, "origin": c.origin, "parents": c.parents,
                        "judge": c.judge, "justification": c.justification,
                        "static_check": c.static_check, "code": code_text, "show_code": show,
                        "result": describe_result(e.result, self.feedback)})
        return out

    # -- the Judge protocol --------------------------------------------------------------
    async def nominate(self, task: Task, analysis: Analysis, pool: list[PoolEntry]) -> Nomination:
        self._start(task, analysis)
        prompt = render("judge_nominate", round=self.round, cycle=self.cycle, top_k=self.top_k,
                        entries=self._entries(pool, code=True))
        ids = [e.candidate.id for e in pool]
        facts = extract_json(await self._ask(prompt, "judge.nominate"))
        if not _valid_nomination(facts, ids):
            problem = ("no JSON object found" if facts is None else
                       f"'nominee' must be one of the solver ids ({', '.join(ids[:8])}...)")
            facts = extract_json(await self._ask(render("reask_json", problem=problem),
                                                 "judge.nominate.reask"))
        facts = facts or {}
        ranking = [str(r) for r in facts.get("ranking", []) if str(r) in ids]
        nominee = str(facts.get("nominee", ""))
        fallback = ""
        if nominee not in ids:
            nominee = ranking[0] if ranking else _best_id(pool)
            fallback = "nominee unreadable; fell back to " + ("its ranking" if ranking else "the best score")
        reasons = {str(k): str(v) for k, v in (facts.get("reasons") or {}).items()} \
            if isinstance(facts.get("reasons"), dict) else {}
        if fallback:
            reasons["_fallback"] = fallback
        return Nomination(judge=self.name, ranking=ranking or [nominee], reasons=reasons,
                          nominee=nominee)

    async def propose(self, task: Task, base: PoolEntry, results: list[PoolEntry],
                      feedback: Feedback) -> Proposal:
        self._start(task, None)
        b = base.candidate
        self._shown.add(b.id)
        prompt = render("judge_propose", round=self.round, cycle=self.cycle, base_id=b.id,
                        base_code=b.code, entries=self._entries(results, code=False))
        text = await self._ask(prompt, "judge.propose")
        if _declines(text):
            facts = extract_json(text) or {}
            return Proposal(judge=self.name, base=b.id, parents=[b.id], declined=True,
                            title=NO_CHANGE, justification=str(
                                facts.get("justification") or _prose(text)))
        return self._proposal(text, b.id)

    async def repair_patch(self, proposal: Proposal, error: str) -> Proposal:
        text = await self._ask(render("judge_repair", error=error), "judge.repair")
        repaired = self._proposal(text, proposal.base, proposal.parents)
        if not repaired.justification:
            repaired.justification = proposal.justification
            repaired.title = repaired.title or proposal.title
        return repaired

    async def debug(self, entry: PoolEntry) -> Proposal:
        c, r = entry.candidate, entry.result
        attempt = self._debug_attempts.get(c.id, 0) + 1
        self._debug_attempts[c.id] = attempt
        if self._task is not None and not self.messages:
            self._start(self._task, None)
        prompt = render("judge_debug", cid=c.id, attempt=attempt,
                        max_attempts=max(attempt, self.debug_attempts),
                        summary=r.summary_line() if r else "unknown failure", code=c.code,
                        error_tail=(r.stderr_tail or r.message or r.stdout_tail) if r else "")
        text = await self._ask(prompt, "judge.debug")
        return self._proposal(text, c.id, [c.id])

    # -- parsing ---------------------------------------------------------------------------
    def _proposal(self, text: str, base: str, default_parents: list[str] | None = None
                  ) -> Proposal:
        """Every parent id the judge names is kept (the tournament checks them against the
        pool and records the invalid ones); justifications are stored in full."""
        facts = extract_json(text) or {}
        named = facts.get("parents")
        named = [str(p) for p in named] if isinstance(named, list) else list(default_parents or [])
        kw = dict(judge=self.name, base=base, parents=list(dict.fromkeys([base] + named)),
                  title=str(facts.get("title", ""))[:120],
                  justification=str(facts.get("justification", "")))
        if not has_blocks(text):
            code = extract_code(text)
            if code is not None:
                return Proposal(**kw, code=code)
        return Proposal(**kw, patch=text)


def _declines(text: str) -> bool:
    """The reply declines to modify: the NO_CHANGE marker (a line of its own, or
    ``"no_change": true``) and no SEARCH/REPLACE blocks or code (a reply with edits is an
    edit, whatever else it says)."""
    if has_blocks(text) or extract_code(text) is not None:
        return False
    facts = extract_json(text) or {}
    return facts.get("no_change") is True or bool(_NO_CHANGE_LINE.search(text))


def _prose(text: str) -> str:
    return " ".join(_NO_CHANGE_LINE.sub("", text.split("```", 1)[0]).split())


def _valid_nomination(facts: dict | None, ids: list[str]) -> bool:
    return isinstance(facts, dict) and str(facts.get("nominee", "")) in ids


def _best_id(pool: list[PoolEntry]) -> str:
    scored = [(e.result.score, i) for i, e in enumerate(pool)
              if e.result is not None and e.result.score is not None]
    if scored:
        return pool[min(scored)[1]].candidate.id
    ok = [e for e in pool if e.candidate.static_check == "ok"]
    return (ok or pool)[0].candidate.id
