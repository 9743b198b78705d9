# ---- block: explicit time-step bound from the analysis (CFL, diffusion and source limits) ----


def _stable_dt(U, dx, prm):
    """The largest step the explicit part allows: CFL * min(dx/|lambda|, dx^2/(2D), 1/|S'|)."""
    W = np.array(to_primitive(U, prm))
    dt = np.inf
    if HAS_FLUX:
        lmin, lmax = wave_speeds(W, prm)
        a = max(float(np.max(np.abs(lmin))), float(np.max(np.abs(lmax))))
        dt = CFL * dx / a if a > 0 else np.inf
    if HAS_VISCOUS and not DIFFUSION_EXACT and VISCOUS == "explicit":
        d = max_diffusivity(W, prm)
        if d > 0:
            dt = min(dt, CFL_DIFF * dx * dx / (2.0 * d))
    if HAS_SOURCE and not SOURCE_EXACT:
        eps = 1e-6 * (1.0 + np.abs(W))
        rate = np.abs((np.array(source(W + eps, prm)) - np.array(source(W, prm))) / eps)
        r = float(np.max(rate))
        if r > 0:
            dt = min(dt, CFL / r)
    return dt
