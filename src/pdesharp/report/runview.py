"""Everything the HTML report shows about one run, read from its folder without writing to it.

The run store is opened read-only (``mode=ro``): making a report never changes a run's
accounting (``RunStore.open`` would add the report's own wall time to the run). The folder is
untrusted input: its files are read by :func:`pdesharp.untrusted.read_inside` (regular files
inside it, no link followed), and anything unreadable counts as absent.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pdesharp.records import Analysis, Candidate, EvalResult
from pdesharp.report.pareto import ParetoView, pareto
from pdesharp.report.tables import (CallRow, EvalRow, RoundRow, SolverRow, any_converged,
                                    call_rows, evaluation_rows, played_rounds, results_of, round_rows,
                                    seconds_per_sample, solver_rows)
from pdesharp.store import SEARCH_ROWS, parents_of, read_events
from pdesharp.synthesis import run_rule
from pdesharp.synthesis.ranking import Rule
from pdesharp.untrusted import UnsafeFolder, read_text_inside, yaml_data

__all__ = ["Node", "RunView", "load_run", "seconds_per_sample", "summary_from_store"]

SOLVER_ORIGINS = ("genesis", "patch", "baseline")


@dataclass
class Node:
    """One candidate in the lineage tree."""

    cand: Candidate
    result: EvalResult | None = None
    children: list["Node"] = field(default_factory=list)
    winner: bool = False
    in_winner_lineage: bool = False

    @property
    def score(self) -> float | None:
        return self.result.score if self.result else None

    @property
    def hybrid(self) -> bool:
        """A tournament patch that draws on several parents (a refinement shown several
        seeds is not called a hybrid)."""
        return self.cand.origin == "patch" and len(self.cand.parents) >= 2


@dataclass
class Diff:
    child: str
    parent: str
    kind: str  # "hybrid", "patch", "debug", ...
    lines: list[tuple[str, str]]  # (css class, text)
    added: int = 0
    removed: int = 0


@dataclass
class RunView:
    dir: Path
    summary: dict
    config: dict
    task: dict
    analysis: Analysis | None
    candidates: list[Candidate]
    results: dict[str, EvalResult]  # candidate id -> latest feedback-split result
    roots: list[Node]
    curve: list[tuple[int, float]]  # (evaluation number, best score so far)
    rounds: list[RoundRow]  # per tournament round: who ran, best in round, best so far
    diffs: list[Diff]
    winner: Candidate | None
    events: list[dict]
    rows: list[SolverRow] = field(default_factory=list)  # the tournament table
    evaluations: list[EvalRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    narrative: str = ""  # the model-written narrative of report.md, if any
    rule: Rule = field(default_factory=Rule)  # the run's ranking rule (its objective)
    pareto: ParetoView | None = None  # every evaluated solver by score and time, its front

    @property
    def model(self) -> str:
        """Which model played the roles ("builtin" when none was configured)."""
        return self.config.get("model") or "builtin"

    @property
    def converged_column(self) -> bool:
        """Does the tournament table show the distance to the audit's converged solution?"""
        return any_converged(self.rows)

    @property
    def disagreements(self) -> list[dict]:
        return [e for e in self.events if e["kind"] == "disagreement"]

    @property
    def method(self) -> str:
        return self.summary.get("method") or self.config.get("method") or "sharp"

    @property
    def label(self) -> str:
        return self.summary.get("method_label") or ("PDE-SHARP" if self.method == "sharp"
                                                   else self.method)

    @property
    def feedback_split(self) -> str:
        return self.summary.get("feedback_split", "dev")


