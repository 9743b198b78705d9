"""The LLM judge: nominates from the pool, proposes SEARCH/REPLACE modifications, debugs.

A judge keeps one conversation per tournament cycle (so it remembers what it nominated and why,
and which of its ideas failed); :meth:`LLMJudge.reset` starts a fresh context for a rejudging
cycle. The tournament tells it the rules and the state before every step
(:meth:`LLMJudge.observe`): the budget left, how many solvers run per round, the saturation rule.

The conversation is laid out for a provider's prefix cache (issue 24.5). It opens with what
every judge is told alike: the system prompt (task, analysis, rules, the answer formats; no
judge's name in it), the Genesis solvers as written (the same message in every cycle) and the
pool now; the judge's name and request come after that. Each later round is one more turn
carrying only what is new to this conversation: new solvers (a patch as a forward diff from a
parent the judge has, its own patch by its result only: the rest is in its reply), new results,
and a one-line ranking. Which code a listing shows is :mod:`pdesharp.synthesis.listing`'s rule
(the best few, the leader's parents, within a code budget; a one-line summary says why the rest
is not shown). The base a judge patches is always in front of it: shown in full earlier, or
given as a diff from a solver shown in full, or printed in full.

Pool listings and results carry only what pdesharp measured or wrote (status, the exception's
class name, scores, times); a solver's own output (stdout, stderr, its exception text) reaches
only the debugging prompt, as an untrusted block (:func:`pdesharp.untrusted.prompt_block`),
and every judge's system prompt states :data:`pdesharp.untrusted.BLOCK_RULE`.
Malformed nominations get one re-ask and then a documented fallback (the judge's first valid
ranked id, else the tournament's best); an unusable proposal surfaces as a patch failure, which
the tournament hands back once through :meth:`repair_patch`.
"""

from __future__ import annotations

import re

from pdesharp.facts import TaskFacts
from pdesharp.prompting import (analysis_context, ask, clean_title, extract_code, extract_json,
                                render, strip_label, task_context)
from pdesharp.llm.base import Message
from pdesharp.records import Analysis, EvalResult, Feedback
from pdesharp.report.tables import seconds_per_sample
from pdesharp.roles import Nomination, PoolEntry, Proposal, RoundInfo
from pdesharp.synthesis.lineage import is_rewrite
from pdesharp.synthesis.listing import (CODE_BUDGET, DIFF_SHARE, FULL_CODE_TOP,  # noqa: F401
                                        MAX_CODE_CHARS, NEVER_NOMINATED, capped, diff,
                                        forward_order, listing, nearest)
from pdesharp.synthesis.patch import has_blocks
from pdesharp.synthesis.ranking import Rule, pick_best
from pdesharp.task import Task
from pdesharp.untrusted import BLOCK_RULE, one_line, prompt_block

FEEDBACK_NOTES = {
    "nrmse": "the nRMSE of each executed solver against the dev-split reference data and its "
             "solver time per sample",
    "residual": "the normalised PDE residual of each executed solver's output (no reference "
                "data) and its solver time per sample",
    "none": "only whether each solver executed successfully; no accuracy numbers",
}
CONVERGED_NOTE = (", and, beside the score, its distance from the audit's converged solution of "
                  "the PDE (nRMSE over the same samples, measured by pdesharp like the score; "
                  "it plays no part in the ranking, whose rules are above)")

# A judge that expects no modification to help says so with this marker on a line of its own
# (or "no_change": true in its JSON); that is recorded, and no evaluation is spent.
NO_CHANGE = "NO_CHANGE"
_NO_CHANGE_LINE = re.compile(r"^[\s*`_#>]*NO_CHANGE[\s*`_.]*$", re.MULTILINE)


