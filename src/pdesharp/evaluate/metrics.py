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
