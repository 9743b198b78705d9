"""Settling the winner's time: re-time the finalists when time decides between close solvers.

During the search every solver has one evaluator timing, and the ranking rule
(:mod:`pdesharp.synthesis.ranking`) lets time decide only past a margin. At the end, if the pick
still depends on time (two or more eligible solvers with a known time), the *finalists* are run
again: the eligible solvers whose single time is within ``(1 + time_margin)^2`` of the fastest
eligible one (a gap that timing noise of one margin on each side could close; every eligible
solver when one of their timings ran beside another evaluation, since two timings taken on
shared cores are not comparable at all), at most
:data:`MAX_FINALISTS` of them fastest first, and always the provisional winner. Each finalist
runs ``repeats`` more times, one run at a time and interleaved (a, b, a, b) so that neither
competes with the other for the cores and a drift in the machine's load falls on both. A
finalist's time is then the median of its timings (a failed re-run counts as never finishing),
and the same ranking rule decides again, with the margin for a median of k timings. When the
medians make a solver the pick that was not a finalist (its single timing now within the margin
of a finalist's median), it is re-timed too, and the rule decides again: the winner's time
never rests on one timing.

Solvers the medians still cannot tell apart (two or more tied with the fastest by the
margin; a tied one timed once, past :data:`MAX_FINALISTS`, is re-timed first, up to
:data:`MAX_TIED` tied) then run ``repeats`` *warm re-timing* runs each, interleaved the same
way (``Evaluator.evaluate(warm=True)``: the first sample in one call, the others in a second
timed alone), and the rule tells them apart by those warm calls
before the lower score (:func:`pdesharp.synthesis.ranking.rank`): a small solver's call is
mostly one-off work. These are runs of their own, and the medians never include them: a warm
timing is two calls, so its total carries one more call's set-up than the single timings the
medians are compared with (with warm re-timing runs in the medians, a finalist's median rose
from 0.0106 to 0.0124 s per sample and a solver timed once at 0.0153 became the pick, on a
budget that could not re-time it).

Every re-run is a counted evaluation (:meth:`RunStore.retime`), within ``--max-evals``: when the
budget left cannot give every finalist ``repeats`` more runs, each gets as many as it can give
all of them alike; when that is none, the decision stays on single timings (the report says so).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from pdesharp.llm.base import BudgetExceeded
from pdesharp.records import Candidate, EvalResult
from pdesharp.store import RunStore, code_sha256, retime_id, warm_id, warm_retime_id
from pdesharp.synthesis.ranking import (Rule, decided_by_time, eligible, pick_best, seconds,
                                        time_tied)

MAX_FINALISTS = 3
MAX_TIED = 6  # solvers tied on time that are re-timed and timed warm to tell them apart
RETIME_RUNS = 2  # extra runs per finalist whenever time decides (``--retime`` default)


def retime_runs(objective, requested: int | None) -> int:
    """Re-timing runs per finalist: ``requested`` if given, else :data:`RETIME_RUNS` under every
    objective. Under ``accuracy`` time decides only a tie, but when it does, it decides on
    repeatable timings: the search's single timings ran two at a time on shared cores, so a
    30 % gap between two of them is noise (issue 21). No finalists (time did not decide, or
    decided by more than the noise): no re-timing, so a run that ends on one eligible solver
    spends nothing here."""
    if requested is not None:
        return requested
    return RETIME_RUNS


@dataclass
class Settlement:
    """How the winner's time was established (for the summary and the report)."""

    finalists: list[str] = field(default_factory=list)
    repeats: int = 0  # re-timing runs per finalist
    evaluations: int = 0  # counted re-timing runs (this execution's or the journal's)
    per_sample: dict[str, list[float | None]] = field(default_factory=dict)  # every timing
    note: str = ""  # why there was no re-timing, or what limited it
    warm_evaluations: int = 0  # of ``evaluations``: warm re-timing runs of tied finalists
    warm_per_sample: dict[str, list[float]] = field(default_factory=dict)  # their warm calls
    warm_note: str = ""  # finalists tied on their medians: how their warm calls were timed
    # finalists' search timings left out of their medians (they shared the cores), per sample
    shared_per_sample: dict[str, float] = field(default_factory=dict)

    def describe(self, winner: Candidate | None, result: EvalResult | None) -> dict[str, Any]:
        """The summary's ``winner_time`` entry: the winner's time per sample and how it was
        established, in words (``how``) and numbers."""
        if winner is None or result is None or result.solver_seconds is None:
            return {}
        s = result.seconds_per_sample
        out: dict[str, Any] = {"per_sample": s, "finalists": self.finalists,
                               "retime_evaluations": self.evaluations,
                               "repeats": self.repeats}
        runs = self.per_sample.get(winner.id)
        aside = self.shared_per_sample.get(winner.id)
        if runs and (len(runs) > 1 or aside is not None):
            shown = ", ".join("failed" if t is None else f"{t:.3g}" for t in runs)
            out["timings_per_sample"] = runs
            others = [f for f in self.finalists if f != winner.id]
            warm = result.warm_per_sample if result.warm_timings else None
            if warm is not None:
                out["warm_timings_per_sample"] = result.warm_timings
            if aside is not None:
                out["shared_timing_per_sample"] = aside
            out["how"] = (f"median of {len(runs)} evaluator timing{'s' if len(runs) != 1 else ''}"
                          f" ({shown} s per sample"
                          + (f"; its search timing, {aside:.3g}, ran beside another evaluation "
                             "and is left out" if aside is not None else "") + "), the "
                          f"winner re-timed with {', '.join(others) or 'no other finalist'} one "
                          f"run at a time ({self.evaluations} counted re-timing evaluation"
                          f"{'s' if self.evaluations != 1 else ''}"
                          + (f", {self.warm_evaluations} of them warm"
                             if self.warm_evaluations else "")
                          + (f"; {self.note}" if self.note else "")
                          + (f"; {self.warm_note}" if self.warm_note else "")
                          + (f"; its calls after the first, timed alone in its warm re-timing "
                             f"runs: {warm:.3g} s per sample, the median"
                             if warm is not None else "") + ")")
        else:
            out["how"] = "one evaluator timing" + (f" ({self.note})" if self.note else "")
        return out


