"""The Fourier pseudo-spectral family's rendered code blocks (:mod:`.spectral`): the conservative
and primitive right-hand sides and the exponential integrators (the internal grid and the
transforms: :mod:`.spectral_transforms`). Text only: the family decides which blocks a solver
gets."""

# ---- the blocks: the two forms of the right-hand side, the integrator ----
CONSERVATIVE_RHS = '''
# ---- block: right-hand side, the unknowns being the conserved quantities ----


def _nonlinear(vh, t, grid, prm):
    """Fourier transform of dt w minus its exactly integrated linear part L w, full size."""
    return _spectrum(_nonlinear_cut(_block(vh, grid), t, grid, prm), grid)


def _nonlinear_cut(g, t, grid, prm):
    """The same on the kept block: from the state's (g), N's. No zero-filled accumulator, no
    linear part subtracted where it is zero, what does not change between stages looked up
    once: a stage is a handful of operations on small arrays, where each pass and each call
    count (1D Kuramoto-Sivashinsky, 320 points: a stage's own Python was a fifth of it)."""
    W = _physical_cut(g, grid)
    out = None
    if HAS_FLUX:
        X = grid["X"]
        for a, ik, lin in grid.get("flux_terms") or _flux_terms(grid, W.ndim):
            F = _stacked(flux(W, X, t, prm, a))
            if lin is not None:
                F = F - lin * W
            term = ik * _forward_cut(F, grid)
            out = term if out is None else out + term
    if HAS_SOURCE:
        S = _forward_cut(_stacked(explicit_source(W, grid["X"], t, prm)), grid)
        out = S if out is None else out + S
    return np.zeros_like(g) if out is None else out


def _stage(grid, prm):
    """The integrator's N as a function of (g, t) alone, built once per grid, and ``fold``:
    -i k where N leaves it out. A 1D flux with nothing else (no source, no linear part in it)
    under ETDRK4: the inverse transform (into a buffer the stages share), the flux and the
    forward transform with nothing between, and -i k left to the ETDRK4 weights, which
    multiply every N already (:func:`_coefficients`): 4 products a step fewer (1D
    Kuramoto-Sivashinsky, 320 points, batch 4: 0.86-0.90x the time of a solve, the same
    numbers to rounding). Otherwise N is :func:`_nonlinear_cut`. N keeps the ``prm`` it
    was built with: a grid is made per solver call, and a call has one."""
    c, _, fft, _, _ = _cut(grid)
    fold = _folded(grid)
    if fold is not None:
        n, X = grid["shape"][-1], grid["X"]
        if isinstance(fft, _Ufuncs):
            buf = {}

            def N(g, t):
                W = buf.get(g.shape)
                if W is None:
                    W = buf[g.shape] = np.empty(g.shape[:-1] + (n,))
                return fft.rfft(_stacked(flux(fft.irfft(g, n, out=W), X, t, prm, 0)))[..., :c]
        else:
            def N(g, t):
                return _forward_cut(_stacked(flux(_physical_cut(g, grid), X, t, prm, 0)), grid)
    else:
        def N(g, t):
            return _nonlinear_cut(g, t, grid, prm)
    grid["stage"] = (N, fold)
    return grid["stage"]


def _folded(grid):
    """-i k where the stage leaves it to the ETDRK4 weights (a 1D flux alone), else None."""
    terms = grid.get("flux_terms") or _flux_terms(grid, 2 + DIM)
    if DIM == 1 and HAS_FLUX and not HAS_SOURCE and INTEGRATOR == "etdrk4" \
            and terms[0][2] is None:
        return terms[0][1]
    return None


def _flux_terms(grid, ndim):
    """Per axis, once per grid: (axis, -i k on the kept block, the flux's linear part A[axis]
    shaped for [var, ...] arrays, None where it is zero)."""
    A = grid["lin"][0]
    shape = (-1,) + (1,) * (ndim - 1)
    grid["flux_terms"] = [(a, -1j * k, A[a].reshape(shape) if np.any(A[a]) else None)
                          for a, k in enumerate(grid["kc"])]
    return grid["flux_terms"]


def _stacked(fields):
    """[var, ...] from a list of arrays (a view of the only one, not a copy)."""
    return fields[0][None] if len(fields) == 1 else np.array(fields)


def _stable_dt(vh, t, grid, prm):
    W = _physical(vh, grid)
    rate = _wave_rate(W, t, grid, prm) if HAS_FLUX else 0.0
    if HAS_SOURCE:
        eps = 1e-6 * (1.0 + np.abs(W))
        f = lambda V: np.array(explicit_source(V, grid["X"], t, prm))  # noqa: E731
        rate = max(rate, float(np.max(np.abs((f(W + eps) - f(W)) / eps))))
    return CFL / rate if rate > 0 else np.inf


'''

