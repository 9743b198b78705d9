# ---- block: Strang splitting: exact linear diffusion (Fourier) / exact source / explicit flux ----


def _init_state(W, dx, prm):
    return np.array(to_conservative(W, prm))


def _primitive(U, prm):
    return to_primitive(U, prm)


def _diffuse(U, tau, dx, prm):
    """Exact solution of u_t = D u_xx over tau on the periodic grid (SYMBOL: spectral or fd2)."""
    n = U.shape[-1]
    k = 2.0 * np.pi * np.fft.rfftfreq(n, d=dx)
    k2 = k**2 if SYMBOL == "spectral" else (2.0 - 2.0 * np.cos(k * dx)) / dx**2
    damp = np.exp(-diffusion_coefficient(prm) * k2 * tau)
    return np.fft.irfft(np.fft.rfft(U, axis=-1) * damp, n=n, axis=-1)


def _react(U, tau, prm):
    if not HAS_SOURCE:
        return U
    if SOURCE_EXACT:
        return np.array([source_exact(U[0], tau, prm)])
    for _ in range(4):  # four RK4 sub-steps of the local source ODE
        h = tau / 4
        k1 = np.array(source(U, prm))
        k2 = np.array(source(U + 0.5 * h * k1, prm))
        k3 = np.array(source(U + 0.5 * h * k2, prm))
        k4 = np.array(source(U + h * k3, prm))
        U = U + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return U


def _advance_to(U, t0, t1, dx, prm):
    """Strang steps D(dt/2) R(dt) D(dt/2), R = S(dt/2) H(dt) S(dt/2); the last lands on t1."""
    t = t0
    while t1 - t > 1e-12 * max(1.0, abs(t1)):
        dt = min(_stable_dt(U, dx, prm), t1 - t, SPLIT_DT)
        if not np.isfinite(dt) or dt <= 0.0 or not np.all(np.isfinite(U)):
            return np.full_like(U, np.nan)
        U = _diffuse(U, 0.5 * dt, dx, prm)
        if HAS_FLUX:
            U = _react(U, 0.5 * dt, prm)
            U = _explicit_step(U, dt, dx, prm)
            U = _react(U, 0.5 * dt, prm)
        else:
            U = _react(U, dt, prm)
        U = _diffuse(U, 0.5 * dt, dx, prm)
        t += dt
    return U
