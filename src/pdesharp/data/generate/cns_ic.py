"""Random initial states for 1D CNS in the style of PDEBench's ``init_multi_HD`` (1D_rand mode).

Each field is a sum of ``k_tot`` = 3 sine modes u = sum_n A_n sin(k_n x + phi_n) with
A_n ~ U(0, 1), phi_n ~ U(0, 2 pi), and k_n = 2 pi n c_n / (x_last - x_first), where c_n counts how
often n was picked in ``n_pick`` = 2 draws with replacement (so an unpicked mode contributes the
constant A_n sin(phi_n), and a mode picked twice has doubled wavenumber). Then, per sample:

* with probability 0.1 the field is replaced by its absolute value; a random sign is applied;
* with probability 0.5 it is multiplied by the window
  0.5 (tanh((x - x_a)/0.01) - tanh((x - x_b)/0.01)), x_a ~ U(0.1, 0.45), x_b ~ U(0.55, 0.9)
  (absolute coordinates, as in PDEBench);
* density and pressure are rescaled to [b, b + m] with m and b log-uniform in [1, 10]
  (density) and [10, 100] (pressure); velocity is not rescaled.

The random numbers come from a NumPy ``Generator`` seeded with ``seed``; PDEBench draws from
JAX's PRNG, so the same seed does not give PDEBench's samples, only samples from the same family.
The wavenumber uses x_last - x_first, not the period, as PDEBench does, so the fields have a
small jump across the periodic boundary.
"""

from __future__ import annotations

import numpy as np


def random_modes(xc: np.ndarray, n_samples: int, rng: np.random.Generator, *, k_tot: int = 3,
                 n_pick: int = 2, p_abs: float = 0.1, p_window: float = 0.5) -> np.ndarray:
    """[n_samples, N] fields of the sine-mode family before any rescaling."""
    xc = np.asarray(xc, dtype=np.float64)
    picks = rng.integers(0, k_tot, size=(n_samples, n_pick))
    counts = np.stack([(picks == j).sum(axis=1) for j in range(k_tot)], axis=1)  # [B, k_tot]
    kk = 2.0 * np.pi * np.arange(1, k_tot + 1) * counts / (xc[-1] - xc[0])
    amp = rng.uniform(0.0, 1.0, size=(n_samples, k_tot, 1))
    phase = rng.uniform(0.0, 2.0 * np.pi, size=(n_samples, k_tot, 1))
    u = (amp * np.sin(kk[:, :, None] * xc[None, None, :] + phase)).sum(axis=1)
    take_abs = rng.random(n_samples) < p_abs
    u[take_abs] = np.abs(u[take_abs])
    u *= rng.choice([1.0, -1.0], size=(n_samples, 1))
    windowed = rng.random(n_samples) < p_window
    x_a = rng.uniform(0.1, 0.45, size=n_samples)
    x_b = rng.uniform(0.55, 0.9, size=n_samples)
    width = 0.01
    window = 0.5 * (np.tanh((xc[None, :] - x_a[:, None]) / width)
                    - np.tanh((xc[None, :] - x_b[:, None]) / width))
    return np.where(windowed[:, None], u * window, u)


def rescale(u: np.ndarray, rng: np.random.Generator, lo: float, hi: float) -> np.ndarray:
    """Map each row to [b, b + m] with m, b log-uniform in [lo, hi]."""
    n = u.shape[0]
    span = u.max(axis=1, keepdims=True) - u.min(axis=1, keepdims=True)
    # A constant row (possible only in degenerate draws) maps to b rather than dividing by zero.
    unit = (u - u.min(axis=1, keepdims=True)) / np.where(span > 0, span, 1.0)
    m = np.exp(rng.uniform(np.log(lo), np.log(hi), size=(n, 1)))
    b = np.exp(rng.uniform(np.log(lo), np.log(hi), size=(n, 1)))
    return unit * m + b


def init_multi_hd(xc: np.ndarray, n_samples: int, seed: int, dtype=np.float32) -> dict[str, np.ndarray]:
    """{"rho", "p", "v"}: [n_samples, N] random initial states (drawn in that order)."""
    rng = np.random.default_rng(seed)
    rho = rescale(random_modes(xc, n_samples, rng), rng, 1.0, 10.0)
    p = rescale(random_modes(xc, n_samples, rng), rng, 10.0, 100.0)
    v = random_modes(xc, n_samples, rng)
    return {"rho": rho.astype(dtype), "p": p.astype(dtype), "v": v.astype(dtype)}


__all__ = ["init_multi_hd", "random_modes", "rescale"]