PRIMITIVE_RHS = '''
# ---- block: right-hand side in primitive variables (spectral derivatives) ----


def _fields(vh, grid):
    """w and its spectral derivatives along each axis, on the dealiased field: one inverse
    transform of the stacked spectra (per-call overhead dominates at these sizes)."""
    return _fields_cut(_block(vh, grid), grid)


def _fields_cut(g, grid):
    """The same from the kept block g."""
    out = _physical_cut(np.stack([g] + [1j * k * g for k in grid["kc"]]), grid)
    return out[0], out[1:]


def _nonlinear(vh, t, grid, prm):
    """Fourier transform of dt w minus its exactly integrated linear part L w, full size."""
    return _spectrum(_nonlinear_cut(_block(vh, grid), t, grid, prm), grid)


def _nonlinear_cut(g, t, grid, prm):
    """The same on the kept block: the remainder of the primitive-variable form, derivatives
    taken spectrally (one inverse transform of the stacked spectra)."""
    W, WX = _fields_cut(g, grid)
    return _forward_cut(np.array(remainder(W, WX, grid["X"], t, prm)), grid)


def _stage(grid, prm):
    """The integrator's N as a function of (g, t), and no -i k left out (None)."""
    def N(g, t):
        return _nonlinear_cut(g, t, grid, prm)
    grid["stage"] = (N, None)
    return grid["stage"]


def _folded(grid):
    """None: the primitive form's N carries its own derivatives."""
    return None


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
    value many times over a 2D or 3D grid (|k|^2 is shared by every mode on a circle). Then
    exp(hL) and, on the kept block (the stages'), every one of them; the weights of N times
    ``fold`` where N leaves -i k to them (:func:`_stage`)."""
    key = round(h, 14)
    if key in grid["cache"]:
        return grid["cache"][key]
    L = grid["L"]
    fold = _folded(grid)
    plan = (hash(L.tobytes()), grid["shape"], key, INTEGRATOR, fold is not None)
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
    # the stages' coefficients on the kept block (one contiguous pass each)
    keep = _cut(grid)[1]
    out = (e,) + tuple(np.ascontiguousarray(f[keep]) for f in out)
    if fold is not None:  # q, f1, f2, f3: each multiplies an N
        out = out[:3] + tuple(f * fold for f in out[3:])
    if len(_PLANS) >= _PLAN_SETS:
        _PLANS.clear()
    _PLANS[plan] = grid["cache"][key] = out
    return out


def _step(vh, t, h, grid, prm):
    """One step. The stages see the state through the dealiasing mask only (_nonlinear_cut):
    they run on the kept block, and the modes outside it move by exp(hL) alone (a state
    carried as its kept block has none: ``_init_state``)."""
    v = _block(vh, grid)
    N = (grid.get("stage") or _stage(grid, prm))[0]
    if INTEGRATOR == "etdrk4":
        # in place where an array is not needed again; the same sums in the same order
        e, ek, e2, q, f1, f2, f3 = _coefficients(grid, h)
        half = e2 * v  # shared by the first two stages
        nv = N(v, t)
        a = q * nv
        a += half
        na = N(a, t + 0.5 * h)
        b = q * na
        b += half
        nb = N(b, t + 0.5 * h)
        s = 2.0 * nb
        s -= nv
        s *= q
        s += e2 * a
        nc = N(s, t + h)
        kept = ek * v
        kept += f1 * nv
        na += nb
        na *= f2
        kept += na
        nc *= f3
        kept += nc
    else:
        e, ek, e2 = _coefficients(grid, h)
        a = N(v, t)
        b = N(e2 * (v + 0.5 * h * a), t + 0.5 * h)
        c = N(e2 * v + 0.5 * h * b, t + 0.5 * h)
        d = N(ek * v + h * e2 * c, t + h)
        kept = ek * v + h / 6.0 * (ek * a + 2.0 * e2 * (b + c) + d)
    if grid["on_block"]:
        return kept
    out = e * vh
    out[_cut(grid)[1]] = kept
    return out


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