async def one_off_and_warm(store: RunStore, evaluator, best, feedback: str = "nrmse"
                           ) -> dict[str, Any]:
    """The winner's time taken apart (issue 27): one more run of it on the dev split, the first
    sample in one call and the others in a second, timed from the runner's request for their
    inputs (:meth:`RunStore.warm_timing`). ``warm_per_sample`` is what a script calling the
    solver again pays per sample; ``one_off_seconds`` the rest of the first call (import,
    compilation, planning): the first call's time less one warm sample. The summary's
    ``winner_time`` carries these, or ``warm_note`` saying why there are none."""
    if best is None:
        return {}
    if not getattr(evaluator, "takes_apart", False):
        return {"warm_note": "not taken apart: this evaluator times whole runs only"}
    if best[1].n_samples < 2:
        return {"warm_note": "not taken apart: the dev split has one sample"}
    try:
        r = await store.warm_timing(evaluator, best[0], feedback=feedback)
    except Exception as exc:  # noqa: BLE001 - a timing aside must not cost the run its result
        return {"warm_note": f"not taken apart: the warm timing failed ({type(exc).__name__})"}
    label = warm_id(best[0].id)
    if not any(e.get("candidate") == label for e in store.events("evaluation")):
        store.event("evaluation", candidate=label, status=r.status, score=r.score,
                    per_sample=r.seconds_per_sample,
                    reason="the winner's time taken apart: its first sample in one call, the "
                           "others in a second (warm), timed from their request")
    if not r.ok or r.warm_seconds is None or not r.warm_samples or r.solver_seconds is None:
        return {"warm_note": f"not taken apart: the warm timing ended {r.status}"}
    warm = r.warm_per_sample
    first = r.solver_seconds - r.warm_seconds
    return {"warm_per_sample": warm, "first_call_seconds": first,
            "one_off_seconds": max(first - warm, 0.0), "warm_samples": r.warm_samples}


