"""PDE-SHARP end to end: Analysis -> Genesis -> Synthesis -> final test evaluation -> report.

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
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from pdesharp.facts import FactsLevel
from pdesharp.genesis import GENESIS_TEMPERATURE, GenesisBudgetStop, GenesisMode, static_check
from pdesharp.audit.runs import attach as reference_audit
from pdesharp.audit.runs import closest_to_converged, judges_note, ranking_floor
from pdesharp.audit.runs import summary as audit_summary
from pdesharp.llm.base import BudgetExceeded
from pdesharp.llm.presets import BUILTIN, is_builtin
from pdesharp.records import Analysis, Feedback
from pdesharp.reporter import write_report
from pdesharp.roles import Roles
from pdesharp.store import RunStore
from pdesharp.synthesis.judges import CODE_BUDGET
from pdesharp.synthesis.ranking import Objective
from pdesharp.synthesis.timing import Settlement, retime_runs
from pdesharp.synthesis.tournament import Tournament, TournamentSettings
from pdesharp.task import Task


class SolveConfig(BaseModel):
    """Everything a run depends on; saved as the run's ``config.json`` (resume reloads it)."""

    task: str = ""  # built-in task name or spec path, for `pdesharp resume`
    model: str = BUILTIN  # "provider:model", "builtin", or "scripted:PATH" (testing aid)
    judges: list[str] | None = None  # three model specs; default: the main model three times
    candidates: int = Field(32, ge=1)
    feedback: Feedback = "nrmse"
    max_rounds: int = Field(4, ge=1)
    rejudge_cycles: int = Field(1, ge=0)
    saturation_factor: float = Field(0.9, gt=0, le=1)
    patience: int = Field(1, ge=1)
    debug_attempts: int = Field(2, ge=0)
    workers: int = Field(2, ge=1)
    max_usd: float | None = None
    max_tokens: int | None = None
    max_evals: int | None = None
    seed: int = 0  # recorded only: the pipeline makes no random choices
    no_cache: bool = False
    out: str = "runs"
    data_dir: str | None = None
    dev_data: str | None = None
    test_data: str | None = None
    timeout: float | None = None
    max_samples: int | None = None  # evaluate on the first samples only (quick runs, tests)
    convergence: bool = True  # run CodePDE's empirical convergence test in each evaluation
    device: Literal["cpu", "cuda"] = "cpu"  # what solvers may use inside the sandbox
    unsafe_no_isolation: bool = False  # run solvers with no sandbox (recorded everywhere)
    executor: Literal["local", "ray"] = "local"  # where solvers run (resume uses the same)
    ray_address: str | None = None  # "auto", "ray://host:port"; None: a local Ray instance
    # Scores within this relative distance of the best count as a tie, won by the faster
    # solver (solver_seconds): a 0.07 % nRMSE edge is noise next to a 3x run-time difference.
    tie_tolerance: float = Field(0.01, ge=0)
    # What the run optimises (pdesharp.synthesis.ranking): "accuracy" (the lowest score, as in
    # the paper), "fastest-within:FACTOR" or "fastest-below:TARGET". Time decides only past
    # time_margin (relative); at the end, close finalists are re-timed `retime` more times each
    # (counted evaluations; default 2 under a time objective, 0 under accuracy) and their median
    # times decide (pdesharp.synthesis.timing).
    objective: str = "accuracy"
    time_margin: float = Field(0.3, ge=0)
    retime: int | None = Field(None, ge=0)  # None: 2 under a time objective, 0 under accuracy
    base_url: str | None = None  # OpenAI-compatible endpoint override
    llm: dict = Field(default_factory=dict)  # make_model options (api_key_env, timeout, ...)
    prices: str | None = None  # price table YAML overriding the shipped one
    # What the prompts tell the models about the task (pdesharp.facts): "codepde" = exactly
    # what CodePDE's prompts give (comparisons with published numbers), "full" = everything.
    task_facts: FactsLevel = "full"
    genesis: GenesisMode = "independent"  # Genesis sampling (pdesharp.genesis)
    prompt_budget: int = Field(CODE_BUDGET, ge=0)  # characters of solver code per judge prompt
    # Reference audit (pdesharp.audit): "auto" uses a cached audit of the dev data, "compute"
    # computes one first if none is cached (seconds to minutes), "off" ignores audits.
    audit: Literal["auto", "compute", "off"] = "auto"
    floor_saturation: bool | None = None  # stop at the audit's floor; None: builtin on, LLM off
    floor_factor: float | None = Field(None, gt=0)  # floor = factor x reference error;
    #                                                 None: 1 / saturation_factor
    judges_see_reference_error: bool = False  # tell LLM judges the reference error

    @field_validator("model", mode="before")
    @classmethod
    def _no_model_is_builtin(cls, v):
        """No model (None or empty) means the built-in analyst, as on the command line."""
        return BUILTIN if v is None or not str(v).strip() else v

    @field_validator("objective", mode="before")
    @classmethod
    def _objective_spec(cls, v):
        """Validated and written in one form ("fastest-within:10"); errors say what is accepted."""
        return str(Objective.parse(v))

    @property
    def builtin(self) -> bool:
        return is_builtin(self.model)


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
    analysis: Analysis | None = None
    tournament: Tournament | None = None
    audit, audit_reason, floor = None, "the search stopped before the audit was looked up", None
    rank_floor = None  # the floor in the ranking (the same switch as floor saturation)
    budget_stop = ""
    try:
        # 1. Analysis: five sequential questions; the route decides how Genesis writes code.
        progress(stage="analysis")
        analysis = await roles.analyst.analyse(task)
        (store.dir / "analysis.json").write_text(analysis.model_dump_json(indent=2))
        store.event("analysis", route=analysis.route, source=analysis.source,
                    skipped=[st.name for st in analysis.steps if st.skipped])
        if not config.builtin:
            await cross_check(task, analysis, store, config)

        # 2. Genesis: N candidate solvers, statically checked, none executed.
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

        # 3. Synthesis: judged tournament rounds, then rejudging cycles with fresh contexts,
        #    stopped early at the reference floor when an audit of the dev data gives one;
        #    below that floor, time decides between solvers (pdesharp.synthesis.ranking).
        audit, audit_reason, floor = await reference_audit(task, config, evaluator, store,
                                                           progress)
        rank_floor = ranking_floor(store.events("reference_audit"))  # as the run started
        settings = TournamentSettings(
            feedback=config.feedback, max_rounds=config.max_rounds,
            rejudge_cycles=config.rejudge_cycles, saturation_factor=config.saturation_factor,
            patience=config.patience, debug_attempts=config.debug_attempts,
            # evaluations in flight: --workers locally; a cluster queues them itself
            workers=getattr(evaluator, "max_in_flight", config.workers),
            tie_tolerance=config.tie_tolerance,
            max_evals=config.max_evals, objective=Objective.parse(config.objective),
            time_margin=config.time_margin,
            retime=retime_runs(Objective.parse(config.objective), config.retime),
            floor=floor, ranking_floor=rank_floor,
            judge_reference_note=judges_note(config, store))
        tournament = Tournament(task, analysis, roles.judges, store, evaluator, settings,
                                progress)
        await tournament.run(candidates)
    except BudgetExceeded as exc:
        if isinstance(exc, GenesisBudgetStop):  # Genesis samples completed before the stop
            for c in exc.candidates:
                store.add_candidate(c.model_copy(update={"static_check": static_check(c.code,
                                                                                      task)}))
        budget_stop = str(exc)
        store.event("budget_stop", reason=budget_stop)
        progress(stage="budget_stop", reason=budget_stop)
    stop_reason = budget_stop or (tournament.end_reason if tournament is not None else "")

    # 3b. The winner's time: if time decides between close finalists, re-time them (counted
    #     evaluations within the budget) and let their median times decide.
    settlement = Settlement(note="the search stopped before the tournament")
    if tournament is not None:
        progress(stage="re-timing")
        settlement = await tournament.settle()

    # 4. Final evaluation: the best solver by feedback, once, on the test split. This number
    #    is reported and never shown to any model.
    progress(stage="test")
    # The tournament's own ranking (ties broken by its fixed pool order, so a resumed run
    # picks the same solver); the store's if the search stopped before the tournament.
    best = (tournament.best() if tournament is not None else None) or \
        store.best_candidate("dev", config.feedback)
    test_nrmse, test_note = None, ""
    if best is None:
        test_note = "no solver executed successfully"
    elif not _has_test_split(evaluator):
        test_note = "no test split (only dev data available)"
    else:
        test = await store.evaluate(evaluator, best[0], split="test", feedback="nrmse")
        test_nrmse = test.nrmse if test.ok else None
        test_note = "" if test.ok else f"test evaluation failed: {test.summary_line()}"
    best_path = None
    if best is not None:
        best_path = store.dir / "best_solver.py"
        score = best[1].score
        header = (f"# Written by pdesharp (PDE-SHARP), run {store.run_id}, task {task.name}: "
                  f"solver {best[0].id}" + (f", dev {config.feedback} {score:.3e}"
                                            if score is not None else "") + "\n")
        best_path.write_text(header + best[0].code)

    # 5. Report. The run is "finished" only once report.md and summary.json exist: if a final
    #    step fails, the run stays resumable and `pdesharp resume` redoes these steps (every
    #    model call and evaluation before them is replayed from the journal, not repeated).
    status = "budget_stop" if budget_stop else "finished"
    if best is None:
        # an honest ending: nothing usable was produced. A budget stop stays "budget_stop" (the
        # run resumes with a larger budget); a search that ran its course is "failed".
        status = "budget_stop" if budget_stop else "failed"
        test_note = "no solver executed successfully: " + _failure_summary(store)
    final = {"best_dev_score": best[1].score if best else None, "test_nrmse": test_nrmse,
             "test_note": test_note, "best_id": best[0].id if best else None,
             "best_solver": str(best_path) if best_path else None, "stop_reason": stop_reason,
             "budget_stop": bool(budget_stop), "route": analysis.route if analysis else None,
             "task_facts": config.task_facts, "genesis": config.genesis,
             # the evaluator's clock, never the solver's: ranking and report use it too (the
             # median of the finalists' timings when they were re-timed)
             "best_solver_seconds": best[1].solver_seconds if best else None,
             "best_seconds_per_sample": best[1].seconds_per_sample if best else None,
             "objective": config.objective,
             "objective_words": _objective_words(config, tournament),
             "winner_time": settlement.describe(*best) if best else {},
             "isolation": getattr(evaluator, "isolation", None)}
    lowest = tournament.lowest() if tournament is not None else None
    if best is not None and lowest is not None and lowest[0].id != best[0].id:
        # the winner is not the lowest score (a tie won on time, or a time objective): say so
        key = "tie_break" if config.objective == "accuracy" else "objective_pick"
        if tournament.floor_decides():  # below the reference floor, time decided
            key = "floor_pick"
        final[key] = {"lowest_id": lowest[0].id, "lowest_score": lowest[1].score,
                      "lowest_seconds": lowest[1].solver_seconds,
                      "best_seconds": best[1].solver_seconds,
                      "lowest_per_sample": lowest[1].seconds_per_sample,
                      "best_per_sample": best[1].seconds_per_sample,
                      "tie_tolerance": config.tie_tolerance}
        if key == "floor_pick":
            final[key].update(floor=rank_floor, lowest_vs_converged=lowest[1].nrmse_converged,
                              best_vs_converged=best[1].nrmse_converged)
    final["reference_audit"] = audit_summary(
        audit, audit_reason, best[1] if best else None, floor=floor,
        stopped_at_floor=any(e.get("floor") is not None for e in store.events("saturation")),
        closest=closest_to_converged(store, config.feedback) if audit else None,
        best_id=best[0].id if best else None, ranking=rank_floor,
        ranked_below_floor=bool(lowest and tournament.rule.below_floor(lowest[1].score)))
    progress(stage="report")
    try:
        await write_report(task, store, analysis, config,
                           None if budget_stop else roles.reporter, final)
        summary = store.write_summary(**final, status=status)
    except Exception as exc:
        store.set_status("failed", f"writing the report failed: {type(exc).__name__}: {exc}"[:300])
        store.event("report_failed", error=f"{type(exc).__name__}: {exc}"[:500])
        raise
    store.set_status(status, budget_stop if status != "failed" else test_note[:300])
    progress(stage="done", **final)
    return SolveResult(run_dir=store.dir, status=status, best_id=final["best_id"],
                       best_dev_score=final["best_dev_score"], test_nrmse=test_nrmse,
                       stop_reason=stop_reason, summary=summary)


def _objective_words(config: SolveConfig, tournament: Tournament | None) -> str:
    """The objective in words, with the reference floor's rule when it is in force."""
    metric = "nRMSE" if config.feedback == "nrmse" else "score"
    low = tournament.lowest() if tournament is not None else None
    if low is None:
        return Objective.parse(config.objective).words(metric)
    return tournament.rule.words(metric, low[1].score)


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
