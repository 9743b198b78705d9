"""The typed result of a reference audit (what ``audit.json`` holds).

Every error is CodePDE's nRMSE convention unless a field says otherwise: per sample, the RMS of
the difference over all stored frames and grid points (several fields stacked, one joint norm)
divided by the RMS of the converged solution, then averaged over the samples.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AUDIT_VERSION = 1  # bump when the numbers an audit reports change meaning: old caches go stale


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConvergenceCheck(_Record):
    """The converged solution against a second, coarser computation of the same samples.

    ``difference`` is nRMSE(check, primary); ``estimated_error`` is what that implies for the
    primary solution (never more than ``difference``; how it is derived is in ``note``).
    """

    primary: str
    check: str
    samples: list[int]
    difference: float
    max_difference: float
    estimated_error: float
    note: str = ""


class CrossCheck(_Record):
    """An independent solution (another method or another reading of the initial data)."""

    name: str
    samples: list[int]
    frames: list[int]
    difference: float  # mean over samples of the nRMSE over the listed frames
    max_difference: float
    note: str = ""


class ConservedDrift(_Record):
    """max over frames of |I(t) − I(0)|, I = domain mean of ``expression``, over the samples."""

    quantity: str
    expression: str
    scale: float  # mean over samples of the RMS of the quantity at t = 0 (relative drifts use it)
    reference_drift: float  # worst sample, absolute
    reference_relative: float  # worst sample, relative to that sample's scale
    converged_drift: float  # the same for the converged solution: a check of the audit itself
    per_sample: list[float] = Field(default_factory=list)  # reference, absolute


class TimeShift(_Record):
    """Per frame, the time offset δ that best explains the reference as the converged solution
    at t_k + δ (least squares on u(t + δ) ≈ u(t) + δ u_t, one δ per frame for all samples)."""

    times: list[float]
    shift: list[float]
    error_after_shift: float  # reference error once each frame's best-fit shift is removed
    explained: float  # 1 − (error_after_shift / reference_error)²: the clock's share of the error²


class SampleAudit(_Record):
    index: int  # sample index in the data file
    reference_error: float
    error_after_shift: float | None = None
    float32_floor: float


# The audit measures the distance d between the reference and its converged solution, whose own
# error its convergence check bounds by b: the reference's error lies within d -+ b. It resolves
# that error when b <= RESOLVED x d (within a factor 1.5 either way); past that, d may be the
# converged solution's error (APEBench 1D Burgers: on a 4x grid its check gave b = 1.4e-4 and
# d = 2.7e-7, the 4x grid's own error, for a reference accurate to 1e-10)
RESOLVED = 0.5


def resolves(error: float | None, convergence: ConvergenceCheck | None) -> bool:
    """Does a measured reference error ``error`` stand clear of the converged solution's own
    error estimate (:data:`RESOLVED`)? No convergence record: nothing says otherwise."""
    if error is None or not math.isfinite(error):  # a broken or hostile cache entry
        return False
    return convergence is None or convergence.estimated_error <= RESOLVED * error


class AuditReport(_Record):
    version: int = AUDIT_VERSION
    status: Literal["ok", "unavailable"] = "ok"
    reason: str = ""  # why no converged solution could be computed (status "unavailable")
    task: str
    task_fingerprint: str
    data_file: str
    data_sha256: str
    samples: list[int] = Field(default_factory=list)
    frame_limit: int | None = None  # only the first frames were audited (a partial audit)
    method: str = ""  # how the converged solution was computed
    reference_error: float | None = None
    reference_error_max: float | None = None
    float32_floor: float | None = None
    growth_times: list[float] = Field(default_factory=list)
    growth: list[float] = Field(default_factory=list)  # per frame: mean_b ‖r_k − c_k‖ / ‖c_k‖
    time_shift: TimeShift | None = None
    conserved: list[ConservedDrift] = Field(default_factory=list)
    convergence: ConvergenceCheck | None = None
    cross_checks: list[CrossCheck] = Field(default_factory=list)
    per_sample: list[SampleAudit] = Field(default_factory=list)
    # what the file says about its own error (``pdesharp data generate`` stores it), whatever
    # the audit could compute: None for files that state nothing
    stated_error: float | None = None
    stated_error_max: float | None = None
    stated_error_method: str = ""
    stated_tolerance: float | None = None
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    created: str = ""
    pdesharp_version: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.reference_error is not None

    @property
    def resolved(self) -> bool:
        """Did the audit measure the reference's error (:func:`resolves`), not its own?"""
        return self.ok and resolves(self.reference_error, self.convergence)

    @property
    def own_error(self) -> float | None:
        """The reference's own error: measured by the audit when it could resolve it, else
        what the file states (a generated file's estimate), else None."""
        if self.resolved:
            return self.reference_error
        return self.stated_error

    def error_for(self, indices: list[int]) -> float | None:
        """Mean reference error over the given file sample indices (None if any is not audited)."""
        by_index = {s.index: s.reference_error for s in self.per_sample}
        if not indices or any(i not in by_index for i in indices):
            return None
        return float(sum(by_index[i] for i in indices) / len(indices))
