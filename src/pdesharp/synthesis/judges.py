"""The LLM judge: nominates from the pool, proposes SEARCH/REPLACE modifications, debugs.

A judge keeps one conversation per tournament cycle (so it remembers what it nominated and why,
and which of its ideas failed); :meth:`LLMJudge.reset` starts a fresh context for a rejudging
cycle. The tournament tells it the rules and the state before every step
(:meth:`LLMJudge.observe`): the budget left, how many solvers run per round, the saturation rule.

Pool listings are ranked by the tournament's own rule and kept within a code budget
(:func:`listing`): full code for the solvers that matter (the best few, the leader's parents,
the solvers nobody has run in the first cycle), a diff against a solver already on the page for
near-copies, and a one-line summary for the rest, saying why its code is not shown; code and
descriptions already given in the current conversation are not repeated (a solver described
earlier is one line: its result). The base a judge patches is always in front of it in full:
printed in the modification prompt unless this conversation already showed it in full.

Pool listings and results carry only what pdesharp measured or wrote (status, the exception's
class name, scores, times); a solver's own output (stdout, stderr, its exception text) reaches
only the debugging prompt, as an untrusted block (:func:`pdesharp.untrusted.prompt_block`),
and every judge's system prompt states :data:`pdesharp.untrusted.BLOCK_RULE`.
Malformed nominations get one re-ask and then a documented fallback (the judge's first valid
ranked id, else the tournament's best); an unusable proposal surfaces as a patch failure, which
the tournament hands back once through :meth:`repair_patch`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from pdesharp.facts import TaskFacts
from pdesharp.prompting import (analysis_context, ask, clean_title, extract_code, extract_json,
                                render, strip_label, task_context)
from pdesharp.llm.base import Message
from pdesharp.records import Analysis, EvalResult, Feedback
from pdesharp.report.tables import seconds_per_sample
from pdesharp.roles import Nomination, PoolEntry, Proposal, RoundInfo
from pdesharp.synthesis.lineage import is_rewrite
from pdesharp.synthesis.patch import has_blocks
from pdesharp.synthesis.ranking import Rule, pick_best
from pdesharp.task import Task
from pdesharp.untrusted import BLOCK_RULE, one_line, prompt_block

MAX_CODE_CHARS = 16000  # per solver in a listing: one runaway reply must not flood a prompt
CODE_BUDGET = 20000  # characters of solver code (full or diff) one judge prompt may show
FULL_CODE_TOP = 3  # the best executed solvers shown in full (budget permitting)
DIFF_SHARE = 0.5  # a diff is shown instead of the code when it is at most this share of it

FEEDBACK_NOTES = {
    "nrmse": "the nRMSE of each executed solver against the dev-split reference data and its "
             "solver time per sample",
    "residual": "the normalised PDE residual of each executed solver's output (no reference "
                "data) and its solver time per sample",
    "none": "only whether each solver executed successfully; no accuracy numbers",
}
CONVERGED_NOTE = (", and, beside the score, its distance from the audit's converged solution of "
                  "the PDE (nRMSE over the same samples, measured by pdesharp like the score; "
                  "it plays no part in the ranking, which is the rule below)")

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


@dataclass
class Shown:
    """How one solver appears in a listing."""

    mode: str  # "full", "diff", "earlier", "base", "summary", "none"
    text: str = ""  # the code or the diff
    against: str = ""  # the solver a diff is taken against
    why: str = ""  # "summary": why the code is not shown


NEVER_NOMINATED = "not shown: it has not run, and no judge nominated it in an earlier cycle"


def budget_reason(budget: int) -> str:
    return (f"not shown: this prompt's code budget ({budget:,} characters) was spent on the "
            "solvers above")


def _diff(a: str, b: str, a_id: str, b_id: str) -> str:
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), f"{a_id}.py",
                                          f"{b_id}.py", n=2, lineterm=""))


def _capped(code: str) -> str:
    if len(code) <= MAX_CODE_CHARS:
        return code
    return code[:MAX_CODE_CHARS] + f"\n# ... ({len(code) - MAX_CODE_CHARS} more characters)"


def listing(entries: list[PoolEntry], *, known: dict[str, str], budget: int,
            full_first: list[str], base_id: str | None = None,
            rest: str = "not shown", why: dict[str, str] | None = None) -> dict[str, Shown]:
    """Decide how each of ``entries`` (already in the order the prompt lists them) is shown.

    ``known`` maps the ids whose code the reader already has (earlier in the conversation, or
    the base shown separately) to their code. Solvers in ``full_first`` (in that priority) get
    their full code while ``budget`` characters last; any other solver (and a prioritised one
    once the budget is spent) is shown as a diff against the most similar solver whose code the
    reader has, if that diff is small, else as a summary (title, justification, result) with
    the reason: the budget, or ``why[id]`` if given, else ``rest`` (the caller's rule for who
    gets full code)."""
    out: dict[str, Shown] = {}
    have = dict(known)
    left = budget
    by_id = {e.candidate.id: e.candidate for e in entries}
    order = [i for i in full_first if i in by_id] + [e.candidate.id for e in entries
                                                     if e.candidate.id not in full_first]
    for cid in order:
        c = by_id[cid]
        if cid == base_id:
            out[cid] = Shown("base")
            continue
        if cid in known:
            out[cid] = Shown("earlier")
            continue
        if not c.code.strip():
            out[cid] = Shown("none")
            continue
        code = _capped(c.code)
        near = _nearest(c, have)
        diff = _diff(have[near], c.code, near, cid) if near else ""
        if diff and len(diff) <= DIFF_SHARE * len(c.code) and len(diff) <= left:
            out[cid], left = Shown("diff", diff, near), left - len(diff)
        elif cid in full_first and len(code) <= left:
            out[cid], left = Shown("full", code), left - len(code)
        else:
            out[cid] = Shown("summary", why=budget_reason(budget) if cid in full_first
                             else (why or {}).get(cid, rest))
            continue
        have[cid] = c.code
    return out


def _nearest(c, have: dict[str, str]) -> str | None:
    """The solver the reader has that ``c`` is closest to: a parent if one is there, else the
    most similar code."""
    for p in c.parents:
        if p in have:
            return p
    if not have:
        return None
    return max(have, key=lambda i: difflib.SequenceMatcher(None, have[i], c.code).quick_ratio())


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
        self._task: Task | None = None
        self._analysis: Analysis | None = None
        self._debug_attempts: dict[str, int] = {}

    def observe(self, info: RoundInfo) -> None:
        self.info = info

    def _start(self, task: Task, analysis: Analysis | None) -> None:
        self._task = task
        self._analysis = analysis or self._analysis
        if self.messages:
            return
        facts = self.facts or TaskFacts.from_spec(task).model_copy(
            update={"convergence": self.convergence})
        system = render("judge_system", judge=self.name,
                        **task_context(task, self.feedback, facts),
                        **analysis_context(self._analysis, facts), info=self.info,
                        feedback_note=feedback_note(self.feedback, self._converged()),
                        block_rule=BLOCK_RULE)
        self.messages.append(Message(role="system", content=system))

    def _converged(self) -> bool:
        """Results show the distance from the audit's converged solution: the run tells the
        reference's own error (the facts carry it), so the judges know what the score means."""
        return self.facts is not None and self.facts.reference_error is not None

    def _describe(self, result: EvalResult | None, feedback: Feedback | None = None) -> str:
        return describe_result(result, feedback or self.feedback, self._converged())

    async def _ask(self, prompt: str, tag: str) -> str:
        self.messages.append(Message(role="user", content=prompt))
        text = await ask(self.model, self.messages, tag)
        self.messages.append(Message(role="assistant", content=text))
        return text

    def _entries(self, pool: list[PoolEntry], *, full_first: list[str],
                 rest: str = "not shown", why: dict[str, str] | None = None,
                 base_id: str | None = None) -> list[dict]:
        known = dict(self._shown)
        shown = listing(pool, known=known, budget=self.code_budget, full_first=full_first,
                        base_id=base_id, rest=rest, why=why)
        executed = [e.candidate.id for e in pool if e.result is not None and e.result.ok
                    and e.result.score is not None]
        codes = {e.candidate.id: e.candidate.code for e in pool}
        out = []
        for e in pool:
            c, how = e.candidate, shown[e.candidate.id]
            if how.mode in ("full", "diff"):
                self._shown[c.id] = c.code
            if how.mode == "full":
                self._full[c.id] = c.code
            # described before in this conversation: its title, origin and justification are
            # not repeated, only its (possibly new) result and rank
            brief = c.id in self._described
            self._described.add(c.id)
            rank = (f"rank {executed.index(c.id) + 1} of {len(executed)}"
                    if c.id in executed else "")
            if rank and self.info.bar is not None and (self.info.objective_kind != "accuracy"
                                                       or self.info.floor_reached):
                eligible = e.result.score <= self.info.bar  # the objective's bar this round
                floor = self.info.rule.bar_is_floor(self.info.best_score)
                rank += ", eligible" if eligible else (
                    ", not eligible: above the reference floor" if floor
                    else ", not eligible: above the bar")
            # a modification that keeps little of its base replaced it (synthesis.lineage)
            rewrite = (c.origin == "patch" and bool(c.parents) and c.parents[0] in codes
                       and self._task is not None
                       and is_rewrite(codes[c.parents[0]], c.code, self._task.solver.name))
            out.append({"id": c.id, "title": c.title, "origin": c.origin, "parents": c.parents,
                        "rewrite": rewrite,
                        "judge": c.judge, "cycle": c.cycle, "round": c.round,
                        "justification": strip_label(c.justification, "justification"),
                        "static_check": c.static_check, "show": how.mode, "code": how.text,
                        "against": how.against, "why": how.why, "rank": rank, "brief": brief,
                        "result": self._describe(e.result)})
        return out

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
        prompt = render("judge_nominate", info=self.info, top_k=self.top_k,
                        entries=self._entries(pool, full_first=first, rest=rest, why=why))
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
        self._shown[b.id] = self._full[b.id] = b.code
        first, rest = self._full_first(results, fresh=False)
        entries = self._entries(results, full_first=first, rest=rest, base_id=b.id)
        base_listed = any(e["id"] == b.id for e in entries)
        prompt = render("judge_propose", info=self.info, base_id=b.id, base_title=b.title,
                        base_code=_capped(b.code), base_shown=base_shown,
                        base_listed=base_listed,
                        base_result=self._describe(base.result),
                        entries=entries)
        text = await self._ask(prompt, "judge.propose")
        if _declines(text):
            facts = extract_json(text) or {}
            return Proposal(judge=self.name, base=b.id, parents=[b.id], declined=True,
                            title=NO_CHANGE, justification=strip_label(str(
                                facts.get("justification") or _prose(text)), "justification"))
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
                        max_attempts=max(attempt, self.info.debug_attempts),
                        summary=self._describe(r, "nrmse") if r else "unknown failure",
                        code=_capped(c.code), output=program_output(c.id, r))
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
