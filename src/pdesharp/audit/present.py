"""Plain-text account of an audit (``pdesharp data audit`` prints it; docs quote it)."""

from __future__ import annotations

import numpy as np

from pdesharp.audit.records import AuditReport


def _e(v: float | None) -> str:
    return "–" if v is None else f"{v:.2e}"


def _at_fractions(times: list[float], values: list[float],
                  fractions=(0.1, 0.25, 0.5, 0.75, 1.0)) -> str:
    if not times:
        return ""
    t = np.asarray(times)
    picks = []
    for f in fractions:
        k = int(np.argmin(np.abs(t - (t[0] + f * (t[-1] - t[0])))))
        picks.append(f"t={t[k]:.3g}: {values[k]:.2e}")
    return ", ".join(picks)


def summary_lines(report: AuditReport) -> list[str]:
    """What the audit found, one fact per line, most important first."""
    head = f"reference audit of {report.data_file} for task {report.task}"
    stated = [] if report.stated_error is None else [
        f"  the file states its own error: {_e(report.stated_error)} (worst checked sample "
        f"{_e(report.stated_error_max)}; {report.stated_error_method})"]
    if report.status != "ok":
        return [head, f"  no converged solution: {report.reason}"] + stated
    n = len(report.samples)
    lines = [head + f" ({n} sample{'s' * (n != 1)}"
             + (f", first {report.frame_limit} frames" if report.frame_limit else "") + ")",
             f"  converged solution: {report.method}",
             f"  reference error (nRMSE of the reference against it, CodePDE's formula): "
             f"{_e(report.reference_error)} mean, {_e(report.reference_error_max)} worst sample"]
    c = report.convergence
    if not report.resolved and c is not None:
        lines.append(f"  not resolved: the converged solution's own error estimate "
                     f"{_e(c.estimated_error)} is not below half of the reference error "
                     "measured against it; runs take no floor from this audit")
    lines += [f"  float32 storage floor: {_e(report.float32_floor)}"] + stated
    if c is not None:
        lines.append(f"  convergence check: {c.check}: difference {_e(c.difference)} "
                     f"(worst {_e(c.max_difference)}) on {len(c.samples)} sample(s); estimated "
                     f"error of the converged solution {_e(c.estimated_error)}")
    for x in report.cross_checks:
        lines.append(f"  cross-check, {x.name}: difference {_e(x.difference)} "
                     f"(worst {_e(x.max_difference)}) over {len(x.frames)} frame(s)")
    if report.growth:
        lines.append("  growth in time (per-frame relative error): "
                     + _at_fractions(report.growth_times, report.growth))
    ts = report.time_shift
    if ts is not None:
        lines.append("  best-fit time offset of the stored frames: "
                     + _at_fractions(ts.times, ts.shift))
        lines.append(f"    with each frame's offset removed the reference error is "
                     f"{_e(ts.error_after_shift)}: a time offset per frame explains "
                     f"{100 * ts.explained:.0f} % of the squared error")
    for q in report.conserved:
        lines.append(f"  {q.quantity}: drifts by {_e(q.reference_drift)} in the reference "
                     f"({_e(q.reference_relative)} of its size), {_e(q.converged_drift)} in the "
                     "converged solution")
    lines += [f"  note: {note}" for note in report.notes]
    lines.append(f"  computed in {report.seconds:.0f} s")
    return lines
