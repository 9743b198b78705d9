"""Viscous Burgers by a pseudo-spectral method: 2/3-rule dealiasing, diffusion integrated
exactly (integrating factor), classical RK4 for the advective term, CFL 0.3."""
import numpy as np


def solver(u0_batch, t_coordinate, nu):
    u0 = np.asarray(u0_batch, dtype=np.float64)
    n = u0.shape[-1]
    dx = 1.0 / n
    k = 2.0 * np.pi * np.fft.rfftfreq(n, d=dx)
    keep = np.abs(k) < (2.0 / 3.0) * k.max()
    ik = 1j * k * keep

    def advective(v_hat):  # -(u^2/2)_x in Fourier space
        u = np.fft.irfft(v_hat, n=n, axis=-1)
        return -0.5 * ik * np.fft.rfft(u * u, axis=-1)

    out = np.empty((u0.shape[0], len(t_coordinate), n))
    out[:, 0] = u0
    u_hat = np.fft.rfft(u0, axis=-1)
    for j in range(1, len(t_coordinate)):
        span = float(t_coordinate[j] - t_coordinate[j - 1])
        umax = max(np.abs(np.fft.irfft(u_hat, n=n, axis=-1)).max(), 1e-6)
        steps = max(1, int(np.ceil(span / (0.3 * dx / umax))))
        dt = span / steps
        half = np.exp(-nu * k**2 * dt / 2)
        full = half * half
        for _ in range(steps):
            a = advective(u_hat)
            b = advective(half * (u_hat + dt / 2 * a))
            c = advective(half * u_hat + dt / 2 * b)
            d = advective(full * u_hat + dt * half * c)
            u_hat = full * u_hat + dt / 6 * (full * a + 2 * half * (b + c) + d)
        out[:, j] = np.fft.irfft(u_hat, n=n, axis=-1)
    return out
