"""The audit itself: converged solution, then diagnostics, then the cache.

:func:`audit_file` computes; :func:`cached_audit` returns a stored audit covering the wanted
samples (never computing); :func:`audit_with_cache` does the first unless the second succeeds.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pdesharp.audit import cache, diagnostics
from pdesharp.audit.conserved import conserved_quantities
from pdesharp.audit.records import AUDIT_VERSION, AuditReport, SampleAudit
from pdesharp.audit.solutions import AuditUnavailable, solver_for, stacked
from pdesharp.data import hdf5
from pdesharp.data.reference import DataError, ReferenceData, load_reference, sample_indices
from pdesharp.task import Task

Progress = Callable[[str], None]


@dataclass
class AuditResult:
    report: AuditReport
    converged: dict[str, np.ndarray] | None  # float64 [B, T, N...] for report.samples
    path: Path | None = None  # the cached report, if stored

    def converged_for(self, indices: list[int]) -> dict[str, np.ndarray] | None:
        """The converged fields of the given file sample indices (all must be audited)."""
        if self.converged is None:
            return None
        pos = {s: i for i, s in enumerate(self.report.samples)}
        if any(i not in pos for i in indices):
            return None
        rows = [pos[i] for i in indices]
        return {k: v[rows] for k, v in self.converged.items()}


def file_samples(task: Task, path: Path) -> int:
    key = next(iter(task.data.fields.values()))
    try:
        with hdf5.open_file(path) as h5:
            return int(hdf5.dataset(h5, key, path).shape[0])
    except (OSError, KeyError) as exc:
        raise DataError(f"cannot read {key!r} from {path}: {exc}") from None


def _truncate(ref: ReferenceData, frames: int) -> ReferenceData:
    return ReferenceData(path=ref.path, fields={k: v[:, :frames] for k, v in ref.fields.items()},
                         coefficients=ref.coefficients,
                         t=None if ref.t is None else ref.t[:frames], x=ref.x)


def audit_file(task: Task, path: str | Path, *, samples: str | None = None,
               limit: int | None = None, frames: int | None = None,
               progress: Progress | None = None) -> AuditResult:
    """Audit the reference data in ``path`` for ``task`` (``samples``/``limit`` as for
    :func:`~pdesharp.data.reference.load_reference`; ``frames`` keeps the first frames only).

    A task without a converged-solution method gives a report with status "unavailable" and
    the reason, not an exception.
    """
    from pdesharp import __version__

    progress = progress or (lambda message: None)
    path = Path(path)
    start = time.perf_counter()
    sha = cache.file_sha256(path)
    indices = list(sample_indices(file_samples(task, path), samples, limit))
    report = AuditReport(task=task.name, task_fingerprint=cache.task_fingerprint(task),
                         data_file=str(path), data_sha256=sha, samples=indices,
                         pdesharp_version=__version__,
                         created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
    _stored_estimate(path, report)
    try:
        solver = solver_for(task, path)
    except AuditUnavailable as exc:
        report.status, report.reason = "unavailable", str(exc)
        return AuditResult(report, None)
    ref = load_reference(task, path, samples=samples, limit=limit)
    if frames is not None and not task.steady:
        if frames < 2:
            raise ValueError(f"frames must be at least 2, got {frames}")
        ref = _truncate(ref, frames)
        report.frame_limit = frames
    if not task.steady and ref.t is None:
        report.status = "unavailable"
        report.reason = f"{path} stores no time coordinate ({task.data.t_key!r})"
        return AuditResult(report, None)
    try:
        conv = solver(task, ref, indices, progress)
    except AuditUnavailable as exc:
        report.status, report.reason = "unavailable", str(exc)
        return AuditResult(report, None)
    progress("diagnostics")
    _diagnose(task, ref, conv, report)
    report.seconds = time.perf_counter() - start
    return AuditResult(report, conv.fields)


def _stored_estimate(path: Path, report: AuditReport) -> None:
    """The error the file states about itself (a generated file's ``reference_error_*``
    attributes), beside the audit's own measurement."""
    from pdesharp.data.stated_error import read_file_estimate

    stated = read_file_estimate(path)
    if stated is not None and stated.estimate is not None:
        report.stated_error = stated.estimate
        report.stated_error_max = stated.estimate_max
        report.stated_error_method = stated.method
        report.stated_tolerance = stated.tolerance


