"""``pdesharp report``: one self-contained HTML file for a run folder or a bench folder.

Self-contained means the page loads nothing: the stylesheet is inlined, every figure is a
base64 ``data:`` URI (our own SVG, the evaluator's PNG), and there is no script. Every text
that came from a model or from solver code is HTML-escaped by Jinja2's autoescaping.

    path = write_report("runs/advection-20261122-...")            # -> <run>/report.html
    path = write_report("runs/bench", out="bench.html")            # a bench folder

The winner's solution / reference / error figure is made by the evaluator
(:func:`pdesharp.evaluate.plot.plot_sample` in its child process). If the run folder does not
have one yet (``plots/winner-dev.png``), the winner is run once more on the dev split to draw
it; that execution belongs to the report, is cached in the folder, and is *not* counted as a
solver evaluation of the run. ``plot=False`` skips it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jinja2

from pdesharp.audit.lines import report_lines as audit_lines
from pdesharp.report.figures import pareto_svg, png_uri, round_bars, score_curves, svg_uri
from pdesharp.report.pareto import objective_bar
from pdesharp.report.runview import RunView, load_run
from pdesharp.report.tables import seconds_per_sample
from pdesharp.untrusted import UnsafeFolder, check_folder, read_inside


class ReportError(ValueError):
    """The folder is neither a run nor a bench folder."""


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pdesharp", "report"),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["sci"] = lambda v: "–" if v is None else f"{v:.3e}"
    env.filters["num"] = lambda v, d=0: "–" if v is None else f"{v:,.{d}f}"
    env.filters["secs"] = lambda v: "–" if v is None else f"{v:.3g} s"
    env.filters["per_sample"] = seconds_per_sample
    return env


def _css() -> str:
    return (resources.files("pdesharp") / "report" / "style.css").read_text()


def winner_plot(view: RunView, *, data_dir=None, max_samples=None) -> tuple[str | None, str]:
    """The winner's prediction/reference/error PNG as a data URI, and a note on where it came
    from. Draws it (one extra, uncounted execution) when the folder has none, on the run's own
    dev data (the data folder and dev file its config records) unless ``data_dir`` is given."""
    cached = view.dir / "plots" / "winner-dev.png"
    if view.winner is None:
        return None, "no solver ran successfully, so there is nothing to plot"
    try:  # the folder's own copy only: a regular file inside it, with a PNG's signature
        png = read_inside(view.dir, "plots/winner-dev.png")
    except UnsafeFolder as exc:
        return None, f"plot not shown: {exc}"
    if png is None:
        try:
            from pdesharp.evaluate import Evaluator
            from pdesharp.task import task_from_dict

            task = task_from_dict(view.task, str(view.dir / "task.yaml"))
            # The figure shows one sample (the task's plot_sample): load no more than needed.
            needed = max_samples or task.evaluation.plot_sample + 1
            dev_data = None if data_dir else view.config.get("dev_data")
            ev = Evaluator(task, data_dir=data_dir or view.config.get("data_dir"),
                           dev_data=dev_data, max_samples=needed, convergence=False,
                           residual=False)
            result = asyncio.run(ev.evaluate(view.winner.code, split="dev", feedback="nrmse",
                                             label="report-plot", plot_path=cached))
        except Exception as exc:  # missing data, no task: the report still renders
            return None, f"plot not drawn: {exc}"
        png = read_inside(view.dir, "plots/winner-dev.png")
        if png is None:
            return None, _why_no_plot(result)
        return png_uri(png), ("drawn for this report by running the winner once more on "
                              "the dev split (not counted as a solver evaluation)")
    uri = png_uri(png)
    if uri is None:
        return None, "plot not shown: plots/winner-dev.png is not a PNG image"
    return uri, "drawn for this report (cached in plots/winner-dev.png)"


def _why_no_plot(result) -> str:
    """Why the report's extra run of the winner left no figure: the figure failed (the winner
    ran: its run's own message names the plot error) or this run of it failed."""
    from pdesharp.untrusted import one_line

    if result.ok:
        plot = [part for part in (result.message or "").split("; ") if part.startswith("plot:")]
        why = one_line(plot[0], 300) if plot else "no figure was written"
        score = "" if result.score is None else f", score {result.score:.3e}"
        return f"plot not drawn: the winner ran again for it (status ok{score}) but {why}"
    return (f"plot not drawn: running the winner again for it failed this time "
            f"({one_line(result.summary_line(), 300)})")


