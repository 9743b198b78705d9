"""PDE-SHARP end to end: reference audit -> Analysis -> Genesis -> Synthesis -> test -> report.

Read :func:`solve` top to bottom: that is the whole method. The roles (who analyses, who writes
candidates, who judges) are pluggable (:class:`Roles`; LLM roles or the built-in analyst), and
everything that happens lands in the run store, which is what makes runs resumable: a resumed
run executes :func:`solve` again on the same store, where every completed model call is
replayed from the journal and every completed evaluation is looked up, not repeated. The
pipeline makes no random choices (ties break by candidate order); what varies between runs is
the models' sampling, which the endpoint controls. ``seed`` is only recorded with the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pdesharp.audit.runs import attach as reference_audit
from pdesharp.audit.runs import closest_to_converged, ranking_floor, reference_stated, told_error
from pdesharp.audit.runs import summary as audit_summary
from pdesharp.config import SolveConfig
from pdesharp.genesis import GENESIS_TEMPERATURE, GenesisBudgetStop, static_check
from pdesharp.llm.base import BudgetExceeded
from pdesharp.outcome import Outcome
from pdesharp.records import Analysis
from pdesharp.reporter import write_report
from pdesharp.roles import Roles
from pdesharp.store import RunStore
from pdesharp.synthesis import run_rule
from pdesharp.synthesis.lineage import prune_unreachable
from pdesharp.synthesis.ranking import Objective, Rule
from pdesharp.synthesis.timing import Settlement, one_off_and_warm, retime_runs
from pdesharp.synthesis.tournament import Tournament, TournamentSettings
from pdesharp.task import Task

# the first line of a run's best_solver.py (the bench reads a winner's code without it)
WINNER_HEADER = "# Written by pdesharp (PDE-SHARP)"

__all__ = ["SolveConfig", "SolveResult", "solve", "config_of", "dump_config"]


@dataclass
class SolveResult:
    run_dir: Path
    status: Literal["finished", "budget_stop", "failed"]
    best_id: str | None
    best_dev_score: float | None
    test_nrmse: float | None
    stop_reason: str = ""  # why the search ended (a budget, saturation, the round limit)
    summary: dict = field(default_factory=dict)


Progress = Callable[..., None]


async def solve(task: Task, config: SolveConfig, store: RunStore, roles: Roles, evaluator,
                progress: Progress | None = None) -> SolveResult:
    """Run PDE-SHARP on ``task``. BudgetExceeded ends the search early, never the run."""
    progress = progress or (lambda **kw: None)
    store.set_status("running")
    store.eval_limit = config.max_evals
    run = _Run()
    try:
        # 1. The reference: an audit of the dev data gives its own error against the PDE, which
        #    every prompt from the analysis on states (how fine a solver must be to reach it),
        #    and the run's one rule (objective, ties, time margin, the reference floor, else
        #    the data's round-off floor), by which every role ranks, stops and picks
        #    (pdesharp.audit.runs, pdesharp.synthesis.ranking and run_rule).
        round_off = run_rule.data_round_off(evaluator)
        run.audit, run.audit_reason, floor = await reference_audit(task, config, evaluator,
                                                                   store, progress, round_off)
        run.rule = run_rule.record(store, run_rule.build(
            config, floor=floor, ranking_floor=ranking_floor(store.events("reference_audit")),
            round_off=round_off))
        objective_without_floor(config, run.rule, store, progress)
        roles.know_goal(*run.rule.goal_words(config.metric))
        roles.know_reference(told_error(config, store), stated=reference_stated(store))
        # 2. Analysis: five sequential questions; the route decides how Genesis writes code.
        run.analysis = await analyse(task, config, store, roles, progress)
        # 3. Genesis: N candidate solvers, statically checked, none executed.
        candidates = await genesis(task, run.analysis, config, store, roles, progress)
        # 4. Synthesis: judged tournament rounds, then rejudging cycles with fresh contexts,
        #    until saturation or the floor.
        run.tournament = Tournament(task, run.analysis, roles.judges, store, evaluator,
                                    tournament_settings(config, evaluator, run.rule, store),
                                    progress)
        await run.tournament.run(candidates)
    except BudgetExceeded as exc:
        run.budget_stop = budget_stopped(exc, task, store, progress)

    # 4b. The winner's time: if time decides between close finalists, re-time them one at a
    #     time (counted evaluations within the budget) and let their median times decide.
    progress(stage="re-timing")
    settlement = await run.tournament.settle() if run.tournament else \
        Settlement(note="the search stopped before the tournament")

    # 5. Final evaluation: the rule's pick, once, on the test split; reported, never shown to
    #    any model.
    progress(stage="test")
    best = run.best(store, config.feedback)
    test_nrmse, test_note = await final_test(store, evaluator, best)
    # ... and its time taken apart (one more run): one-off work, and per sample when warm
    apart = await one_off_and_warm(store, evaluator, best, config.feedback)
    outcome = Outcome(
        rule=run.rule, metric=config.metric, best=best,
        lowest=run.tournament.lowest() if run.tournament else None,
        floor_decided=bool(run.tournament and run.tournament.floor_decides()),
        test_nrmse=test_nrmse, test_note=test_note,
        best_path=write_best_solver(store, task, config, best),
        stop_reason=run.budget_stop or (run.tournament.end_reason if run.tournament else ""),
        budget_stop=bool(run.budget_stop),
        route=run.analysis.route if run.analysis else None,
        winner_time={**settlement.describe(*best), **apart} if best else {},
        settings={"task_facts": config.task_facts, "genesis": config.genesis,
                  "objective": config.objective,
                  "floor_saturation": run_rule.floor_saturation_enabled(config),
                  "isolation": getattr(evaluator, "isolation", None)})
    if best is None:  # an honest ending: nothing usable was produced
        outcome.test_note = "no solver executed successfully: " + _failure_summary(store)
    outcome.reference_audit = audit_block(run, store, config, outcome)

    # 6. Report. The run is "finished" only once report.md and summary.json exist: if a final
    #    step fails, the run stays resumable and `pdesharp resume` redoes these steps (every
    #    model call and evaluation before them is replayed from the journal, not repeated).
    progress(stage="report")
    final = outcome.summary()
    try:
        await write_report(task, store, run.analysis, config,
                           None if run.budget_stop else roles.reporter, final)
        summary = store.write_summary(**final, status=outcome.status)
    except Exception as exc:
        store.set_status("failed", f"writing the report failed: {type(exc).__name__}: {exc}"[:300])
        store.event("report_failed", error=f"{type(exc).__name__}: {exc}"[:500])
        raise
    store.set_status(outcome.status, run.budget_stop if outcome.status != "failed"
                     else outcome.test_note[:300])
    progress(stage="done", **final)
    return SolveResult(run_dir=store.dir, status=outcome.status, best_id=final["best_id"],
                       best_dev_score=final["best_dev_score"], test_nrmse=test_nrmse,
                       stop_reason=outcome.stop_reason, summary=summary)


@dataclass
class _Run:
    """What the steps of :func:`solve` hand on (a budget stop may leave any of it unset)."""

    analysis: Analysis | None = None
    tournament: Tournament | None = None
    audit: Any = None
    audit_reason: str = "the search stopped before the audit was looked up"
    rule: Rule = field(default_factory=Rule)
    budget_stop: str = ""

    def best(self, store: RunStore, feedback: str):
        """The tournament's pick (ties broken by its fixed pool order, so a resumed run picks
        the same solver); the store's if the search stopped before the tournament."""
        return (self.tournament.best() if self.tournament else None) or \
            store.best_candidate("dev", feedback)


