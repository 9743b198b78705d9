"""The tables both reports show (``report.md`` and the HTML page), computed in one place.

Inputs are plain data read from a run store (candidates, feedback-split results, events) or an
SQLite connection to ``run.sqlite`` (read-only or not), so the Markdown report, written by the
pipeline through :class:`~pdesharp.store.RunStore`, and the HTML report, which opens the folder
read-only, list exactly the same rows.

A solver belongs to the round in which it was *evaluated*: a Genesis candidate first nominated in
round 2 of cycle 0 is a round-2 solver. Rankings use the tournament's own rule
(:mod:`pdesharp.synthesis.ranking`, the run's objective) on the final times: a solver re-timed
at the end (:mod:`pdesharp.synthesis.timing`) is ranked and shown with its median time, so rank
1 is the winner. The evaluations journal lists every execution with its own timing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from pdesharp.records import Candidate, EvalResult
from pdesharp.store import (RETIME_MARK, WARM_MARK, WARM_RETIME_MARK, parse_run_id,
                            read_events, retime_id, warm_id, warm_retime_id)
from pdesharp.store.schema import has_column
from pdesharp.synthesis.ranking import Rule, rank
from pdesharp.synthesis.timing import settled


# ASCII arrows and comparisons in titles ("CFL -> 0.6", "dt <= 1e-3") as the characters they
# stand for: Markdown-escaped they would read "-&gt;" in report.md's source
_SIGNS = (("<=", "≤"), (">=", "≥"), ("->", "→"), ("<-", "←"))
TITLE_CHARS = 200  # a design name is shown whole (the built-in ones are under 120 characters)


def cell_text(text: object, limit: int = TITLE_CHARS) -> str:
    """A model- or solver-written string (a design name, a reason) for a report.md table cell:
    one line, inert (:func:`pdesharp.untrusted.markdown_text`), cut at a word only beyond
    ``limit`` characters."""
    from pdesharp.prompting import shorten
    from pdesharp.untrusted import markdown_text

    text = str(text)
    for ascii_, sign in _SIGNS:
        text = text.replace(ascii_, sign)
    return markdown_text(shorten(text, limit))


def seconds_per_sample(result: EvalResult | None) -> float | None:
    """Solver wall time per sample of a result, as the evaluator measured it (None if absent)."""
    return None if result is None else result.seconds_per_sample


@dataclass
class SolverRow:
    """One solver of the tournament table."""

    cand: Candidate
    result: EvalResult | None
    cycle: int
    round: int
    rank: int | None = None  # place among all scored solvers (1 = the tournament's best)

    @property
    def score(self) -> float | None:
        return self.result.score if self.result is not None and self.result.ok else None

    @property
    def status(self) -> str:
        return "not run" if self.result is None else self.result.status

    @property
    def per_sample(self) -> float | None:
        return seconds_per_sample(self.result)

    @property
    def vs_converged(self) -> float | None:
        """nRMSE against the converged solution of a reference audit (pdesharp.audit), if any."""
        return self.result.nrmse_converged if self.result is not None and self.result.ok \
            else None


def any_converged(rows: list[SolverRow]) -> bool:
    """Does the table need a column for the distance to the converged solution?"""
    return any(row.vs_converged is not None for row in rows)


@dataclass
class RoundRow:
    """One round: who ran in it, its best solver, and the best so far."""

    cycle: int
    round: int
    ran: list[str] = field(default_factory=list)
    best_id: str | None = None
    best: float | None = None
    best_per_sample: float | None = None
    so_far_id: str | None = None
    so_far: float | None = None

    @property
    def label(self) -> str:
        return f"cycle {self.cycle}, round {self.round}"


def first_nominated(events: list[dict]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for e in events:
        if e.get("kind") == "nomination" and e.get("nominee"):
            out.setdefault(e["nominee"], (e.get("cycle", 0), e.get("round", 0)))
    return out


def solver_rows(cands: list[Candidate], results: dict[str, EvalResult], events: list[dict],
                rule: Rule = Rule()) -> list[SolverRow]:
    """Every solver the tournament ran or made, in the round it was evaluated (Genesis
    candidates that were run included; those never run are counted, not listed), with its
    rank by the tournament's rule."""
    nominated = first_nominated(events)
    rows = []
    for c in cands:
        if c.origin in ("seed", "baseline"):
            continue
        r = results.get(c.id)
        if c.origin == "genesis":
            if r is None:
                continue
            cycle, rnd = nominated.get(c.id, (0, 0))
        else:
            cycle, rnd = c.cycle, c.round
        rows.append(SolverRow(cand=c, result=r, cycle=cycle, round=rnd))
    scored = [(row, row.result) for row in rows if row.score is not None]
    for i, (row, _) in enumerate(rank(scored, rule), start=1):
        row.rank = i
    # a fixed order whatever order concurrent turns finished in (the narrative prompt lists
    # these rows, and a resumed run must make the same prompt): Genesis first, then by id
    genesis = {c.id: i for i, c in enumerate(cands) if c.origin == "genesis"}
    rows.sort(key=lambda row: (row.cycle, row.round, row.cand.id not in genesis,
                               genesis.get(row.cand.id, 0), row.cand.id))
    return rows


def played_rounds(events: list[dict]) -> list[tuple[int, int]]:
    """(cycle, round) of every round the tournament played, from its ``round_best`` events."""
    return [(e.get("cycle", 0), e.get("round", 0)) for e in events
            if e.get("kind") == "round_best"]


