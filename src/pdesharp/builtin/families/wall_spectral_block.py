"""The solver code of the sine/cosine/Fourier pseudo-spectral family (:mod:`.wall_spectral`):
the linear operator per mode (with the Sobolev-type operator inverted), the remainder with its
derivatives taken in the series, the linear stabilisation of variable-coefficient dissipative
terms, ETDRK4 / integrating-factor RK4 and the step rule."""

BLOCK = '''
# ---- block: pseudo-spectral exponential integrator in the walls' eigenbasis ----


def _symbols(space, terms):
    """[Mtot, NVAR, NVAR]: the symbols of sum C d^orders, in each source unknown's parity."""
    L = np.zeros(space.mshape + (NVAR, NVAR), dtype=complex)
    for orders, matrix in terms:
        matrix = np.asarray(matrix, dtype=float)
        for i in range(NVAR):
            for j in range(NVAR):
                if matrix[i, j] == 0.0:
                    continue
                s = np.ones(space.mshape, dtype=complex)
                for a, o in enumerate(orders):
                    if o:
                        shape = [1] * space.dim
                        shape[a] = space.mshape[a]
                        s = s * _deriv_symbol(a, space.k[a], o, PARITY[j][a]).reshape(shape)
                L[..., i, j] += matrix[i, j] * s
    return L.reshape(-1, NVAR, NVAR)


def _operator(space, prm):
    """L [Mtot, NVAR, NVAR] and the inverse of the Sobolev-type operator (None if there is
    none): dt w = M^-1 (L w + N) per mode."""
    L = _symbols(space, linear_terms(prm))
    mass = mass_terms(prm)
    if not mass:
        return L, None
    M = np.eye(NVAR) + _symbols(space, mass)
    Minv = np.linalg.inv(M)
    return Minv @ L, Minv


def _jet(c, j, orders, grid):
    """Values of d^orders w_j from its coefficients c [B, Mtot] (the parity flips once per odd
    order along an axis)."""
    inner = grid["inner"]
    v = c.reshape((c.shape[0],) + inner.mshape)
    par = list(PARITY[j])
    for a, o in enumerate(orders):
        if o:
            shape = [1] * inner.dim
            shape[a] = inner.mshape[a]
            v = v * _deriv_symbol(a, inner.k[a], o, PARITY[j][a]).reshape(shape)
            if o % 2 and par[a]:
                par[a] = "cos" if par[a] == "sin" else "sin"
    return inner.evaluate_as(v, par)


def _jets(c, grid):
    if not JETS:
        return []
    vm = c * grid["mask"]
    return [_jet(vm[j], j, orders, grid) for j, orders in JETS]


def _remainder(W, J, t, grid, prm):
    """N less the stabilising terms that L carries (see _stabilise)."""
    R = remainder(W, J, grid["X"], t, prm)
    for (i, m, p, a), s in zip(STABILIZE, grid["stab"]):
        if s:
            R[i] = R[i] + s * (-1.0) ** (p // 2) * J[m]
    return R


def _stabilise(c, t, grid, prm):
    """Linear stabilisation of the dissipative derivatives N carries with a variable
    coefficient (u**2*dx(u, 2), a thin film's h**3 fourth derivative): per such term of
    even order p, sigma = 1.1 max of its dissipative coefficient over the field goes into L
    as -sigma k^p and out of N, so that N's remaining coefficient is at most L's damping
    (ETDRK4 stays stable then, whatever the step: |explicit| <= |implicit| on the real axis).
    sigma is rounded up to a quarter octave, so L and its coefficients change rarely."""
    if not STABILIZE:
        return
    W = _physical(c, grid)
    J = _jets(c, grid)
    base = np.array(remainder(W, J, grid["X"], t, prm))
    sig = []
    for i, m, p, a in STABILIZE:
        e = 1e-6 * (1.0 + np.abs(J[m]))
        Jp = list(J)
        Jp[m] = J[m] + e
        with np.errstate(all="ignore"):
            coef = (np.array(remainder(W, Jp, grid["X"], t, prm))[i] - base[i]) / e
        d = float(np.max(coef * (-1.0) ** (p // 2 + 1), initial=0.0))
        sig.append(0.0 if not np.isfinite(d) or d <= 0 else
                   2.0 ** (np.ceil(4 * np.log2(1.1 * d)) / 4))
    sig = tuple(sig)
    if sig == grid["stab"]:
        return
    grid["stab"] = sig
    inner = grid["inner"]
    S = np.zeros((grid["L0"].shape[0], NVAR), dtype=grid["L0"].dtype)
    for (i, m, p, a), s in zip(STABILIZE, sig):
        shape = [1] * inner.dim
        shape[a] = inner.mshape[a]
        sym = np.ones(inner.mshape) * _deriv_symbol(a, inner.k[a], p, PARITY[i][a]).reshape(shape)
        S[:, i] += (-s * (-1.0) ** (p // 2) * sym).reshape(-1).real
    if grid["Minv"] is not None:
        S = S * np.real(np.diagonal(grid["Minv"], axis1=1, axis2=2))
    L = grid["L0"].copy()
    idx = np.arange(NVAR)
    L[:, idx, idx] += S
    grid["L"] = L
    if JETS:
        grid["damp"] = _damping(grid)


def _project(R, c, grid):
    """Coefficients of the pointwise values R (one per equation), dealiased, times M^-1."""
    inner = grid["inner"]
    out = np.stack([inner.forward(np.broadcast_to(r, (c.shape[1],) + inner.shape), i)
                    for i, r in enumerate(R)]).astype(c.dtype, copy=False)
    out = out.reshape(NVAR, c.shape[1], -1) * grid["mask"]
    if grid["Minv"] is not None:
        out = _mul(grid["Minv_t"] if COUPLED else grid["Minv_diag"], out)
    return out


def _dealias(space):
    """Keep modes below 2/3 of each axis' top mode number (Orszag's rule)."""
    mask = np.ones(space.mshape, bool)
    for a, m in enumerate(space.m):
        top = np.max(np.abs(m))
        shape = [1] * space.dim
        shape[a] = len(m)
        mask = mask & (3 * np.abs(m) < 2 * top + 2).reshape(shape)
    return mask.reshape(-1)


def _init_state(W0, prm):
    data_shape = W0[0].shape[1:]
    data = _Space(data_shape, NODES, NVAR)
    inner_shape = tuple(max(int(round(REFINE * n)), 4) for n in data_shape)
    inner = _Space(inner_shape, False, NVAR, fast=True)  # every stage transforms: the FFT
    grid = {"data": data, "inner": inner, "cache": {}, "B": W0[0].shape[0]}
    grid["X"] = tuple(_axis_points(a, n, False).reshape((-1,) + (1,) * (len(inner_shape) - a - 1))
                      for a, n in enumerate(inner_shape))
    grid["out"] = {(a, p): _basis_matrix(a, p, _axis_points(a, n, NODES), inner.k[a])
                   for a, n in enumerate(data_shape) for p in {PARITY[i][a] for i in range(NVAR)}}
    L, Minv = _operator(inner, prm)
    grid["L"] = L if inner.complex else L.real  # sines and cosines alone: real arithmetic
    grid["L0"], grid["stab"] = grid["L"], (0.0,) * len(STABILIZE)
    grid["Minv"] = Minv
    if Minv is not None:
        grid["Minv_t"] = _per_mode(Minv if inner.complex else Minv.real)
        grid["Minv_diag"] = np.moveaxis(np.diagonal(Minv, axis1=1, axis2=2), 0, -1)[:, None, :]
        if not inner.complex:
            grid["Minv_diag"] = grid["Minv_diag"].real
    grid["mask"] = _dealias(inner)
    if JETS:  # the explicit part's derivatives: |k|^orders per jet, and each mode's damping
        grid["kpow"] = [_kpow(inner, orders) for _, orders in JETS]
        grid["damp"] = _damping(grid)
    c = np.stack([_embed(data.forward(w, i), data, inner) for i, w in enumerate(W0)])
    return c.reshape(NVAR, c.shape[1], -1), grid


def _output(c, grid, prm):
    inner = grid["inner"]
    out = []
    for i in range(NVAR):
        v = c[i].reshape((c.shape[1],) + inner.mshape)
        for a in range(inner.dim):
            v = _apply(grid["out"][a, PARITY[i][a]], v, 1 + a)
        out.append(v.real)
    return out


def _physical(c, grid):
    inner = grid["inner"]
    return [inner.evaluate(c[i].reshape((c.shape[1],) + inner.mshape), i) for i in range(NVAR)]


def _nonlinear(c, t, grid, prm):
    R = _remainder(_physical(c, grid), _jets(c, grid), t, grid, prm)
    return _project(R, c, grid)


def _per_mode(A):
    """Per-mode matrices A [Mtot, n, n] laid out as _mul takes them: [n, n, 1, Mtot], contiguous
    (a strided view of A made every product 2.2x slower: 40% of a 64^2 Brusselator step)."""
    return np.ascontiguousarray(np.moveaxis(A, 0, -1))[:, :, None, :]


def _mul(A, c):
    """Per-mode matrices A (_per_mode's [n, n, 1, Mtot], or diagonals [n, 1, Mtot]) times
    c [n, B, Mtot]: n broadcast products over the modes (einsum's generic loop took 30% of a
    Brusselator step)."""
    if not COUPLED:
        return A * c
    out = A[:, 0] * c[0]
    for j in range(1, c.shape[0]):
        out += A[:, j] * c[j]
    return out


def _phi(z):
    """exp(z), phi_1(z), phi_2(z), phi_3(z) per mode (COUPLED: augmented exponential of
    [Mtot, n, n] stacks; else the Kassam-Trefethen contour mean on a circle around each z)."""
    if COUPLED:
        n = z.shape[-1]
        # real symbols (sines and cosines alone): real products, a quarter of complex ones' work
        A = np.zeros(z.shape[:1] + (4 * n, 4 * n), dtype=np.result_type(z.dtype, float))
        A[:, :n, :n] = z
        for j in range(3):
            A[:, j * n:(j + 1) * n, (j + 1) * n:(j + 2) * n] = np.eye(n)
        E = _expm(A)
        return [E[:, :n, j * n:(j + 1) * n] for j in range(4)]
    r = np.exp(2j * np.pi * (np.arange(32) + 0.5) / 32)
    lr = z[..., None] + r
    ex = np.exp(lr)
    p1 = np.mean((ex - 1.0) / lr, axis=-1)
    p2 = np.mean((ex - 1.0 - lr) / lr**2, axis=-1)
    p3 = np.mean((ex - 1.0 - lr - lr**2 / 2) / lr**3, axis=-1)
    return [np.exp(z), p1, p2, p3]


# Coefficient sets by (operator, step), kept across calls: the next batch reuses them, as a
# compiled library reuses its stepper (Allen-Cahn on 96^2 cosine modes: 40% of a call's time).
_PLANS = {}
_PLAN_SETS = 16


def _coefficients(grid, h):
    key = (round(h, 14), grid["stab"])
    if key in grid["cache"]:
        return grid["cache"][key]
    if len(grid["cache"]) > 16:
        grid["cache"].clear()
    plan = (hash(grid["L"].tobytes()), grid["L"].shape, key)
    if plan in _PLANS:
        grid["cache"][key] = _PLANS[plan]
        return _PLANS[plan]
    L = grid["L"] if COUPLED else np.moveaxis(np.diagonal(grid["L"], axis1=1, axis2=2), 0, -1)
    if not COUPLED:
        L = L[:, None, :]  # [NVAR, 1, Mtot]
    e, p1, p2, p3 = _phi(h * L)
    e2, q1, _, _ = _phi(0.5 * h * L)
    out = (e, e2, 0.5 * h * q1, h * (p1 - 3 * p2 + 4 * p3), h * (p2 - 2 * p3), h * (4 * p3 - p2))
    if not grid["inner"].complex:  # real symbols: the contour means' round-off imaginary parts
        out = tuple(np.real(v) for v in out)
    if COUPLED:
        out = tuple(_per_mode(v) for v in out)
    if len(_PLANS) >= _PLAN_SETS:
        _PLANS.clear()
    _PLANS[plan] = grid["cache"][key] = out
    return out


def _step(c, t, h, grid, prm):
    N = lambda v, s: _nonlinear(v, t + s * h, grid, prm)  # noqa: E731
    e, e2, q, f1, f2, f3 = _coefficients(grid, h)
    if INTEGRATOR == "etdrk4":
        nv = N(c, 0.0)
        half = _mul(e2, c)  # the linear half step, shared by the first two stages
        a = half + _mul(q, nv)
        na = N(a, 0.5)
        b = half + _mul(q, na)
        nb = N(b, 0.5)
        cc = _mul(e2, a) + _mul(q, 2.0 * nb - nv)
        nc = N(cc, 1.0)
        return _mul(e, c) + _mul(f1, nv) + 2.0 * _mul(f2, na + nb) + _mul(f3, nc)
    a = N(c, 0.0)
    b = N(_mul(e2, c + 0.5 * h * a), 0.5)
    cc = N(_mul(e2, c) + 0.5 * h * b, 0.5)
    d = N(_mul(e, c) + h * _mul(e2, cc), 1.0)
    return _mul(e, c) + h / 6.0 * (_mul(e, a) + 2.0 * _mul(e2, b + cc) + d)


def _kpow(space, orders):
    """prod_a |k_a|^orders_a per mode [Mtot]."""
    out = np.ones(space.mshape)
    for a, o in enumerate(orders):
        shape = [1] * space.dim
        shape[a] = space.mshape[a]
        out = out * (np.abs(space.k[a]) ** o).reshape(shape)
    return out.reshape(-1)


def _damping(grid):
    """Per mode, the smallest decay rate -Re(lambda) of M^-1 L (0 where a mode grows or
    oscillates), and the size of M^-1 (what the explicit part is multiplied by)."""
    L = grid["L"]
    if COUPLED:
        lam = np.linalg.eigvals(L)
        decay = np.min(-lam.real, axis=-1)
    else:
        decay = np.min(-np.real(np.diagonal(L, axis1=1, axis2=2)), axis=-1)
    size = np.ones(L.shape[0]) if grid["Minv"] is None else np.max(
        np.abs(np.linalg.eigvals(grid["Minv"])), axis=-1)
    return np.maximum(decay, 0.0), size


def _rate(c, t, grid, prm, span=np.inf):
    """The explicit part's rate: max |dN/dw| by one-sided differences; with derivatives in N,
    the largest r(k) = sum_jets max|dN/d(jet)| |k|^order among the modes the linear part's
    damping does not hold (r(k) > |Re L(k)|: ETDRK4 with the linear part exact is stable for an
    explicit part up to its size on the real axis). The modes that outlive an output interval
    (damping below 5 / span) carry the solution: their r(k) bounds the step too, for accuracy
    (held or not)."""
    W = np.array(_physical(c, grid))
    J = _jets(c, grid)
    base = np.array(_remainder(list(W), J, t, grid, prm))

    def slope(V, Jv):
        with np.errstate(all="ignore"):
            return np.array(_remainder(list(V), Jv, t, grid, prm)) - base

    eps = 1e-6 * (1.0 + np.abs(W))
    with np.errstate(all="ignore"):
        r0 = float(np.max(np.abs(slope(W + eps, J) / eps), initial=0.0))
    if not JETS:
        return r0
    decay, size = grid["damp"]
    # per mode, the jets' rates as a matrix R[i, j] (equation i, a derivative of unknown j)
    # and its spectral radius: a one-way coupling (Zakharov's (|E|^2)_xx drives n only, and n
    # feeds E back through values) is no feedback at the rate |k|^2, which the sum of all
    # entries, the old bound, charged to the step
    R = np.zeros((decay.size, NVAR, NVAR))
    for m, (j, _) in enumerate(JETS):
        e = 1e-6 * (1.0 + np.abs(J[m]))
        Jp = list(J)
        Jp[m] = J[m] + e
        with np.errstate(all="ignore"):
            rows = np.abs(slope(W, Jp) / e).reshape(NVAR, -1)
        rm = np.max(rows, axis=1, initial=0.0)
        R[:, :, j] += rm[None, :] * grid["kpow"][m][:, None]
    with np.errstate(all="ignore"):
        radius = np.max(np.abs(np.linalg.eigvals(R)), axis=-1) if np.all(np.isfinite(R)) \
            else np.full(decay.shape, np.inf)
    r = (r0 + radius) * size
    loose = (r > (1.0 + 1e-3) * decay) | (decay * span < 5.0)
    return float(np.max(r[loose], initial=0.0)) if np.all(np.isfinite(r)) else np.inf


def _advance_to(c, t0, t1, grid, prm):
    span = t1 - t0
    _stabilise(c, t0, grid, prm)
    rate = _rate(c, t0, grid, prm, span)
    if not np.all(np.isfinite(c)) or not np.isfinite(rate):
        return np.full_like(c, np.nan)
    n = 1 if rate <= 0 else max(int(np.ceil(span * rate / CFL)), 1)
    if n > 2**20:
        return np.full_like(c, np.nan)  # the step collapsed: the solution is blowing up
    h = span / n
    for m in range(n):
        c = _step(c, t0 + m * h, h, grid, prm)
    return c
'''
