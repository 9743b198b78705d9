"""The Fourier pseudo-spectral family's rendered code blocks (:mod:`.spectral`): the internal
grid and its transfer to and from the data grid, the conservative and primitive right-hand sides,
the exponential integrators. Text only: the family decides which blocks a solver gets."""

# ---- the blocks: internal grid, the two forms of the right-hand side, the integrator ----
GRID_TRANSFER = '''
# ---- block: the internal grid and Fourier transfer to and from the data grid ----


def _resize(vh, old, new):
    """rfftn coefficients of a field on grid ``old`` moved to grid ``new``: zero padding (exact
    trigonometric interpolation) or truncation; modes |m| < min(n_old, n_new)/2 are kept."""
    out = np.zeros(vh.shape[:-len(old)] + tuple(new[:-1]) + (new[-1] // 2 + 1,), dtype=complex)
    src, dst = [], []
    for a, (no, nn) in enumerate(zip(old, new)):
        last = a == len(old) - 1
        m = np.arange(no // 2 + 1) if last else np.fft.fftfreq(no, 1.0 / no).astype(int)
        keep = np.nonzero(2 * np.abs(m) < min(no, nn))[0]
        src.append(keep)
        dst.append(m[keep] if last else m[keep] % nn)
    out[(Ellipsis,) + np.ix_(*dst)] = vh[(Ellipsis,) + np.ix_(*src)] * (np.prod(new) / np.prod(old))
    return out


def _init_state(W0, prm):
    data = W0[0].shape[1:]
    inner = tuple(max(int(round(REFINE * n)), 4) for n in data)
    grid = _grid(inner)
    grid["data_shape"] = data
    # the Fourier interpolation keeps the data's first point as the origin: the internal points
    # are x0 + j h with x0 the first data cell centre (not the internal grid's own cell centres)
    # (on a node grid the internal grid's own points already start at the first node)
    grid["X"] = tuple(x + (0.0 if NODES else 0.5 * (grid["h"][a] * (inner[a] / data[a])
                                                    - grid["h"][a]))
                      for a, x in enumerate(grid["X"]))
    grid["k"] = _wavenumbers(grid["shape"])
    grid["mask"] = _dealias_mask(grid["shape"])
    grid["axes"] = tuple(range(2, 2 + len(grid["shape"])))  # space axes of [var, B, ...]
    A, D, c, high = linear_parts(prm)
    grid["lin"] = (np.array(A), np.array(D), np.array(c))
    L = []
    for i in range(len(W0)):
        Li = c[i] + 0.0 * grid["mask"]
        for a, k in enumerate(grid["k"]):
            Li = Li - A[a][i] * 1j * k - D[a][i] * k**2
        for j, orders, coef in high:
            if j == i:
                s = coef
                for k, o in zip(grid["k"], orders):
                    s = s * (1j * k) ** o
                Li = Li + s
        L.append(Li)
    grid["L"] = np.array(L)[:, None]  # [var, 1, *kshape]
    grid["cache"] = {}
    vh = np.fft.rfftn(np.array(W0), axes=grid["axes"])
    # a coarser internal grid keeps the data's modes |m| < n_inner / 2 (Fourier restriction)
    vh = _resize(vh, data, inner) if inner != data else vh
    if PRIMITIVE_FORM:
        # all transport is in the explicit (masked) remainder: modes outside the 2/3 mask would
        # keep their initial values, not move; density and pressure (no viscosity) never lose
        # them (CNS on 256 points: 8.6e-4 from the converged solution kept, 2.3e-4 dropped)
        vh = vh * grid["mask"]
    return vh, grid


def _forward(f, grid):
    """rfftn over the space axes; in 1D rfft, which skips rfftn's argument handling (half the
    cost of a call on the small arrays a 1D step transforms eight times)."""
    if len(grid["shape"]) == 1:
        return np.fft.rfft(f, axis=-1)
    return np.fft.rfftn(f, axes=grid["axes"])


def _inverse(vh, grid):
    if len(grid["shape"]) == 1:
        return np.fft.irfft(vh, n=grid["shape"][0], axis=-1)
    return np.fft.irfftn(vh, s=grid["shape"], axes=grid["axes"])


def _physical(vh, grid):
    return _inverse(vh * grid["mask"], grid)


def _output(vh, grid, prm):
    """The solution at the data points. A finer internal grid is sampled at them (they are
    internal points when the ratio is an integer), or its series evaluated there: truncating it
    to the data's modes would return a different field (the converged solution's content above
    the data's Nyquist mode is not an error). A coarser one is zero-padded (its series evaluated
    at the data points)."""
    data, inner = grid["data_shape"], grid["shape"]
    if inner == data:
        return list(np.fft.irfftn(vh, s=data, axes=grid["axes"]))
    if any(i < d for i, d in zip(inner, data)):
        return list(np.fft.irfftn(_resize(vh, inner, data), s=data, axes=grid["axes"]))
    W = np.fft.irfftn(vh, s=inner, axes=grid["axes"])
    if all(i % d == 0 for i, d in zip(inner, data)):
        return list(W[(slice(None), slice(None)) + tuple(slice(None, None, i // d)
                                                          for i, d in zip(inner, data))])
    for a, (ni, nd) in enumerate(zip(inner, data)):  # trigonometric interpolation at the points
        m = np.fft.fftfreq(ni, 1.0 / ni)  # (an even grid's Nyquist term: its real part, cos)
        E = np.exp(2j * np.pi * np.outer(np.arange(nd) * ni / nd, m) / ni) / ni
        F = np.ascontiguousarray(np.moveaxis(np.fft.fft(W, axis=2 + a), 2 + a, -1))
        # one 2D product (a stacked one loops in NumPy: 15x slower on [1, 8, 96, 96])
        V = (F.reshape(-1, ni) @ E.T).real.reshape(F.shape[:-1] + (nd,))
        W = np.moveaxis(V, -1, 2 + a)
    return list(W)


def _wave_rate(W, t, grid, prm):
    """sum_a max|lambda_a| / h_a: the advective rate the explicit part must resolve."""
    rate = 0.0
    for a in range(DIM):
        lmin, lmax = wave_speeds(W, grid["X"], t, prm, a)
        rate += max(float(np.max(np.abs(lmin))), float(np.max(np.abs(lmax)))) / grid["h"][a]
    return rate


'''

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
            out = out - 1j * k * _forward(F, grid)
    if HAS_SOURCE:
        S = np.array(source(W, grid["X"], t, prm))
        if np.any(c):
            S = S - c.reshape(shape) * W
        out = out + _forward(S, grid)
    return out * grid["mask"]


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
    vm = vh * grid["mask"]
    s = grid["shape"]
    spectra = np.stack([vm] + [1j * k * vm for k in grid["k"]])
    if len(s) == 1:
        out = np.fft.irfft(spectra, n=s[0], axis=-1)
    else:
        out = np.fft.irfftn(spectra, s=s, axes=tuple(range(spectra.ndim - len(s), spectra.ndim)))
    return out[0], out[1:]


def _nonlinear(vh, t, grid, prm):
    """Fourier transform of dt w minus its exactly integrated linear part L w: the remainder of
    the primitive-variable form, derivatives taken spectrally."""
    W, WX = _fields(vh, grid)
    N = np.array(remainder(W, WX, grid["X"], t, prm))
    if len(grid["shape"]) == 1:
        return np.fft.rfft(N, axis=-1) * grid["mask"]
    return np.fft.rfftn(N, axes=grid["axes"]) * grid["mask"]


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