def feedback_note(feedback: Feedback, converged: bool = False) -> str:
    """What the judges will see of each result; with ``converged``, the distance from the
    audit's converged solution too. The evaluator's self-convergence rate is not shown: the
    solver controls it (its own outputs at several resolutions), so it cannot inform a choice
    between solvers (issue 24); the report keeps it."""
    note = FEEDBACK_NOTES[feedback]
    return note + CONVERGED_NOTE if converged and feedback == "nrmse" else note


def describe_result(result: EvalResult | None, feedback: Feedback,
                    converged: bool = False) -> str:
    """What a judge may see of a result: the score, with ``converged`` its distance from the
    audit's converged solution of the PDE (measured in the parent like the score; never the
    solver's to see), and the solver time per sample beside it (the evaluator's clock; the
    median when re-timed). With feedback "none", only the execution status. A failure is its
    status and pdesharp's own message (the exception's class name, never its text: that is
    the solver's, see module doc)."""
    if result is None:
        return "not executed yet"
    if feedback == "none":
        return "ran successfully" if result.ok else f"failed to execute ({result.status})"
    if not result.ok:
        return f"failed ({result.status}): {one_line(result.message, 300) or 'no message'}"
    parts = []
    if feedback == "nrmse" and result.nrmse is not None:
        parts.append(f"nRMSE: {result.nrmse:.3e}")
        if converged and result.nrmse_converged is not None:
            parts.append(f"distance from the converged solution (not ranked): "
                         f"{result.nrmse_converged:.3e}")
    if feedback == "residual" and result.residual is not None:
        parts.append(f"PDE residual: {result.residual:.3e}")
    per_sample = seconds_per_sample(result)
    if per_sample is not None:
        parts.append(f"time: {per_sample:.3g} s per sample ({result.solver_seconds:.3g} s for "
                     f"{result.n_samples} sample{'s' if result.n_samples != 1 else ''})")
    elif result.solver_seconds is not None:
        parts.append(f"time: {result.solver_seconds:.3g} s")
    return " | ".join(parts) if parts else result.summary_line()


