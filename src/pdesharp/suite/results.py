"""A suite's one results store (``suite.sqlite``) and its table (table.md / .csv / .json).

One row per (case, method): the case's state (done, refused, failed, pending) and the numbers
of its cells, read back from the cells' run stores by :func:`pdesharp.bench_tables.collect`
(the same counts as `pdesharp bench`), plus what the suite knows about the case's reference.
The store is written by the process driving the suite after each case, in one transaction,
so a killed suite leaves every finished case recorded and nothing half-written.

Accuracy columns, per case:

* **vs reference**: the winner's nRMSE against the case's reference data (test split when the
  case has one, else dev; labelled), the score benchmarks rank by;
* **reference error**: the reference's own error, where known: the float32 storage bound of an
  exact reference, the estimate a generator stored, or the reference audit's (`pdesharp data
  audit`) measured error;
* **vs PDE**: the winner against the PDE's solution where one is known: the closed form of an
  exact reference (the score itself, up to the storage bound), or the audit's converged solution.

``Pass@t`` (PDEAgent-Bench's columns): the share of all cases, refused and failed ones
included, whose score against the reference is at most ``t``. A threshold below a case's
reference error cannot be certified by that reference: such cases are counted (with the score
as measured) and listed under the table.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import time
from pathlib import Path

THRESHOLDS = (1e-2, 1e-3, 1e-4)
REFUSED_PREFIX = "refused:"  # store key of a case refused before it had a folder of its own
DB_NAME = "suite.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cases (
    name TEXT PRIMARY KEY, position INTEGER NOT NULL, task TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', reference TEXT NOT NULL DEFAULT '{}',
    updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    name TEXT NOT NULL, method TEXT NOT NULL, row TEXT NOT NULL, PRIMARY KEY (name, method));
"""


class ResultsStore:
    """``suite.sqlite``: the suite's configuration, each case's state and its table rows."""

    def __init__(self, out: str | Path):
        self.path = Path(out) / DB_NAME
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=DELETE")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def get(self, key: str):
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                        (key, json.dumps(value)))

    def record(self, name: str, position: int, *, state: str, task: str = "",
               reason: str = "", reference: dict | None = None,
               rows: list[dict] | None = None) -> None:
        """One case's state and rows, replacing what was recorded before, atomically."""
        with self.db:  # one transaction
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT OR REPLACE INTO cases(name, position, task, state, reason, reference,"
                " updated) VALUES (?,?,?,?,?,?,?)",
                (name, position, task, state, reason, json.dumps(reference or {}), time.time()))
            if rows is not None:
                self.db.execute("DELETE FROM rows WHERE name=?", (name,))
                for r in rows:
                    self.db.execute("INSERT INTO rows(name, method, row) VALUES (?,?,?)",
                                    (name, r["method"], json.dumps(r)))

    def state(self, name: str) -> str | None:
        row = self.db.execute("SELECT state FROM cases WHERE name=?", (name,)).fetchone()
        return None if row is None else row[0]

    def table(self, methods: list[str]) -> list[dict]:
        """Every case × method row in suite order (a case without a row for a method: its
        state, e.g. refused, with the reason)."""
        out = []
        for name, task, state, reason, ref in self.db.execute(
                "SELECT name, task, state, reason, reference FROM cases ORDER BY position, name"):
            reference = json.loads(ref)
            have = {m: json.loads(r) for m, r in self.db.execute(
                "SELECT method, row FROM rows WHERE name=?", (name,))}
            for method in methods:
                row = have.get(method) or {"method": method, "label": method}
                out.append(case_row(name, task, state, reason, reference, row))
        return out


def case_row(name: str, task: str, state: str, reason: str, reference: dict,
             row: dict) -> dict:
    """A table row: the cell's numbers (bench_tables.collect) with the case's columns."""
    out = dict(row)
    status = (row.get("statuses") or [None])[0]
    score = row.get("nrmse")
    audit = row.get("audit") or {}
    ref_error = reference.get("error")
    if ref_error is None and audit.get("reference_error") is not None:
        ref_error = audit["reference_error"]
    vs_pde = None
    if score is not None and reference.get("kind") == "exact":
        vs_pde = score
    elif audit.get("best_nrmse_vs_converged") is not None:
        vs_pde = audit["best_nrmse_vs_converged"]
    out.update(case=name.removeprefix(REFUSED_PREFIX), task=task, state=state,
               status=status or ("refused" if state == "refused" else state),
               reference_kind=reference.get("kind", "unknown"), reference_error=ref_error,
               vs_pde=vs_pde,
               reason=reason or row.get("reason") or "")
    if status in ("failed", "budget_stop") and not out["reason"]:
        out["reason"] = row.get("note", "")
    return out


def pass_at(rows: list[dict], methods: list[str]) -> list[dict]:
    """Per method: Pass@t for every threshold, cases counted, and the solver time of the
    passing cases (PDEAgent-Bench ranks by pass rate, then time)."""
    out = []
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        n = len(mine)
        line: dict = {"method": m, "label": next((r.get("label") for r in mine), m),
                      "cases": n, "scored": sum(r.get("nrmse") is not None for r in mine)}
        for t in THRESHOLDS:
            passed = [r for r in mine if r.get("nrmse") is not None and r["nrmse"] <= t]
            line[f"pass@{t:g}"] = len(passed) / n if n else None
            line[f"passed@{t:g}"] = len(passed)
            line[f"uncertified@{t:g}"] = [r["case"] for r in mine
                                          if (r.get("reference_error") or 0) > t]
        times = [r["seconds_per_sample"] for r in mine if r.get("seconds_per_sample") is not None
                 and r.get("nrmse") is not None and r["nrmse"] <= THRESHOLDS[0]]
        line["time_passing"] = sum(times) if times else None
        line["evaluations"] = sum(r.get("evaluations") or 0 for r in mine)
        line["model_calls"] = sum(r.get("model_calls") or 0 for r in mine)
        line["cost_usd"] = sum(r.get("cost_usd") or 0 for r in mine)
        out.append(line)
    return out