def apart_words(timed: dict) -> str:
    """``winner_time``'s one-off and warm parts in words ('' without them)."""
    if timed.get("warm_per_sample") is not None:
        n = timed["warm_samples"]
        return (f"{timed['warm_per_sample']:.3g} s per sample warm (a second call, on "
                f"{n} sample{'s' if n != 1 else ''}), {timed['one_off_seconds']:.3g} s one-off "
                f"(import, compilation, planning: the first call of "
                f"{timed['first_call_seconds']:.3g} s, on one sample, less one warm sample; "
                "one run after the search, at another moment than the timings above)")
    return timed.get("warm_note", "")


def settled(result: EvalResult, reruns: list[EvalResult],
            warm_runs: list[EvalResult] = (), alone: bool = True) -> EvalResult:
    """``result`` with its time replaced by the median over it and its re-timing runs, and its
    warm re-timing runs' warm calls (per sample) as its ``warm_timings`` when every one has
    one. ``alone``: the search's timing ran alone; when it ran beside another evaluation it is
    left out of the median (``shared_timing``), which rests on the re-timing runs, taken one at
    a time (bridge run, KdV: a finalist's 0.0257 s per sample beside another evaluation, 0.0141
    and 0.0153 alone, and the median of the three decided the pick)."""
    if not reruns or result.solver_seconds is None:
        return result
    runs = ([result.solver_seconds] if alone else []) + \
        [r.solver_seconds if r.ok else None for r in reruns]
    median = statistics.median(float("inf") if t is None else t for t in runs)
    warm = [r.warm_per_sample for r in warm_runs if r.ok]
    return result.model_copy(update={
        "timings": runs, "solver_seconds": None if median == float("inf") else median,
        "shared_timing": None if alone else result.solver_seconds,
        "warm_timings": warm if warm and len(warm) == len(warm_runs) and None not in warm
        else []})


def shared_codes(scored: list[tuple[Candidate, EvalResult]], contended) -> set[str]:
    """The code hashes whose search timing ran beside another evaluation (``contended``: the
    ids of those timings; a candidate with the same code reuses that timing)."""
    return {code_sha256(c.code) for c, _ in scored if c.id in contended}


def finalists(scored: list[tuple[Candidate, EvalResult]], rule: Rule,
              limit: int = MAX_FINALISTS, contended: set[str] = frozenset()
              ) -> list[Candidate]:
    """The solvers worth re-timing (see the module docstring); none when time does not decide.
    Candidates with the same code are one solver (the first in ``scored`` stands for it).
    ``contended``: ids whose single timing ran while another evaluation did (the cores were
    shared, so the gap between two such timings says nothing): if an eligible solver's timing
    is one of them, every eligible solver is a finalist, however far apart the timings."""
    first = {}
    for i, (c, _) in enumerate(scored):
        first.setdefault(code_sha256(c.code), i)
    pool = [i for i in eligible(scored, rule) if seconds(scored[i][1]) < float("inf")
            and first[code_sha256(scored[i][0].code)] == i]
    if len(pool) < 2:
        return []
    t_min = min(seconds(scored[i][1]) for i in pool)
    shared = shared_codes(scored, contended)
    window = float("inf") if any(code_sha256(scored[i][0].code) in shared for i in pool) \
        else t_min * (1 + rule.time_margin) ** 2
    near = sorted((i for i in pool if seconds(scored[i][1]) <= window),
                  key=lambda i: (seconds(scored[i][1]), i))
    if len(near) < 2:
        return []  # the fastest is faster than noise could hide: time decided clearly
    picked = near[:limit]
    winner = code_sha256(pick_best(scored, rule)[0].code)
    if all(code_sha256(scored[i][0].code) != winner for i in picked):
        picked.append(next(i for i in near if code_sha256(scored[i][0].code) == winner))
    return [scored[i][0] for i in picked]


