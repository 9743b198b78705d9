"""The solver code of the constrained family (:mod:`.constrained`): the pseudo-spectral block of
:mod:`.wall_spectral_block` (bases, ETDRK4, dealiasing) with the constrained unknowns completed
from the evolved ones at every stage. The block below rebinds the functions of that block that
see the unknowns (state set-up, evaluation, rate, output); the integrator is unchanged."""

BLOCK = '''
# ---- block: constraints solved per mode. It replaces _init_state, _physical, _nonlinear,
# _rate and _output of the block above (the state holds the evolved unknowns only; the others
# are completed from it whenever they are needed) ----
_advance_modes = _advance_to  # the integrator above, wrapped to remember the time reached


def _advance_to(c, t0, t1, grid, prm):
    c = _advance_modes(c, t0, t1, grid, prm)
    grid["t"] = t1
    return c


def _mode_symbol(space, orders, parity):
    """The symbol of d^orders per mode [Mtot] for a source of the given parity per axis."""
    s = np.ones(space.mshape, dtype=complex)
    for a, o in enumerate(orders):
        if o:
            shape = [1] * space.dim
            shape[a] = space.mshape[a]
            s = s * _deriv_symbol(a, space.k[a], o, parity[a]).reshape(shape)
    return s.reshape(-1)


def _stack(space, terms, rows, cols, first):
    """[Mtot, rows, cols]: sum C d^orders per mode, column j in the parity of node first + j."""
    out = np.zeros((int(np.prod(space.mshape)), rows, cols), dtype=complex)
    for orders, matrix in terms:
        matrix = np.asarray(matrix, dtype=float).reshape(rows, cols)
        for i in range(rows):
            for j in range(cols):
                if matrix[i, j] != 0.0:
                    out[:, i, j] += matrix[i, j] * _mode_symbol(space, orders, PARITY[first + j])
    return out


def _pinv(A, real):
    """Per-mode (pseudo-)inverse: zero on a singular mode (the mean of a periodic or Neumann
    potential, its gauge, is set to zero)."""
    out = np.linalg.pinv(A, rcond=1e-12) if A.shape[0] else A.transpose(0, 2, 1)
    return out.real if real else out


def _modes(c, A):
    """Per-mode matrices A [Mtot, n, m] times coefficients c [m, B, Mtot]."""
    return np.einsum("mij,jbm->ibm", A, c)


def _init_state(W0, prm):
    data_shape = W0[0].shape[1:]
    data = _Space(data_shape, NODES, len(PARITY))
    inner_shape = tuple(max(int(round(REFINE * n)), 4) for n in data_shape)
    inner = _Space(inner_shape, False, len(PARITY), fast=True)
    grid = {"data": data, "inner": inner, "cache": {}, "B": W0[0].shape[0], "t": T0}
    grid["X"] = tuple(_axis_points(a, n, False).reshape((-1,) + (1,) * (len(inner_shape) - a - 1))
                      for a, n in enumerate(inner_shape))
    grid["out"] = {(a, p): _basis_matrix(a, p, _axis_points(a, n, NODES), inner.k[a])
                   for a, n in enumerate(data_shape) for p in {PARITY[i][a] for i in range(NALL)}}
    L, _ = _operator(inner, prm)
    real = not inner.complex
    grid["L"] = L.real if real else L
    grid["L0"], grid["stab"], grid["Minv"] = grid["L"], (), None
    grid["mask"] = _dealias(inner)
    if NELL:
        grid["Ainv"] = _pinv(_stack(inner, elliptic_terms(prm), NELL, NELL, NVAR), real)
    if NPRES:
        G = _stack(inner, pressure_terms(prm), NVAR, NPRES, NVAR + NELL)
        D = _stack(inner, divergence_terms(prm), NPRES, NVAR, 0)
        DGD = _pinv(D @ G, False) @ D
        grid["DGD"] = DGD.real if real else DGD
        P = np.eye(NVAR) - G @ DGD
        grid["P"] = P.real if real else P
    # the explicit part's sensitivity per mode: |k|^order for a derivative of an evolved unknown,
    # times |A(k)^-1| for one of a constrained unknown (psi = A^-1 F is smoother than F)
    size = np.linalg.norm(grid["Ainv"], ord=2, axis=(1, 2)) if NELL else None
    grid["kpow"] = [_kpow(inner, o) * (1.0 if j < NVAR else size) for j, o in JETS]
    grid["kpow_f"] = [_kpow(inner, o) for _, o in JETS_F]
    grid["size"] = size
    grid["damp"] = _damping(grid)
    c = np.stack([_embed(data.forward(w, i), data, inner) for i, w in enumerate(W0[:NVAR])])
    c = c.reshape(NVAR, c.shape[1], -1)
    if NPRES:  # initial data off the constraint are projected onto it
        c = _modes(c, grid["P"])
    first = _output(c, grid, prm)  # frame 0 of the constrained unknowns: from the evolved ones
    for i in range(NVAR, NALL):
        W0[i] = first[i]
    return c, grid


def _physical(c, grid):
    inner = grid["inner"]
    return [inner.evaluate(c[i].reshape((c.shape[1],) + inner.mshape), i)
            for i in range(c.shape[0])]


def _elliptic(c, t, grid, prm):
    """Coefficients of the elliptic unknowns: A(k) psi = F(w, derivatives, x, t) per mode."""
    inner = grid["inner"]
    B = c.shape[1]
    vm = c * grid["mask"]
    JF = [_jet(vm[j], j, orders, grid) for j, orders in JETS_F]
    F = elliptic_source(_physical(c, grid), JF, grid["X"], t, prm)
    Fh = np.stack([inner.forward(np.broadcast_to(f, (B,) + inner.shape), NALL + k)
                   for k, f in enumerate(F)]).astype(c.dtype, copy=False)
    return _modes(Fh.reshape(NELL, B, -1) * grid["mask"], grid["Ainv"])


def _complete(c, t, grid, prm):
    """Every unknown's coefficients but the pressures' (which no term evaluates)."""
    parts = [c] + ([_elliptic(c, t, grid, prm)] if NELL else [])
    if NPRES:
        parts.append(np.zeros((NPRES,) + c.shape[1:], dtype=c.dtype))
    return np.concatenate(parts)


def _rate_terms(c, t, grid, prm):
    full = _complete(c, t, grid, prm)
    R = _remainder(_physical(full, grid), _jets(full, grid), t, grid, prm)
    return _project(R, c, grid)


def _nonlinear(c, t, grid, prm):
    N = _rate_terms(c, t, grid, prm)
    return _modes(N, grid["P"]) if NPRES else N


def _output(c, grid, prm):
    t = grid["t"]
    full = _complete(c, t, grid, prm)
    if NPRES:  # D dt w = 0: p = -(D G)^-1 D (L w + N)
        full[NVAR + NELL:] = -_modes(_modes(c, grid["L"]) + _rate_terms(c, t, grid, prm),
                                     grid["DGD"])
    inner = grid["inner"]
    out = []
    for i in range(NALL):
        v = full[i].reshape((c.shape[1],) + inner.mshape)
        for a in range(inner.dim):
            v = _apply(grid["out"][a, PARITY[i][a]], v, 1 + a)
        out.append(v.real)
    return out


def _rate(c, t, grid, prm, span=np.inf):
    """The explicit part's rate per mode, r(k) = sum over its inputs of max|dN/d input| times
    the input's gain at k (one-sided differences); an elliptic unknown's gain is |A(k)^-1|
    times F's. The step bound is max r(k) over the modes the linear part does not hold."""
    full = _complete(c, t, grid, prm)
    W, J = _physical(full, grid), _jets(full, grid)
    base = np.array(_remainder(W, J, t, grid, prm))

    def gain(fn, args, k):
        """max over the points of |d fn / d args[k]|, per equation [n, 1]."""
        v = list(args)
        e = 1e-6 * (1.0 + np.abs(v[k]))
        v[k] = v[k] + e
        with np.errstate(all="ignore"):
            d = np.abs((np.array(fn(v)) - fn.base) / e)
        return np.nanmax(d.reshape(d.shape[0], -1), axis=1, initial=0.0)[:, None]

    rem = lambda v: _remainder(v[:NALL], v[NALL:], t, grid, prm)  # noqa: E731
    rem.base = base
    args = W + J
    r = np.zeros((NVAR,) + grid["damp"][0].shape)  # per equation and mode
    g_f = 1.0
    if NELL:  # F's gain per mode (the largest over the elliptic rows)
        vm = c * grid["mask"]
        JF = [_jet(vm[j], j, o, grid) for j, o in JETS_F]
        ell = lambda v: elliptic_source(v[:NVAR], v[NVAR:], grid["X"], t, prm)  # noqa: E731
        ell.base = np.array(ell(W[:NVAR] + JF))
        g_f = sum(np.max(gain(ell, W[:NVAR] + JF, k)) for k in range(NVAR))
        g_f = g_f + sum(np.max(gain(ell, W[:NVAR] + JF, NVAR + m)) * kp
                        for m, kp in enumerate(grid["kpow_f"]))
    for k in range(NALL - NPRES):
        r = r + gain(rem, args, k) * (1.0 if k < NVAR else grid["size"] * g_f)
    for m, (j, _) in enumerate(JETS):
        r = r + gain(rem, args, NALL + m) * grid["kpow"][m] * (1.0 if j < NVAR else g_f)
    r = np.max(r, axis=0)
    decay, _ = grid["damp"]
    # the modes the 2/3 rule keeps (the others are zero at every stage)
    loose = ((r > (1.0 + 1e-3) * decay) | (decay * span < 5.0)) & grid["mask"]
    return float(np.max(r[loose], initial=0.0)) if np.all(np.isfinite(r)) else np.inf
'''
