"""Exact viscous Burgers solutions by the Hopf–Cole transformation, as an independent check.

For u_t + u u_x = ν u_xx on a periodic interval of length L, write u = m + w(x − m t, t) with m
the (conserved) mean of u0, so that w solves the same equation with zero-mean data w0 and its
antiderivative W0 is periodic. Hopf–Cole turns w into a heat-equation solution, and the heat
kernel gives the closed form

    w(ξ, t) = ∫ (ξ − y)/t · e^{−G(y)/(2ν)} dy / ∫ e^{−G(y)/(2ν)} dy,   G = (ξ − y)²/(2t) + W0(y),

over the whole line (W0 extended periodically). Transforming in Fourier space instead (φ̂ e^{−νk²t})
fails here: e^{−W0/(2ν)} spans some 10^20 for ν = 0.01/π, far beyond double precision. The
quadrature form is evaluated with the largest exponent subtracted (log-sum-exp), so it is exact
to rounding wherever the weights live, and the trapezoid rule on a fine uniform y grid is
spectrally accurate for these smooth, rapidly decaying integrands.

The initial data are the trigonometric interpolant of the stored samples (the same data a Fourier
spectral solver starts from), so the comparison checks the time integration and the spatial
resolution of the spectral solution, not the choice of initial data.
"""

from __future__ import annotations

import numpy as np

ROUNDING_DECADES = 40.0  # weights below e^-40 of the largest are below double rounding


def antiderivative_samples(w0: np.ndarray, length: float, m_fine: int) -> np.ndarray:
    """W0(y) = ∫_0^y w0 at y_j = x_0 + j·L/m_fine (x_0 the first sample), w0 zero-mean samples
    [N] at uniform points; trigonometric interpolation, modes |k| < N/2."""
    n = w0.size
    spec = np.fft.rfft(w0)
    k = np.arange(spec.size)
    keep = (k > 0) & (2 * k < n)
    coef = np.zeros(m_fine // 2 + 1, dtype=complex)
    coef[k[keep]] = spec[keep] / (2j * np.pi * k[keep] / length)
    # the antiderivative's series, evaluated on the fine grid (same origin as the samples)
    return np.fft.irfft(coef, n=m_fine) * (m_fine / n)


def solve(u0: np.ndarray, x: np.ndarray, times: np.ndarray, nu: float, length: float = 1.0,
          m_fine: int = 16384, chunk: int = 64) -> np.ndarray:
    """u(x, t) for one sample: ``u0`` [N] at the uniform points ``x`` [N]; returns [len(times), N].

    ``m_fine`` quadrature points per period; t = 0 returns ``u0`` itself.
    """
    u0 = np.asarray(u0, dtype=float)
    x = np.asarray(x, dtype=float)
    mean = float(np.mean(u0))
    w0 = u0 - mean
    big_w = antiderivative_samples(w0, length, m_fine)
    spread = float(big_w.max() - big_w.min())
    h = length / m_fine
    out = np.empty((len(times), x.size))
    for i, t in enumerate(np.asarray(times, dtype=float)):
        if t <= 0:
            out[i] = u0
            continue
        xi = x - mean * t  # the frame moving with the mean
        # beyond this distance the Gaussian outweighs any variation of W0 by e^-40
        reach = np.sqrt(2.0 * t * (2.0 * nu * ROUNDING_DECADES + spread))
        j_lo = int(np.floor((xi.min() - reach - x[0]) / h)) - 1
        j_hi = int(np.ceil((xi.max() + reach - x[0]) / h)) + 1
        j = np.arange(j_lo, j_hi + 1)
        y = x[0] + j * h
        wy = big_w[j % m_fine]
        for s in range(0, x.size, chunk):
            d = xi[s:s + chunk, None] - y[None, :]
            expo = -(d * d / (2.0 * t) + wy[None, :]) / (2.0 * nu)
            expo -= expo.max(axis=1, keepdims=True)
            weight = np.exp(expo)
            out[i, s:s + chunk] = mean + (weight * d).sum(axis=1) / (t * weight.sum(axis=1))
    return out
