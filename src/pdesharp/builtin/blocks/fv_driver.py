# ---- block: explicit finite-volume time stepping between two output times ----


def _init_state(W, dx, prm):
    return np.array(to_conservative(W, prm))


def _primitive(U, prm):
    return to_primitive(U, prm)


def _advance_to(U, t0, t1, dx, prm):
    """Adaptive steps from t0 to t1; the last step lands exactly on t1."""
    t = t0
    while t1 - t > 1e-12 * max(1.0, abs(t1)):
        dt = min(_stable_dt(U, dx, prm), t1 - t)
        if not np.isfinite(dt) or dt <= 0.0 or not np.all(np.isfinite(U)):
            return np.full_like(U, np.nan)  # blown up: report NaN rather than loop forever
        if HAS_VISCOUS and VISCOUS == "subcycle":  # Strang: V(dt/2) H(dt) V(dt/2)
            U = _viscous_substeps(U, 0.5 * dt, dx, prm)
            U = _explicit_step(U, dt, dx, prm)
            U = _viscous_substeps(U, 0.5 * dt, dx, prm)
        else:
            U = _explicit_step(U, dt, dx, prm)
        t += dt
    return U
