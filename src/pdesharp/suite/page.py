"""The suite's HTML page (``index.html`` in its results folder): the Pass@ table and the per-case
table, self-contained (inlined style, no script), every text HTML-escaped by the report's
Jinja2 environment (case names and refusal reasons come from input pdesharp did not write)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from pdesharp.suite.results import COLUMNS, THRESHOLDS, fmt, pass_lines, threshold


def render(cfg, rows: list[dict], summary: list[dict], name: str) -> str:
    from pdesharp.report.html import _css, _env, _now

    pass_headers = ["method", "cases"] + [f"Pass@{threshold(t)}" for t in THRESHOLDS] + \
        ["solver s/sample (passing)", "evaluations", "model calls", "cost USD"]
    pass_rows = [[s["label"], s["cases"]] + [f"{s[f'passed@{t:g}']}/{s['cases']}"
                                             for t in THRESHOLDS]
                 + ["–" if s["time_passing"] is None else f"{s['time_passing']:.3g}",
                    f"{s['evaluations']:g}", f"{s['model_calls']:g}", f"{s['cost_usd']:.4f}"]
                 for s in summary]
    notes = [line[2:] for line in pass_lines(summary) if line.startswith("- ")]
    return _env().get_template("suite.html.j2").render(
        css=_css(), cfg=asdict(cfg), name=name, n_cases=len({r["case"] for r in rows}),
        pass_headers=pass_headers, pass_rows=pass_rows, notes=notes,
        headers=[h for _, h in COLUMNS], table=[[fmt(k, r) for k, _ in COLUMNS] for r in rows],
        cases_dir=str(Path(cfg.out) / "cases"), generated=_now())


def write_page(out, cfg, rows: list[dict], summary: list[dict], name: str) -> Path:
    path = Path(out) / "index.html"
    path.write_text(render(cfg, rows, summary, name))
    return path
