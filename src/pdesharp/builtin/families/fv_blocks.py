"""The finite-volume family's rendered code (:mod:`.fv`): ghost cells at walls, reconstruction,
approximate Riemann solvers, the explicit Runge-Kutta steps and the stable step (``FV_BLOCK``,
shared with the splitting family), and the driver between two output times with the internal
grid's conservative refinement (``FV_DRIVER``). Text only: :mod:`.fv` owns the design axes and
when each block is emitted."""


FV_BLOCK = '''
# ---- block: finite-volume method of lines (state: conserved U[var, B, N1(, N2)]) ----
NG = 3  # ghost cells per side


def _pad(W, axis, t, grid, prm):
    """W [var, B, ...] with NG ghost cells on both ends of space axis ``axis``: a periodic wrap,
    or values that satisfy a*w + b*dw/dx = g at the wall (boundary_conditions; in 2D the data
    may vary along the side)."""
    ax = 2 + axis
    n = W.shape[ax]
    if PERIODIC_AXES[axis]:
        return np.take(W, np.arange(-NG, n + NG) % n, axis=ax)
    h = grid["h"][axis]
    W = np.moveaxis(W, ax, -1)
    Wp = np.concatenate([np.repeat(W[..., :1], NG, -1), W, np.repeat(W[..., -1:], NG, -1)], -1)
    side = grid["centres"][1 - axis] if DIM == 2 else None
    for k, sides in enumerate(boundary_conditions(t, prm, axis, side)):
        for s, cond in enumerate(sides):
            if cond is None:  # outflow: constant extrapolation
                continue
            a, b, g = cond
            if s == 0:
                w0 = W[k, ..., 0]
                wg = (g - w0 * (0.5 * a + b / h)) / (0.5 * a - b / h)
                slope = (w0 - wg) / h
                for m in range(1, NG + 1):  # reflection through the wall with the wall slope
                    Wp[k, ..., NG - m] = W[k, ..., min(m - 1, n - 1)] - (2 * m - 1) * h * slope
            else:
                w0 = W[k, ..., -1]
                wg = (g - w0 * (0.5 * a - b / h)) / (0.5 * a + b / h)
                slope = (wg - w0) / h
                for m in range(1, NG + 1):
                    Wp[k, ..., NG + n - 1 + m] = W[k, ..., max(n - m, 0)] + (2 * m - 1) * h * slope
    return np.moveaxis(Wp, -1, ax)


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


def _reconstruct(Wp, n):
    """Left and right states at the n + 1 faces of n cells; Wp has NG ghosts, faces' axis last."""
    sh = lambda k: Wp[..., NG - 1 + k: NG + n + k]  # noqa: E731  sh(k)[f] = cell left of f, + k
    if RECONSTRUCTION == "first":
        return sh(0), sh(1)
    if RECONSTRUCTION == "weno5":
        return (_weno5_face(sh(-2), sh(-1), sh(0), sh(1), sh(2)),
                _weno5_face(sh(3), sh(2), sh(1), sh(0), sh(-1)))
    sl = _limited_slope(sh(0) - sh(-1), sh(1) - sh(0))
    sr = _limited_slope(sh(1) - sh(0), sh(2) - sh(1))
    return sh(0) + 0.5 * sl, sh(1) - 0.5 * sr


def _numerical_flux(WL, WR, X, t, prm, axis):
    """Approximate Riemann solver at every face (RIEMANN: rusanov or hll)."""
    UL, UR = np.array(to_conservative(WL, prm)), np.array(to_conservative(WR, prm))
    FL, FR = np.array(flux(WL, X, t, prm, axis)), np.array(flux(WR, X, t, prm, axis))
    lminL, lmaxL = wave_speeds(WL, X, t, prm, axis)
    lminR, lmaxR = wave_speeds(WR, X, t, prm, axis)
    if RIEMANN == "hll":
        SL = np.minimum(np.minimum(lminL, lminR), 0.0)
        SR = np.maximum(np.maximum(lmaxL, lmaxR), 0.0)
        width = np.where(SR - SL > 0.0, SR - SL, 1.0)
        return (SR * FL - SL * FR + SL * SR * (UR - UL)) / width
    a = np.maximum(np.maximum(np.abs(lminL), np.abs(lmaxL)), np.maximum(np.abs(lminR), np.abs(lmaxR)))
    return 0.5 * (FL + FR) - 0.5 * a * (UR - UL)


def _viscous_faces(Wp, n, h, X, t, prm, axis):
    """Viscous flux at the n + 1 faces: central face values and gradients."""
    left, right = Wp[..., NG - 1: NG + n], Wp[..., NG: NG + n + 1]
    return np.array(viscous_flux(0.5 * (left + right), (right - left) / h, X, t, prm, axis))


def _rhs(U, t, grid, prm, viscous=True, with_source=True):
    """dU/dt of the semi-discrete scheme: -div F (+ div V) (+ S)."""
    W = np.array(to_primitive(U, prm))
    dU = np.zeros_like(U)
    for a in range(DIM):
        if not (HAS_FLUX or (HAS_VISCOUS and viscous)):
            break
        ax, n, h = 2 + a, W.shape[2 + a], grid["h"][a]
        Wp = np.moveaxis(_pad(W, a, t, grid, prm), ax, -1)
        div = 0.0
        if HAS_FLUX:
            F = _numerical_flux(*_reconstruct(Wp, n), grid["faces"][a], t, prm, a)
            div = div - (F[..., 1:] - F[..., :-1]) / h
        if HAS_VISCOUS and viscous:
            V = _viscous_faces(Wp, n, h, grid["faces"][a], t, prm, a)
            div = div + (V[..., 1:] - V[..., :-1]) / h
        dU += np.moveaxis(div, -1, ax)
    if HAS_SOURCE and with_source and not SOURCE_SPLIT:
        dU += np.array(source(W, grid["X"], t, prm))
    return dU


def _explicit_step(U, t, dt, grid, prm, viscous=True):
    """One step of the explicit integrator named by INTEGRATOR."""
    L = lambda V, s: _rhs(V, t + s * dt, grid, prm, viscous)  # noqa: E731
    if INTEGRATOR == "euler":
        return U + dt * L(U, 0.0)
    if INTEGRATOR == "rk2mid":  # predictor-corrector: half step, then a full step from the midpoint
        return U + dt * L(U + 0.5 * dt * L(U, 0.0), 0.5)
    if INTEGRATOR == "ssprk2":
        U1 = U + dt * L(U, 0.0)
        return 0.5 * (U + U1 + dt * L(U1, 1.0))
    if INTEGRATOR == "rk4":
        k1 = L(U, 0.0)
        k2 = L(U + 0.5 * dt * k1, 0.5)
        k3 = L(U + 0.5 * dt * k2, 0.5)
        k4 = L(U + dt * k3, 1.0)
        return U + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    U1 = U + dt * L(U, 0.0)  # SSP-RK3 (Shu-Osher)
    U2 = 0.75 * U + 0.25 * (U1 + dt * L(U1, 1.0))
    return U / 3.0 + 2.0 / 3.0 * (U2 + dt * L(U2, 0.5))


def _source_rate(W, X, t, prm):
    """max |dS/dW| by a one-sided difference (the source's stiffness)."""
    eps = 1e-6 * (1.0 + np.abs(W))
    rate = np.abs((np.array(source(W + eps, X, t, prm)) - np.array(source(W, X, t, prm))) / eps)
    return float(np.max(rate))


def _stable_dt(U, t, grid, prm, explicit_viscous=True):
    """The largest step the explicit parts allow (the analysis' bounds times CFL numbers)."""
    W = np.array(to_primitive(U, prm))
    dt = DT_MAX
    if HAS_FLUX:
        rate = 0.0
        for a in range(DIM):
            lmin, lmax = wave_speeds(W, grid["X"], t, prm, a)
            rate += max(float(np.max(np.abs(lmin))), float(np.max(np.abs(lmax)))) / grid["h"][a]
        if rate > 0:
            dt = min(dt, CFL / rate)
    if HAS_VISCOUS and explicit_viscous:
        rate = sum(2.0 * float(np.max(diffusivity(W, grid["X"], t, prm, a))) / grid["h"][a] ** 2
                   for a in range(DIM))
        if rate > 0:
            dt = min(dt, CFL_DIFF / rate)
    if HAS_SOURCE and not SOURCE_EXACT:
        r = _source_rate(W, grid["X"], t, prm)
        if r > 0:
            dt = min(dt, CFL / r)
    return dt
'''

