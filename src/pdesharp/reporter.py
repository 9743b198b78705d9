"""The run report: ``report.md`` in the run folder, built from the run store.

Sections: the result and how the run was set up (the objective, and how the winner's time was
established), the analysis (with the steps a route skipped and why), a table of every solver that
ran or was made (Genesis candidates included, with score, solver time per sample and rank), the
ancestry of the best, a per-round table, accuracy against cost (every evaluated solver, its
Pareto front and the winner: a table and ``pareto.svg``), the evaluations journal (re-timing runs
included), the measured prompt sizes per role, the accounting, and a short narrative written by a
model (one call, tag "reporter", shown the whole scored pool; skipped with the built-in analyst,
with no reporter model, or after a budget stop; also saved as ``narrative.md``). The tables are
the HTML report's (:mod:`pdesharp.report.tables`). The test-split number appears in the report but is
never part of the narrative prompt: no model ever sees it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pdesharp.genesis import GENESIS_TEMPERATURE
from pdesharp.audit.lines import report_lines as audit_lines
from pdesharp.llm.base import BudgetExceeded, Message, ModelError
from pdesharp.facts import TaskFacts, statement
from pdesharp.prompting import analysis_context, ask, render, shorten
from pdesharp.records import STEP_NUMBERS, Analysis
from pdesharp.report import library_front, pareto, tables
from pdesharp.store import RunStore
from pdesharp.synthesis import run_rule
from pdesharp.synthesis.lineage import is_rewrite
from pdesharp.synthesis.ranking import Rule
from pdesharp.synthesis.timing import apart_words
from pdesharp.task import Task
from pdesharp.untrusted import (markdown_code, markdown_prose, markdown_span, markdown_text,
                                one_line)



def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3e}"
    return str(v)


def _cell(text: str, limit: int = tables.TITLE_CHARS) -> str:
    """A model- or solver-written string for a Markdown table cell or list item: one line,
    shortened, HTML and pipes escaped (report.md is rendered by viewers that run HTML)."""
    return tables.cell_text(text, limit)


_ABSOLUTE = re.compile(r"(?<![\w.~/-])/(?:[^\s`'\"()|<>\[\]/]+/)+([^\s`'\"()|<>\[\]/;,]+)")


_COMMAND = re.compile(r"(`+)(pdesharp .*?)\1")  # a suggested command, in its code span


def portable(text: str, run_dir) -> str:
    """``text`` without the absolute paths of the machine it ran on: files of the run folder
    relative to it (report.md sits there), the home folder as ``~``, any other path (the data
    file, an audit in a cache) by its file name. A suggested ``pdesharp`` command keeps its
    paths, so that it runs as written from any folder; summary.json keeps every full path."""
    run = str(Path(run_dir).resolve())
    home = str(Path.home())

    def prose(part: str) -> str:
        part = part.replace(run + os.sep, "").replace(run, ".")
        if len(home) > 1:
            part = re.sub(re.escape(home) + r"(?=/)", "~", part)
        return _ABSOLUTE.sub(lambda m: m.group(1), part)

    out, at = [], 0
    for m in _COMMAND.finditer(text):
        out += [prose(text[at:m.start()]), m.group(0)]
        at = m.end()
    return "".join(out + [prose(text[at:])])


def _line(text, limit: int = 80) -> str:
    """The same for a line inside a code block (no HTML there: only controls removed)."""
    return one_line(shorten(str(text), limit), limit + 1)


def ancestry_tree(store: RunStore, cid: str, feedback: str = "nrmse",
                  entry: str = "solver") -> list[str]:
    """The true ancestry of ``cid`` as an indented tree (each solver's parents below it; a
    solver reached twice is expanded once and then marked "see above"). A base that a
    modification replaced rather than modified (:func:`pdesharp.synthesis.lineage.is_rewrite`)
    is marked so, and its own ancestry is not expanded: it is not the new design's."""
    lines: list[str] = []
    seen: set[str] = set()

    def label(c) -> str:
        r = store.result_for(c.id, "dev", feedback)
        score = _fmt(r.score) if r and r.ok and r.score is not None else (
            r.status if r else "not run")
        return f"{c.id}" + (f" — {_line(c.title, 80)}" if c.title else "") + f" [{score}]"

    def walk(node_id: str, prefix: str, last: bool, root: bool, replaced: bool = False) -> None:
        c = store.candidate(node_id)
        branch = "" if root else ("└── " if last else "├── ")
        if c is None:
            lines.append(f"{prefix}{branch}{node_id} (unknown)")
            return
        if replaced:
            lines.append(f"{prefix}{branch}{label(c)} (replaced by a rewrite, not modified)")
            return
        if node_id in seen:
            lines.append(f"{prefix}{branch}{node_id} (see above)")
            return
        seen.add(node_id)
        lines.append(f"{prefix}{branch}{label(c)}")
        child_prefix = prefix if root else prefix + ("    " if last else "│   ")
        parents = [p for p in c.parents if p != node_id]
        for i, parent in enumerate(parents):
            base = store.candidate(parent) if i == 0 and c.origin == "patch" else None
            walk(parent, child_prefix, i == len(parents) - 1, False,
                 replaced=base is not None and is_rewrite(base.code, c.code, entry))

    walk(cid, "", True, True)
    return lines