def _diagnose(task: Task, ref: ReferenceData, conv, report: AuditReport) -> None:
    names = task.solver.returns
    r = stacked(task, {n: ref.fields[n] for n in names})
    c = stacked(task, {n: conv.fields[n] for n in names})
    errors = diagnostics.reference_errors(r, c)
    floors = diagnostics.float32_floor(c)
    report.method = conv.method
    report.convergence = conv.convergence
    report.cross_checks = conv.cross_checks
    report.notes = list(conv.notes)
    report.reference_error = float(errors.mean())
    report.reference_error_max = float(errors.max())
    report.float32_floor = float(floors.mean())
    after = None
    if not task.steady:
        times = np.asarray(ref.t, dtype=np.float64)
        report.growth_times = [float(t) for t in times]
        report.growth = diagnostics.growth(r, c).tolist()
        if conv.rate is not None:
            rate = stacked(task, {n: conv.rate[n] for n in names})
            report.time_shift, after = diagnostics.time_shift(r, c, rate, times)
        report.conserved = diagnostics.conserved_drift(
            conserved_quantities(task), ref.fields, conv.fields)
    report.per_sample = [
        SampleAudit(index=i, reference_error=float(errors[j]), float32_floor=float(floors[j]),
                    error_after_shift=None if after is None else float(after[j]))
        for j, i in enumerate(report.samples)]


def cached_audit(task: Task, path: str | Path, indices: list[int] | None = None
                 ) -> AuditResult | None:
    """A stored, current audit of ``path`` for ``task`` over all frames whose samples include
    ``indices`` (default: every sample of the file); None if there is none."""
    path = Path(path)
    sha = cache.file_sha256(path)
    wanted = set(indices if indices is not None else range(file_samples(task, path)))
    for json_path in cache.find(task, path, sha):
        report = cache.load_report(json_path)
        if report is None or report.frame_limit is not None:
            continue  # a frame-limited audit does not describe the whole file
        if report.status != "ok":
            return AuditResult(report, None, json_path)
        if wanted <= set(report.samples):
            return AuditResult(report, cache.load_converged(json_path), json_path)
    return None


def audit_with_cache(task: Task, path: str | Path, *, samples: str | None = None,
                     limit: int | None = None, frames: int | None = None, force: bool = False,
                     store: bool = True, progress: Progress | None = None) -> AuditResult:
    """The cached audit of exactly this selection if there is one (and not ``force``), else a
    fresh one, stored (beside the data if that folder is writable, else in the user cache)."""
    path = Path(path)
    sha = cache.file_sha256(path)
    indices = list(sample_indices(file_samples(task, path), samples, limit))
    name = cache.base_name(task, cache.selection_key(indices, file_samples(task, path), frames))
    if not force:
        for folder in cache.locations(path, sha):
            json_path = folder / f"{name}.json"
            report = cache.load_report(json_path) if json_path.is_file() else None
            if report is not None and report.data_sha256 == sha and \
                    report.version == AUDIT_VERSION:
                return AuditResult(report, cache.load_converged(json_path), json_path)
    result = audit_file(task, path, samples=samples, limit=limit, frames=frames,
                        progress=progress)
    if store and result.report.status != "unavailable":  # a refusal computed nothing to keep
        folder = cache.write_folder(path, sha)
        try:
            result.path = cache.save(folder, name, result.report, result.converged)
        except OSError:  # a folder that looked writable but is not: the user cache then
            folder = cache.locations(path, sha)[1]
            result.path = cache.save(folder, name, result.report, result.converged)
    return result
