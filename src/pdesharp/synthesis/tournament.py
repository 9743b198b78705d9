"""Synthesis: the selection-hybridisation tournament, one round at a time.

A round: (i) every judge nominates one solver from the pool; (ii) the distinct nominees run on
the feedback split, in parallel, and their results are shared with all judges; (iii) each judge
modifies its base (its nominee, or the current best if its nominee failed) with SEARCH/REPLACE
edits, possibly borrowing from others; a patch that does not apply goes back to the judge once
with the nearest lines; the modified solvers run. Any failing execution gets up to K debugging
calls (each a counted debugging iteration; each re-run a counted evaluation). Rounds repeat until
the run has not improved by ``saturation_factor`` for ``patience`` rounds (the lowest score, or
under a time objective also the objective's pick's time: :func:`ranking.improved`), or
``max_rounds``. Rejudging cycles then start over with fresh judge contexts on the expanded pool.
Every ranking is the run's objective (:class:`ranking.Rule`); when the search is over,
:meth:`Tournament.settle` re-times the finalists if time decides between close candidates.

Everything is recorded in the run store; the tournament keeps no state the store cannot rebuild,
which is what makes a killed run resumable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pdesharp.audit.runs import reference_error
from pdesharp.genesis import static_check
from pdesharp.llm.base import BudgetExceeded
from pdesharp.records import Analysis, Candidate, EvalResult, Feedback
from pdesharp.roles import Judge, PoolEntry, RoundInfo
from pdesharp.store import RunStore, code_sha256
from pdesharp.synthesis.patch import PatchError, apply_patch
from pdesharp.synthesis import ranking
from pdesharp.synthesis.ranking import pick_best, rank
from pdesharp.synthesis.settings import TournamentSettings
from pdesharp.synthesis.timing import Settlement, settle
from pdesharp.task import Task

__all__ = ["Tournament", "TournamentSettings", "gather_all", "pick_best", "rank"]


async def gather_all(coros) -> list:
    """Run concurrently and let every one finish (a paid call or a running evaluation is
    never thrown away); then re-raise the first failure, a budget stop before anything else."""
    out = await asyncio.gather(*coros, return_exceptions=True)
    errors = [e for e in out if isinstance(e, BaseException)]
    if errors:
        budget = [e for e in errors if isinstance(e, BudgetExceeded)]
        raise (budget or errors)[0]
    return out


class Tournament:
    def __init__(self, task: Task, analysis: Analysis, judges: list[Judge], store: RunStore,
                 evaluator,
                 settings: TournamentSettings, progress: Callable[..., None] | None = None):
        self.task, self.analysis, self.judges = task, analysis, judges
        self.store, self.evaluator, self.s = store, evaluator, settings
        self.progress = progress or (lambda **kw: None)
        self.pool: list[Candidate] = []
        self.known: dict[str, EvalResult] = {}
        self.rule = settings.rule
        # finalists' results with their settled (median) time, once the search is over
        self.settled: dict[str, EvalResult] = {}
        self.settlement = Settlement(note="the search did not end normally")
        self._gate = asyncio.Semaphore(max(1, settings.workers))
        self._visible: set[str] = set()  # solver ids a judge may name as parents this round
        self.end_reason = ""  # why the search ended (saturation, max_rounds), for the report
        # distinct codes this tournament executed: its count of evaluations. Not the store's
        # count, which on a resumed run already holds the killed run's later evaluations (a
        # judge's prompt must say what the killed run's said, or replay breaks).
        self._ran: set[str] = set()
        self._stopped = ""  # why the search ended at the rule's stop score ("": it has not)
        # in a round's modification step: its proposals are made (calls paid), so they run even
        # once the floor is reached; a nominee at the floor ends the round before that step
        self._modifying = False
        self._running: set[str] = set()  # evaluations in flight now
        self._contended: set[str] = set()  # evaluations that ran while another one did

    # -- results -------------------------------------------------------------------------
    # The tournament sees only results it obtained itself in this execution (self.known),
    # never whatever else the store holds: on a resumed run the store already has results
    # from "later" in the killed run, and showing them early would change the prompts.
    def entry(self, c: Candidate) -> PoolEntry:
        result = self.known.get(c.id)
        if result is None and c.static_check != "ok":
            result = _static_failure(c, self.s.feedback)
        return PoolEntry(candidate=c, result=result)

    def _scored(self) -> list[tuple[Candidate, EvalResult]]:
        """Every solver with a score, in pool order, with its settled time once re-timed."""
        return [(c, self.settled.get(c.id, self.known[c.id])) for c in self.pool
                if c.id in self.known and self.known[c.id].ok
                and self.known[c.id].score is not None]

    def best(self) -> tuple[Candidate, EvalResult] | None:
        """The objective's pick (:func:`ranking.pick_best`: deterministic, ties by pool order).
        With no scores (feedback "none"), the first solver that ran ok."""
        scored = self._scored()
        if scored:
            return pick_best(scored, self.rule)
        ok = [(c, self.known[c.id]) for c in self.pool
              if c.id in self.known and self.known[c.id].ok]
        return ok[0] if ok else None

    def lowest(self) -> tuple[Candidate, EvalResult] | None:
        """The lowest score, whatever the objective (earliest wins exact ties)."""
        scored = self._scored()
        return ranking.lowest(scored) if scored else None

    async def settle(self) -> Settlement:
        """After the search: re-time the finalists if time decides between close candidates
        (:mod:`pdesharp.synthesis.timing`; counted evaluations); :meth:`best` then uses their
        median times."""
        scored = self._scored()
        if not scored:
            self.settlement = Settlement(note="no solver has a score")
            return self.settlement
        contended = {e.get("candidate") for e in self.store.events("evaluation")
                     if e.get("contended")}  # from the journal: a resumed run decides alike
        self.settled, self.settlement = await settle(
            self.store, self.evaluator, scored, self.rule, self.s.retime,
            feedback=self.s.feedback, contended=contended)
        return self.settlement

    def ranked(self, entries: list[PoolEntry]) -> list[PoolEntry]:
        """``entries`` in the tournament's order: scored results by :func:`rank`, then results
        without a score (feedback "none"), then not executed, then failed (pool order within)."""
        scored = [(e, e.result) for e in entries
                  if e.result is not None and e.result.ok and e.result.score is not None]
        unscored = [e for e in entries if e.result is not None and e.result.ok
                    and e.result.score is None]
        fresh = [e for e in entries if e.result is None]
        failed = [e for e in entries if e.result is not None and not e.result.ok]
        return [e for e, _ in rank(scored, self.rule)] + unscored + fresh + failed

    def floor_decides(self) -> bool:
        """Did the reference floor change the pick (:func:`ranking.decided_by_floor`)?"""
        return ranking.decided_by_floor(self._scored(), self.rule)

    def best_score(self) -> float | None:
        """The lowest score so far (what the judges are told as the best score; saturation
        compares :func:`ranking.standing`, which holds it)."""
        low = self.lowest()
        return low[1].score if low else None

    async def _run(self, c: Candidate, why: str) -> EvalResult:
        """Run ``c`` (``why``: the reason the evaluation is spent, for the journal)."""
        if c.static_check != "ok":  # free check failed: not executed, not counted
            return _static_failure(c, self.s.feedback)
        async with self._gate:
            if self._stopped and self.s.nominees_in_order and not self._modifying:
                # the floor was reached by an earlier nominee: spend nothing more
                return self.known.get(c.id) or _not_run(c, self.s.feedback, self._stopped)
            if self._running:  # another evaluation is running: both timings shared the cores
                self._contended |= self._running | {c.id}
            self._running.add(c.id)
            try:
                result = await self.store.evaluate(self.evaluator, c, split="dev",
                                                   feedback=self.s.feedback)
            finally:
                self._running.discard(c.id)
        before = ranking.standing(self._scored(), self.rule)
        self.known[c.id] = result
        self._ran.add(code_sha256(c.code))
        self._journal(c, result, why, before)
        self._check_stop()
        return result

    def _journal(self, c: Candidate, result: EvalResult, why: str,
                 before: ranking.Standing | None) -> None:
        """One ``evaluation`` event per counted evaluation: why it was spent and what it changed
        (the lowest score and the objective's pick's time, before and after). A result looked
        up (identical code, or a resumed run's journal) writes nothing new."""
        if any(e.get("candidate") == c.id for e in self.store.events("evaluation")):
            return  # a resumed run: the killed run recorded it
        if not self.store.counted(c.id, "dev", self.s.feedback):
            return
        after = ranking.standing(self._scored(), self.rule)
        improved = ranking.improved(self.rule, before, after, self.s.saturation_factor)
        self.store.event(
            "evaluation", candidate=c.id, reason=why, status=result.status, score=result.score,
            per_sample=result.seconds_per_sample,
            lowest_before=before.lowest if before else None,
            lowest_after=after.lowest if after else None,
            pick_seconds_before=_finite(before.seconds) if before else None,
            pick_seconds_after=_finite(after.seconds) if after else None,
            improved=improved,
            # its timing overlapped another evaluation's (cores shared): not comparable
            contended=c.id in self._contended)

    def _check_stop(self) -> None:
        """End the search once the lowest score reaches the rule's stop score (the reference
        floor, else the data's round-off floor; accuracy objective): no evaluation can then
        improve on the PDE. With nominees in order, a nominee at the floor ends the round at
        once (nominees not yet run and the modification step are not spent); otherwise, and in
        the modification step, the round's evaluations still run and the search ends with the
        round."""
        stop, low = self.rule.stop_score(), self.best_score()
        if self._stopped or stop is None or low is None or low > stop:
            return
        if self.rule.reference_floor is not None:
            own = reference_error(self.store.events("reference_audit"))
            basis = f"{stop / own:.4g} x the reference's own error {own:.3e}" if own else \
                "a multiple of the reference's own error"
            self._stopped = (f"the best score {low:.3e} reached the reference floor {stop:.3e} "
                             f"({basis}): a lower score would not mean a more accurate "
                             "solution of the PDE")
        else:
            self._stopped = (f"the best score {low:.3e} reached the round-off floor {stop:.1e} "
                             "of the reference data: a lower score would not be an improvement")

    async def evaluate(self, c: Candidate, judge: Judge | None, rnd: int, cycle: int,
                       why: str = "") -> tuple[Candidate, EvalResult]:
        """Run ``c``; while it fails, let ``judge`` debug it (up to K times). Returns the last
        version and its result."""
        result = await self._run(c, why)
        cur = c
        if any(p.origin == "debug" and p.parents == [c.id] for p in self.pool):
            return cur, result  # this failure was debugged before; judges see the fixes
        for attempt in range(1, self.s.debug_attempts + 1):
            if result.ok or judge is None or (self._stopped and self.s.nominees_in_order
                                                and not self._modifying):
                break
            self.store.count_debug_iteration(cur.id, key=f"{c.id}#{attempt}")
            proposal = await judge.debug(PoolEntry(candidate=cur, result=result))
            try:
                code = _apply(proposal, cur.code)
            except PatchError as exc:
                self.store.event("debug_patch_failed", candidate=cur.id, judge=judge.name,
                                 error=str(exc)[:500])
                continue
            prev = cur
            cur = self._add(Candidate(
                id=f"{c.id}-d{attempt}", code=code, origin="debug", parents=[cur.id],
                judge=judge.name, round=rnd, cycle=cycle, title=proposal.title or cur.title,
                justification=proposal.justification))
            result = await self._run(cur, f"debug of {prev.id} (attempt {attempt}, "
                                          f"{judge.name})")
            self.store.event("debug", candidate=cur.id, attempt=attempt, status=result.status)
        return cur, result

    def _sort_pool(self) -> None:
        """A fixed pool order whatever order concurrent turns finished in: prompts list the
        pool, and a resumed run must see exactly the prompts of the killed one."""
        gen = {c.id: i for i, c in enumerate(self.pool) if c.origin == "genesis"}
        self.pool.sort(key=lambda c: (0, gen[c.id], 0, "") if c.id in gen
                       else (1, c.cycle, c.round, c.id))

    def _add(self, c: Candidate) -> Candidate:
        if c.origin != "genesis":
            c = c.model_copy(update={"static_check": static_check(c.code, self.task)})
        self.store.add_candidate(c)
        self.pool.append(c)
        return c

    def _valid_parents(self, proposal, base: str, cycle: int, rnd: int, judge: str
                       ) -> list[str]:
        """The base, then every other solver the judge named that it could have seen (any
        pool solver at the start of the modification step, executed or not); other ids name
        no solver the judge knows: they are dropped and recorded as an event."""
        named = list(dict.fromkeys([base] + [p for p in proposal.parents if p != base]))
        valid = [p for p in named if p == base or p in self._visible]
        invalid = [p for p in named if p not in valid]
        if invalid:
            self.store.event("invalid_parents", cycle=cycle, round=rnd, judge=judge,
                             ids=invalid)
        return valid

    # -- the loop ------------------------------------------------------------------------
    def info(self, cycle: int, rnd: int, stale: int) -> RoundInfo:
        """The rules and the state a judge is told at the start of a round."""
        scored, pick = self._scored(), self.best()
        low = ranking.lowest(scored)[1].score if scored else None
        bar = self.rule.bar(low) if scored else None
        # the bar is news under a time objective, and under accuracy once the floor is in force
        told = self.rule.objective.by_time or (low is not None and self.rule.below_floor(low))
        return RoundInfo(objective=str(self.rule.objective), time_margin=self.rule.time_margin,
                         retime=self.s.retime, bar=bar if told else None,
                         leader=pick[0].id if pick and scored else None,
                         leader_score=pick[1].score if pick and scored else None,
                         leader_per_sample=pick[1].seconds_per_sample if pick and scored
                         else None,
                         cycle=cycle, round=rnd, max_rounds=self.s.max_rounds,
                         cycles=1 + self.s.rejudge_cycles, judges=len(self.judges),
                         evals_used=len(self._ran),
                         eval_limit=self.s.max_evals, saturation_factor=self.s.saturation_factor,
                         patience=self.s.patience, stale_rounds=stale,
                         best_score=self.best_score(), executed=len(self.known),
                         debug_attempts=self.s.debug_attempts,
                         tie_tolerance=self.rule.tie_tolerance, feedback=self.s.feedback,
                         ranking_floor=self.rule.floor,
                         round_off=self.rule.round_off, concurrent=max(1, self.s.workers),
                         nominees_in_order=self.s.nominees_in_order
                         and self.rule.stop_score() is not None,
                         floor_saturation=self.s.floor_saturation,
                         data_numbers=self.s.data_numbers)

    async def run(self, genesis: list[Candidate]) -> None:
        for c in genesis:
            if c.code.strip():  # failed samples (no code) are recorded but never shown
                self.pool.append(c)
        if not self.pool:
            self.store.event("no_candidates")
            self.end_reason = "Genesis wrote no candidate with code"
            return
        for cycle in range(1 + self.s.rejudge_cycles):
            if cycle:
                for j in self.judges:
                    j.reset()
                self.store.event("rejudge", cycle=cycle, pool=len(self.pool))
            stale = 0
            for rnd in range(1, self.s.max_rounds + 1):
                before = ranking.standing(self._scored(), self.rule)
                self.progress(stage="synthesis", cycle=cycle, round=rnd)
                declined = await self.round(cycle, rnd, stale)
                after = self.best_score()
                improved = ranking.improved(self.rule, before,
                                            ranking.standing(self._scored(), self.rule),
                                            self.s.saturation_factor)
                best = self.best()
                self.store.event("round_best", cycle=cycle, round=rnd,
                                 best=best[0].id if best else None,
                                 score=best[1].score if best else None)
                self.progress(stage="synthesis", cycle=cycle, round=rnd, best=after)
                stale = 0 if improved else stale + 1
                if self._stopped:
                    self.end_reason = self._stopped
                    ref = self.rule.reference_floor
                    floor = {"floor": ref} if ref is not None else \
                        {"round_off": self.rule.round_off}
                    self.store.event("saturation", cycle=cycle, round=rnd, best=after,
                                     reason=self.end_reason, **floor)
                    self.store.event("cycle_end", cycle=cycle, reason=self.end_reason)
                    return
                if stale >= self.s.patience:
                    why = ("every judge declined to modify (NO_CHANGE)" if declined == len(self.judges)
                           else f"{self._no_gain()} for {stale} round(s)")
                    self.store.event("saturation", cycle=cycle, round=rnd, best=after,
                                     declined=declined, reason=why)
                    self.end_reason = f"saturation in cycle {cycle}, round {rnd}: {why}"
                    break
            else:
                self.end_reason = (f"cycle {cycle} ran its {self.s.max_rounds} round(s) "
                                   "(--max-rounds)")
            self.store.event("cycle_end", cycle=cycle, reason=self.end_reason)

    def _nominee_reason(self, c: Candidate, judges: list[str]) -> str:
        kind = {"genesis": "Genesis candidate", "patch": "patched solver",
                "debug": "debugged solver"}.get(c.origin, c.origin)
        return f"{kind} {c.id} nominated by {', '.join(judges)}"

    def _no_gain(self) -> str:
        return ranking.no_gain_words(self.rule, self.s.saturation_factor, self._target_met())

    def _target_met(self) -> bool:
        scored = self._scored()
        return bool(scored) and self.rule.bar(ranking.lowest(scored)[1].score) is not None

    async def round(self, cycle: int, rnd: int, stale: int = 0) -> int:
        """One round; returns how many judges declined to modify."""
        info = self.info(cycle, rnd, stale)
        if info.evals_left == 0:  # nothing a nomination or a patch asks for could run
            self._asked(0, cycle, rnd, "nominations")
        for j in self.judges:
            j.observe(info)
        visible = self.ranked([self.entry(c) for c in self.pool])
        # a cycle's opening requests share everything up to the judge's name, and a provider
        # caches a prefix once a request with it is answered: the first judge goes first
        lead = 1 if rnd == 1 else 0
        noms = [await j.nominate(self.task, self.analysis, visible) for j in self.judges[:lead]]
        noms += await gather_all(j.nominate(self.task, self.analysis, visible)
                                 for j in self.judges[lead:])
        by_id = {c.id: c for c in self.pool}
        nominators: dict[str, Judge] = {}
        for j, n in zip(self.judges, noms):
            self.store.event("nomination", cycle=cycle, round=rnd, judge=j.name,
                             nominee=n.nominee, ranking=n.ranking, reasons=n.reasons)
            if n.nominee in by_id:
                nominators.setdefault(n.nominee, j)
        self._modifying = False
        voters: dict[str, list[str]] = {}
        for j, n in zip(self.judges, noms):
            voters.setdefault(n.nominee, []).append(j.name)
        runs = [(by_id[cid], j, self._nominee_reason(by_id[cid], voters[cid]))
                for cid, j in nominators.items()]
        if self.s.nominees_in_order and self.rule.stop_score() is not None:
            # one at a time in nomination order (the first judge's pick, the best-predicted
            # design, first): the search stops at the floor without spending the others
            ran = [await self.evaluate(c, j, rnd, cycle, why) for c, j, why in runs]
        else:
            ran = await gather_all(self.evaluate(c, j, rnd, cycle, why) for c, j, why in runs)
        final = {cid: cur for cid, (cur, _) in zip(nominators, ran)}
        if self._stopped and self.s.nominees_in_order:
            # a nominee reached the floor: no modification can improve on the PDE
            self._sort_pool()
            return 0
        self._modifying = True
        self._sort_pool()
        shared = self.ranked([self.entry(c) for c in self.pool if c.id in self.known])
        info = self.info(cycle, rnd, stale)  # the nominees' evaluations are spent now
        for j in self.judges:
            j.observe(info)
        self._visible = {c.id for c in self.pool}
        declined: list[str] = []

        async def turn(idx: int, judge: Judge, nominee: str) -> None:
            base = final.get(nominee) or by_id.get(nominee)
            base_entry = self.entry(base) if base else None
            if base_entry is None or not (base_entry.result and base_entry.result.ok):
                best = self.best()
                if best is not None:
                    base_entry = self.entry(best[0])
            if base_entry is None:  # nothing to build on: its nominee is unknown, nothing ran
                self.store.event("no_base", cycle=cycle, round=rnd, judge=judge.name,
                                 nominee=nominee)
                return
            proposal = await judge.propose(self.task, base_entry, shared, self.s.feedback)
            if proposal.declined:  # the judge expects no change to help: nothing to run
                declined.append(judge.name)
                self.store.event("no_change", cycle=cycle, round=rnd, judge=judge.name,
                                 base=base_entry.candidate.id,
                                 justification=proposal.justification)
                return
            proposal.parents = self._valid_parents(proposal, base_entry.candidate.id,
                                                   cycle, rnd, judge.name)
            self.store.event("proposal", cycle=cycle, round=rnd, judge=judge.name,
                             base=proposal.base, parents=proposal.parents, title=proposal.title)
            try:
                code = _apply(proposal, base_entry.candidate.code)
            except PatchError as exc:
                self.store.event("patch_failed", cycle=cycle, round=rnd, judge=judge.name,
                                 error=str(exc)[:800])
                proposal = await judge.repair_patch(proposal, str(exc))
                proposal.parents = self._valid_parents(proposal, base_entry.candidate.id,
                                                       cycle, rnd, judge.name)
                try:
                    code = _apply(proposal, base_entry.candidate.code)
                except PatchError as exc2:
                    self.store.event("patch_abandoned", cycle=cycle, round=rnd,
                                     judge=judge.name, error=str(exc2)[:800])
                    return
            child = self._add(Candidate(
                id=f"c{cycle}r{rnd}-j{idx + 1}", code=code, origin="patch",
                parents=proposal.parents or [base_entry.candidate.id], judge=judge.name,
                round=rnd, cycle=cycle, title=proposal.title, justification=proposal.justification))
            await self.evaluate(child, judge, rnd, cycle,
                                f"patch of {', '.join(child.parents)} by {judge.name}")

        asked = self._asked(info.evals_left, cycle, rnd, "proposals")
        await gather_all(turn(i, j, n.nominee)
                         for i, (j, n) in enumerate(zip(self.judges[:asked], noms)))
        self._sort_pool()
        return len(declined)

    def _asked(self, left: int | None, cycle: int, rnd: int, step: str) -> int:
        """How many judges, first in their order, to ask for a step's calls with ``left``
        evaluations left: each asks for a solver to run, and a call past them would be paid for
        nothing. With none left none is, and the search ends as when an evaluation finds the
        budget spent."""
        if left is None or left >= len(self.judges):
            return len(self.judges)
        self.store.event("calls_cut", cycle=cycle, round=rnd, step=step, evals_left=left,
                         judges=[j.name for j in self.judges[left:]])
        if left == 0:
            raise BudgetExceeded(f"evaluation budget spent: {self.s.max_evals} solver "
                                 "evaluations (--max-evals)")
        return left


def _apply(proposal, code: str) -> str:
    if proposal.code is not None:
        return proposal.code
    return apply_patch(code, proposal.patch or "")


def _finite(x: float | None) -> float | None:
    return None if x is None or x == float("inf") else x


def _not_run(c: Candidate, feedback: Feedback, why: str) -> EvalResult:
    return EvalResult(status="error", split="dev", feedback=feedback,
                      message=f"not executed: the search had ended ({why})")


def _static_failure(c: Candidate, feedback: Feedback) -> EvalResult:
    return EvalResult(status="error", split="dev", feedback=feedback,
                      message=f"not executed: static check failed: {c.static_check}",
                      stderr_tail=c.static_check)
