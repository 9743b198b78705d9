"""The run store: one folder and one SQLite database per run, the journal of everything.

Layout of a run folder (``<out>/<run_id>/``)::

    run.sqlite          tables runs, model_calls, candidates, evaluations, events (WAL mode)
    config.json         the SolveConfig (or any JSON-able config) the run was started with
    task.yaml           the task as solved
    candidates/<id>.py  every candidate's source, as written to the table
    logs/               free-form logs (evaluation stdout/stderr tails, ...)
    summary.json        accounting, rewritten by :meth:`RunStore.write_summary`
    report.md, best_solver.py   written by the pipeline at the end

Public API (used by the pipeline and the baselines)::

    store = RunStore.create(out_root, task=task, config={...})   # new run folder
    store = RunStore.open(run_dir)                               # an existing one (resume)
    store.add_candidate(candidate)              # upsert; also writes candidates/<id>.py
    result = await store.evaluate(evaluator, candidate, split="dev", feedback="nrmse")
    store.count_debug_iteration(candidate_id)   # one debugging model iteration
    store.record_model_call(model=..., tag=..., messages=[...], reply=Reply(...))
    store.event("nomination", judge="judge-1", nominee="g03")
    store.best_candidate(split="dev", feedback="nrmse") -> (Candidate, EvalResult) | None
    await store.retime(evaluator, candidate, 1, split="dev", feedback="nrmse")  # a re-timing run
    store.candidates(origin="patch"); store.lineage("p1-2"); store.results_for("g03")
    store.write_summary(best_dev_score=..., test_nrmse=..., best_solver=...) -> dict
    store.accounting() -> dict; store.eval_limit = 20  # --max-evals (feedback evaluations)
    store.set_status("finished"); store.update_config({...}); store.replayable_calls()

Resume contract: :meth:`evaluate` never executes the same (code sha256, split, feedback) twice
within one run. A second request for it, from the same or another candidate, returns the stored
result and is not counted. That is what lets ``pdesharp resume`` re-run the (deterministic)
pipeline from the start without repeating a single solver execution. The one exception is the
test split: the final test evaluation always runs fresh and is never read from a row (a row is
only a record of it), so no forged row can stand in for it.

Re-timing (:meth:`retime`, :mod:`pdesharp.synthesis.timing`) runs code that already ran once
more, to measure its time again: each such run is a counted evaluation with its own row, under
the id ``<candidate>#t<k>`` (:func:`retime_id`), or ``<candidate>#v<k>`` for a warm re-timing
run (:func:`warm_retime_id`), and is looked up, not repeated, on resume. The winner's warm
timing (:meth:`warm_timing`, ``<candidate>#w``) is counted but feeds no decision.

Counts do not rest on the rows alone either: the store also counts the executions it ran in
this process, and :attr:`n_evaluations` / :attr:`n_feedback_evaluations` (and so
``--max-evals``) never report fewer than those, even if the table was rewritten meanwhile.

All writes happen on the event-loop thread; evaluations themselves run in the evaluator's child
processes, so one sqlite3 connection is enough.
"""

from pdesharp.runlock import LOCK_NAME, RunBusy, claim, lock_owner  # noqa: F401 - re-exported
from pdesharp.store.journal import read_events
from pdesharp.store.run import RunStore, RunStoreError, parents_of
from pdesharp.store.schema import (RETIME_MARK, SCHEMA, SEARCH_ROWS, WARM_MARK, WARM_RETIME_MARK,
                                   code_sha256, new_run_id, parse_run_id,
                                   retime_id, warm_id, warm_retime_id)

__all__ = ["LOCK_NAME", "RETIME_MARK", "SCHEMA", "RunBusy", "RunStore", "RunStoreError", "claim",
           "code_sha256", "lock_owner", "new_run_id", "parents_of", "read_events",
           "parse_run_id", "retime_id", "SEARCH_ROWS", "WARM_MARK",
           "WARM_RETIME_MARK", "warm_id", "warm_retime_id"]