def objective_without_floor(config: SolveConfig, rule: Rule, store: RunStore,
                            progress: Progress) -> None:
    """``fastest-below:floor`` where the run found no floor: say so (the rule then ranks by
    accuracy, :meth:`~pdesharp.synthesis.ranking.Objective.at`)."""
    if Objective.parse(config.objective).at_floor and not rule.objective.by_time:
        why = ("--objective fastest-below:floor: this run has no reference floor (no audit "
               "of the dev data) and no round-off floor it may state (the codepde facts level "
               "states no number read from the data), so it ranks by accuracy")
        store.event("objective_fallback", objective=str(rule.objective), reason=why)
        progress(note=why)


async def analyse(task: Task, config: SolveConfig, store: RunStore, roles: Roles,
                  progress: Progress) -> Analysis:
    progress(stage="analysis")
    analysis = await roles.analyst.analyse(task)
    (store.dir / "analysis.json").write_text(analysis.model_dump_json(indent=2))
    store.event("analysis", route=analysis.route, source=analysis.source,
                skipped=[st.name for st in analysis.steps if st.skipped])
    if not config.builtin:
        await cross_check(task, analysis, store, config)
    return analysis


async def genesis(task: Task, analysis: Analysis, config: SolveConfig, store: RunStore,
                  roles: Roles, progress: Progress) -> list:
    progress(stage="genesis", candidates=config.candidates)
    candidates = [c if c.static_check != "ok" else
                  c.model_copy(update={"static_check": static_check(c.code, task)})
                  for c in await roles.author.write(task, analysis, config.candidates)]
    for c in candidates:
        store.add_candidate(c)
    store.event("genesis", written=len(candidates),
                failed=sum(c.static_check != "ok" for c in candidates),
                mode="built-in catalogue" if config.builtin else config.genesis,
                temperature=None if config.builtin else GENESIS_TEMPERATURE)
    progress(stage="genesis", written=len(candidates))
    return candidates


