"""What a reference data file states about its own error: the ``reference_error_*`` attributes
``pdesharp data generate`` writes (:mod:`pdesharp.data.generate.accuracy` estimates them) and the
audit, ``data info`` and runs read. Split from the generator so that readers of a file's
statement do not depend on the generation machinery (and the audit, which the generator calls,
does not import it back)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_TOLERANCE = 1e-6
ATTR_PREFIX = "reference_error_"


@dataclass
class LevelTrial:
    level: int
    resolution: str
    difference: float  # nRMSE of this level (float32) against the next level, mean over samples
    difference_max: float
    seconds: float  # making the check samples at the next level


@dataclass
class ErrorEstimate:
    """What the file says about its own error (all errors relative nRMSE, CodePDE's formula:
    per sample, the RMS over frames and points of every field jointly over the RMS of the more
    accurate solution; then the mean over samples)."""

    estimate: float | None  # None: not estimated (``reason`` says why)
    estimate_max: float | None = None
    tolerance: float = DEFAULT_TOLERANCE
    met: bool | None = None
    level: int | None = None  # the resolution level written (None: the generator has no knob)
    resolution: str = ""  # what that level is
    method: str = ""  # how the estimate was obtained, one sentence
    samples: list[int] = field(default_factory=list)  # the checked sample indices
    trials: list[LevelTrial] = field(default_factory=list)
    reason: str = ""

    def attrs(self) -> dict[str, Any]:
        """The HDF5 root attributes (numbers as numbers, lists as JSON)."""
        out: dict[str, Any] = {
            "reference_error_tolerance": float(self.tolerance),
            "reference_error_method": self.method or self.reason,
            "reference_error_samples": json.dumps(self.samples),
        }
        if self.estimate is not None:
            out["reference_error_estimate"] = float(self.estimate)
            out["reference_error_estimate_max"] = float(self.estimate_max or self.estimate)
            out["reference_error_met"] = bool(self.met)
        if self.level is not None:
            out["resolution_level"] = int(self.level)
            out["resolution"] = self.resolution
        if self.trials:  # no timings: a resumed generation writes the same file
            out["reference_error_levels"] = json.dumps(
                [{k: v for k, v in asdict(t).items() if k != "seconds"} for t in self.trials])
        return out

    def sentence(self) -> str:
        """One line for a terminal or a report."""
        if self.estimate is None:
            return f"reference error: not estimated ({self.reason or self.method})"
        verdict = "within" if self.met else "ABOVE"
        return (f"reference error: nRMSE {self.estimate:.2e} from the PDE's solution (worst "
                f"checked sample {self.estimate_max:.2e}), {verdict} the tolerance "
                f"{self.tolerance:.0e}; {self.method}")


def _finite(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v >= 0 else None


def read_estimate(attrs: Mapping[str, Any]) -> ErrorEstimate | None:
    """The estimate stored in a file's root attributes, or None. The file is data (possibly
    hostile): only numbers and short strings are taken, each checked."""
    if "reference_error_tolerance" not in attrs and "reference_error_estimate" not in attrs:
        return None
    estimate = _finite(attrs.get("reference_error_estimate"))
    text = attrs.get("reference_error_method", "")
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    level = attrs.get("resolution_level")
    try:
        level = int(level) if level is not None and 0 <= int(level) < 1000 else None
    except (TypeError, ValueError, OverflowError):
        level = None
    met = attrs.get("reference_error_met")
    return ErrorEstimate(
        estimate=estimate, estimate_max=_finite(attrs.get("reference_error_estimate_max")),
        tolerance=_finite(attrs.get("reference_error_tolerance")) or DEFAULT_TOLERANCE,
        met=None if met is None or estimate is None else bool(met), level=level,
        resolution=str(attrs.get("resolution", ""))[:300], method=text[:500],
        reason="" if estimate is not None else text[:500])


STATED_KEYS = ("reference_error_estimate", "reference_error_estimate_max",
               "reference_error_tolerance", "reference_error_method", "reference_error_met",
               "resolution_level", "resolution")
MAX_ATTR_BYTES = 65536


def read_file_estimate(path) -> ErrorEstimate | None:
    """The estimate a data file states about itself (None: it states none, or is unreadable).
    Only the estimate's own attributes are read, each of at most :data:`MAX_ATTR_BYTES` of
    fixed-size storage (a variable-length string lives in the file's heap: it is bounded by the
    file's size, and cut to 500 characters)."""
    from pdesharp.data import hdf5

    try:
        with hdf5.open_file(path) as h5:
            attrs = {}
            for key in STATED_KEYS:
                if key in h5.attrs and \
                        h5.attrs.get_id(key).get_storage_size() <= MAX_ATTR_BYTES:
                    attrs[key] = h5.attrs[key]
    except (hdf5.DataError, OSError, KeyError, TypeError, ValueError):
        return None
    return read_estimate(attrs)
