# ---- block: pseudo-spectral scalar solver, 2/3 dealiasing, integrating-factor RK4 ----


def _init_state(W, dx, prm):
    return np.asarray(to_conservative(W, prm))[0]


def _primitive(u, prm):
    return to_primitive(u[None], prm)


def _wavenumbers(n, dx):
    k = 2.0 * np.pi * np.fft.rfftfreq(n, d=dx)
    keep = np.arange(k.size) <= (n // 2) * 2 // 3  # Orszag's 2/3 rule
    return k, keep


def _nonlinear(uh, k, keep, n, prm):
    """Fourier transform of -dF/dx + S (the linear diffusion is handled by the integrating factor)."""
    u = np.fft.irfft(uh * keep, n=n, axis=-1)
    out = np.zeros_like(uh)
    if HAS_FLUX:
        out -= 1j * k * np.fft.rfft(flux([u], prm)[0], axis=-1)
    if HAS_SOURCE:
        out += np.fft.rfft(source([u], prm)[0], axis=-1)
    return out * keep


def _advance_to(u, t0, t1, dx, prm):
    n = u.shape[-1]
    uh = np.fft.rfft(u, axis=-1)
    k, keep = _wavenumbers(n, dx)
    lin = -diffusion_coefficient(prm) * k**2 if HAS_VISCOUS else np.zeros_like(k)
    t = t0
    while t1 - t > 1e-12 * max(1.0, abs(t1)):
        u = np.fft.irfft(uh, n=n, axis=-1)[None]
        dt = min(_stable_dt(u, dx, prm), t1 - t)
        if not np.isfinite(dt) or dt <= 0.0 or not np.all(np.isfinite(uh)):
            return np.full_like(u, np.nan)
        e, e2 = np.exp(lin * dt), np.exp(lin * dt / 2)
        a = _nonlinear(uh, k, keep, n, prm)
        b = _nonlinear(e2 * (uh + 0.5 * dt * a), k, keep, n, prm)
        c = _nonlinear(e2 * uh + 0.5 * dt * b, k, keep, n, prm)
        d = _nonlinear(e * uh + dt * e2 * c, k, keep, n, prm)
        uh = e * uh + dt / 6.0 * (e * a + 2.0 * e2 * (b + c) + d)
        t += dt
    return np.fft.irfft(uh, n=n, axis=-1)