async def settle(store: RunStore, evaluator, scored: list[tuple[Candidate, EvalResult]],
                 rule: Rule, repeats: int, *, split: str = "dev", feedback: str = "nrmse",
                 contended: set[str] = frozenset()
                 ) -> tuple[dict[str, EvalResult], Settlement]:
    """Re-time the finalists of ``scored``; returns the settled results (time = the median of
    the timings) by candidate id, for every candidate that has a finalist's code, and the
    :class:`Settlement`."""
    out = Settlement(repeats=0)
    chosen = finalists(scored, rule, contended=contended)
    if not chosen:
        out.note = ("not re-timed: time decided by more than the timing noise"
                    if decided_by_time(scored, rule)
                    else "not re-timed: time did not decide (one eligible solver)")
        return {}, out
    out.finalists = [c.id for c in chosen]
    if repeats <= 0:
        out.note = ("not re-timed: --retime 0, so the decision used single timings and the "
                    "time margin")
        return {}, out
    allowed = runs_allowed(store, store.retimings(split, feedback), chosen, repeats)
    if allowed < 1:
        out.note = ("the evaluation budget (--max-evals) left no run to re-time the "
                    "finalists; the decision used single timings")
        return {}, out
    if allowed < repeats:
        out.note = f"re-timing limited by --max-evals to {allowed} run(s) per finalist"
        repeats = allowed
    out.repeats = repeats
    runs: dict[str, list[EvalResult]] = {}  # by id: plain re-timing runs
    warm_runs: dict[str, list[EvalResult]] = {}  # by id: warm re-timing runs
    results = {c.id: r for c, r in scored}

    async def rerun(group: list[Candidate], n: int, warm: bool = False) -> None:
        """``n`` (warm) re-timing runs of each of ``group``, interleaved, one at a time."""
        what = "warm re-timing" if warm else "re-timing"
        among = ", ".join(x.id for x in (group if warm else chosen))
        for k in range(1, n + 1):
            for c in group:
                r = await store.retime(evaluator, c, k, split=split, feedback=feedback,
                                       warm=warm)
                (warm_runs if warm else runs).setdefault(c.id, []).append(r)
                label = (warm_retime_id if warm else retime_id)(c.id, k)
                if not any(e.get("candidate") == label for e in store.events("evaluation")):
                    store.event("evaluation", candidate=label, status=r.status,
                                reason=f"{what} {k} of {c.id} (among {among}, one at a time)",
                                per_sample=r.seconds_per_sample, score=r.score,
                                warm_per_sample=r.warm_per_sample if warm else None)

    shared = shared_codes(scored, contended)

    def settle_all() -> dict[str, EvalResult]:
        out_ = {}
        for c in chosen:
            s = settled(results[c.id], runs.get(c.id, []), warm_runs.get(c.id, []),
                        alone=code_sha256(c.code) not in shared)
            for twin, _ in scored:  # the same code under another id: the same solver
                if twin.code == c.code:
                    out_[twin.id] = s
        return out_

    def left() -> float:
        return float("inf") if store.eval_limit is None else \
            store.eval_limit - store.n_feedback_evaluations

    try:
        await rerun(chosen, repeats)
        # the medians can move the pick to a solver that was not a finalist (Fisher-KPP 1D:
        # a finalist's median rose, and a slower, more accurate solver's single timing fell
        # within the margin of the fastest median): it is re-timed too, so the winner's time
        # never rests on one timing while the others' rest on three
        for _ in range(len(scored)):
            now = settle_all()
            top = pick_best([(c, now.get(c.id, r)) for c, r in scored], rule)[0]
            if any(top.code == c.code for c in chosen) \
                    or seconds(results[top.id]) == float("inf"):
                break
            if left() < repeats:
                out.note = (f"{top.id} became the pick after the finalists were re-timed; the "
                            "evaluation budget (--max-evals) left no run to re-time it")
                break
            chosen.append(top)
            out.finalists.append(top.id)
            await rerun([top], repeats)
        # solvers the medians of whole calls cannot tell apart: time their warm calls, in runs
        # of their own (a warm timing is two calls, so its total would carry one more call's
        # set-up than the single timings it is compared with). A tied solver timed once (past
        # MAX_FINALISTS) is re-timed first: the tie then rests on medians alike
        tied = tie(scored, settle_all(), chosen, rule)
        once = [c for c in tied if all(c.code != x.code for x in chosen)]
        if once and len(tied) <= MAX_TIED and left() >= repeats * len(once):
            chosen.extend(once)
            out.finalists.extend(c.id for c in once)
            await rerun(once, repeats)
            tied = tie(scored, settle_all(), chosen, rule)
        if len(tied) > 1 and all(any(c.code == x.code for x in chosen) for c in tied):
            n = runs_allowed(store, store.retimings(split, feedback, warm=True), tied,
                             repeats)
            if n >= 1:
                await rerun(tied, n, warm=True)
            now = settle_all()
            warm = ", ".join(f"{c.id} {now[c.id].warm_per_sample:.3g}" for c in tied
                             if now[c.id].warm_per_sample is not None)
            out.warm_note = (f"{len(tied)} finalists tied on their medians "
                             f"({', '.join(c.id for c in tied)}); "
                             + (f"each timed warm {n} time{'s' if n != 1 else ''} more (median "
                                f"warm s per sample: {warm}; equally fast within "
                                f"{100 * rule.margin(n):.0f} %)"
                                if n >= 1 else f"timing them warm takes at least {len(tied)} "
                                f"evaluations, one each, and the budget (--max-evals) had "
                                f"{max(0, int(left()))} left, so the lower score decided"))
        elif len(tied) > 1:
            out.warm_note = (f"{len(tied)} solvers tied, {len(once)} of them timed once (more "
                             f"than {MAX_TIED} tied, or no budget to re-time them): not timed "
                             "warm, so the lower score decided")
    except BudgetExceeded as exc:  # cannot happen within the checks above; keep what ran
        out.note = f"re-timing stopped: {exc}"
    out.evaluations = sum(len(v) for v in runs.values()) + \
        sum(len(v) for v in warm_runs.values())
    out.warm_evaluations = sum(len(v) for v in warm_runs.values())
    settled_results = settle_all()
    for c in chosen:
        s = settled_results[c.id]
        n_ = s.n_samples or 1
        out.per_sample[c.id] = [None if t is None else t / n_ for t in s.timings]
        if s.shared_timing is not None:
            out.shared_per_sample[c.id] = s.shared_timing / n_
        if s.warm_timings:
            out.warm_per_sample[c.id] = list(s.warm_timings)
    store.event("retime", finalists=out.finalists, repeats=repeats,
                per_sample=out.per_sample, warm_per_sample=out.warm_per_sample,
                shared_per_sample=out.shared_per_sample, note=out.note,
                warm_note=out.warm_note)
    return settled_results, out


