"""The run report: ``report.md`` in the run folder, built from the run store.

Sections: the key analysis facts, a round-by-round table of every solver the tournament made
(parents, judge, change, score), the best solver per round, the accounting, and a short
narrative written by a model (one call, tag "reporter"; skipped with the built-in analyst, with
no reporter model, or after a budget stop). The test-split number appears in the report but is
never part of the narrative prompt: no model ever sees it.
"""

from __future__ import annotations

from pdesharp.audit.runs import report_lines as audit_lines
from pdesharp.llm.base import BudgetExceeded, Message, ModelError
from pdesharp.prompting import ask, render, shorten
from pdesharp.records import Analysis
from pdesharp.store import RunStore
from pdesharp.task import Task


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3e}"
    return str(v)


def _fmt_s(seconds) -> str:
    return "time unknown" if seconds is None else f"{seconds:.1f} s"


def _cell(text: str, limit: int = 70) -> str:
    return shorten(str(text).replace("|", "/"), limit)


def ancestry_tree(store: RunStore, cid: str, feedback: str = "nrmse") -> list[str]:
    """The true ancestry of ``cid`` as an indented tree (each solver's parents below it; a
    solver reached twice is expanded once and then marked "see above")."""
    lines: list[str] = []
    seen: set[str] = set()

    def label(c) -> str:
        r = store.result_for(c.id, "dev", feedback)
        score = _fmt(r.score) if r and r.ok and r.score is not None else (
            r.status if r else "not run")
        return f"{c.id}" + (f" — {_cell(c.title, 80)}" if c.title else "") + f" [{score}]"

    def walk(node_id: str, prefix: str, last: bool, root: bool) -> None:
        c = store.candidate(node_id)
        branch = "" if root else ("└── " if last else "├── ")
        if c is None:
            lines.append(f"{prefix}{branch}{node_id} (unknown)")
            return
        if node_id in seen:
            lines.append(f"{prefix}{branch}{node_id} (see above)")
            return
        seen.add(node_id)
        lines.append(f"{prefix}{branch}{label(c)}")
        child_prefix = prefix if root else prefix + ("    " if last else "│   ")
        parents = [p for p in c.parents if p != node_id]
        for i, parent in enumerate(parents):
            walk(parent, child_prefix, i == len(parents) - 1, False)

    walk(cid, "", True, True)
    return lines