def _sps(seconds) -> str:
    return "–" if seconds is None else f"{seconds:.3g} s"


def _tables(store: RunStore, feedback: str, rule: Rule):
    cands = store.candidates()
    results = tables.results_of(store.db, "dev", feedback)
    events = store.events()
    rows = tables.solver_rows(cands, results, events, rule)
    return cands, results, rows, tables.round_rows(rows, rule, tables.played_rounds(events))


def objective_lines(final: dict, rule: Rule, metric: str) -> list[str]:
    """The objective, how the winner's time was established, and why the winner is not the
    lowest score (a tie won on time, or a time objective)."""
    lines = []
    below = (final.get("reference_audit") or {}).get("ranked_below_floor")
    if rule.objective.by_time or below:
        lines.append(f"- Objective: {final.get('objective_words') or rule.objective.words(metric)}"
                     f"; time: {rule.time_words()}")
    timed = final.get("winner_time") or {}
    if timed.get("per_sample") is not None:
        lines.append(f"- Winner's time: {_sps(timed['per_sample'])} per sample on the dev "
                     f"split, {timed['how']}")
    apart = apart_words(timed)
    if apart:
        lines.append(f"- Winner's time taken apart (one more run on the dev split): {apart}")
    pick = final.get("objective_pick")
    if pick:
        lines.append(f"- Not the lowest score: `{pick['lowest_id']}` scored lowest "
                     f"({_fmt(pick['lowest_score'])} in {_sps(pick.get('lowest_per_sample'))} per "
                     f"sample); under the objective the winner is the fastest eligible solver "
                     f"({_sps(pick.get('best_per_sample'))} per sample)")
    floor = final.get("floor_pick")
    if floor:
        lines.append(
            f"- Decided below the reference floor: `{floor['lowest_id']}` scored lowest "
            f"({_fmt(floor['lowest_score'])} in {_sps(floor.get('lowest_per_sample'))} per "
            f"sample{_conv(floor.get('lowest_vs_converged'))}); {metric}s at or below the "
            f"floor {_fmt(floor['floor'])} are within the data's own error of the PDE, so the "
            f"fastest of them wins (the winner: {_sps(floor.get('best_per_sample'))} per "
            f"sample{_conv(floor.get('best_vs_converged'))}); `--no-floor-saturation` ranks "
            "by the lowest score alone")
    return lines


def floors_lines(final: dict, rule: Rule, metric: str) -> list[str]:
    """Which set-up ranked the run: the floors (the default, every role) or the paper's."""
    if final.get("floor_saturation") is False:
        return ["- Floors: off (`--no-floor-saturation`, the paper's set-up): ranked by the "
                f"lowest {metric} alone, and the search did not stop at the reference's error"]
    if "floor_saturation" not in final:  # a summary written before the switch was recorded
        return []
    if rule.floor is not None:
        whose = "the data file's stated" if (final.get("reference_audit") or {}).get(
            "source") == "stated" else "the audit's"
        used = f"the reference floor {rule.floor:.3e}, a multiple of {whose} reference error"
    elif rule.round_off is not None:
        used = (f"no audit, so the data's round-off floor {rule.round_off:.1e}: the {metric} "
                "that rounding the reference to its stored type alone causes")
    else:
        used = "no floor was known (no audit, no reference arrays to measure the rounding on)"
    return [f"- Floors: on (floor saturation, the default for every role): {used}; {metric}s "
            "at or below the floor tie, time decides among them by the time rule, and the search "
            "stops there; "
            "`--no-floor-saturation` gives the paper's set-up"]


