# ---- block: output-time loop on a periodic 1D grid (internal grid REFINE times finer) ----


def _prolong(w, r):
    """Periodic linear interpolation of cell-centre values onto a grid r times finer."""
    if r == 1:
        return w.copy()
    n = w.shape[-1]
    xc = (np.arange(n) + 0.5) / n
    xf = (np.arange(n * r) + 0.5) / (n * r)
    return np.stack([np.interp(xf, xc, row, period=1.0) for row in w])


def _restrict(w, r):
    """Cell averages of r consecutive fine cells (the coarse cell's mean)."""
    if r == 1:
        return w
    b, nf = w.shape
    return w.reshape(b, nf // r, r).mean(axis=-1)


def _evolve(W0, t_coordinate, prm):
    """Advance the primitive state W0 (list of [B, N] arrays) to every output time."""
    W0 = [np.asarray(w, dtype=np.float64) for w in W0]
    t_coordinate = np.asarray(t_coordinate, dtype=np.float64)
    B, N = W0[0].shape
    nf = N * REFINE
    dx = LENGTH / nf
    state = _init_state([_prolong(w, REFINE) for w in W0], dx, prm)
    out = [np.empty((B, len(t_coordinate), N)) for _ in W0]
    for k, w in enumerate(W0):
        out[k][:, 0] = w
    for j in range(1, len(t_coordinate)):
        with np.errstate(all="ignore"):
            state = _advance_to(state, float(t_coordinate[j - 1]), float(t_coordinate[j]), dx, prm)
            W = _primitive(state, prm)
        for k in range(len(W0)):
            out[k][:, j] = _restrict(np.asarray(W[k]), REFINE)
    return out