NO_IMPLICIT = '''

def _viscous_implicit(*args):  # explicit viscous terms only for this problem: never called
    raise NotImplementedError
'''

FV_DRIVER = '''
# ---- block: finite-volume time stepping between two output times ----


def _prolong_conservative(u, r):
    """r sub-cells per cell [B, n] -> [B, n r]: the cell value plus a minmod-limited slope (zero
    in the end cells), so every cell's sub-cells average to its value and no new extremum
    appears at a jump."""
    dl = np.diff(u, axis=-1, prepend=u[..., :1])
    dr = np.diff(u, axis=-1, append=u[..., -1:])
    s = np.where(dl * dr > 0, np.sign(dl) * np.minimum(np.abs(dl), np.abs(dr)), 0.0)
    xi = (np.arange(r) + 0.5) / r - 0.5
    return (u[..., None] + s[..., None] * xi).reshape(u.shape[:-1] + (-1,))


def _init_state(W0, prm):
    r = int(REFINE) if len(W0[0].shape) == 2 else 1
    if r > 1 and PERIODIC and NODES:
        # point values at the nodes (not cell averages): band-limited refinement, and the fine
        # solution sampled back at the nodes at output; averaging fine cells (or a linear
        # prolongation) would add an O(h^2) error that no refinement removes
        fine = [_prolong_fourier(np.asarray(w, dtype=float), r) for w in W0]
        return np.array(to_conservative(fine, prm)), _grid(fine[0].shape[1:], r)
    if r > 1 and not PERIODIC:
        # between walls the conserved quantities are refined conservatively, and averaged back
        # at output: the output cells hold the fine solution's cell averages (a shock inside a
        # cell counts with its position, not the cell's point value)
        U = np.array([_prolong_conservative(np.asarray(u, dtype=float), r)
                      for u in to_conservative(W0, prm)])
        return U, _grid(U.shape[2:], r)
    fine = [_prolong(w, r) for w in W0]
    return np.array(to_conservative(fine, prm)), _grid(fine[0].shape[1:], r)


def _output(U, grid, prm):
    r = grid["refine"]
    if r > 1 and PERIODIC and NODES:
        return [np.asarray(w)[..., ::r] for w in to_primitive(U, prm)]
    if r > 1 and not PERIODIC:
        return list(to_primitive(np.array([_restrict(np.asarray(u), r) for u in U]), prm))
    return [_restrict(np.asarray(w), r) for w in to_primitive(U, prm)]


def _advance_to(U, t0, t1, grid, prm):
    """Adaptive steps from t0 to t1; the last step lands exactly on t1. With VISCOUS = trbdf2
    the viscous part V is split off and solved implicitly, the order of V(dt) and the explicit
    part H(dt) alternating from step to step (second order over each pair, like Strang's
    V(dt/2) H(dt) V(dt/2), at half its implicit work)."""
    if COMPILED and KERNEL == "auto" and "kernel" not in grid:
        grid["kernel"] = _auto_kernel(U, t0, grid, prm)  # once, at the first call
    if COMPILED and KERNEL_USED == "numba":
        out = _advance_compiled(U, t0, t1, grid, prm)
        if out is not None:
            return out
    implicit = HAS_VISCOUS and DIM == 1 and VISCOUS != "explicit"
    explicit = HAS_FLUX or HAS_SOURCE
    t = t0
    while t1 - t > 1e-12 * max(1.0, abs(t1)):
        dt = min(_stable_dt(U, t, grid, prm, explicit_viscous=not implicit), t1 - t)
        if not np.isfinite(dt):
            dt = t1 - t
        if dt <= 0.0 or not np.all(np.isfinite(U)):
            return np.full_like(U, np.nan)  # blown up: report NaN rather than loop forever
        if implicit:
            grid["flip"] = not grid.get("flip", False)
            if grid["flip"]:
                U = _viscous_implicit(U, t, dt, grid, prm)
                U = _explicit_step(U, t, dt, grid, prm, viscous=False) if explicit else U
            else:
                U = _explicit_step(U, t, dt, grid, prm, viscous=False) if explicit else U
                U = _viscous_implicit(U, t, dt, grid, prm)
        else:
            U = _explicit_step(U, t, dt, grid, prm)
        t += dt
    return U
'''