def runs_allowed(store: RunStore, done: dict[str, list[EvalResult]], group: list[Candidate],
                 repeats: int) -> int:
    """Runs each of ``group`` may have, up to ``repeats``: as many as the budget left
    (``--max-evals``) gives all of them alike, beyond those ``done`` already (a resumed run's,
    found in the journal: not run again)."""
    have = min(len(done.get(c.id, [])) for c in group)
    if store.eval_limit is None or have >= repeats:
        return repeats
    left = max(0, store.eval_limit - store.n_feedback_evaluations)
    return min(repeats, have + left // len(group))


def tie(scored: list[tuple[Candidate, EvalResult]], now: dict[str, EvalResult],
        chosen: list[Candidate], rule: Rule) -> list[Candidate]:
    """The eligible solvers the rule's time margin cannot tell apart from the fastest, by the
    settled medians (``now``, by id) where there are, one per code (a re-timed one as it was
    re-timed, in ``chosen``): whose warm calls decide, when there are two or more."""
    merged = [(c, now.get(c.id, r)) for c, r in scored]
    tied, seen = [], set()
    for i in time_tied(merged, eligible(merged, rule), rule):
        c = merged[i][0]
        if c.code not in seen and seconds(merged[i][1]) < float("inf"):
            seen.add(c.code)
            tied.append(next((x for x in chosen if x.code == c.code), c))
    return tied
