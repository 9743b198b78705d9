"""Smooth, periodic random initial fields for the generic generator.

Each field is a random trigonometric polynomial on the task's periodic domain,

    u(x) = Σ_{0 < |m|_∞ ≤ K} |m|^(−decay) (a_m cos(2π m·(x − lo)/L) + b_m sin(2π m·(x − lo)/L)),

with a_m, b_m standard normal (in 2D over a half-plane of mode vectors m, so every real mode
appears once). Being a finite Fourier sum it is exactly periodic and band-limited, so it is
represented exactly on any grid with more than 2K points per axis, and the spectral simulation
starts from the same function whatever its internal resolution. Each sample is then scaled
affinely: into ``[lo, hi]`` if the task's ``generator.ranges`` names a range for that unknown
(min → lo, max → hi), otherwise to zero mean and max |u| = 1. The min and max are measured on a
fixed reference grid (32 points per mode and axis), not on the requested points, so a seed gives
the same functions at every resolution (which is what a convergence study needs); the ranges hold
to within ~0.5 % of their span (the reference grid's sampling error of the extrema).

Draws come from ``numpy.random.default_rng(seed)`` in a fixed order (sample, unknown, mode), so a
seed reproduces the data exactly on any machine with the same NumPy, and sample k is the same
function whether 1 or 1000 samples are drawn, in one batch or in several (``first``). A sample
that the generator rejected (its simulation failed) is replaced by a *redraw*: redraw j ≥ 1 of
sample k comes from ``default_rng([seed, k, j])``, so it too depends on nothing but the seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def mode_vectors(dim: int, modes: int) -> np.ndarray:
    """Integer mode vectors m (rows) with 0 < |m|_∞ ≤ modes, one of each ±m pair."""
    if dim == 1:
        return np.arange(1, modes + 1).reshape(-1, 1)
    from itertools import product

    grid = np.array(list(product(range(-modes, modes + 1), repeat=dim)))
    # half-space: the last nonzero component positive (in 2D: my > 0, or my == 0 and mx > 0)
    last = np.array([next((v for v in row[::-1] if v), 0) for row in grid])
    return grid[last > 0]


def draw_coefficients(seed: int | np.random.Generator, n_samples: int, n_unknowns: int,
                      n_modes: int, *, first: int = 0,
                      redraws: Sequence[int] | None = None) -> np.ndarray:
    """Standard normal coefficients [n_samples, n_unknowns, n_modes, 2] of samples
    ``first .. first + n_samples - 1``; ``redraws[i]`` (default 0) picks the redraw of sample i."""
    block = (n_unknowns, n_modes, 2)
    if isinstance(seed, np.random.Generator):
        if first or redraws:
            raise ValueError("first/redraws need an integer seed")
        return seed.standard_normal((n_samples,) + block)
    stream = np.random.default_rng(seed).standard_normal((first + n_samples,) + block)[first:]
    for i, j in enumerate(redraws or ()):
        if j:
            stream[i] = np.random.default_rng([int(seed), first + i, int(j)]).standard_normal(block)
    return stream


def random_fields(points: Sequence[np.ndarray], lo: Sequence[float], lengths: Sequence[float],
                  unknowns: Sequence[str], n_samples: int, seed: int | np.random.Generator, *,
                  modes: int = 4, decay: float = 2.0,
                  ranges: Mapping[str, tuple[float, float]] | None = None, first: int = 0,
                  redraws: Sequence[int] | None = None) -> dict[str, np.ndarray]:
    """``{unknown: [n_samples, *grid]}`` random fields sampled at the tensor grid ``points``:
    samples ``first .. first + n_samples - 1`` of ``seed`` (``redraws``: see
    :func:`draw_coefficients`)."""
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    dim = len(points)
    ranges = dict(ranges or {})
    mvec = mode_vectors(dim, modes)  # [M, dim]
    weight = np.linalg.norm(mvec, axis=1) ** (-decay)  # [M]
    coeff = draw_coefficients(seed, n_samples, len(unknowns), len(mvec), first=first,
                              redraws=redraws) * weight[:, None]
    n_ref = 32 * modes
    ref_points = [lo_a + la * np.arange(n_ref) / n_ref for lo_a, la in zip(lo, lengths)]
    out: dict[str, np.ndarray] = {}
    axes = tuple(range(1, dim + 1))
    for j, name in enumerate(unknowns):
        u = _evaluate(coeff[:, j], mvec, points, lo, lengths)
        ref = _evaluate(coeff[:, j], mvec, ref_points, lo, lengths)
        if name in ranges:
            low, high = ranges[name]
            umin = ref.min(axis=axes, keepdims=True)
            umax = ref.max(axis=axes, keepdims=True)
            span = np.where(umax > umin, umax - umin, 1.0)
            u = low + (high - low) * (u - umin) / span
        else:
            u = u / np.maximum(np.abs(ref).max(axis=axes, keepdims=True), 1e-300)
        out[name] = u
    return out


def _evaluate(coeff: np.ndarray, mvec: np.ndarray, points: Sequence[np.ndarray],
              lo: Sequence[float], lengths: Sequence[float]) -> np.ndarray:
    """Σ_m a_m cos θ_m + b_m sin θ_m on the grid ``points``: coeff [B, M, 2] -> [B, *grid]."""
    dim = len(points)
    mesh = np.meshgrid(*[(np.asarray(p, float) - lo_a) / la
                         for p, lo_a, la in zip(points, lo, lengths)], indexing="ij")
    size = mesh[0].size
    if mvec.shape[0] * size > 2**24:  # a 3D grid: modes in chunks (all at once is gigabytes)
        step = max(1, 2**22 // size)
        return sum(_evaluate(coeff[:, k:k + step], mvec[k:k + step], points, lo, lengths)
                   for k in range(0, mvec.shape[0], step))
    theta = 2.0 * np.pi * sum(mvec[:, a].reshape((-1,) + (1,) * dim) * mesh[a] for a in range(dim))
    shape = coeff.shape[:2] + (1,) * dim
    return (coeff[..., 0].reshape(shape) * np.cos(theta)
            + coeff[..., 1].reshape(shape) * np.sin(theta)).sum(axis=1)
