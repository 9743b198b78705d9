"""Every generated reference states its own error: estimation, adaptive resolution, tolerance.

A reference is a numerical solution with an error of its own; a score below that error measures
agreement with the reference's mistakes, not with the PDE. ``pdesharp data generate`` therefore
estimates the error of what it writes and stores it in the file (:class:`ErrorEstimate`, the
``reference_error_*`` attributes that the audit, ``data info`` and runs read).

**The knob.** A generator that can refine exposes a :class:`Knob`: resolution *levels* 0, 1, ...
(0 its default, each level finer in space and tighter in time, as the generator defines: the
generic Fourier generator raises its oversampling and its time tolerance, the Chebyshev walls
generator its collocation degree and its tolerance) and ``make(first, last, level)``, which makes
samples ``first .. last - 1`` at a level. The generic generator's knob is
:func:`pdesharp.data.generate.generic.knob`; a generator added to it (a new branch of
``generate_task``) gets everything here by accepting ``level`` and describing its levels in
``generic.resolution_levels``. A registered module generator gets it by defining
``resolution_levels(params, nx, **options) -> list[str]`` and accepting ``level=`` in
``generate``.

**Adapting.** :func:`choose_level` makes a few check samples (spread over the file) at level
L and L + 1, L = 0, 1, ...; the nRMSE between the two (the level-L data rounded to float32 as the
file stores them) estimates the level-L error, since level L + 1 is the more accurate. The first
level whose estimate is within the tolerance on every checked sample is written (default
:data:`DEFAULT_TOLERANCE`, relative, CodePDE's nRMSE; the file stores the mean over the checked
samples, as scores are means, and the worst). When no level reaches it, generation stops before the full run
(:class:`ToleranceNotMet`, naming what each level reached), or, if the caller accepts it, writes
the finest level and states its error.

**No knob.** The built-in generators reproduce PDEBench's schemes by design (a finite-volume
Burgers file *is* 3e-4 from the PDE) and cannot refine; their estimate is the audit's
(:mod:`pdesharp.audit`: an independent converged solution of a few written samples), and a miss is
a warning, since the scheme is the point.

The estimate is the difference from a solution at least as accurate, so it bounds the written
data's error when the finer level's own error is smaller than half of it (spectral and
high-order convergence, the regime the adaptive loop stops in).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdesharp.data.generate.chunked import Batch
from pdesharp.data.stated_error import (  # noqa: F401 - re-exported
    ATTR_PREFIX,
    DEFAULT_TOLERANCE,
    STATED_KEYS,
    ErrorEstimate,
    LevelTrial,
    read_estimate,
    read_file_estimate,
)

CHECK_SAMPLES = 2  # samples made at two levels to estimate the error (spread over the file)


class ToleranceNotMet(ValueError):
    """No resolution level of the generator reached the tolerance (the message has the numbers)."""


@dataclass(frozen=True)
class Knob:
    """A generator's resolution: ``levels[k]`` describes level k; ``make(first, last, level)``."""

    levels: Sequence[str]
    make: Callable[[int, int, int], Batch]


def check_indices(n_samples: int, k: int) -> list[int]:
    """``k`` sample indices spread over 0 .. n_samples - 1 (the first and the last first)."""
    k = max(0, min(int(k), n_samples))
    if k == 0:
        return []
    return sorted({int(round(v)) for v in np.linspace(0, n_samples - 1, k)})


def nrmse(approx: Mapping[str, np.ndarray], better: Mapping[str, np.ndarray],
          keys: Sequence[str]) -> np.ndarray:
    """Per-sample nRMSE of ``approx`` against ``better`` over the ``keys`` arrays jointly."""
    diff = sq = 0.0
    for key in keys:
        a = np.asarray(approx[key], dtype=np.float64)
        b = np.asarray(better[key], dtype=np.float64)
        axes = tuple(range(1, b.ndim))
        diff = diff + np.sum((a - b) ** 2, axis=axes)
        sq = sq + np.sum(b ** 2, axis=axes)
    return np.sqrt(np.asarray(diff) / np.maximum(np.asarray(sq), 1e-300))


def _stored(arrays: Mapping[str, np.ndarray], keys: Sequence[str]) -> dict[str, np.ndarray]:
    """The arrays as the file stores them (float32)."""
    return {k: np.asarray(arrays[k]).astype(np.float32) for k in keys}


def _same_draws(a: Batch, b: Batch) -> bool:
    """Both batches used the same random draws (a rejected draw is redone with the next one)."""
    key = lambda r: (r.get("sample"), r.get("draw"))
    return sorted(map(key, a.rejected)) == sorted(map(key, b.rejected))


Note = Callable[[str], None]


def _make_check(knob: Knob, indices: list[int], level: int) -> list[Batch]:
    return [knob.make(i, i + 1, level) for i in indices]


def _compare(coarse: list[Batch], fine: list[Batch], keys: Sequence[str]) -> np.ndarray:
    errs = [float(nrmse(_stored(c.arrays, keys), f.arrays, keys)[0])
            for c, f in zip(coarse, fine) if _same_draws(c, f)]
    return np.asarray(errs)


@dataclass
class Choice:
    """The level to write and the check solutions (at ``level + 1``) of the checked samples."""

    level: int
    indices: list[int]
    check: list[Batch]
    trials: list[LevelTrial]
    met: bool


