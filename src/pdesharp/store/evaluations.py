"""The evaluations journal of a run (:class:`EvaluationJournal`, a part of
:class:`~pdesharp.store.RunStore`): one row per (candidate, code, split, feedback), the resume
contract (the same code is never executed twice on a split), re-timing runs and the counts
``--max-evals`` limits. See :mod:`pdesharp.store` for the contract."""

from __future__ import annotations

import asyncio

from pdesharp.llm.base import BudgetExceeded
from pdesharp.records import Candidate, EvalResult, Feedback, Split
from pdesharp.store.schema import (RETIME_MARK, SEARCH_ROWS, WARM_RETIME_MARK, code_sha256,
                                   now as _now, parse_run_id, retime_id, warm_id,
                                   warm_retime_id)


class EvaluationJournal:
    """Evaluations of a :class:`~pdesharp.store.RunStore` (uses its ``db``, ``dir``,
    ``eval_limit``, ``observer``, ``_inflight`` and ``_floor``)."""

    def stored_result(self, code: str, split: Split, feedback: Feedback) -> EvalResult | None:
        row = self.db.execute(
            "SELECT result FROM evaluations WHERE code_sha256=? AND split=? AND feedback=? "
            "ORDER BY seq LIMIT 1", (code_sha256(code), split, feedback)).fetchone()
        return EvalResult.model_validate_json(row["result"]) if row else None

    async def evaluate(self, evaluator, candidate: Candidate, *, split: Split,
                       feedback: Feedback) -> EvalResult:
        """The candidate's result on ``split``: stored if this code was already run, else run
        (one counted evaluation). Concurrent requests for the same code share one execution."""
        sha = code_sha256(candidate.code)
        key = (sha, split, feedback)
        fresh = split == "test"  # the reported number: always measured now, never looked up
        stored = None if fresh else self.stored_result(candidate.code, split, feedback)
        if stored is not None:
            self._insert_eval(candidate.id, sha, split, feedback, stored, counted=False)
            self._observe("reused", candidate.id, split, stored)
            return stored
        if key in self._inflight and not fresh:
            result = await asyncio.shield(self._inflight[key])
            self._insert_eval(candidate.id, sha, split, feedback, result, counted=False)
            self._observe("reused", candidate.id, split, result)
            return result
        if self.eval_limit is not None and split != "test" and \
                self.n_feedback_evaluations + len(self._inflight) >= self.eval_limit:
            raise BudgetExceeded(f"evaluation budget spent: {self.eval_limit} solver evaluations"
                                 " (--max-evals)")
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        self._observe("start", candidate.id, split, None)
        try:
            result = await evaluator.evaluate(candidate.code, split=split, feedback=feedback,
                                              label=candidate.id)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            self._inflight.pop(key, None)
        self._floor["all"] += 1
        if split != "test":
            self._floor["feedback"] += 1
        self._insert_eval(candidate.id, sha, split, feedback, result, counted=True,
                          replace=fresh)
        fut.set_result(result)
        self._observe("done", candidate.id, split, result)
        if not result.ok:
            log = self.dir / "logs" / f"{candidate.id}.{split}.log"
            log.write_text(f"{result.summary_line()}\n--- stdout ---\n{result.stdout_tail}\n"
                           f"--- stderr ---\n{result.stderr_tail}\n")
        return result

    async def retime(self, evaluator, candidate: Candidate, k: int, *, split: Split = "dev",
                     feedback: Feedback = "nrmse", warm: bool = False) -> EvalResult:
        """The k-th re-timing run (k >= 1) of ``candidate``'s code: executed and counted once,
        recorded under :func:`retime_id`; on resume the recorded run is returned instead.
        ``warm``: the k-th *warm* re-timing run (``Evaluator.evaluate(warm=True)``), recorded
        under :func:`warm_retime_id`. Both feed the decision, so ``--max-evals`` limits them."""
        if k < 1 or split == "test":
            raise ValueError("re-timing runs are numbered from 1 and use the feedback split")
        if warm:
            return await self._extra_run(evaluator, candidate, warm_retime_id(candidate.id, k),
                                         split, feedback, warm=True)
        return await self._extra_run(evaluator, candidate, retime_id(candidate.id, k), split,
                                     feedback)

    async def warm_timing(self, evaluator, candidate: Candidate, *, split: Split = "dev",
                          feedback: Feedback = "nrmse") -> EvalResult:
        """The warm timing of ``candidate``'s code (``Evaluator.evaluate(warm=True)``): executed
        and counted once, recorded under :func:`warm_id`; on resume the recorded run. Like the
        final test run it feeds no decision: counted in :attr:`n_evaluations`, not in
        :attr:`n_feedback_evaluations`, and ``--max-evals`` does not limit it."""
        return await self._extra_run(evaluator, candidate, warm_id(candidate.id), split,
                                     feedback, feeds=False, warm=True)

    async def _extra_run(self, evaluator, candidate: Candidate, label: str, split: Split,
                         feedback: Feedback, feeds: bool = True, **kw) -> EvalResult:
        sha = code_sha256(candidate.code)
        row = self.db.execute("SELECT result FROM evaluations WHERE candidate_id=? AND "
                              "code_sha256=? AND split=? AND feedback=?",
                              (label, sha, split, feedback)).fetchone()
        if row is not None:
            stored = EvalResult.model_validate_json(row["result"])
            self._observe("reused", label, split, stored)
            return stored
        if feeds and self.eval_limit is not None and \
                self.n_feedback_evaluations + len(self._inflight) >= self.eval_limit:
            raise BudgetExceeded(f"evaluation budget spent: {self.eval_limit} solver evaluations"
                                 " (--max-evals)")
        self._observe("start", label, split, None)
        result = await evaluator.evaluate(candidate.code, split=split, feedback=feedback,
                                          label=label, **kw)
        self._floor["all"] += 1
        self._floor["feedback"] += feeds
        self._insert_eval(label, sha, split, feedback, result, counted=True)
        self._observe("done", label, split, result)
        return result

    def _observe(self, what: str, label: str, split: str, result: EvalResult | None) -> None:
        if self.observer is not None:
            try:
                self.observer(what, label, split, result)
            except Exception:  # noqa: BLE001 - a display must never cost a result
                pass

    def n_retimings(self, split: Split = "dev", feedback: Feedback = "nrmse") -> int:
        """The finalists' re-timing runs on ``split`` (after the search ended:
        :mod:`pdesharp.synthesis.timing`), warm ones included: counted evaluations."""
        return sum(len(v) for warm in (False, True)
                   for v in self.retimings(split, feedback, warm=warm).values())

    def retimings(self, split: Split = "dev", feedback: Feedback = "nrmse", *,
                  warm: bool = False) -> dict[str, list[EvalResult]]:
        """Candidate id -> its re-timing runs on ``split`` (``warm``: its warm re-timing runs),
        in order."""
        mark = WARM_RETIME_MARK if warm else RETIME_MARK
        out: dict[str, list[EvalResult]] = {}
        for r in self.db.execute("SELECT candidate_id, result FROM evaluations WHERE split=? "
                                 "AND feedback=? AND candidate_id LIKE ? ORDER BY seq",
                                 (split, feedback, f"%{mark}%")):
            cid, found, k = parse_run_id(r["candidate_id"])
            if found == mark:
                out.setdefault(cid, []).append(EvalResult.model_validate_json(r["result"]))
        return out

    def _insert_eval(self, cid, sha, split, feedback, result: EvalResult, *, counted: bool,
                     replace: bool = False):
        """One journal row per (candidate, code, split, feedback). A repeated request is not
        inserted at all (an ignored INSERT would still consume an AUTOINCREMENT number and
        leave gaps in ``seq``); rows with ``counted = 0`` are reuses of an earlier result.
        ``replace`` (the final test evaluation, always run afresh) overwrites the row's result
        in place, keeping its number."""
        row = self.db.execute("SELECT seq FROM evaluations WHERE candidate_id=? AND "
                              "code_sha256=? AND split=? AND feedback=?",
                              (cid, sha, split, feedback)).fetchone()
        if row is not None:
            if replace:
                self.db.execute("UPDATE evaluations SET ts=?, status=?, score=?, result=?, "
                                "counted=? WHERE seq=?",
                                (_now(), result.status, result.score, result.model_dump_json(),
                                 int(counted), row["seq"]))
            return
        self.db.execute(
            "INSERT INTO evaluations(ts, candidate_id, code_sha256, split, feedback, "
            "status, score, result, counted) VALUES (?,?,?,?,?,?,?,?,?)",
            (_now(), cid, sha, split, feedback, result.status, result.score,
             result.model_dump_json(), int(counted)))

    def counted(self, cid: str, split: Split, feedback: Feedback) -> bool:
        """Was ``cid``'s result on ``split`` a counted execution (not a look-up)?"""
        row = self.db.execute("SELECT counted FROM evaluations WHERE candidate_id=? AND "
                              "split=? AND feedback=?", (cid, split, feedback)).fetchone()
        return bool(row and row["counted"])

    def results_for(self, cid: str) -> list[EvalResult]:
        rows = self.db.execute("SELECT result FROM evaluations WHERE candidate_id=? ORDER BY seq",
                               (cid,))
        return [EvalResult.model_validate_json(r["result"]) for r in rows]

    def result_for(self, cid: str, split: Split, feedback: Feedback) -> EvalResult | None:
        row = self.db.execute(
            "SELECT result FROM evaluations WHERE candidate_id=? AND split=? AND feedback=? "
            "ORDER BY seq DESC LIMIT 1", (cid, split, feedback)).fetchone()
        return EvalResult.model_validate_json(row["result"]) if row else None

    def best_candidate(self, split: Split = "dev", feedback: Feedback = "nrmse"
                       ) -> tuple[Candidate, EvalResult] | None:
        """Lowest score among ok results (earliest wins ties); with no score (feedback
        ``none``), the earliest candidate that ran ok."""
        rows = self.db.execute(
            "SELECT candidate_id, result, score FROM evaluations WHERE split=? AND feedback=? "
            "AND status='ok' ORDER BY (score IS NULL), score, seq", (split, feedback)).fetchall()
        for r in rows:
            c = self.candidate(r["candidate_id"])
            if c is not None:
                return c, EvalResult.model_validate_json(r["result"])
        return None

    def _count_rows(self, feedback_only: bool) -> int:
        sql = "SELECT COUNT(*) FROM evaluations WHERE "
        return self.db.execute(sql + (f"{SEARCH_ROWS} AND split != 'test'" if feedback_only
                                      else "counted=1")).fetchone()[0]

    @property
    def n_evaluations(self) -> int:
        """Every counted execution of the run (feedback split and final test run)."""
        return max(self._count_rows(False), self._floor["all"])

    @property
    def n_feedback_evaluations(self) -> int:
        """Counted executions that fed the search (every split but the final test split):
        PDE-SHARP's cost metric, and what ``--max-evals`` limits."""
        return max(self._count_rows(True), self._floor["feedback"])

