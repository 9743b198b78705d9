"""The Fourier pseudo-spectral family's rendered code blocks (:mod:`.spectral`): the conservative
and primitive right-hand sides and the exponential integrators (the internal grid and the
transforms: :mod:`.spectral_transforms`). Text only: the family decides which blocks a solver
gets."""

# ---- the blocks: the two forms of the right-hand side, the integrator ----
CONSERVATIVE_RHS = '''
# ---- block: right-hand side, the unknowns being the conserved quantities ----


def _nonlinear(vh, t, grid, prm):
    """Fourier transform of dt w minus its exactly integrated linear part L w (no zero-filled
    accumulator, no subtraction of a linear part that is zero: a stage is a handful of
    operations on small arrays, where each call's overhead counts)."""
    W = _physical(vh, grid)
    A, D, c = grid["lin"]
    shape = (-1,) + (1,) * (W.ndim - 1)
    out = 0.0
    if HAS_FLUX:
        for a, k in enumerate(grid["k"]):
            F = np.array(flux(W, grid["X"], t, prm, a))
            if np.any(A[a]):
                F = F - A[a].reshape(shape) * W
            out = out - 1j * k[..., :_cut(grid)[0]] * _forward_cut(F, grid)
    if HAS_SOURCE:
        S = np.array(source(W, grid["X"], t, prm))
        if np.any(c):
            S = S - c.reshape(shape) * W
        out = out + _forward_cut(S, grid)
    return _spectrum(out, grid)


def _stable_dt(vh, t, grid, prm):
    W = _physical(vh, grid)
    rate = _wave_rate(W, t, grid, prm) if HAS_FLUX else 0.0
    if HAS_SOURCE:
        eps = 1e-6 * (1.0 + np.abs(W))
        c = grid["lin"][2].reshape((-1,) + (1,) * (W.ndim - 1))
        f = lambda V: np.array(source(V, grid["X"], t, prm)) - c * V  # noqa: E731
        rate = max(rate, float(np.max(np.abs((f(W + eps) - f(W)) / eps))))
    return CFL / rate if rate > 0 else np.inf


'''

PRIMITIVE_RHS = '''
# ---- block: right-hand side in primitive variables (spectral derivatives) ----


def _fields(vh, grid):
    """w and its spectral derivatives along each axis, on the dealiased field: one inverse
    transform of the stacked spectra (per-call overhead dominates at these sizes)."""
    c = _cut(grid)[0]
    vm = vh[..., :c]
    out = _physical(np.stack([vm] + [1j * k[..., :c] * vm for k in grid["k"]]), grid)
    return out[0], out[1:]


def _nonlinear(vh, t, grid, prm):
    """Fourier transform of dt w minus its exactly integrated linear part L w: the remainder of
    the primitive-variable form, derivatives taken spectrally."""
    W, WX = _fields(vh, grid)
    N = np.array(remainder(W, WX, grid["X"], t, prm))
    return _spectrum(_forward_cut(N, grid), grid)


def _stable_dt(vh, t, grid, prm):
    W, WX = _fields(vh, grid)
    rate = _wave_rate(W, t, grid, prm) if HAS_FLUX else 0.0
    if HAS_SOURCE:  # the remainder's local rate at frozen gradients (the source's stiffness)
        eps = 1e-6 * (1.0 + np.abs(W))
        f = lambda V: np.array(remainder(V, WX, grid["X"], t, prm))  # noqa: E731
        rate = max(rate, float(np.max(np.abs((f(W + eps) - f(W)) / eps))))
    return CFL / rate if rate > 0 else np.inf


'''