def audit_items(block: dict | None) -> list[list[tuple[str, bool]]]:
    """The reference audit's report lines, each as (text, is_code) pieces: the same sentences
    as report.md, with its `code` spans kept as code (Jinja2 escapes every piece)."""
    return [[(part, k % 2 == 1) for k, part in enumerate(line.removeprefix("- ").split("`"))]
            for line in audit_lines(block)]


def render_run(run_dir: str | Path, *, plot: bool = True, data_dir=None,
               max_samples=None) -> str:
    view = load_run(run_dir)
    curve_svg = score_curves({view.label: view.curve},
                             title=f"{view.task.get('name', '')}: best score vs evaluations")
    rounds_svg = round_bars([(r.label, r.best) for r in view.rounds],
                            title="best score per round") if view.rounds else None
    plot_uri, plot_note = (winner_plot(view, data_dir=data_dir, max_samples=max_samples)
                           if plot else (None, "plots disabled (--no-plot)"))
    metric = "nRMSE" if view.config.get("feedback", "nrmse") == "nrmse" else "score"
    front = view.pareto
    bar = objective_bar(front, view.rule) if front else None
    pareto_uri = svg_uri(pareto_svg(front, metric=metric, bar=bar,
                                    title=f"{view.task.get('name', '')}: {metric} against "
                                          "solver time")) if front else None
    return _env().get_template("run.html.j2").render(
        css=_css(), v=view, s=view.summary, curve_svg=curve_svg, rounds_svg=rounds_svg,
        plot_uri=plot_uri, plot_note=plot_note, pareto_uri=pareto_uri, metric=metric,
        audit=audit_items(view.summary.get("reference_audit")), generated=_now())


def render_bench(bench_dir: str | Path) -> str:
    from pdesharp.bench import COLUMNS, cell_dir, fmt, load_bench

    bench_dir = Path(bench_dir)
    cfg, rows = load_bench(bench_dir)
    per_task = []
    for task in cfg.names:
        curves, cells = {}, []
        # derived rows (CodePDE best-of-N) have no run folder of their own
        for row in [r for r in rows if r["task"] == task and r["method"] in cfg.methods]:
            for k in range(cfg.repeats):
                d = cell_dir(bench_dir, task, row["method"], k)
                if not (d / "summary.json").is_file():
                    continue
                view = load_run(d)
                name = row["label"] + (f" r{k}" if cfg.repeats > 1 else "")
                curves[name] = view.curve
                cells.append({"name": name, "href": str(d.relative_to(bench_dir)),
                              "status": view.summary.get("status", "")})
        svg = score_curves(curves, title=f"{task}: best dev score vs solver evaluations")
        per_task.append({"task": task, "svg": svg, "cells": cells})
    table = [[fmt(k, r) for k, _ in COLUMNS] for r in rows]
    return _env().get_template("bench.html.j2").render(
        css=_css(), cfg=cfg, headers=[h for _, h in COLUMNS], table=table, per_task=per_task,
        generated=_now())


def is_suite_folder(folder: Path) -> bool:
    return (folder / "suite.json").is_file() and (folder / "suite.sqlite").is_file()


def write_report(folder: str | Path, out: str | Path | None = None, *, plot: bool = True,
                 data_dir=None, max_samples=None) -> Path:
    """Write the HTML report of a run or bench folder; returns the file written."""
    folder = Path(folder).expanduser()
    suite = is_suite_folder(folder)
    bench = (folder / "bench.json").is_file()
    if suite or bench or (folder / "run.sqlite").is_file():
        try:  # untrusted input: nothing in it but regular files and folders
            check_folder(folder, "suite folder" if suite else
                         "bench folder" if bench else "run folder")
        except UnsafeFolder as exc:
            raise ReportError(str(exc)) from None
    if suite:  # the suite's page is the suite's (pdesharp.suite.run.rewrite_page)
        raise ReportError(f"{folder} is a suite's results folder: `pdesharp report` or "
                          "`pdesharp suite report` writes its page")
    if bench:
        html = render_bench(folder)
    elif (folder / "run.sqlite").is_file():
        html = render_run(folder, plot=plot, data_dir=data_dir, max_samples=max_samples)
    else:
        raise ReportError(f"{folder} is neither a run folder (run.sqlite), a bench folder "
                          "(bench.json) nor a suite's results folder (suite.json)")
    path = Path(out) if out else folder / "report.html"
    path.write_text(html)
    return path


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