def _ro(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    return db


def _candidate(row) -> Candidate:
    return Candidate(id=row["id"], code=row["code"], origin=row["origin"],
                     parents=parents_of(row["parents"]), judge=row["judge"],
                     round=row["round"] or 0, cycle=row["cycle"] or 0, title=row["title"] or "",
                     justification=row["justification"] or "",
                     static_check=row["static_check"] or "ok")


def diff_lines(parent: str, child: str, a: str, b: str, context: int = 3) -> Diff:
    lines, added, removed = [], 0, 0
    for line in difflib.unified_diff(a.splitlines(), b.splitlines(), f"{parent}.py",
                                     f"{child}.py", n=context, lineterm=""):
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls, added = "add", added + 1
        elif line.startswith("-"):
            cls, removed = "del", removed + 1
        else:
            cls = "ctx"
        lines.append((cls, line))
    return Diff(child=child, parent=parent, kind="", lines=lines, added=added, removed=removed)


def stored(run_dir: Path, name: str, parse=json.loads, default=None):
    """The parsed file ``name`` of a run folder, or ``default`` if it is absent, not a regular
    file inside the folder, or does not parse into what ``default`` is (a dict for {})."""
    try:
        text = read_text_inside(run_dir, name)
        value = parse(text) if text is not None else default
    except (UnsafeFolder, ValueError, RecursionError, yaml.YAMLError):
        return default
    return value if default is None or isinstance(value, type(default)) else default


def load_run(run_dir: str | Path, max_diffs: int = 25) -> RunView:
    run_dir = Path(run_dir)
    db_path = run_dir / "run.sqlite"
    if not db_path.is_file() or db_path.is_symlink():
        raise FileNotFoundError(f"{run_dir} is not a pdesharp run folder (no run.sqlite)")
    summary = stored(run_dir, "summary.json", default={})
    config = stored(run_dir, "config.json", default={})
    task = stored(run_dir, "task.yaml", yaml_data, default={})
    analysis = stored(run_dir, "analysis.json", Analysis.model_validate_json)
    split = summary.get("feedback_split", "dev")
    feedback = summary.get("feedback") or config.get("feedback") or "nrmse"
    db = _ro(db_path)
    try:
        cands = [_candidate(r) for r in db.execute("SELECT * FROM candidates ORDER BY seq")]
        curve, best, n = [], None, 0
        for r in db.execute("SELECT candidate_id, result, counted, score FROM evaluations "
                            "WHERE split=? AND feedback=? ORDER BY seq", (split, feedback)):
            if r["counted"]:  # re-timing runs too: they are counted evaluations
                n += 1
                if r["score"] is not None and (best is None or r["score"] < best):
                    best = r["score"]
                if best is not None:
                    curve.append((n, best))
        events = read_events(db)
        evaluations, calls = evaluation_rows(db), call_rows(db)
        results = results_of(db, split, feedback)  # re-timed finalists: median times
    finally:
        db.close()
    by_id = {c.id: c for c in cands}
    if not summary:  # the run did not get to write it: show what the store holds
        summary = _summary_from_store(db_path, results)
    winner_id = summary.get("best_id") or summary.get("best_solver")
    winner = by_id.get(winner_id) if winner_id else None
    lineage = _lineage(winner.id, by_id) if winner else []
    nodes = {c.id: Node(c, results.get(c.id), winner=bool(winner and c.id == winner.id),
                        in_winner_lineage=c.id in lineage) for c in cands}
    roots = []
    for c in cands:
        parent = next((p for p in c.parents if p in nodes and p != c.id), None)
        (nodes[parent].children if parent else roots).append(nodes[c.id])
    rule = run_rule.from_events(events, config)
    rows = solver_rows(cands, results, events, rule) \
        if any(c.origin in ("genesis", "patch") for c in cands) else []
    narrative = stored(run_dir, "narrative.md", str, default="")
    return RunView(dir=run_dir, summary=summary, config=config, task=task, analysis=analysis,
                   candidates=cands, results=results, roots=roots, curve=curve,
                   rounds=round_rows(rows, rule, played_rounds(events)), diffs=_diffs(cands, by_id, lineage, max_diffs),
                   winner=winner, events=events, rows=rows, evaluations=evaluations,
                   calls=calls, narrative=narrative, rule=rule,
                   pareto=pareto(cands, results, winner.id if winner else None))


def _lineage(cid: str, by_id: dict[str, Candidate]) -> list[str]:
    out, queue = [], [cid]
    while queue:
        cur = queue.pop(0)
        if cur in out or cur not in by_id:
            continue
        out.append(cur)
        queue.extend(by_id[cur].parents)
    return out


def summary_from_store(run_dir: str | Path) -> dict:
    """What ``summary.json`` would say, read (read-only) from a run folder's run.sqlite: for a
    run that has none (killed, or failed in its final steps). Opening the store read-only
    keeps this from adding to the run's wall time."""
    run_dir = Path(run_dir)
    config = stored(run_dir, "config.json", default={})
    db = _ro(run_dir / "run.sqlite")
    try:
        results = results_of(db, "dev", config.get("feedback") or "nrmse")
    finally:
        db.close()
    return _summary_from_store(run_dir / "run.sqlite", results)


def _summary_from_store(db_path: Path, results: dict[str, EvalResult]) -> dict:
    """A summary rebuilt from run.sqlite for a run without summary.json (killed, or failed in
    its final steps): status, accounting, and the best feedback-split result so far."""
    db = _ro(db_path)
    try:
        run = db.execute("SELECT id, status, note, wall_seconds FROM runs LIMIT 1").fetchone()
        n_all, n_fb = db.execute(
            f"SELECT COUNT(*) FILTER (WHERE counted=1), COUNT(*) FILTER (WHERE {SEARCH_ROWS} AND "
            "split != 'test') FROM evaluations").fetchone()
        calls = db.execute(
            "SELECT COUNT(*) FILTER (WHERE cached=0 AND error=''), COUNT(*) FILTER (WHERE "
            "cached=1), COALESCE(SUM(prompt_tokens) FILTER (WHERE cached=0), 0), COALESCE("
            "SUM(completion_tokens) FILTER (WHERE cached=0), 0), COALESCE(SUM(cost_usd) FILTER "
            "(WHERE cached=0), 0) FROM model_calls").fetchone()
        debug = db.execute("SELECT COUNT(*) FROM debug_iterations").fetchone()[0]
    finally:
        db.close()
    ok = [(r.score, cid) for cid, r in results.items() if r.ok and r.score is not None]
    best = min(ok) if ok else (None, None)
    status = run["status"] if run else "unknown"
    return {"run_id": run["id"] if run else None,
            "status": f"{status} (no summary.json: figures read from the run store)",
            "note": run["note"] if run else "", "evaluations": n_all,
            "feedback_evaluations": n_fb, "debug_iterations": debug, "model_calls": calls[0],
            "cached_model_calls": calls[1], "tokens_in": calls[2], "tokens_out": calls[3],
            "cost_usd": calls[4], "wall_seconds": run["wall_seconds"] if run else None,
            "best_id": best[1], "best_dev_score": best[0]}


def _diffs(cands, by_id, lineage, limit) -> list[Diff]:
    """Hybrids first, then the winner's lineage, then other patches and debug fixes."""
    def rank(c: Candidate) -> int:
        if len(c.parents) >= 2 and c.origin == "patch":
            return 0
        return 1 if c.id in lineage else 2

    picked = [c for c in cands if c.parents and c.parents[0] in by_id and c.origin != "seed"]
    picked.sort(key=rank)
    out: list[Diff] = []
    for c in picked:
        parents = [p for p in c.parents if p in by_id]
        if c.origin == "patch" and len(parents) >= 2:
            pairs = [(p, "hybrid") for p in parents]  # a hybrid: what it took from each parent
        elif len(parents) >= 2:
            # refinement shown several seeds: diff against the one it is closest to
            closest = max(parents, key=lambda p: difflib.SequenceMatcher(
                None, by_id[p].code, c.code).quick_ratio())
            pairs = [(closest, f"{c.origin}, closest of {len(parents)} parents")]
        else:
            pairs = [(parents[0], c.origin)]
        for parent, kind in pairs:
            if len(out) >= limit:
                return out
            d = diff_lines(parent, c.id, by_id[parent].code, c.code)
            d.kind = kind
            out.append(d)
    return out
