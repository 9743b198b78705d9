"""What an audit would cost: the estimate behind ``--audit auto``.

``auto`` (the default) uses a cached audit; where none is cached it computes one when the task
supports it and the estimate is at most :data:`AUTO_SECONDS`, so that a newcomer's first
``pdesharp solve burgers --max-samples 5`` has the reference floor as the README says, while a
large split does not start with minutes of auditing (``--audit compute`` does).

The estimates are the audit's measured wall times on the project's 2-core machine
(docs/data.md, "The shared dev files"), per sample, or per sample, grid point and frame for the
spectral method every generic task gets; they are upper bounds taken on a loaded machine.
"""

from __future__ import annotations

from pathlib import Path

from pdesharp.data import hdf5
from pdesharp.task import Task

AUTO_SECONDS = 60.0  # --audit auto computes a missing audit estimated to take at most this
AUTO_SECONDS_ENV = "PDESHARP_AUDIT_AUTO_SECONDS"  # a user's own budget (0: never compute)
# measured per sample (docs/data.md), upper bounds on a loaded machine: the exact shift (advection),
# refined elliptic solves with Richardson extrapolation (Darcy), the spectral method of lines at a
# finer grid (Burgers: 138 s for 20 samples; reaction-diffusion: 164 s), the spectral method in
# primitive variables (CNS: 5.7 s per sample with its check at load 1.5, counted twice)
PER_SAMPLE = {"advection": 0.15, "cns1d": 12.0, "darcy": 16.0, "burgers": 7.0,
              "reacdiff1d": 8.5}
# once per audit, whatever the samples: Darcy's order measurement on cells split 4x4 (2.8
# million unknowns, on one sample): 75 s at load 3.5, beside 16 s per sample for the solves
ONCE = {"darcy": 75.0}
# any other task the spectral method covers: per sample, grid point and frame, the larger of
# Burgers' 20 x 1024 x 201 and reaction-diffusion's 20 x 1024 x 101 (stiffer, 8e-5 s)
SPECTRAL_PER_POINT_FRAME = 8e-5
# a generated walled file, audited by regenerating each sample two and one levels finer: 2D
# Allen-Cahn at 57^2 and 65^2 Chebyshev points took ~3 s per sample at load 4 (1D far less)
REGENERATE_PER_SAMPLE = {1: 2.0, 2: 8.0}


def auto_seconds() -> float:
    """The budget of ``--audit auto``: :data:`AUTO_SECONDS`, or ``$PDESHARP_AUDIT_AUTO_SECONDS``
    (a number of seconds, 0 to never compute) for users on a slower or faster machine."""
    import os

    raw = os.environ.get(AUTO_SECONDS_ENV, "").strip()
    if not raw:
        return AUTO_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{AUTO_SECONDS_ENV}={raw[:40]!r} is not a number of seconds") from None
    if not value >= 0:  # also refuses nan
        raise ValueError(f"{AUTO_SECONDS_ENV} must be 0 or more seconds, not {raw[:40]!r}")
    return value


def estimate_seconds(task: Task, path: Path, samples: int) -> float | None:
    """The estimated wall time of auditing ``samples`` samples of ``path``; None when the task
    has no converged-solution method or the file cannot be read."""
    from pdesharp.audit.solutions import AuditUnavailable, is_builtin, solver_for

    try:
        solver = solver_for(task, path)
    except AuditUnavailable:
        return None
    if getattr(solver, "__module__", "") == "pdesharp.audit.regenerate":
        return REGENERATE_PER_SAMPLE[min(len(task.equation.space), 2)] * samples
    for name, per in PER_SAMPLE.items():
        if is_builtin(task, name):
            return ONCE.get(name, 0.0) + per * samples
    key = next(iter(task.data.fields.values()))
    try:  # the one reader: no external links, no declarations it cannot check
        with hdf5.open_file(path) as h5:
            shape = hdf5.dataset(h5, key, path).shape
    except (OSError, KeyError, hdf5.DataError):
        return None
    points = 1
    for n in shape[1:]:  # frames and grid points of one sample
        points *= int(n)
    return SPECTRAL_PER_POINT_FRAME * points * samples