def round_rows(rows: list[SolverRow], rule: Rule = Rule(),
               played: list[tuple[int, int]] = ()) -> list[RoundRow]:
    """Per round (from :func:`solver_rows`; ``played`` adds the rounds in which nothing new
    ran): the solvers run, the best of them, the best so far (by the tournament's rule)."""
    out: list[RoundRow] = []
    seen: list[tuple[SolverRow, EvalResult]] = []
    keys = sorted({(r.cycle, r.round) for r in rows} | set(played))
    for cycle, rnd in keys:
        here = [r for r in rows if (r.cycle, r.round) == (cycle, rnd)]
        rr = RoundRow(cycle=cycle, round=rnd, ran=[r.cand.id for r in here if r.result])
        scored = [(r, r.result) for r in here if r.score is not None]
        if scored:
            best = rank(scored, rule)[0][0]
            rr.best_id, rr.best, rr.best_per_sample = best.cand.id, best.score, best.per_sample
        seen += scored
        if seen:
            top = rank(seen, rule)[0][0]
            rr.so_far_id, rr.so_far = top.cand.id, top.score
        out.append(rr)
    return out


@dataclass
class EvalRow:
    """One row of the evaluations journal: counted executions are numbered 1, 2, ...; a
    request for code that already ran reuses that result and is not counted."""

    number: int | None  # counted executions only
    candidate: str
    split: str
    result: EvalResult
    reused_from: str = ""
    retime: int = 0  # k: the k-th (warm) re-timing run of the code (0: its evaluation)
    warm: bool = False  # a warm timing: the winner's (retime 0) or a warm re-timing run

    @property
    def label(self) -> str:
        if self.retime:
            return f"{self.candidate} ({'warm ' if self.warm else ''}re-timing {self.retime})"
        return self.candidate + (" (warm timing)" if self.warm else "")

    @property
    def journal_id(self) -> str:
        """The id the run's journal (its events) knows this row by."""
        if self.retime:
            return (warm_retime_id if self.warm else retime_id)(self.candidate, self.retime)
        return warm_id(self.candidate) if self.warm else self.candidate


def evaluation_rows(db: sqlite3.Connection) -> list[EvalRow]:
    rows = db.execute("SELECT candidate_id, code_sha256, split, feedback, counted, result "
                      "FROM evaluations ORDER BY seq").fetchall()
    out, n, first = [], 0, {}
    for label, sha, split, feedback, counted, result in rows:
        key = (sha, split, feedback)
        cid, mark, k = parse_run_id(label)
        warm = mark in (WARM_MARK, WARM_RETIME_MARK)
        if counted:
            n += 1
            if not mark:
                first[key] = cid
        out.append(EvalRow(number=n if counted else None, candidate=cid, split=split,
                           result=EvalResult.model_validate_json(result), retime=k, warm=warm,
                           reused_from="" if counted else first.get(key, "an earlier run")))
    return out


@dataclass
class CallRow:
    """Model calls of one role: count and measured prompt / completion tokens."""

    tag: str
    calls: int
    prompt_mean: float
    prompt_max: int
    completion_mean: float
    replayed: int = 0
    cached_mean: float = 0.0  # prompt tokens the provider's prompt cache served, per call


def call_rows(db: sqlite3.Connection) -> list[CallRow]:
    """Per role (the call's tag without its ``.reask`` suffix), the tokens each call measured,
    as the endpoint reported them (replayed and cached calls included, with the tokens of the
    call they replay)."""
    cached = "cached_tokens" if has_column(db, "model_calls", "cached_tokens") else "0"
    rows = db.execute(f"SELECT tag, prompt_tokens, completion_tokens, source, {cached} FROM "
                      "model_calls WHERE error = '' ORDER BY seq").fetchall()
    groups: dict[str, list[tuple[int, int, str, int]]] = {}
    for tag, pt, ct, source, hit in rows:
        groups.setdefault(tag, []).append((pt or 0, ct or 0, source or "model", hit or 0))
    out = []
    for tag, items in groups.items():
        n = len(items)
        out.append(CallRow(tag=tag, calls=n, prompt_mean=sum(i[0] for i in items) / n,
                           prompt_max=max(i[0] for i in items),
                           completion_mean=sum(i[1] for i in items) / n,
                           replayed=sum(i[2] != "model" for i in items),
                           cached_mean=sum(i[3] for i in items) / n))
    return out


def results_of(db: sqlite3.Connection, split: str, feedback: str) -> dict[str, EvalResult]:
    """Each candidate's latest result on ``split`` with ``feedback``; a re-timed candidate's
    with its settled time (the median over its evaluation and its re-timing runs) and its warm
    re-timing runs' warm calls. The winner's warm timing feeds no decision and is left out."""
    out: dict[str, tuple[str, EvalResult]] = {}
    # by code: candidates with the same code share them
    reruns: dict[str, dict[str, list[EvalResult]]] = {RETIME_MARK: {}, WARM_RETIME_MARK: {}}
    ran: dict[str, str] = {}  # candidate id -> code, for the timings that ran
    for label, sha, result in db.execute("SELECT candidate_id, code_sha256, result FROM "
                                         "evaluations WHERE split=? AND feedback=? ORDER BY seq",
                                         (split, feedback)):
        cid, mark, _ = parse_run_id(label)
        r = EvalResult.model_validate_json(result)
        if mark in reruns:
            reruns[mark].setdefault(sha, []).append(r)
        elif not mark:
            out[cid] = (sha, r)
            ran[cid] = sha
    # search timings that ran beside another evaluation: left out of a re-timed code's median
    shared = {ran[e["candidate"]] for e in read_events(db, "evaluation")
              if e.get("contended") and e.get("candidate") in ran}
    return {cid: settled(r, reruns[RETIME_MARK].get(sha, []),
                         reruns[WARM_RETIME_MARK].get(sha, []), alone=sha not in shared)
            for cid, (sha, r) in out.items()}
