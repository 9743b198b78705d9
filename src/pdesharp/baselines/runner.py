"""Run one baseline on one task into one run folder (same store and summary.json as ``sharp``).

    summary = await run_baseline("codepde", task, model=model, evaluator=evaluator,
                                 out_root="runs/bench", cfg=BaselineConfig(samples=8))

A folder whose ``summary.json`` exists is finished and returned as is; a folder without one is
reopened and continued (finished samples are not asked again, executed code is not re-run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdesharp.baselines import BASELINES, OPTILLM_METHODS, method_label, short_label
from pdesharp.baselines.codepde import best_programs, refinement, repeated_sampling
from pdesharp.baselines.common import BaselineConfig, counted_evaluations
from pdesharp.baselines.optillm import TECHNIQUES
from pdesharp.facts import TaskFacts
from pdesharp.llm.base import ChatModel
from pdesharp.recording import RecordingModel
from pdesharp.store import RunStore
from pdesharp.task import Task


class BaselineError(RuntimeError):
    """A baseline cannot start (unknown method, missing seed run); the message says what to do."""


def open_or_create(out_root: str | Path, run_id: str, task: Task, config: dict) -> RunStore:
    run_dir = Path(out_root).expanduser() / run_id
    if (run_dir / RunStore.DB_NAME).is_file():
        return RunStore.open(run_dir)
    Path(out_root).expanduser().mkdir(parents=True, exist_ok=True)
    return RunStore.create(out_root, task=task, config=config, run_id=run_id)


def _sampling_model(method: str, rec: RecordingModel, store: RunStore, *, model: ChatModel,
                    optillm_url: str | None, upstream_model: str | None) -> ChatModel:
    if method not in OPTILLM_METHODS:
        return rec
    if optillm_url:
        from pdesharp.baselines.optillm_proxy import proxy_model

        return RecordingModel(proxy_model(method, upstream_model or model.name, optillm_url), store)
    return TECHNIQUES[method](rec)


def has_test_split(evaluator) -> bool:
    """Does the evaluator find test data? (``Evaluator.data_path`` raises DataNotFound, a
    FileNotFoundError, when not; test doubles may answer ``has_split``.)"""
    has_split = getattr(evaluator, "has_split", None)
    if callable(has_split):
        return bool(has_split("test"))
    data_path = getattr(evaluator, "data_path", None)
    if data_path is None:
        return True
    try:
        data_path("test")
    except FileNotFoundError:
        return False
    return True


async def _test_result(store: RunStore, evaluator, cand) -> tuple[Any, str]:
    """The winner on the test split, or (None, why not). Test results are never shown to a
    model; they are only reported."""
    if not has_test_split(evaluator):
        return None, "no test data for this task: the table shows the dev score"
    try:
        result = await store.evaluate(evaluator, cand, split="test", feedback="nrmse")
    except Exception as exc:  # missing data, evaluator setup: report, keep the dev result
        return None, f"test evaluation not possible: {exc}"
    return result, ""


async def run_baseline(method: str, task: Task, *, model: ChatModel, evaluator,
                       out_root: str | Path, cfg: BaselineConfig | None = None,
                       run_id: str | None = None, seed_run: str | Path | None = None,
                       optillm_url: str | None = None, upstream_model: str | None = None,
                       facts: TaskFacts | None = None) -> dict:
    """Run ``method`` on ``task``; returns the run's summary (also in ``summary.json``).
    ``facts``: what the prompts state about the task (:mod:`pdesharp.facts`; the bench passes
    the ones PDE-SHARP's cell gets); default: the task spec's alone at ``cfg.task_facts``."""
    if method not in BASELINES:
        raise BaselineError(f"unknown baseline {method!r}; choose from {', '.join(BASELINES)}")
    cfg = cfg or BaselineConfig()
    seeds = None
    if method == "codepde-r":
        if seed_run is None:
            raise BaselineError("codepde-r needs the folder of a finished codepde run (seed_run)")
        seed_store = RunStore.open(seed_run)
        seeds = best_programs(seed_store, cfg.refine_seeds, cfg.split, cfg.feedback)
        seed_info = {"seed_run": str(seed_run), "seed_ids": [s.id for s in seeds],
                     "seed_evaluations": counted_evaluations(seed_store, cfg.split)}
        seed_store.close()
    else:
        seed_info = {}
    run_id = run_id or f"{task.name}-{method}"
    config = {"method": method, "method_label": method_label(method, optillm_url=optillm_url),
              "model": model.name, "optillm_url": optillm_url, **cfg.model_dump(), **seed_info}
    store = open_or_create(out_root, run_id, task, config)
    facts = facts or TaskFacts.from_spec(task, cfg.task_facts)
    try:
        if store.summary() is not None:
            return store.summary()
        store.set_status("running")
        rec = RecordingModel(model, store)
        sampler = _sampling_model(method, rec, store, model=model, optillm_url=optillm_url,
                                  upstream_model=upstream_model)
        if method == "codepde-r" and not seeds:
            store.set_status("failed", "no seeds")
            note = (f"the seed run {seed_run} has no program that ran ok, so there is nothing "
                    "to refine")
            store.event("no_seeds", seed_run=str(seed_run))
            return store.write_summary(method=method, method_label=method_label(method),
                                       method_short=short_label(method), note=note,
                                       feedback_split=cfg.split, feedback=cfg.feedback,
                                       feedback_evaluations=0, **seed_info)
        if method == "codepde-r":
            records = await refinement(task, seeds, model=sampler, store=store,
                                       evaluator=evaluator, cfg=cfg, tag=method, facts=facts)
        else:
            records = await repeated_sampling(task, model=sampler, store=store,
                                              evaluator=evaluator, cfg=cfg, tag=method,
                                              facts=facts)
        return await finish(store, evaluator, method=method, cfg=cfg, records=records,
                            optillm_url=optillm_url, extra=seed_info)
    except BaseException as exc:
        if store.summary() is None:
            store.set_status("failed" if isinstance(exc, Exception) else "interrupted",
                             f"{type(exc).__name__}: {exc}"[:500])
        raise
    finally:
        store.close()


async def _pick(store: RunStore, evaluator, cfg: BaselineConfig):
    """The winner and how its time was established: CodePDE's lowest score under the
    ``accuracy`` objective; under a fastest-* objective PDE-SHARP's rule, re-timing included."""
    from pdesharp.synthesis.ranking import Objective, Rule, pick_best
    from pdesharp.synthesis.timing import retime_runs, settle

    objective = Objective.parse(cfg.objective)
    if not objective.by_time:
        best = store.best_candidate(split=cfg.split, feedback=cfg.feedback)
        return best, ({"per_sample": best[1].seconds_per_sample, "how": "one evaluator timing"}
                      if best and best[1].seconds_per_sample is not None else {})
    results = {}
    for c in store.candidates():
        r = store.result_for(c.id, cfg.split, cfg.feedback)
        if r is not None and r.ok and r.score is not None:
            results[c.id] = (c, r)
    scored = list(results.values())
    if not scored:
        return store.best_candidate(split=cfg.split, feedback=cfg.feedback), {}
    rule = Rule(objective, time_margin=cfg.time_margin)
    store.eval_limit = cfg.budget_evals
    settled, settlement = await settle(store, evaluator, scored, rule,
                                       retime_runs(objective, cfg.retime), split=cfg.split,
                                       feedback=cfg.feedback)
    best = pick_best([(c, settled.get(c.id, r)) for c, r in scored], rule)
    return best, settlement.describe(*best)


async def finish(store: RunStore, evaluator, *, method: str, cfg: BaselineConfig,
                 records: list[dict], optillm_url: str | None, extra: dict) -> dict:
    """Pick the winner by feedback-split score, score it on test, write best_solver.py and
    summary.json."""
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r["status"]] = outcomes.get(r["status"], 0) + 1
    best, timed = await _pick(store, evaluator, cfg)
    test, test_note = (None, "")
    if best is not None and cfg.test:
        test, test_note = await _test_result(store, evaluator, best[0])
    if best is not None:
        (store.dir / "best_solver.py").write_text(best[0].code)
    requested = cfg.refine_samples if method == "codepde-r" else cfg.samples
    budget_stopped = len(records) < requested  # samples skipped because the budget was spent
    status = "finished" if best is not None else "failed"
    if budget_stopped:
        status = "budget_stop" if best is not None else "failed"
    note = "" if best is not None else "no sample produced a solver that ran ok"
    model_errors = [r.get("note", "") for r in records if r["status"] == "model_error"]
    if best is None and records and len(model_errors) == len(records):
        note = f"every sample failed with a model error; the first: {model_errors[0]}"
    store.set_status(status, note)
    test_nrmse = test.nrmse if test is not None and test.ok else None
    return store.write_summary(
        method=method,
        method_label=method_label(method, optillm_url=optillm_url),
        method_short=short_label(method, optillm_url=optillm_url),
        implementation=("optillm-proxy" if optillm_url else "reimplementation")
        if method in OPTILLM_METHODS else "pdesharp",
        feedback=cfg.feedback,
        feedback_split=cfg.split,
        feedback_evaluations=counted_evaluations(store, cfg.split),
        best_solver=best[0].id if best else None,
        best_dev_score=best[1].score if best else None,
        best_dev_summary=best[1].summary_line() if best else None,
        best_seconds_per_sample=best[1].seconds_per_sample if best else None,
        objective=cfg.objective, winner_time=timed,
        test_nrmse=test_nrmse,
        test_status=test.status if test is not None else None,
        test_note=test_note,
        samples_requested=cfg.refine_samples if method == "codepde-r" else cfg.samples,
        sample_outcomes=outcomes,
        tokens_in_reported=not (optillm_url and method in OPTILLM_METHODS),
        note=note,
        **extra,
    )