INTEGRATOR_BLOCK = '''
# ---- block: exponential integrator, equal steps between output times ----


# Coefficient sets by (operator, step), kept across calls: a later call of the solver (the next
# batch) reuses them, as a compiled library reuses its stepper. At most _PLAN_SETS sets are kept.
_PLANS = {}
_PLAN_SETS = 16


def _coefficients(grid, h):
    """exp(hL), exp(hL/2) and the ETDRK4 weights (contour integral over a circle of radius 1
    around each hL, which avoids the cancellation of their closed forms for small |hL|). The
    contour sums run over the distinct values of hL only: an isotropic operator repeats each
    value many times over a 2D or 3D grid (|k|^2 is shared by every mode on a circle)."""
    key = round(h, 14)
    if key in grid["cache"]:
        return grid["cache"][key]
    L = grid["L"]
    plan = (hash(L.tobytes()), L.shape, key, INTEGRATOR)
    if plan in _PLANS:
        grid["cache"][key] = _PLANS[plan]
        return _PLANS[plan]
    z = L * h
    e, e2 = np.exp(z), np.exp(z / 2)
    if INTEGRATOR != "etdrk4":
        out = (e, e2)
    else:
        zu, back = np.unique(z.ravel(), return_inverse=True)
        r = np.exp(2j * np.pi * (np.arange(32) + 0.5) / 32)
        lr = zu[:, None] + r
        el = np.exp(lr)
        mean = lambda f: (h * np.mean(f, axis=-1))[back].reshape(z.shape)  # noqa: E731
        q = mean((np.exp(lr / 2) - 1.0) / lr)
        f1 = mean((-4.0 - lr + el * (4.0 - 3.0 * lr + lr**2)) / lr**3)
        f2 = 2.0 * mean((2.0 + lr + el * (lr - 2.0)) / lr**3)  # x2: the b stage's weight
        f3 = mean((-4.0 - 3.0 * lr - lr**2 + el * (4.0 - lr)) / lr**3)
        out = (e, e2, q, f1, f2, f3)
    if len(_PLANS) >= _PLAN_SETS:
        _PLANS.clear()
    _PLANS[plan] = grid["cache"][key] = out
    return out


def _step(vh, t, h, grid, prm):
    N = lambda v, s: _nonlinear(v, t + s * h, grid, prm)  # noqa: E731
    if INTEGRATOR == "etdrk4":
        e, e2, q, f1, f2, f3 = _coefficients(grid, h)
        half = e2 * vh  # shared by the first two stages
        nv = N(vh, 0.0)
        a = half + q * nv
        na = N(a, 0.5)
        nb = N(half + q * na, 0.5)
        nc = N(e2 * a + q * (2.0 * nb - nv), 1.0)
        return e * vh + f1 * nv + f2 * (na + nb) + f3 * nc
    e, e2 = _coefficients(grid, h)
    a = N(vh, 0.0)
    b = N(e2 * (vh + 0.5 * h * a), 0.5)
    c = N(e2 * vh + 0.5 * h * b, 0.5)
    d = N(e * vh + h * e2 * c, 1.0)
    return e * vh + h / 6.0 * (e * a + 2.0 * e2 * (b + c) + d)


def _steps(span, dt, exact):
    """Steps for an interval: ceil(span / dt) when ``exact`` (coefficient sets are cheap), else
    the smallest n >= span / dt with at most three significant binary digits (1, ..., 8, 10,
    12, 14, 16, 20, 24, 28, 32, 40, ...): at most 1.25x the steps needed, and at most four step
    sizes per octave of wave speed, so few coefficient sets (cached by step size)."""
    n = max(int(np.ceil(span / dt)), 1)
    if exact:
        return n
    shift = max(n.bit_length() - 3, 0)
    return -(-n >> shift) << shift


def _advance_to(vh, t0, t1, grid, prm):
    """Equal steps (the ladder of _steps, within the stable step) from t0 to t1."""
    span = t1 - t0
    dt = _stable_dt(vh, t0, grid, prm)
    if not np.all(np.isfinite(vh)):
        return np.full_like(vh, np.nan)
    # a coefficient set of fewer than 2^16 modes costs a few steps: any count (1D grids)
    n = 1 if not np.isfinite(dt) or dt >= span else _steps(span, dt, grid["L"].size < 2**16)
    if n > 2**22:
        return np.full_like(vh, np.nan)  # the step collapsed: the solution is blowing up
    h = span / n
    for m in range(n):
        vh = _step(vh, t0 + m * h, h, grid, prm)
    return vh
'''
