"""What an audit measures once it has a converged solution: the reference's error, its growth,
a drifting clock, conserved-quantity drift and the float32 storage floor.

Arrays are stacked the way the evaluator scores them (one field as is, several on a last axis,
in the solver's return order), so the reference error is exactly the score the converged solution
itself would get: nRMSE(pred = converged, ref = reference) by CodePDE's formula.
"""

from __future__ import annotations

import numpy as np

from pdesharp.audit.conserved import Conserved
from pdesharp.audit.records import ConservedDrift, TimeShift
from pdesharp.evaluate.metrics import nrmse


def _space_axes(arr: np.ndarray, steady: bool) -> tuple[int, ...]:
    return tuple(range(1 if steady else 2, arr.ndim))


def reference_errors(ref: np.ndarray, conv: np.ndarray) -> np.ndarray:
    """Per-sample nRMSE that the converged solution scores against the reference."""
    return nrmse(conv, ref)[1]


def float32_floor(conv: np.ndarray) -> np.ndarray:
    """Per-sample nRMSE of the converged solution stored as float32 (the storage round-off):
    no float32 file can be closer than this to the true solution."""
    return nrmse(conv.astype(np.float32).astype(np.float64), conv)[1]


def growth(ref: np.ndarray, conv: np.ndarray) -> np.ndarray:
    """Per frame: mean over samples of ‖ref_k − conv_k‖ / ‖ref_k‖ (space and fields)."""
    axes = _space_axes(ref, steady=False)
    diff = np.sqrt(np.mean((conv - ref.astype(np.float64)) ** 2, axis=axes))
    norm = np.sqrt(np.mean(ref.astype(np.float64) ** 2, axis=axes))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(norm > 0, diff / np.where(norm > 0, norm, 1.0), 0.0)
    return rel.mean(axis=0)


def time_shift(ref: np.ndarray, conv: np.ndarray, rate: np.ndarray, times: np.ndarray
               ) -> tuple[TimeShift, np.ndarray]:
    """The time offset of each stored frame, and the reference error without it.

    Frame k is modelled as the converged solution at t_k + δ_k with one δ_k shared by all
    samples (a file's frames share a save clock): δ_k minimises Σ_b ‖ref − (conv + δ·u_t)‖²
    over samples, space and fields, i.e. δ_k = Σ⟨ref − conv, u_t⟩ / Σ⟨u_t, u_t⟩, with u_t the
    converged solution's time derivative. Pooling matters: a sample that has decayed to a nearly
    steady state has a tiny u_t, and its own fit would turn float32 rounding noise into a large,
    meaningless δ; in the pooled fit it simply carries little weight. A frame with no motion at
    all has no measurable clock (δ = 0).
    Returns the summary and the per-sample error with the shifts removed.
    """
    axes = (0,) + _space_axes(ref, steady=False)
    diff = ref.astype(np.float64) - conv
    num = np.sum(diff * rate, axis=axes)
    den = np.sum(rate * rate, axis=axes)
    scale = np.sqrt(np.sum(conv * conv, axis=axes)) + 1e-300
    measurable = np.sqrt(den) > 1e-12 * scale
    delta = np.where(measurable, num / np.where(measurable, den, 1.0), 0.0)  # [T]
    residual = diff - delta.reshape((1, -1) + (1,) * (ref.ndim - 2)) * rate
    all_axes = tuple(range(1, ref.ndim))
    norm = np.sqrt(np.mean(ref.astype(np.float64) ** 2, axis=all_axes))
    after = np.sqrt(np.mean(residual ** 2, axis=all_axes)) / norm
    before = float(reference_errors(ref, conv).mean())
    explained = 1.0 - (float(after.mean()) / before) ** 2 if before > 0 else 0.0
    summary = TimeShift(times=[float(t) for t in times], shift=delta.tolist(),
                        error_after_shift=float(after.mean()), explained=float(explained))
    return summary, after


def conserved_drift(quantities: list[Conserved], ref: dict[str, np.ndarray],
                    conv: dict[str, np.ndarray]) -> list[ConservedDrift]:
    """Drift of each conserved domain mean over the stored frames, reference and converged."""
    out = []
    for q in quantities:
        r = q.evaluate(ref)
        c = q.evaluate(conv)
        axes = _space_axes(r, steady=False)
        mean_r = r.mean(axis=axes)  # [B, T]
        mean_c = c.mean(axis=axes)
        drift_r = np.max(np.abs(mean_r - mean_r[:, :1]), axis=1)
        drift_c = np.max(np.abs(mean_c - mean_c[:, :1]), axis=1)
        scale = np.sqrt(np.mean(c[:, 0] ** 2, axis=tuple(range(1, c.ndim - 1)))) + 1e-300
        out.append(ConservedDrift(
            quantity=q.name, expression=q.expression, scale=float(scale.mean()),
            reference_drift=float(drift_r.max()),
            reference_relative=float(np.max(drift_r / scale)),
            converged_drift=float(drift_c.max()),
            per_sample=[float(v) for v in drift_r]))
    return out
