"""Gaussian random fields on the unit square, FNO Darcy convention.

The field has covariance proportional to tau^(2 alpha - 2) (-Laplacian + tau^2 I)^(-alpha) with
zero-Neumann boundaries, so its Karhunen-Loeve basis is the 2D cosine series. The weights are
independent standard normals; the field on the s x s grid is the orthonormal inverse DCT (type
III, i.e. the inverse of the orthonormal DCT-II) along both axes of the scaled weights.

Normalisation and draw order follow the FNO data method (Li et al., 2020) as ported to Python in
CodePDE: the square roots of the eigenvalues are tau^(alpha-1) (pi^2 |k|^2 + tau^2)^(-alpha/2),
they are multiplied by s and by one s x s block of normals drawn in C order from NumPy's legacy
generator, and the mean mode k = (0, 0) is zeroed. With the same seed, the sign pattern (all the
thresholded Darcy coefficient depends on) is the one of the published method.
"""

from __future__ import annotations

import numpy as np
from scipy import fft


def grf_kl_scale(s: int, alpha: float = 2.0, tau: float = 3.0) -> np.ndarray:
    """[s, s] standard deviations of the cosine-series weights (the k = 0 mode set to 0)."""
    k = np.arange(s)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    sqrt_eig = tau ** (alpha - 1) * (np.pi**2 * k2 + tau**2) ** (-alpha / 2)
    scale = s * sqrt_eig
    scale[0, 0] = 0.0  # zero-mean field
    return scale


def grf_from_normals(xi: np.ndarray, alpha: float = 2.0, tau: float = 3.0) -> np.ndarray:
    """Field(s) from standard-normal weights ``xi`` of shape [..., s, s]."""
    xi = np.asarray(xi, dtype=np.float64)
    s = xi.shape[-1]
    if xi.shape[-2] != s:
        raise ValueError(f"weights must be square in the last two axes, got {xi.shape}")
    weights = grf_kl_scale(s, alpha, tau) * xi
    return fft.idct(fft.idct(weights, type=2, axis=-2, norm="ortho"), type=2, axis=-1, norm="ortho")


def sample_grf(n_samples: int, s: int, rng: np.random.RandomState, alpha: float = 2.0,
               tau: float = 3.0) -> np.ndarray:
    """[n_samples, s, s] fields; sample k uses the k-th s x s block of ``rng``'s normal stream.

    ``rng`` is a legacy :class:`numpy.random.RandomState`: ``RandomState(seed)`` yields the same
    stream as ``np.random.seed(seed)`` followed by ``np.random.normal`` calls, without touching
    NumPy's global state.
    """
    out = np.empty((n_samples, s, s))
    for k in range(n_samples):
        out[k] = grf_from_normals(rng.normal(0.0, 1.0, (s, s)), alpha, tau)
    return out


__all__ = ["grf_from_normals", "grf_kl_scale", "sample_grf"]