# -- formatting -------------------------------------------------------------------------------
COLUMNS = [
    ("case", "case"), ("label", "method"), ("status", "status"), ("nrmse", "vs reference"),
    ("reference_error", "reference error"), ("vs_pde", "vs PDE"),
    ("seconds_per_sample", "solver s/sample"), ("evaluations", "evaluations"),
    ("model_calls", "model calls"), ("tokens_in", "tokens in"), ("tokens_out", "tokens out"),
    ("cost_usd", "cost USD"), ("wall_seconds", "wall s"), ("reason", "refusal / note"),
]


def fmt(key: str, row: dict) -> str:
    v = row.get(key)
    if key == "nrmse":
        return "–" if v is None else f"{v:.3e} ({row.get('score_split', 'dev')})"
    if key == "reference_error":
        kind = row.get("reference_kind", "unknown")
        if v is None:
            return "unknown" if kind in ("unknown", "published") else f"{kind}, not stated"
        return f"{v:.1e} ({kind})" if kind != "unknown" else f"{v:.1e} (audit)"
    if v is None or v == "":
        return "–"
    if key in ("vs_pde",):
        return f"{v:.3e}"
    if key == "seconds_per_sample":
        return f"{v:.3g}"
    if key in ("evaluations", "model_calls", "tokens_in", "tokens_out"):
        return f"{v:.1f}" if v != int(v) else f"{int(v)}"
    if key == "cost_usd":
        return f"{v:.4f}"
    if key == "wall_seconds":
        return f"{v:.1f}"
    if key == "reason":
        from pdesharp.untrusted import one_line

        return one_line(v, 160)
    return str(v)


def threshold(t: float) -> str:
    """1e-2, 1e-3, 1e-4: PDEAgent-Bench's way of writing its thresholds."""
    mantissa, exponent = f"{t:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def pass_lines(summary: list[dict]) -> list[str]:
    head = "| method | cases | " + " | ".join(f"Pass@{threshold(t)}" for t in THRESHOLDS) + \
        " | solver s/sample, passing cases (Pass@1e-2) | evaluations | model calls | cost USD |"
    lines = [head, "|" + "---|" * (len(THRESHOLDS) + 6)]
    for s in summary:
        cells = [f"{s[f'passed@{t:g}']}/{s['cases']}" for t in THRESHOLDS]
        time_ = "–" if s["time_passing"] is None else f"{s['time_passing']:.3g}"
        lines.append(f"| {s['label']} | {s['cases']} | " + " | ".join(cells) +
                     f" | {time_} | {s['evaluations']:g} | {s['model_calls']:g} | "
                     f"{s['cost_usd']:.4f} |")
    notes = []
    for s in summary:
        for t in THRESHOLDS:
            cases = s[f"uncertified@{t:g}"]
            if cases:
                notes.append(f"{s['label']}, Pass@{threshold(t)}: the reference of {', '.join(cases)} "
                             f"is itself further than {t:g} from the PDE, so it cannot certify "
                             "this threshold (counted as measured)")
    return lines + ([""] + [f"- {n}" for n in notes] if notes else [])


def to_markdown(rows: list[dict], summary: list[dict], name: str = "") -> str:
    from pdesharp.untrusted import markdown_span

    head = "| " + " | ".join(h for _, h in COLUMNS) + " |"
    sep = "|" + "|".join("---" for _ in COLUMNS) + "|"
    text = {"case", "label", "reason"}  # untrusted text (names, messages): code spans
    body = ["| " + " | ".join(markdown_span(fmt(k, r), 200) if k in text and fmt(k, r) != "–"
                              else fmt(k, r) for k, _ in COLUMNS) + " |" for r in rows]
    title = [f"# Suite {markdown_span(name, 80)}", ""] if name else []
    notes = ["", "vs reference: the winner's nRMSE against the case's reference data (CodePDE's "
             "formula: every stored frame, t = 0 included), on the test split when the case has "
             "one, else dev. reference error: the reference's own error (exact: float32 storage "
             "of a closed form; audit: `pdesharp data audit`). vs PDE: the winner against the "
             "PDE's solution (the closed form, or the audit's converged solution). Solver time: "
             "the evaluator's clock, per sample, on dev. Evaluations: counted solver "
             "executions on the feedback split.", "", "## Pass rates", ""]
    return "\n".join(title + [head, sep] + body + notes + pass_lines(summary)) + "\n"


CSV_KEYS = ["case", "task", "method", "label", "state", "status", "score_split", "nrmse",
            "reference_kind", "reference_error", "vs_pde", "dev_score", "seconds_per_sample",
            "evaluations", "debug_iterations", "model_calls", "tokens_in", "tokens_out",
            "cost_usd", "wall_seconds", "reason"]


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_KEYS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_KEYS})
    return buf.getvalue()


def write_tables(out: str | Path, rows: list[dict], summary: list[dict], name: str = "") -> None:
    out = Path(out)
    (out / "table.md").write_text(to_markdown(rows, summary, name))
    (out / "table.csv").write_text(to_csv(rows))
    (out / "table.json").write_text(json.dumps({"rows": rows, "pass": summary}, indent=2))