TIME_COLUMN = ("s/sample: the evaluator's wall-clock time of one solver call on all the split's "
               "samples, from before the solver module is imported (imports count) to the end "
               "of the call, divided by the number of samples; a median when re-timed")


def _change(ev: dict) -> str:
    """What one evaluation changed, from its ``evaluation`` event."""
    if not ev or "lowest_after" not in ev:
        return ""
    before, after = ev.get("lowest_before"), ev.get("lowest_after")
    if before != after:
        return f"lowest {_fmt(before)} → {_fmt(after)}" + (" (improved)" if ev.get("improved")
                                                           else "")
    t0, t1 = ev.get("pick_seconds_before"), ev.get("pick_seconds_after")
    if t0 is not None and t1 is not None and t0 != t1:
        return f"pick's time {_sps(t0)} → {_sps(t1)}"
    return "nothing"


def _conv(v) -> str:
    return "" if v is None else f", {v:.3e} from the converged solution"


def settings_line(config) -> str:
    """How the run was set up, as far as the prompts are concerned."""
    if getattr(config, "builtin", False):
        return "Roles: the built-in numerical analyst (no language model)."
    return (f"Models: {config.model}" + (f" (judges {', '.join(config.judges)})"
                                         if config.judges else "")
            + f"; task facts: {config.task_facts}; Genesis: {config.genesis} sampling at "
            f"temperature {GENESIS_TEMPERATURE}; judge code budget: {config.prompt_budget} "
            "characters per prompt.")


def analysis_lines(analysis: Analysis) -> list[str]:
    c = analysis.classification
    lines = [f"- Source: {analysis.source}; route: **{analysis.route}**",
             f"- Classification: {c.pde_type}, {'linear' if c.linear else 'nonlinear'}, "
             + (f"order {c.time_order} in time / {c.space_order} in space"
                if c.time_order is not None else f"steady, order {c.space_order} in space")
             + f"; boundary: {_cell(c.boundary, 200)}"]
    for st in analysis.steps:
        if st.name == "classification":
            continue
        n = STEP_NUMBERS.get(st.name, "?")
        if st.skipped:
            lines.append(f"- Step {n} ({st.name}): not asked, {st.skipped}")
        elif st.applies is not None:
            summary = _cell((st.facts or {}).get("summary", ""), 200)
            lines.append(f"- Step {n} ({st.name}): {'applies' if st.applies else 'does not apply'}"
                         + (f"; {summary}" if summary else ""))
    for b in analysis.stability:
        lines.append(f"- Stability ({_cell(b.scheme)}): dt ≤ {markdown_span(b.expression)}"
                     + (f" ≈ {b.value:.3g} on the reference grid" if b.value is not None else ""))
    # a key fact restating a bound above ("scheme: dt <= value") is not printed again
    stated = tuple(f"{b.scheme}: dt <=" for b in analysis.stability)
    lines += [f"- {_cell(f, 500)}" for f in analysis.key_facts
              if not (stated and str(f).startswith(stated))]
    return lines


