"""Runs and the reference audit: the floor under the scores.

When an audit of the run's dev data exists (``pdesharp data audit`` computed it, or the run was
started with ``--audit compute``), a run

* scores every dev evaluation against the converged solution as well (``nrmse_converged``,
  shown in the report and ``summary.json``, never to a model);
* writes the reference error next to the winner's score, and says plainly when the winner agrees
  with the reference better than the reference agrees with the PDE;
* stops the tournament once the best score is within ``floor_factor`` of the reference error
  (floor saturation, on by default for the built-in analyst and language models alike): a round only
  counts as improving when it cuts the best score by the saturation factor, and from within
  ``1/saturation_factor`` of the reference error any such cut lands below the reference's own
  error, which a solver can only reach by reproducing the reference's errors;
* with the floor on, ranks by it (:class:`pdesharp.synthesis.ranking.Rule`): once the best score
  is at or below the floor, every solver at or below it is eligible and time decides among them,
  so the fast exact design beats a slower one that only matches the reference's own
  discretisation error more closely. The same switch: both say "below the floor the score no
  longer measures the PDE", and with the floor off the ranking is the paper's lowest score;
* states the reference's own error in every prompt after the audit (:func:`reference_error`
  reads it; :mod:`pdesharp.facts` carries it), with the floors on: a score below it measures
  agreement with the reference's errors, and the goal is the PDE's solution. Under
  ``--no-floor-saturation`` (the paper's set-up) only with ``--tell-judges-reference-error``.

Looking up an audit costs one hash of the data file (~30 ms for a 9 MB file) and reading the
cached converged solution of the evaluated samples (~30 MB for 20 Burgers samples).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pdesharp.audit.core import AuditResult, audit_with_cache, cached_audit, file_samples
from pdesharp.audit.lines import report_lines  # noqa: F401 - re-exported
from pdesharp.audit.records import AuditReport, resolves
from pdesharp.audit.solutions import stacked
from pdesharp.data.reference import sample_indices
from pdesharp.synthesis import run_rule
from pdesharp.synthesis.ranking import Rule
from pdesharp.synthesis.run_rule import ranking_floor  # noqa: F401 - re-exported
from pdesharp.task import Task

NO_AUDIT_HINT = "`{command}` computes it (or pass --audit compute)"


def audit_command(task_ref: str, evaluator) -> str:
    """The ``pdesharp data audit`` command that audits exactly what a run evaluates: the task as
    the run names it (a built-in name or the YAML's path), its dev file when it was given
    explicitly, else its data folder when that is not the default one, and its sample limit."""
    import shlex

    from pdesharp.data.paths import data_dir as default_data_dir

    words = ["pdesharp", "data", "audit", task_ref]
    explicit = (getattr(evaluator, "explicit", None) or {}).get("dev")
    folder = getattr(evaluator, "data_dir", None)
    if explicit:
        words += ["--dev-data", str(Path(explicit).expanduser().resolve())]
    elif folder and Path(folder).expanduser().resolve() != \
            default_data_dir().expanduser().resolve():
        words += ["--data-dir", str(Path(folder).expanduser().resolve())]
    if getattr(evaluator, "max_samples", None):
        words += ["--samples", str(evaluator.max_samples)]
    return " ".join(shlex.quote(w) for w in words)


@dataclass
class RunAudit:
    report: AuditReport | None  # None: no audit, the error the dev file states (:func:`stated`)
    path: str
    indices: list[int]  # the dev samples the run evaluates (file indices)
    reference_error: float  # mean over those samples
    converged: np.ndarray | None  # stacked as the evaluator scores, for those samples

    @property
    def source(self) -> str:
        return "audit" if self.report is not None else "stated"


# a reference more than 10% from the PDE's solution is no reference: a larger statement (a
# hostile or broken file) would make every solver eligible under the floor, so it is not taken
STATED_MAX = 0.1


def stated(task: Task, evaluator, round_off: float | None = None
           ) -> tuple[RunAudit | None, str]:
    """The error the dev file states about itself (``reference_error_estimate``: what ``pdesharp
    data generate``, the APEBench importer or another generator estimated), taken as the
    reference's own error when no audit is at hand: (audit, "") or (None, why not). The file is
    data: only a finite number is taken, never its text, and only from the rounding of its own
    stored values (the round-off floor, which applies without it) to :data:`STATED_MAX`.
    ``round_off``: that floor when the caller has it (the pipeline computes it for its rule),
    else it is computed here."""
    from pdesharp.data.stated_error import read_file_estimate

    path, indices = dev_indices(task, evaluator)
    est = read_file_estimate(path)
    if est is None or est.estimate is None:
        return None, ""
    if est.estimate > STATED_MAX:
        return None, (f"the dev file states a reference error of {est.estimate:.2e}, above "
                      f"{STATED_MAX:g}: not taken as a floor")
    rounding = round_off if round_off is not None else run_rule.data_round_off(evaluator)
    if rounding is not None and est.estimate < rounding:
        return None, (f"the dev file states a reference error of {est.estimate:.2e}, below the "
                      f"rounding of its own stored values ({rounding:.1e}): not taken")
    return RunAudit(report=None, path=str(path), indices=indices,
                    reference_error=float(est.estimate), converged=None), ""


def dev_indices(task: Task, evaluator) -> tuple[Any, list[int]]:
    """The dev file and the sample indices the evaluator scores (its exact selection)."""
    path = evaluator.data_path("dev")
    spec = task.data.dev
    n = file_samples(task, path)
    picked = sample_indices(n, spec.samples if spec else None, getattr(evaluator, "max_samples",
                                                                      None))
    return path, list(picked)


NOT_CACHED = "no audit of {path} is cached"  # attach() adds the command that computes it


def find(task: Task, evaluator, mode: str, progress=None, round_off: float | None = None
         ) -> tuple[RunAudit | None, str]:
    """The run's audit (:func:`_measured`) and, when there is none, the error the dev file
    states about itself (:func:`stated`), with why there is no audit; with neither, None and
    why. ``mode`` "off" takes neither: the run has no floor. ``round_off``: the data's
    round-off floor, when the caller has computed it (:func:`stated`)."""
    if mode == "off":
        return None, "reference audit switched off (--audit off)"
    audit, reason = _measured(task, evaluator, mode, progress, round_off)
    if audit is not None:
        return audit, ""
    own, why = stated(task, evaluator, round_off)
    return (own, reason) if own is not None else (None, reason + (f"; {why}" if why else ""))


def _measured(task: Task, evaluator, mode: str, progress=None, round_off: float | None = None
              ) -> tuple[RunAudit | None, str]:
    """The run's audit and, when there is none, why. ``mode``: "auto" uses a cached audit and
    computes (and caches) a missing one when it is cheap (:mod:`pdesharp.audit.cost`),
    "compute" computes one if none is cached. ``progress(text)`` gets the
    audit's steps, and its ``note(text)``, if it has one, is told at once when ``auto`` stops an
    audit at its budget."""
    path, indices = dev_indices(task, evaluator)
    result: AuditResult | None = cached_audit(task, path, indices)
    estimate = None
    spec = task.data.dev
    samples, limit = (spec.samples if spec else None), getattr(evaluator, "max_samples", None)
    if result is None and mode == "auto":
        from pdesharp.audit.cost import auto_seconds, estimate_seconds
        from pdesharp.audit.deadline import AuditOverBudget, compute_within

        budget = auto_seconds()
        estimate = estimate_seconds(task, path, len(indices))
        if estimate is not None and estimate <= budget:
            # cheap: the default path gets its floor without a cache. Estimates can be far off
            # (a 2D implicit audit), so the audit runs against a deadline of twice the budget
            try:
                compute_within(task, path, samples=samples, limit=limit, seconds=2 * budget,
                               progress=progress)
            except AuditOverBudget as exc:
                note = getattr(progress, "note", None)  # attach's: a line that stays
                if note is not None:
                    how = ("with its floor from the error the dev file states"
                           if stated(task, evaluator, round_off)[0] is not None
                           else "without the reference floor")
                    note(f"reference audit {exc}: the run goes on {how} "
                         "(`pdesharp data audit` computes it once, for later runs)")
                return None, NOT_CACHED.format(path=path) + f" (computing it was {exc})"
            result = cached_audit(task, path, indices)
    if result is None and mode == "compute":
        result = audit_with_cache(task, path, samples=samples, limit=limit, progress=progress)
    if result is None:
        from pdesharp.audit.solutions import AuditUnavailable, solver_for

        try:  # suggest only a command that can work
            solver_for(task, path)
        except AuditUnavailable as exc:
            return None, f"no reference audit: {exc}"
        cost = ("" if estimate is None else
                f" (computing it would take about {estimate:.0f} s, more than --audit auto "
                "spends)")
        return None, NOT_CACHED.format(path=path) + cost
    if not result.report.ok:
        return None, f"the audit found no converged solution: {result.report.reason}"
    error = result.report.error_for(indices)
    conv = result.converged_for(indices)
    if error is None:
        return None, f"the cached audit of {path} does not cover the run's samples"
    c = result.report.convergence
    if not resolves(error, c):
        return None, (f"the audit does not resolve the reference's error: it measured "
                      f"{error:.2e} between the reference and its converged solution, whose "
                      f"own error its convergence check bounds only by {c.estimated_error:.2e}")
    names = task.solver.returns
    converged = stacked(task, conv) if conv is not None and all(n in conv for n in names) else None
    return RunAudit(report=result.report, path=str(result.path or ""), indices=indices,
                    reference_error=error, converged=converged), ""


def closest_to_converged(store, feedback: str) -> tuple[str, Any] | None:
    """The executed dev solver nearest the converged solution: (id, result), or None."""
    found = []
    for order, c in enumerate(store.candidates()):
        r = store.result_for(c.id, "dev", feedback)
        if r is not None and r.ok and r.nrmse_converged is not None:
            found.append((r.nrmse_converged, order, c.id, r))
    if not found:
        return None
    _, _, cid, result = min(found)
    return cid, result


def summary(audit: RunAudit | None, reason: str, best_result, *, rule: Rule,
            lowest: float | None, stopped_at_floor: bool,
            closest: tuple[str, Any] | None = None, best_id: str | None = None) -> dict:
    """The ``reference_audit`` block of ``summary.json`` (also what the report prints): every
    floor in it is the run's ``rule``'s answer (``lowest``: the run's lowest score)."""
    if audit is None:
        return {"status": "none", "reason": reason}
    r = audit.report  # None: the dev file's own statement
    score = best_result.nrmse if best_result is not None else None
    vs_converged = getattr(best_result, "nrmse_converged", None) if best_result else None
    below = bool(score is not None and score < audit.reference_error)
    block = {
        "status": "ok", "source": audit.source, "audit": audit.path,
        **({"no_audit": reason} if audit.report is None else {}),
        "samples": len(audit.indices), "reference_error": audit.reference_error,
        "float32_floor": r.float32_floor if r else None,
        "round_off_floor": rule.round_off,  # the one definition (run_rule.data_round_off)
        "converged_solution": r.method if r else None,
        "converged_error_estimate": r.convergence.estimated_error if r and r.convergence
        else None,
        "best_nrmse": score, "best_nrmse_vs_converged": vs_converged,
        "floor": rule.reference_floor, "stopped_at_floor": stopped_at_floor,
        "ranking_floor": rule.floor,
        "ranked_below_floor": rule.floor_kind(lowest) == "reference",
        "best_below_reference_error": below,
        # a tie under the rule: no "better than the reference" to claim
        "best_at_reference_error": below and rule.same_score(score, audit.reference_error),
    }
    if r is not None and r.time_shift is not None:
        block["time_offset_explains"] = r.time_shift.explained
    if closest is not None and closest[0] != best_id:
        block["closest_to_converged"] = {"id": closest[0],
                                         "nrmse_vs_converged": closest[1].nrmse_converged,
                                         "nrmse": closest[1].nrmse}
    return block


async def attach(task: Task, config, evaluator, store, progress=None,
                 round_off: float | None = None) -> tuple[RunAudit | None, str, float | None]:
    """Find (or, with ``--audit compute``, compute) the run's audit and wire it in: the
    evaluator scores against the converged solution too (:func:`told_error` for the prompts).
    Returns the audit (or None and why) and the tournament's floor (None: no floor). A failure
    here never stops a run: it is recorded as an event and the run goes on without an audit."""
    import asyncio

    first = next(iter(store.events("reference_audit")), None)  # a resumed run's first lookup
    if first is not None and first.get("status") != "ok":
        return None, str(first.get("reason", "")), None
    try:
        step = None
        if config.audit != "off" and progress is not None:
            progress(stage="reference audit")  # here: the display reads the store (one thread)
            loop = asyncio.get_running_loop()

            def step(message: str) -> None:  # from the audit's thread: handed to the loop's
                loop.call_soon_threadsafe(lambda: progress(stage=f"reference audit: {message}"))

            # a line that stays (terminal and log), when auto stops the audit at its budget
            step.note = lambda text: loop.call_soon_threadsafe(lambda: progress(note=text))
        audit, reason = await asyncio.to_thread(find, task, evaluator, config.audit, step,
                                                round_off)
        if reason.startswith("no audit of"):  # none, or the file's statement instead
            # the command names the task as the run does (a user's YAML by its path)
            reason += "; " + NO_AUDIT_HINT.format(
                command=audit_command(config.task or task.name, evaluator))
    except Exception as exc:  # noqa: BLE001 - missing data, a foreign evaluator, a broken cache
        audit, reason = None, f"no reference audit ({type(exc).__name__}: {exc})"[:300]
    if first is not None and (audit is None or audit.reference_error != first["reference_error"]):
        # resumed, but the audit the run started with is gone or was recomputed: keep its floor
        # and note, so that the tournament replays exactly as it ran before
        return None, "the audit this run started with is no longer cached", first.get("floor")
    if audit is None:
        store.event("reference_audit", status="none", reason=reason)
        return None, reason, None
    if audit.converged is not None and isinstance(getattr(evaluator, "converged", None), dict):
        evaluator.converged["dev"] = audit.converged
    floor = run_rule.reference_floor(config, audit.reference_error)
    if first is None:  # ranking_floor: the floor the ranking uses (runs before it had none)
        store.event("reference_audit", status="ok", source=audit.source, audit=audit.path,
                    reference_error=audit.reference_error, floor=floor, ranking_floor=floor,
                    # the floor is part of the ranking rule the judges are shown, and it
                    # is floor factor x the reference error: told, whatever the flag
                    judges_told=told(config))
    return audit, reason, floor


def reference_error(events: list[dict]) -> float | None:
    """The reference's own error (nRMSE against the PDE's solution) as the run's first audit
    lookup recorded it, so that a resumed run states the same; None without an audit. The one
    accessor: the prompts, the floor and the report all read it here (``events``: the run's
    ``reference_audit`` events, or all of them)."""
    first = next((e for e in events if e.get("kind", "reference_audit") == "reference_audit"),
                 None)
    if first is None or first.get("status") != "ok":
        return None
    value = first.get("reference_error")
    return None if value is None else float(value)


def reference_stated(store) -> bool:
    """Is the run's reference error the dev file's own statement (:func:`stated`), not an
    audit's measurement? As the run's first lookup recorded it."""
    first = next(iter(store.events("reference_audit")), None)
    return bool(first and first.get("status") == "ok" and first.get("source") == "stated")


def told(config) -> bool:
    """Do the prompts state the reference's own error? With the floors on (the default) yes;
    under ``--no-floor-saturation`` only with ``--tell-judges-reference-error``."""
    if config.judges_see_reference_error is not None:
        return bool(config.judges_see_reference_error)
    return run_rule.floor_saturation_enabled(config)


def told_error(config, store) -> float | None:
    """The reference error every prompt after the audit states, None when none is stated: the
    recorded audit's (:func:`reference_error`), if the run tells it (:func:`told`; a resumed run
    reads its first lookup's choice)."""
    events = store.events("reference_audit")
    first = next(iter(events), None)
    if first is None or not first.get("judges_told", told(config)):
        return None
    return reference_error(events)
