"""What makes a bench table fair: the PDE's solution beside the reference, equal evaluations.

Two numbers the scores alone do not give (issue 24, item 4):

* **Distance from the converged solution.** A score is agreement with a reference that has its
  own error; below that error a lower score means copying the reference's mistakes. Before a
  task's cells run, the bench looks up the reference audit of the dev data (as ``pdesharp solve``
  does, :func:`pdesharp.audit.runs.find`: cached, or computed when cheap) and gives its converged
  solution to the task's evaluator, which every method shares; so every dev evaluation of every
  method is also scored against it (``nrmse_converged``, never shown to a model). The table
  shows each winner's, beside the audit's reference error (``<task>/reference_audit.json``).
* **Best-of-N at PDE-SHARP's evaluations.** CodePDE draws N samples and keeps the best; a run
  with more evaluations has more chances. :func:`equal_budget` takes the CodePDE cell's first N
  counted dev evaluations (N = the PDE-SHARP cell's count, in the order they ran), keeps the
  best by dev score as CodePDE does, scores it on the test split, and stores the row in the
  CodePDE cell's ``best_of_n.json``; the table shows it as "CodePDE best-of-N".
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from pdesharp.store import SEARCH_ROWS, RunStore

BEST_OF_FILE = "best_of_n.json"
AUDIT_FILE = "reference_audit.json"


def _db(run_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{Path(run_dir) / RunStore.DB_NAME}?mode=ro", uri=True)


def _result(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def winner_vs_converged(run_dir: Path, summary: dict) -> float | None:
    """The winner's dev nRMSE against the audit's converged solution, if it was measured."""
    block = summary.get("reference_audit") or {}
    if isinstance(block, dict) and block.get("best_nrmse_vs_converged") is not None:
        return float(block["best_nrmse_vs_converged"])
    winner = summary.get("best_id") or summary.get("best_solver")
    if not winner:
        return None
    db = _db(run_dir)
    try:
        row = db.execute("SELECT result FROM evaluations WHERE candidate_id=? AND split='dev' "
                         "ORDER BY seq DESC LIMIT 1", (winner,)).fetchone()
    finally:
        db.close()
    value = _result(row[0] if row else None).get("nrmse_converged")
    return float(value) if isinstance(value, (int, float)) else None


def best_of_first(run_dir: Path, n: int, split: str = "dev") -> dict | None:
    """The best result (lowest score, earliest on ties) among the first ``n`` counted
    evaluations on ``split`` of a run, with the candidate's code; None if none ran ok."""
    db = _db(run_dir)
    try:
        rows = db.execute(
            "SELECT e.seq, e.candidate_id, e.score, e.result, c.code FROM evaluations e "
            "JOIN candidates c ON c.id = e.candidate_id WHERE e.split=? AND e.counted=1 "
            "ORDER BY e.seq LIMIT ?", (split, int(n))).fetchall()
    finally:
        db.close()
    ok = [(score, seq, cid, result, code) for seq, cid, score, result, code in rows
          if score is not None and _result(result).get("status") == "ok"]
    if not ok:
        return {"evaluations": len(rows), "candidate": None}
    score, _, cid, result, code = min(ok, key=lambda r: (r[0], r[1]))
    res = _result(result)
    n_samples = res.get("n_samples") or 0
    seconds = res.get("solver_seconds")
    return {"evaluations": len(rows), "candidate": cid, "dev_score": float(score),
            "dev_vs_converged": res.get("nrmse_converged"), "code": code,
            "seconds_per_sample": seconds / n_samples if seconds and n_samples else None}


def counted_evaluations(run_dir: Path, split: str = "dev") -> int:
    """Counted executions on ``split`` that fed the search (not the winner's warm timing)."""
    db = _db(run_dir)
    try:
        return int(db.execute(f"SELECT COUNT(*) FROM evaluations WHERE {SEARCH_ROWS} AND "
                              "split=?", (split,)).fetchone()[0])
    finally:
        db.close()


