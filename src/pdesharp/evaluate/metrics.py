"""Error metrics, computed exactly as CodePDE's evaluators compute them.

CodePDE's ``compute_nrmse`` (the same in every ``solvers/*/evaluator.py``) takes, per sample, the
RMS of the error over every axis but the batch axis (all stored frames, t = 0 included) divided by
the RMS of the reference, and averages those ratios over the batch. Nothing is cast: the
reference keeps its stored dtype (float32) and NumPy's promotion rules decide the rest, so we do
the same operations in the same order. For CNS the three fields are stacked on a last axis first,
which gives one joint norm per sample.
"""

from __future__ import annotations

import numpy as np


def stack_fields(arrays: list[np.ndarray]) -> np.ndarray:
    """One array for the metric: the single field as is, several stacked on a new last axis."""
    if len(arrays) == 1:
        return arrays[0]
    return np.stack(arrays, axis=-1)


def nrmse(pred: np.ndarray, ref: np.ndarray) -> tuple[float, np.ndarray]:
    """CodePDE's nRMSE: ``mean_b(rms_b(pred - ref) / rms_b(ref))``; returns (mean, per-sample)."""
    pred = np.asarray(pred)
    ref = np.asarray(ref)
    if pred.shape != ref.shape:
        raise ValueError(f"prediction shape {pred.shape} differs from reference shape {ref.shape}")
    axes = tuple(range(1, ref.ndim))
    rmse = np.sqrt(np.mean((pred - ref) ** 2, axis=axes))
    norm = np.sqrt(np.mean(ref**2, axis=axes))
    per_sample = rmse / norm
    return float(np.mean(per_sample)), per_sample


def frame0_mismatch(pred: np.ndarray, initial: np.ndarray) -> float:
    """Largest relative deviation of the returned frame 0 from the initial condition.

    CodePDE never checks frame 0 (copying it back costs nothing in nRMSE); we report it so that a
    solver that forgot to put the initial condition first is visible.
    """
    scale = float(np.max(np.abs(initial))) or 1.0
    return float(np.max(np.abs(np.asarray(pred)[:, 0] - initial))) / scale


def rounding_nrmse(ref: np.ndarray) -> float | None:
    """The nRMSE that rounding to the reference's stored float type alone causes: the score's
    round-off floor (:mod:`pdesharp.synthesis.ranking`). ``ref`` is stacked as the metric
    takes it (:func:`stack_fields`), in its stored dtype; None for a type that is not floating
    point.

    Round-to-nearest leaves an error in [-s/2, s/2] on a stored value whose spacing to the next
    representable number is s (``np.spacing``); spread evenly over that interval (the trailing
    digits of computed fields are), its mean square is s^2/12. Per sample that gives an RMS
    error sqrt(mean(s^2)/12), divided by the sample's RMS as :func:`nrmse` divides, then the
    mean over samples: 2-3e-8 for float32 fields of order one, 4-5e-17 for float64. It is a
    property of the type and the fields' magnitudes, not of their digits: no prompt learns a
    value from it that the data's dtype and scale would not give."""
    a = np.asarray(ref)
    if not np.issubdtype(a.dtype, np.floating):
        return None
    if a.ndim < 2 or a.shape[0] == 0:
        a = a.reshape(1, -1)
    axes = tuple(range(1, a.ndim))
    step = np.spacing(np.abs(a)).astype(np.float64)  # one unit in the last place, per value
    error = np.sqrt(np.mean(step ** 2, axis=axes) / 12.0)
    norm = np.sqrt(np.mean(a.astype(np.float64) ** 2, axis=axes))
    ok = norm > 0
    if not ok.any():
        return None
    return float(np.mean(error[ok] / norm[ok]))
