# ---- block: finite-volume method of lines on a periodic grid (state: conserved U[var, B, N]) ----


def _shift(A, k):
    """Periodic shift along the last axis: _shift(A, k)[..., i] = A[..., i + k]."""
    k %= A.shape[-1]
    return np.concatenate((A[..., k:], A[..., :k]), axis=-1) if k else A


def _limited_slope(dl, dr):
    """Limited cell slope from the left and right differences (LIMITER picks the limiter)."""
    same = dl * dr > 0.0
    if LIMITER == "minmod":
        s = np.sign(dl) * np.minimum(np.abs(dl), np.abs(dr))
    elif LIMITER == "van_leer":
        s = 2.0 * dl * dr / np.where(same, dl + dr, 1.0)
    elif LIMITER == "mc":
        dc = 0.5 * (dl + dr)
        s = np.sign(dc) * np.minimum(np.abs(dc), 2.0 * np.minimum(np.abs(dl), np.abs(dr)))
    else:  # unlimited central slope (Fromm): second order, not TVD
        return 0.5 * (dl + dr)
    return np.where(same, s, 0.0)


def _weno5_face(vm2, vm1, v0, vp1, vp2):
    """Fifth-order WENO (Jiang-Shu weights) value at the right face of cell v0."""
    eps = 1e-12
    b0 = 13 / 12 * (vm2 - 2 * vm1 + v0) ** 2 + 0.25 * (vm2 - 4 * vm1 + 3 * v0) ** 2
    b1 = 13 / 12 * (vm1 - 2 * v0 + vp1) ** 2 + 0.25 * (vm1 - vp1) ** 2
    b2 = 13 / 12 * (v0 - 2 * vp1 + vp2) ** 2 + 0.25 * (3 * v0 - 4 * vp1 + vp2) ** 2
    a0, a1, a2 = 0.1 / (eps + b0) ** 2, 0.6 / (eps + b1) ** 2, 0.3 / (eps + b2) ** 2
    p0 = (2 * vm2 - 7 * vm1 + 11 * v0) / 6
    p1 = (-vm1 + 5 * v0 + 2 * vp1) / 6
    p2 = (2 * v0 + 5 * vp1 - vp2) / 6
    return (a0 * p0 + a1 * p1 + a2 * p2) / (a0 + a1 + a2)


def _reconstruct(W):
    """Left and right states at face i+1/2 (between cells i and i+1), W[var, B, N]."""
    sh = lambda k: _shift(W, k)  # sh(k)[i] = W[i + k]
    if RECONSTRUCTION == "first":
        return W, sh(1)
    if RECONSTRUCTION == "weno5":
        WL = _weno5_face(sh(-2), sh(-1), W, sh(1), sh(2))
        WR = _weno5_face(sh(3), sh(2), sh(1), W, sh(-1))
        return WL, WR
    s = _limited_slope(W - sh(-1), sh(1) - W)
    return W + 0.5 * s, _shift(W - 0.5 * s, 1)


def _numerical_flux(WL, WR, prm):
    """Approximate Riemann solver at every face (RIEMANN: rusanov or hll)."""
    UL, UR = np.array(to_conservative(WL, prm)), np.array(to_conservative(WR, prm))
    FL, FR = np.array(flux(WL, prm)), np.array(flux(WR, prm))
    lminL, lmaxL = wave_speeds(WL, prm)
    lminR, lmaxR = wave_speeds(WR, prm)
    if RIEMANN == "hll":
        SL = np.minimum(np.minimum(lminL, lminR), 0.0)
        SR = np.maximum(np.maximum(lmaxL, lmaxR), 0.0)
        width = np.where(SR - SL > 0.0, SR - SL, 1.0)
        return (SR * FL - SL * FR + SL * SR * (UR - UL)) / width
    a = np.maximum(np.maximum(np.abs(lminL), np.abs(lmaxL)), np.maximum(np.abs(lminR), np.abs(lmaxR)))
    if RIEMANN == "roe_lf" and UL.shape[0] == 1:
        # scalar: dissipation from the Murman-Roe speed |[f]/[u]| (the wave speed at the face)
        # instead of the largest neighbouring speed; falls back to Rusanov where [u] ~ 0
        jump = UR - UL
        small = np.abs(jump) < 1e-12
        a = np.where(small, a, np.abs((FR - FL) / np.where(small, 1.0, jump)))
    return 0.5 * (FL + FR) - 0.5 * a * (UR - UL)


def _rhs(U, dx, prm, with_source=True):
    """dU/dt of the semi-discrete scheme: -dF/dx + dV/dx (+ S)."""
    W = np.array(to_primitive(U, prm))
    dU = np.zeros_like(U)
    if HAS_FLUX:
        Fh = _numerical_flux(*_reconstruct(W), prm)
        dU -= (Fh - _shift(Fh, -1)) / dx
    if HAS_VISCOUS and not DIFFUSION_EXACT and VISCOUS == "explicit":
        Wr = _shift(W, 1)
        V = np.array(viscous_flux(0.5 * (W + Wr), (Wr - W) / dx, prm))
        dU += (V - _shift(V, -1)) / dx
    if HAS_SOURCE and with_source and not SOURCE_EXACT:
        dU += np.array(source(W, prm))
    return dU


def _explicit_step(U, dt, dx, prm):
    """One step of the explicit integrator named by INTEGRATOR."""
    L = lambda V: _rhs(V, dx, prm)
    if INTEGRATOR == "euler":
        return U + dt * L(U)
    if INTEGRATOR == "rk2mid":  # predictor-corrector: half step, then a full step from the midpoint
        return U + dt * L(U + 0.5 * dt * L(U))
    if INTEGRATOR == "ssprk2":
        U1 = U + dt * L(U)
        return 0.5 * (U + U1 + dt * L(U1))
    if INTEGRATOR == "rk4":
        k1 = L(U)
        k2 = L(U + 0.5 * dt * k1)
        k3 = L(U + 0.5 * dt * k2)
        k4 = L(U + dt * k3)
        return U + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    U1 = U + dt * L(U)  # SSP-RK3 (Shu-Osher)
    U2 = 0.75 * U + 0.25 * (U1 + dt * L(U1))
    return U / 3.0 + 2.0 / 3.0 * (U2 + dt * L(U2))


def _viscous_rhs(U, dx, prm):
    """dU/dt of the viscous flux divergence alone (central face gradients)."""
    W = np.array(to_primitive(U, prm))
    Wr = _shift(W, 1)
    V = np.array(viscous_flux(0.5 * (W + Wr), (Wr - W) / dx, prm))
    return (V - _shift(V, -1)) / dx


def _viscous_substeps(U, tau, dx, prm):
    """Advance the viscous part alone over tau with explicit SSP-RK2 sub-steps (sub-cycling):
    each sub-step costs a fraction of a full step, so a stiff viscosity is cheap."""
    W = np.array(to_primitive(U, prm))
    d = max_diffusivity(W, prm)
    n = max(1, int(np.ceil(tau / (CFL_DIFF * dx * dx / (2.0 * d))))) if d > 0 else 1
    h = tau / n
    for _ in range(n):
        U1 = U + h * _viscous_rhs(U, dx, prm)
        U = 0.5 * (U + U1 + h * _viscous_rhs(U1, dx, prm))
    return U