class LLMJudge:
    """Implements :class:`pdesharp.roles.Judge` on a ChatModel."""

    def __init__(self, model, name: str, *, feedback: Feedback = "nrmse", top_k: int = 5,
                 convergence: bool = True, facts: TaskFacts | None = None,
                 code_budget: int = CODE_BUDGET, full_code_top: int = FULL_CODE_TOP):
        self.model = model
        self.name = name
        self.feedback = feedback
        self.convergence = convergence  # the evaluator runs the refinement study (facts)
        self.facts = facts
        self.top_k = top_k
        self.code_budget = code_budget
        self.full_code_top = full_code_top
        self.info = RoundInfo(cycle=0, round=1, max_rounds=1, cycles=1)
        self.reset()

    # -- context -------------------------------------------------------------------------
    def reset(self) -> None:
        self.messages: list[Message] = []
        self._shown: dict[str, str] = {}  # id -> code the conversation has shown (or diffed)
        self._full: dict[str, str] = {}  # id -> code the conversation has shown in full
        self._described: set[str] = set()  # ids whose title/origin/justification were listed
        self._told: dict[str, str] = {}  # id -> the result this conversation was told
        self._written: set[str] = set()  # whole solver files this judge wrote in its replies
        self._task: Task | None = None
        self._analysis: Analysis | None = None
        self._debug_attempts: dict[str, int] = {}

    def observe(self, info: RoundInfo) -> None:
        self.info = info

    def _start(self, task: Task, analysis: Analysis | None) -> None:
        """The system prompt: the same for every judge and every cycle (no judge's name in
        it), so a provider's prefix cache serves it to all of them."""
        self._task = task
        self._analysis = analysis or self._analysis
        if self.messages:
            return
        facts = self.facts or TaskFacts.from_spec(task).model_copy(
            update={"convergence": self.convergence})
        system = render("judge_system", top_k=self.top_k,
                        **task_context(task, self.feedback, facts),
                        **analysis_context(self._analysis, facts), info=self.info,
                        feedback_note=feedback_note(self.feedback, self._converged()),
                        block_rule=BLOCK_RULE)
        self.messages.append(Message(role="system", content=system, cache=True))

    def _converged(self) -> bool:
        """Results show the distance from the audit's converged solution: the run tells the
        reference's own error (the facts carry it), so the judges know what the score means;
        not when that error is the data file's own statement (no audit, no converged solution)."""
        return self.facts is not None and self.facts.reference_error is not None \
            and not self.facts.reference_stated

    def _describe(self, result: EvalResult | None, feedback: Feedback | None = None) -> str:
        return describe_result(result, feedback or self.feedback, self._converged())

    async def _ask(self, prompt: str, tag: str, shared: list[str] | None = None) -> str:
        """One turn of the conversation. Its first turn opens with ``shared`` (what every judge
        is told alike: the Genesis solvers, the pool now) and only then the judge's name, so
        that all judges' first requests share everything up to the name. Every message is a
        cache point: later requests re-send the conversation up to it."""
        if not any(m.role == "user" for m in self.messages):
            for text in shared or []:
                self.messages.append(Message(role="user", content=text, cache=True))
            prompt = render("judge_identity", judge=self.name, info=self.info).strip() + "\n\n" \
                + prompt
        self.messages.append(Message(role="user", content=prompt, cache=True))
        text = await ask(self.model, self.messages, tag)
        self.messages.append(Message(role="assistant", content=text))
        return text

    def _ranks(self, pool: list[PoolEntry]) -> dict[str, tuple[str, str]]:
        """Each executed solver's rank in the tournament's order (``pool`` comes ranked) and
        its eligibility when the round has a bar: id -> ("rank k of n[, note]", note)."""
        executed = [e for e in pool if e.result is not None and e.result.ok
                    and e.result.score is not None]
        out = {}
        for i, e in enumerate(executed):
            note = ""
            if self.info.bar is not None and (self.info.objective_kind != "accuracy"
                                              or self.info.floor_reached):
                floor = self.info.rule.bar_is_floor(self.info.best_score)
                note = "eligible" if e.result.score <= self.info.bar else (
                    "not eligible: above the reference floor" if floor
                    else "not eligible: above the bar")
            out[e.candidate.id] = (f"rank {i + 1} of {len(executed)}"
                                   + (f", {note}" if note else ""), note)
        return out

    def _ranking(self, pool: list[PoolEntry], ranks: dict[str, tuple[str, str]]) -> dict:
        """The ranking line of a turn (_ranking.j2): every executed solver in order."""
        return {"ranked": [{"id": cid, "note": note} for cid, (_, note) in ranks.items()],
                "unscored": [e.candidate.id for e in pool if e.result is not None
                             and e.result.ok and e.result.score is None],
                "fresh": [e.candidate.id for e in pool if e.result is None],
                "failed": [e.candidate.id for e in pool if e.result is not None
                           and not e.result.ok]}

    def _entries(self, pool: list[PoolEntry], *, full_first: list[str],
                 rest: str = "not shown", why: dict[str, str] | None = None,
                 base_id: str | None = None, results: bool = True) -> tuple[list[dict], dict]:
        """The solvers this turn lists, oldest first, and its ranking line. A solver is listed
        when something about it is new to this conversation: itself, its result, or its code
        (shown now because it ranks among those whose code matters); the rest are only in the
        ranking line. ``results=False`` lists the solvers without their results (the Genesis
        message, the same in every cycle)."""
        ordered = forward_order(pool)
        # the judge's own patches of this cycle are in its replies (its blocks on a base it had)
        own = {e.candidate.id for e in pool if self._own(e.candidate)}
        for e in pool:
            c = e.candidate
            if c.id in own:
                self._shown[c.id] = c.code
                if c.code in self._written:  # a whole file it wrote: it has it in full
                    self._full[c.id] = c.code
        shown = listing(ordered, known=dict(self._shown), budget=self.code_budget,
                        full_first=full_first, base_id=base_id, rest=rest, why=why)
        ranks = self._ranks(pool)
        codes = {e.candidate.id: e.candidate.code for e in pool}
        out = []
        for e in ordered:
            c, how = e.candidate, shown[e.candidate.id]
            result = self._describe(e.result)
            brief = c.id in self._described
            new_code = how.mode in ("full", "diff")
            if brief and self._told.get(c.id) == result and not new_code:
                continue  # nothing new: the ranking line has it
            if new_code:
                self._shown[c.id] = c.code
            if how.mode == "full":
                self._full[c.id] = c.code
            self._described.add(c.id)
            self._told[c.id] = result
            # a modification that keeps little of its base replaced it (synthesis.lineage)
            rewrite = (c.origin == "patch" and bool(c.parents) and c.parents[0] in codes
                       and self._task is not None
                       and is_rewrite(codes[c.parents[0]], c.code, self._task.solver.name))
            out.append({"id": c.id, "title": c.title, "origin": c.origin, "parents": c.parents,
                        "rewrite": rewrite,
                        "judge": c.judge, "cycle": c.cycle, "round": c.round,
                        "justification": strip_label(c.justification, "justification"),
                        "static_check": c.static_check, "show": how.mode, "code": how.text,
                        "against": how.against, "why": how.why,
                        "rank": ranks.get(c.id, ("", ""))[0], "brief": brief,
                        "own": c.id in own, "result": result if results else ""})
        return out, self._ranking(pool, ranks)

    def _own(self, c) -> bool:
        """A patch or fix this judge proposed in this conversation (one per cycle)."""
        return (c.judge == self.name and c.cycle == self.info.cycle
                and c.origin in ("patch", "debug"))

    def _full_first(self, pool: list[PoolEntry], *, fresh: bool) -> tuple[list[str], str]:
        """Who gets full code, in priority: the best few executed, the leader's parents (so a
        hybrid's sources can be read), then, with ``fresh``, the solvers not run yet; and the
        reason the others are not shown in full, in words."""
        executed = [e.candidate.id for e in pool if e.result is not None and e.result.ok]
        by_id = {e.candidate.id: e.candidate for e in pool}
        parents = [p for p in (by_id[executed[0]].parents if executed else []) if p in by_id]
        order = list(dict.fromkeys(executed[: self.full_code_top] + parents))
        who = f"the {self.full_code_top} best-ranked solvers and the leader's parents"
        if fresh:
            order += [e.candidate.id for e in pool if e.result is None and e.candidate.id
                      not in order]
            who += " and the solvers not run yet"
        return order, f"not shown: full code goes to {who}"

    # -- the Judge protocol --------------------------------------------------------------
    async def nominate(self, task: Task, analysis: Analysis, pool: list[PoolEntry]) -> Nomination:
        self._start(task, analysis)
        # In a rejudging cycle a solver that has never run was passed over by every judge of
        # the earlier cycles: its title and justification stand for it, not its full code.
        first, rest = self._full_first(pool, fresh=self.info.cycle == 0)
        why = {e.candidate.id: NEVER_NOMINATED for e in pool
               if self.info.cycle and e.result is None}
        opening = not any(m.role == "user" for m in self.messages)
        shared = []
        if opening:
            # a conversation opens with what every judge is told alike, before the judge's
            # name: the Genesis solvers (the same in every cycle), then the pool now
            genesis = [PoolEntry(candidate=e.candidate) for e in pool
                       if e.candidate.origin == "genesis"]
            listed, _ = self._entries(genesis, full_first=[e.candidate.id for e in genesis],
                                      results=False)
            shared.append(render("judge_genesis", entries=listed))
        entries, ranking = self._entries(pool, full_first=first, rest=rest, why=why)
        if opening:
            shared.append(render("judge_pool", info=self.info, entries=entries,
                                 ranking=ranking))
        prompt = render("judge_nominate", info=self.info, top_k=self.top_k, first=opening,
                        entries=entries, ranking=ranking)
        ids = [e.candidate.id for e in pool]
        facts = extract_json(await self._ask(prompt, "judge.nominate", shared))
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
            nominee = ranking[0] if ranking else _best_id(pool, Rule.of(self.info))
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
        # the base is patched by quoting it: it is printed here unless this conversation
        # already has it in full (a diff or a summary is not enough to quote from)
        base_shown = self._full.get(b.id) == b.code
        against, change = ("", "") if base_shown else self._base_diff(b)
        self._shown[b.id] = b.code
        if not against:
            self._full[b.id] = b.code
        first, rest = self._full_first(results, fresh=False)
        entries, ranking = self._entries(results, full_first=first, rest=rest, base_id=b.id)
        prompt = render("judge_propose", info=self.info, base_id=b.id, base_title=b.title,
                        base_code=capped(b.code), base_shown=base_shown,
                        base_against=against, base_diff=change,
                        base_result=self._describe(base.result),
                        entries=entries, ranking=ranking)
        text = await self._ask(prompt, "judge.propose")
        if _declines(text):
            facts = extract_json(text) or {}
            return Proposal(judge=self.name, base=b.id, parents=[b.id], declined=True,
                            title=NO_CHANGE, justification=strip_label(str(
                                facts.get("justification") or _prose(text)), "justification"))
        return self._proposal(text, b.id)

    def _base_diff(self, b) -> tuple[str, str]:
        """The base as a forward diff from the solver this conversation showed in full that it
        is closest to (an ancestor, as a rule), when that diff is small: (that solver, the
        diff), else ("", "") and the base is printed in full."""
        src = nearest(b, {i: code for i, code in self._full.items() if i != b.id})
        if src is None:
            return "", ""
        change = diff(self._full[src], b.code, src, b.id)
        return (src, change) if change and len(change) <= DIFF_SHARE * len(b.code) else ("", "")

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
                        max_attempts=max(attempt, self.info.debug_attempts),
                        summary=self._describe(r, "nrmse") if r else "unknown failure",
                        code=capped(c.code), output=program_output(c.id, r))
        self._shown[c.id] = self._full[c.id] = c.code
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
                  title=clean_title(str(facts.get("title", ""))),
                  justification=strip_label(str(facts.get("justification", "")),
                                            "justification"))
        if not has_blocks(text):
            code = extract_code(text)
            if code is not None:
                self._written.add(code)  # the whole file is in this reply: quotable
                return Proposal(**kw, code=code)
        return Proposal(**kw, patch=text)


OUTPUT_TAIL = 5000  # characters of each output stream a debugging prompt quotes (CodePDE's)


def program_output(cid: str, result: EvalResult | None) -> list[str]:
    """What the failed solver's process wrote (stderr, its own report of the failure, stdout),
    each as an untrusted block: the only place program output enters a judge's prompt."""
    if result is None:
        return []
    parts = [(result.stderr_tail, f"stderr of solver {cid}"),
             (result.detail, f"the failure as solver {cid}'s process reported it"),
             (result.stdout_tail, f"stdout of solver {cid}")]
    return [prompt_block(text, f"{what} (the last {OUTPUT_TAIL} characters at most)",
                         limit=OUTPUT_TAIL) for text, what in parts if text.strip()]


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


def _best_id(pool: list[PoolEntry], rule: Rule) -> str:
    """The tournament's best (same ranking rule), else the first solver that passed the
    static check."""
    scored = [(e, e.result) for e in pool
              if e.result is not None and e.result.ok and e.result.score is not None]
    if scored:
        return pick_best(scored, rule)[0].candidate.id
    ok = [e for e in pool if e.candidate.static_check == "ok"]
    return (ok or pool)[0].candidate.id