def tournament_settings(config: SolveConfig, evaluator, rule: Rule,
                        store: RunStore) -> TournamentSettings:
    return TournamentSettings(
        feedback=config.feedback, max_rounds=config.max_rounds,
        rejudge_cycles=config.rejudge_cycles, saturation_factor=config.saturation_factor,
        patience=config.patience, debug_attempts=config.debug_attempts,
        # evaluations in flight: --workers locally; a cluster queues them itself
        workers=getattr(evaluator, "max_in_flight", config.workers),
        max_evals=config.max_evals, rule=rule,
        retime=retime_runs(rule.objective, config.retime),
        nominees_in_order=run_rule.floor_saturation_enabled(config),
        floor_saturation=run_rule.floor_saturation_enabled(config),
        data_numbers=config.task_facts == "full")


def budget_stopped(exc: BudgetExceeded, task: Task, store: RunStore, progress: Progress) -> str:
    if isinstance(exc, GenesisBudgetStop):  # Genesis samples completed before the stop
        for c in exc.candidates:
            store.add_candidate(c.model_copy(update={"static_check": static_check(c.code,
                                                                                  task)}))
    store.event("budget_stop", reason=str(exc))
    progress(stage="budget_stop", reason=str(exc))
    return str(exc)


async def final_test(store: RunStore, evaluator, best) -> tuple[float | None, str]:
    if best is None:
        return None, "no solver executed successfully"
    if not _has_test_split(evaluator):
        return None, "no test split (only dev data available)"
    test = await store.evaluate(evaluator, best[0], split="test", feedback="nrmse")
    store.event("evaluation", candidate=best[0].id, split="test",
                reason="the final test of the winner", status=test.status, score=test.nrmse,
                per_sample=test.seconds_per_sample)
    if not test.ok:
        return None, f"test evaluation failed: {test.summary_line()}"
    return test.nrmse, ""


def write_best_solver(store: RunStore, task: Task, config: SolveConfig, best) -> str | None:
    if best is None:
        return None
    path = store.dir / "best_solver.py"
    score = best[1].score
    # a replaced solver kept in the file never runs: it does not ship (synthesis.lineage)
    code, removed = prune_unreachable(best[0].code, task.solver.name)
    header = (f"{WINNER_HEADER}, run {store.run_id}, task {task.name}: "
              f"solver {best[0].id}" + (f", dev {config.feedback} {score:.3e}"
                                        if score is not None else "") + "\n"
              + (f"# Unreachable definitions of the evaluated code left out: "
                 f"{', '.join(removed)}\n" if removed else ""))
    path.write_text(header + code)
    return str(path)


def audit_block(run: _Run, store: RunStore, config: SolveConfig, outcome: Outcome) -> dict:
    best = outcome.best
    return audit_summary(
        run.audit, run.audit_reason, best[1] if best else None, rule=run.rule,
        lowest=outcome.lowest[1].score if outcome.lowest else None,
        stopped_at_floor=any(e.get("floor") is not None for e in store.events("saturation")),
        closest=closest_to_converged(store, config.feedback) if run.audit else None,
        best_id=best[0].id if best else None)


async def cross_check(task: Task, analysis: Analysis, store: RunStore, config: SolveConfig) -> None:
    """Compare a model's analysis with the built-in symbolic one; disagreements go to the
    report (``disagreements.json``), not back to the models. Skipped where the built-in
    analyst does not cover the task."""
    try:
        from pdesharp.builtin import BuiltinAnalyst, compare_analyses
        from pdesharp.data.paths import data_dir

        reference = await BuiltinAnalyst(data_dir=data_dir(config.data_dir)).analyse(task)
        found = compare_analyses(analysis, reference, task)
    except Exception as exc:  # noqa: BLE001 - a failed cross-check must not stop the run
        store.event("cross_check_skipped", reason=f"{type(exc).__name__}: {exc}"[:300])
        return
    (store.dir / "disagreements.json").write_text(
        json.dumps([d.model_dump() for d in found], indent=2))
    for d in found:
        store.event("disagreement", **d.model_dump())


def _failure_summary(store: RunStore) -> str:
    """The distinct failures of the run's evaluations, most frequent first (one line)."""
    counts: dict[str, int] = {}
    for c in store.candidates():
        r = store.result_for(c.id, "dev", store.config.get("feedback", "nrmse"))
        if r is not None and not r.ok:
            key = f"{r.status}: {r.message.splitlines()[0] if r.message else ''}"[:160]
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "no candidate was executed"
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
    return "; ".join(f"{n}x {k}" for k, n in top)


def _has_test_split(evaluator) -> bool:
    data_path = getattr(evaluator, "data_path", None)
    if data_path is None:
        return bool(getattr(evaluator, "has_test", True))
    try:
        data_path("test")
    except FileNotFoundError:  # DataNotFound: the task declares or finds no test data
        return False
    return True


def config_of(store: RunStore) -> SolveConfig:
    """The config a run was started with (for `pdesharp resume`)."""
    return SolveConfig.model_validate(store.config)


def dump_config(config: SolveConfig) -> dict:
    return json.loads(config.model_dump_json())
