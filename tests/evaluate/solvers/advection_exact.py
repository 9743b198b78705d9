"""Advection by the exact periodic shift u(t, x) = u0(x - beta t), applied in Fourier space."""
import numpy as np


def solver(u0_batch, t_coordinate, beta):
    u0 = np.asarray(u0_batch, dtype=np.float64)
    n = u0.shape[-1]
    k = 2.0 * np.pi * np.fft.rfftfreq(n, d=1.0 / n)  # domain [0, 1]
    u_hat = np.fft.rfft(u0, axis=-1)
    t = np.asarray(t_coordinate, dtype=np.float64)
    phase = np.exp(-1j * k[None, :] * beta * t[:, None])  # [T, K]
    out = np.fft.irfft(u_hat[:, None, :] * phase[None], n=n, axis=-1)
    out[:, 0] = u0
    return out