def choose_level(knob: Knob, n_samples: int, keys: Sequence[str], *, tolerance: float,
                 check_samples: int = CHECK_SAMPLES, accept: bool = False,
                 note: Note | None = None) -> Choice:
    """The coarsest level whose estimated error is within ``tolerance`` (see the module text).

    Raises :class:`ToleranceNotMet` when none is, unless ``accept``: then the finest level is
    chosen (its error estimated by the last difference, an over-estimate when converging)."""
    note = note or (lambda message: None)
    indices = check_indices(n_samples, check_samples)
    levels = list(knob.levels)
    if not indices or len(levels) < 2:
        raise ValueError("an error estimate needs at least one check sample and two levels")
    note(f"estimating the reference error on samples {indices} at {levels[0]}")
    previous = _make_check(knob, indices, 0)
    trials: list[LevelTrial] = []
    for level in range(len(levels) - 1):
        start = time.monotonic()
        finer = _make_check(knob, indices, level + 1)
        errs = _compare(previous, finer, keys)
        seconds = time.monotonic() - start
        if errs.size == 0:
            raise ValueError("the check samples drew different initial data at two levels")
        trial = LevelTrial(level, levels[level], float(errs.mean()), float(errs.max()), seconds)
        trials.append(trial)
        note(f"level {level} ({levels[level]}): {trial.difference:.2e} from level {level + 1}"
             f" ({levels[level + 1]})")
        if np.isfinite(trial.difference_max) and trial.difference_max <= tolerance:
            return Choice(level, indices, finer, trials, True)
        previous = finer
    best = min(trials, key=lambda t: t.difference_max if np.isfinite(t.difference_max)
               else np.inf)
    if not accept:
        tried = "; ".join(f"level {t.level} ({t.resolution}): {t.difference_max:.2e}"
                          for t in trials)
        raise ToleranceNotMet(
            f"no resolution level reached the tolerance {tolerance:.1e} (nRMSE from the next "
            f"finer level, worst of samples {indices}): {tried}. The best is "
            f"{best.difference_max:.2e}. "
            "Ask for a looser --tolerance, or pass --on-tolerance warn to write the finest level "
            "with its estimated error stated in the file")
    # the finest level: its error is below the last difference when the levels converge
    return Choice(len(levels) - 1, indices, previous, trials, False)


def estimate_from_choice(arrays: Mapping[str, np.ndarray], choice: Choice,
                         keys: Sequence[str], tolerance: float, levels: Sequence[str]
                         ) -> ErrorEstimate:
    """The estimate of the written ``arrays`` (their checked samples against the finer check
    solutions of :func:`choose_level`)."""
    written = {k: np.asarray(arrays[k])[choice.indices] for k in keys}
    if choice.level + 1 < len(levels):
        check = {k: np.concatenate([b.arrays[k] for b in choice.check]) for k in keys}
        errs = nrmse(_stored(written, keys), check, keys)
        how = (f"nRMSE of the written (float32) samples {choice.indices} from the same generator "
               f"one resolution level finer ({levels[choice.level + 1]})")
    else:  # the finest level was written (tolerance not met, accepted): the last difference
        last = choice.trials[-1]
        errs = np.asarray([last.difference, last.difference_max])
        how = (f"nRMSE between the two finest resolution levels ({levels[-2]} and {levels[-1]})"
               ", an upper estimate for the finest, which was written")
    est = float(np.mean(errs)) if choice.level + 1 < len(levels) else float(errs[0])
    worst = float(np.max(errs))
    return ErrorEstimate(estimate=est, estimate_max=worst, tolerance=tolerance,
                         met=bool(worst <= tolerance), level=choice.level,
                         resolution=levels[choice.level], method=how,
                         samples=list(choice.indices), trials=choice.trials)


def not_estimated(reason: str, tolerance: float = DEFAULT_TOLERANCE) -> ErrorEstimate:
    return ErrorEstimate(estimate=None, tolerance=tolerance, reason=reason)


def estimate_by_audit(task: Any, path, check_samples: int, tolerance: float,
                      note: Note | None = None) -> ErrorEstimate:
    """The error of a written file from the audit's independent converged solution of its first
    ``check_samples`` samples (for generators without a resolution knob)."""
    from pdesharp.audit import audit_file
    from pdesharp.task import Task, load_task

    note = note or (lambda message: None)
    try:
        spec = task if isinstance(task, Task) else load_task(str(task))
    except Exception as exc:  # noqa: BLE001 - a plug-in generator for a name that is no task
        return not_estimated(f"no task spec to audit against ({exc})", tolerance)
    note(f"estimating the reference error: the audit's converged solution of "
         f"{check_samples} sample(s)")
    result = audit_file(spec, path, limit=check_samples, progress=note)
    report = result.report
    if not report.ok:
        return not_estimated(f"the generator has no resolution knob and the audit cannot "
                             f"solve this task ({report.reason})", tolerance)
    est = float(report.reference_error)
    worst = float(report.reference_error_max or est)
    bound = ""
    if not report.resolved and report.convergence is not None:  # the distance may be the
        # converged solution's own error: a bound
        b = report.convergence.estimated_error
        est, worst = est + b, worst + b
        bound = (f", plus {b:.2e}, the converged solution's own error estimate (the audit "
                 "does not resolve the error below that: an upper bound)")
    return ErrorEstimate(
        estimate=est, estimate_max=worst,
        tolerance=tolerance, met=bool(est <= tolerance),
        method=(f"nRMSE of the written samples {report.samples} from the audit's converged "
                f"solution ({report.method}){bound}; the generator's scheme is fixed by "
                "design"),
        samples=list(report.samples))