async def write_report(task: Task, store: RunStore, analysis: Analysis | None, config,
                       reporter_model, final: dict) -> str:
    feedback = config.feedback
    rule = run_rule.recorded(store, config)
    metric = "nRMSE" if feedback == "nrmse" else f"{feedback} score"
    cands, results, rows, rounds = _tables(store, feedback, rule)
    best = results.get(final.get("best_id") or "")
    lines = [f"# PDE-SHARP run `{store.run_id}`: {markdown_text(task.title)}", ""]
    lines += ["## Result", "",
              f"- Best solver: `{final.get('best_id') or 'none'}`"
              + (f" (`{final['best_solver']}`)" if final.get("best_solver") else ""),
              f"- Best dev-split score ({feedback}): {_fmt(final.get('best_dev_score'))}"
              + (f", solver time {_sps(tables.seconds_per_sample(best))} per sample"
                 if tables.seconds_per_sample(best) is not None else ""),
              f"- Test-split nRMSE: {_fmt(final.get('test_nrmse'))}"
              + (f" ({_cell(final['test_note'], 500)})" if final.get("test_note") else "")]
    tie_break = final.get("tie_break")
    if tie_break:
        lines.append(f"- Run-time tie-break: `{tie_break['lowest_id']}` scored lowest "
                     f"({_fmt(tie_break['lowest_score'])} in "
                     f"{_sps(tie_break.get('lowest_per_sample'))} per sample); scores within "
                     f"{100 * tie_break['tie_tolerance']:g} % of the lowest"
                     + (f" and scores at or below the data's round-off floor "
                        f"{tie_break['round_off']:.1e}" if tie_break.get("round_off") else "")
                     + f" count as a tie, and {rule.time_words()} (this one: "
                     f"{_sps(tie_break.get('best_per_sample'))} per sample)")
    lines += objective_lines(final, rule, metric)
    if final.get("stop_reason"):
        lines.append(("- Stopped early: " if final.get("budget_stop") else "- Search ended: ")
                     + _cell(final["stop_reason"], 500))
    iso = final.get("isolation") or {}
    if iso.get("unsafe"):
        lines.append("- **WARNING: solvers ran without isolation (`--unsafe-no-isolation`)**: a "
                     "solver could read the data and forge its score; treat every number here "
                     "as unverified")
    elif iso:
        lines.append(f"- Sandbox: {iso.get('mechanism')} (device {iso.get('device', 'cpu')})")
    lines += audit_lines(final.get("reference_audit"))  # the floor under the scores
    lines += floors_lines(final, rule, metric)
    lines += [f"- {settings_line(config)}", ""]

    if analysis is not None:
        lines += ["## Analysis", "", *analysis_lines(analysis), ""]
        disagreements = store.events("disagreement")
        skipped = store.events("cross_check_skipped")
        if disagreements:
            lines += ["Checks against the built-in symbolic analysis:", ""]
            lines += [f"- **{_cell(d['severity'], 20)}** {markdown_span(d['fact'], 80)}: model "
                      f"says {_cell(d['llm'], 300)}, symbolic analysis says "
                      f"{_cell(d['builtin'], 300)}"
                      + (f" ({_cell(d['note'], 300)})" if d.get("note") else "")
                      for d in disagreements]
            lines.append("")
        elif skipped:  # e.g. the built-in analyst does not cover the task: say so, and why
            lines += ["The cross-check against the built-in symbolic analysis was skipped: "
                      + markdown_text(skipped[-1].get("reason", "no reason recorded")), ""]
        elif analysis.source == "llm" and (store.dir / "disagreements.json").exists():
            lines += ["The cross-check against the built-in symbolic analysis found no "
                      "disagreement.", ""]

    conv = tables.any_converged(rows)  # the audit's converged solution: its own column
    lines += ["## Tournament", ""]
    if feedback == "residual":  # the score column needs saying what it measures
        from pdesharp.evaluate.residual import EXPLANATION

        lines += [EXPLANATION, ""]
    lines += [
              "Every solver that ran, in the round it ran in (Genesis candidates in the round "
              "they were first nominated), ranked by the tournament's rule"
              + (" (vs converged: nRMSE against the audit's converged solution of the PDE, "
                 "never shown to a judge)" if conv else "") + ". " + TIME_COLUMN + ":", "",
              f"| cycle | round | solver | origin | parents | judge | change | {feedback} | "
              + ("vs converged | " if conv else "") + "s/sample | rank |",
              "|---|---|---|---|---|---|---|---|" + ("---|" if conv else "") + "---|---|"]
    for row in rows:
        c = row.cand
        score = _fmt(row.score) if row.score is not None else row.status
        lines.append(f"| {row.cycle} | {row.round} | `{c.id}` | {c.origin} | "
                     f"{_cell(', '.join(c.parents))} | {_cell(c.judge or '', 40)} | "
                     f"{_cell(c.title or c.justification)} | {score} | "
                     + (f"{_fmt(row.vs_converged)} | " if conv else "")
                     + f"{_sps(row.per_sample)} | {row.rank or '–'} |")
    genesis = [c for c in cands if c.origin == "genesis"]
    never = [c.id for c in genesis if c.id not in results and c.static_check == "ok"]
    lines += ["", f"Genesis wrote {len(genesis)} candidates "
              f"({sum(c.static_check != 'ok' for c in genesis)} failed the static check); "
              f"{sum(c.id in results for c in genesis)} were run"
              + (f"; never run: {', '.join(never)}" if never else "") + ".", ""]
    if final.get("best_id"):
        lines += ["Ancestry of the best solver (each solver above the ones it was built from):",
                  "", markdown_code("\n".join(ancestry_tree(store, final["best_id"], feedback,
                                                              task.solver.name))),
                  ""]
    if rounds:
        lines += ["Per round (best by the tournament's rule):", "",
                  f"| round | solvers run | best in round | {feedback} | s/sample | best so far |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r.label} | {', '.join(r.ran) or '–'} | {r.best_id or '–'} | "
                  f"{_fmt(r.best)} | {_sps(r.best_per_sample)} | "
                  f"{r.so_far_id or '–'} ({_fmt(r.so_far)}) |" for r in rounds]
        lines.append("")
    lines += pareto_section(store, cands, results, final, rule, metric, task)
    lines += library_front.section(store.dir)  # a bench's measurement of another library, if any
    for kind in ("saturation", "patch_failed", "patch_abandoned", "no_change", "invalid_parents",
                 "budget_stop"):
        n = len(store.events(kind))
        if n:
            lines.append(f"- {kind.replace('_', ' ')}: {n} event(s)")
    cut = store.events("calls_cut")
    if cut:  # the tournament's: judges not asked for what the evaluation budget could not run
        asked = sum(len(e.get("judges", [])) for e in cut)
        lines.append(f"- judge calls not made (no evaluation left to run their answer): {asked}")
    if reporter_model is not None and analysis is not None and final.get("best_id"):
        narrative = await _narrative(task, store, analysis, reporter_model, rows, rounds, final)
        if narrative:
            (store.dir / "narrative.md").write_text(narrative.strip() + "\n")
            lines[2:2] = ["## Narrative (model-written)", "", markdown_prose(narrative.strip()),
                          ""]
    acc = store.accounting()  # after the narrative call, so the report counts it
    why = {(e.get("candidate"), e.get("split", "dev")): e for e in store.events("evaluation")}
    lines += ["", "## Evaluations", "",
              "Counted executions are numbered; a request for code that already ran reuses "
              "its result and is not counted. Why each was spent, and what it changed (the "
              "lowest score before → after, or the pick's time):", "",
              f"| # | solver | split | status | {feedback} | s/sample | why | changed |",
              "|---|---|---|---|---|---|---|---|"]
    for e in tables.evaluation_rows(store.db):
        number = str(e.number) if e.number else f"– (reuses {e.reused_from})"
        ev = why.get((e.journal_id, e.split), {})
        lines.append(f"| {number} | `{e.candidate}`{e.label[len(e.candidate):]}"
                     f" | {e.split} | {e.result.status} | "
                     f"{_fmt(e.result.score)} | {_sps(tables.seconds_per_sample(e.result))} | "
                     f"{_cell(ev.get('reason', ''))} | {_change(ev)} |")
    calls = tables.call_rows(store.db)
    if calls:
        lines += ["", "## Model calls", "",
                  "Tokens as the endpoint measured them (replayed calls show the tokens of the "
                  "call they replay); cached: prompt tokens the provider's prompt cache served "
                  "(priced at its cached rate).", "",
                  "| role | calls | prompt tokens (mean / max) | cached (mean) | "
                  "completion tokens (mean) |", "|---|---|---|---|---|"]
        lines += [f"| {c.tag} | {c.calls}" + (f" ({c.replayed} replayed)" if c.replayed else "")
                  + f" | {c.prompt_mean:.0f} / {c.prompt_max} | {c.cached_mean:.0f} | "
                  f"{c.completion_mean:.0f} |" for c in calls]
    lines += ["", "## Accounting", "",
              f"- Solver evaluations: {acc['evaluations']} ({acc['feedback_evaluations']} on "
              f"the feedback split, {acc['test_evaluations']} final test-split run"
              + (f", {acc['warm_timing_evaluations']} warm timing of the winner"
                 if acc.get("warm_timing_evaluations") else "") + "); "
              f"debugging iterations: {acc['debug_iterations']}",
              f"- Model calls: {acc['model_calls']} paid, {acc['cached_model_calls']} from cache "
              f"or replay; tokens in/out: {acc['tokens_in']}/{acc['tokens_out']} "
              f"({acc.get('tokens_in_cached', 0)} of the input from the providers' prompt "
              "caches); "
              f"cost: ${acc['cost_usd']:.4f}",
              f"- Wall time: {acc['wall_seconds']:.1f} s", ""]

    text = portable("\n".join(lines) + "\n", store.dir)
    (store.dir / "report.md").write_text(text)
    return text