async def write_report(task: Task, store: RunStore, analysis: Analysis | None, config,
                       reporter_model, final: dict) -> str:
    feedback = config.feedback
    lines = [f"# PDE-SHARP run `{store.run_id}`: {task.title}", ""]
    lines += ["## Result", "",
              f"- Best solver: `{final.get('best_id') or 'none'}`"
              + (f" (`{final['best_solver']}`)" if final.get("best_solver") else ""),
              f"- Best dev-split score ({feedback}): {_fmt(final.get('best_dev_score'))}",
              f"- Test-split nRMSE: {_fmt(final.get('test_nrmse'))}"
              + (f" ({final['test_note']})" if final.get("test_note") else "")]
    tie = final.get("tie_break")
    if tie:
        lines.append(f"- Run-time tie-break: `{tie['lowest_id']}` scored lowest "
                     f"({_fmt(tie['lowest_score'])} in {_fmt_s(tie['lowest_seconds'])}); scores "
                     f"within {100 * tie['tie_tolerance']:g} % of the lowest count as a tie, "
                     f"won by the fastest solver (this one: {_fmt_s(tie['best_seconds'])})")
    if final.get("stop_reason"):
        lines.append(f"- Stopped early: {final['stop_reason']}")
    lines += audit_lines(final.get("reference_audit"))  # the floor under the scores
    lines.append("")

    if analysis is not None:
        c = analysis.classification
        lines += ["## Analysis", "", f"- Source: {analysis.source}; route: **{analysis.route}**",
                  f"- Classification: {c.pde_type}, {'linear' if c.linear else 'nonlinear'}, "
                  f"order {c.time_order} in time / {c.space_order} in space; boundary: {c.boundary}"]
        for b in analysis.stability:
            lines.append(f"- Stability ({b.scheme}): dt ≤ `{b.expression}`"
                         + (f" ≈ {b.value:.3g} on the reference grid" if b.value is not None else ""))
        lines += [f"- {f}" for f in analysis.key_facts]
        lines.append("")
        disagreements = store.events("disagreement")
        if disagreements:
            lines += ["Checks against the built-in symbolic analysis:", ""]
            lines += [f"- **{d['severity']}** `{d['fact']}`: model says {d['llm']}, symbolic "
                      f"analysis says {d['builtin']}" + (f" ({d['note']})" if d.get("note") else "")
                      for d in disagreements]
            lines.append("")

    lines += ["## Tournament", "", "| cycle | round | solver | parents | judge | change | score |",
              "|---|---|---|---|---|---|---|"]
    for cand in store.candidates():
        if cand.origin not in ("patch", "debug"):
            continue
        r = store.result_for(cand.id, "dev", feedback)
        score = (_fmt(r.score) if r and r.ok else (r.status if r else "not run"))
        lines.append(f"| {cand.cycle} | {cand.round} | `{cand.id}` | {', '.join(cand.parents)} | "
                     f"{cand.judge or ''} | {_cell(cand.title or cand.justification)} | {score} |")
    genesis = store.candidates(origin="genesis")
    ran = [c for c in genesis if store.result_for(c.id, "dev", feedback)]
    lines += ["", f"Genesis wrote {len(genesis)} candidates "
              f"({sum(c.static_check != 'ok' for c in genesis)} failed the static check); "
              f"{len(ran)} were nominated and executed.", ""]
    rounds = store.events("round_best")
    if final.get("best_id"):
        lines += ["Ancestry of the best solver (each solver above the ones it was built from):",
                  "", "```", *ancestry_tree(store, final["best_id"], feedback), "```", ""]
    if rounds:
        lines += ["Best per round:", ""]
        lines += [f"- cycle {e['cycle']}, round {e['round']}: `{e['best']}` ({_fmt(e['score'])})"
                  for e in rounds]
        lines.append("")
    for kind in ("saturation", "patch_failed", "patch_abandoned", "no_change", "invalid_parents",
                 "budget_stop"):
        n = len(store.events(kind))
        if n:
            lines.append(f"- {kind.replace('_', ' ')}: {n} event(s)")
    if reporter_model is not None and analysis is not None and final.get("best_id"):
        narrative = await _narrative(task, store, analysis, reporter_model, rounds, final)
        if narrative:
            lines[2:2] = ["## Narrative (model-written)", "", narrative.strip(), ""]
    acc = store.accounting()  # after the narrative call, so the report counts it
    lines += ["", "## Accounting", "",
              f"- Solver evaluations: {acc['evaluations']} ({acc['feedback_evaluations']} on "
              f"the feedback split, {acc['test_evaluations']} final test-split run); "
              f"debugging iterations: {acc['debug_iterations']}",
              f"- Model calls: {acc['model_calls']} paid, {acc['cached_model_calls']} from cache "
              f"or replay; tokens in/out: {acc['tokens_in']}/{acc['tokens_out']}; "
              f"cost: ${acc['cost_usd']:.4f}",
              f"- Wall time: {acc['wall_seconds']:.1f} s", ""]

    text = "\n".join(lines) + "\n"
    (store.dir / "report.md").write_text(text)
    return text


async def _narrative(task, store, analysis, model, rounds, final) -> str:
    lineage = store.lineage(final["best_id"])
    prompt = render("reporter", title=task.title, route=analysis.route,
                    key_facts=analysis.key_facts,
                    rounds=[{"cycle": e["cycle"], "round": e["round"], "best": e["best"],
                             "score": _fmt(e["score"])} for e in rounds],
                    best_id=final["best_id"], best_title=lineage[0].title if lineage else "",
                    ancestry=ancestry_tree(store, final["best_id"], store.config.get(
                        "feedback", "nrmse")),
                    justifications=[f"{c.id}: {shorten(c.justification, 600)}"
                                    for c in lineage if c.justification])
    try:
        return await ask(model, [Message(role="user", content=prompt)], "reporter",
                         temperature=0.3, max_tokens=1024)
    except (ModelError, BudgetExceeded) as exc:  # the report is written without it
        store.event("reporter_skipped", reason=str(exc)[:300])
        return ""