async def equal_budget(sharp_dir: Path, codepde_dir: Path, evaluator) -> dict | None:
    """CodePDE's best of its first N evaluations, N = the PDE-SHARP cell's; stored in the
    CodePDE cell's :data:`BEST_OF_FILE` (reused while N and the CodePDE cell's own count are
    the same: a resumed CodePDE cell may hold more of its first N evaluations now)."""
    if not (sharp_dir / "summary.json").is_file() or \
            not (codepde_dir / "summary.json").is_file():
        return None
    n, available = counted_evaluations(sharp_dir), counted_evaluations(codepde_dir)
    path = codepde_dir / BEST_OF_FILE
    old = stored_record(codepde_dir, BEST_OF_FILE)
    if old is not None and old.get("n") == n and old.get("available") == available:
        return old
    best = best_of_first(codepde_dir, n)
    row: dict[str, Any] = {"n": n, **{k: v for k, v in (best or {}).items() if k != "code"}}
    row["available"] = available
    if best and best.get("candidate"):
        summary = json.loads((codepde_dir / "summary.json").read_text())
        if best["candidate"] == summary.get("best_solver"):
            row["test_nrmse"] = summary.get("test_nrmse")
        else:
            row["test_nrmse"], row["test_note"] = await _test_score(evaluator, best)
    path.write_text(json.dumps(row, indent=1))
    return row


async def _test_score(evaluator, best: dict) -> tuple[float | None, str]:
    from pdesharp.baselines.runner import has_test_split

    if not has_test_split(evaluator):
        return None, "no test data"
    try:
        result = await evaluator.evaluate(best["code"], split="test", feedback="nrmse",
                                          label=f"best-of-N {best['candidate']}")
    except Exception as exc:  # noqa: BLE001 - missing data, evaluator setup: report it
        return None, f"test evaluation not possible: {exc}"[:300]
    return (result.nrmse if result.ok else None), ("" if result.ok else result.status)


def attach_audit(task, evaluator, mode: str, out: Path) -> dict:
    """The reference audit of the task's dev data, wired into the shared ``evaluator`` (every
    method's dev evaluations are then scored against its converged solution too) and recorded
    in ``<out>/<task>/reference_audit.json``; {"status": "none", "reason": ...} without one."""
    from pdesharp.audit import runs

    try:
        audit, reason = runs.find(task, evaluator, mode)
    except Exception as exc:  # noqa: BLE001 - a fake evaluator, missing data: no audit
        audit, reason = None, f"{type(exc).__name__}: {exc}"[:300]
    if audit is None:
        record = {"status": "none", "reason": reason}
    else:
        converged = getattr(evaluator, "converged", None)
        if audit.converged is not None and isinstance(converged, dict):
            converged["dev"] = audit.converged
        record = {"status": "ok", "reference_error": audit.reference_error,
                  "converged": audit.converged is not None, "audit": audit.path,
                  "method": audit.report.method if audit.report else
                  "the error the dev file states about itself", "source": audit.source}
    folder = Path(out) / task.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / AUDIT_FILE).write_text(json.dumps(record, indent=1))
    return record


NUMBERS = ("n", "available", "evaluations", "dev_score", "test_nrmse", "dev_vs_converged",
           "seconds_per_sample", "reference_error")


def stored_record(folder: Path, name: str) -> dict | None:
    """The JSON object ``name`` a bench wrote into ``folder``, or None. A bench folder may be
    someone else's (``pdesharp report BENCH``): read bounded with no link followed
    (:func:`pdesharp.untrusted.read_inside`), and refused unless each of :data:`NUMBERS` it
    holds is a finite number or null."""
    from pdesharp.untrusted import UnsafeFolder, read_inside

    try:
        raw = read_inside(folder, name, limit=1 << 20)
        record = json.loads(raw) if raw is not None else None
    except (UnsafeFolder, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or not all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                          and math.isfinite(v))
            for v in (record.get(k) for k in NUMBERS)):
        return None
    return record


def reference_error(out: Path, task: str) -> float | None:
    record = stored_record(Path(out) / task, AUDIT_FILE)
    value = None if record is None else record.get("reference_error")
    return None if value is None else float(value)