def pareto_section(store: RunStore, cands, results, final: dict, rule: Rule, metric: str,
                   task: Task) -> list[str]:
    """Accuracy against cost: the table, and ``pareto.svg`` beside report.md."""
    view = pareto.pareto(cands, results, final.get("best_id"))
    figure = None
    if view.points:
        from pdesharp.report.figures import pareto_svg

        svg = pareto_svg(view, metric=metric, title=f"{task.name}: {metric} against solver time",
                         bar=pareto.objective_bar(view, rule))
        if svg:
            (store.dir / "pareto.svg").write_bytes(svg)
            figure = "pareto.svg"
    return pareto.markdown(view, metric, figure)


def _reference_error(store: RunStore) -> float | None:
    """The reference's own error as the run's audit recorded it (pdesharp.audit.runs; imported
    here, where a narrative is written: a report alone loads no audit solvers)."""
    from pdesharp.audit.runs import reference_error

    return reference_error(store.events("reference_audit"))


def _facts_of(store: RunStore) -> TaskFacts:
    """The task facts the run's prompts stated (``task_facts.json``), else its level alone."""
    path = store.dir / "task_facts.json"
    try:
        return TaskFacts.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return TaskFacts(level=store.config.get("task_facts", "full"))


async def _narrative(task, store, analysis, model, rows, rounds, final) -> str:
    lineage = store.lineage(final["best_id"])
    cfg = store.config
    rule = run_rule.recorded(store, cfg)
    scores = [r.score for r in rows if r.score is not None]
    # the template explains the reference floor (the round-off floor is in the rule's words)
    in_force = rule.floor_kind(min(scores, default=None)) == "reference"
    pool = [{"rank": r.rank, "id": r.cand.id, "title": r.cand.title, "origin": r.cand.origin,
             "parents": r.cand.parents, "judge": r.cand.judge or "", "score": _fmt(r.score),
             "per_sample": _sps(r.per_sample), "cycle": r.cycle, "round": r.round,
             "status": r.status, "vs_converged": _fmt(r.vs_converged)
             if r.vs_converged is not None else "",
             "below_floor": in_force and rule.at_floor(r.score)}
            for r in sorted(rows, key=lambda r: (r.rank is None, r.rank or 0))]
    never = [f"{c.id} ({c.title})" if c.title else c.id for c in store.candidates("genesis")
             if c.code.strip() and store.result_for(c.id, "dev", store.config.get(
                 "feedback", "nrmse")) is None]
    declined = [{"cycle": e.get("cycle"), "round": e.get("round"), "judge": e.get("judge"),
                 "base": e.get("base"), "why": shorten(e.get("justification", ""), 300)}
                for e in sorted(store.events("no_change"),  # not completion order: replay
                                key=lambda e: (e.get("cycle", 0), e.get("round", 0),
                                               str(e.get("judge"))))]
    facts = _facts_of(store)
    prompt = render("reporter", title=statement(task, facts)["title"],
                    **analysis_context(analysis, facts),
                    rounds=rounds, pool=pool,
                    feedback={"nrmse": "nRMSE", "residual": "PDE residual"}.get(
                        cfg.get("feedback", "nrmse"), "score"),
                    tie_tolerance=cfg.get("tie_tolerance", 0.01), rule=rule,
                    floor_in_force=in_force,
                    # the floor's own basis (the floor is a factor of it), as the run recorded it
                    reference_error=_reference_error(store),
                    # at codepde, the round-off floor's rule without its value (facts.py)
                    objective_words=(final.get("objective_words") or "") if facts.full else
                    rule.words("nRMSE" if cfg.get("feedback", "nrmse") == "nrmse" else "score",
                               min(scores, default=None), data_numbers=False),
                    winner_time=final.get("winner_time") or {}, never=never,
                    declined=declined, end=final.get("stop_reason") or "",
                    evals_used=store.n_feedback_evaluations, eval_limit=cfg.get("max_evals"),
                    retimed=store.n_retimings("dev", cfg.get("feedback", "nrmse")),
                    best_id=final["best_id"], best_title=lineage[0].title if lineage else "",
                    ancestry=ancestry_tree(store, final["best_id"], store.config.get(
                        "feedback", "nrmse"), task.solver.name),
                    justifications=[f"{c.id}: {shorten(c.justification, 600)}"
                                    for c in lineage if c.justification])
    try:
        return await ask(model, [Message(role="user", content=prompt)], "reporter",
                         temperature=0.3, max_tokens=1024)
    except (ModelError, BudgetExceeded) as exc:  # the report is written without it
        store.event("reporter_skipped", reason=str(exc)[:300])
        return ""
