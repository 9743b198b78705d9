"""The spectral family's internal grid and transforms: Fourier transfer between the data grid and
the internal one, and real FFTs over the space axes pruned to the 2/3-rule modes.

A pseudo-spectral stage transforms the dealiased field to physical space and the nonlinear term
back, and only the modes |m_a| < n_a / 3 take part. On the half-spectrum (last) axis those are
the first c = ceil(n / 3) columns: the inverse transform runs the complex passes over those
columns only and lets ``irfft`` zero-pad the rest; the forward one keeps the first c columns of
the real pass before the complex ones. The complex passes shrink by a third, and the masked
spectra are never formed at full size. On 2D and 3D grids scipy.fft: numpy's ``rfftn`` transforms
axis by axis in Python with a copy per axis (2.8x slower forward on [8, 128, 128], NumPy 2.4).

Identical to ``irfftn(vh * mask)`` and ``rfftn(f) * mask`` up to round-off
(tests/builtin/test_speed_paths.py).
"""

TRANSFORMS = '''
# ---- block: real FFTs over the space axes, pruned to the modes the 2/3 rule keeps ----


def _cut(grid):
    """Kept columns c of the half-spectrum axis, the mask on them [*kshape[:-1], c], the FFT
    module and its options: scipy.fft on 2D and 3D grids (one call per transform, 2.8x faster
    than numpy's rfftn on [8, 128, 128]) with the process's thread budget (OMP_NUM_THREADS, as
    BLAS reads it, else the CPUs it may run on: the transforms of a batch split across them);
    numpy.fft in 1D (less time per call on small arrays, no import, one thread)."""
    if "cut" not in grid:
        n = grid["shape"][-1]
        c = -(-n // 3)  # m = 0 .. c - 1: 3 m < n
        fft, kw = np.fft, {}
        if len(grid["shape"]) > 1:
            import os

            import scipy.fft as fft

            budget = os.environ.get("OMP_NUM_THREADS", "").strip()
            cpus = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else (os.cpu_count() or 1))
            kw = {"workers": max(1, min(int(budget), cpus) if budget.isdigit() else cpus)}
        grid["cut"] = (c, np.ascontiguousarray(grid["mask"][..., :c]), fft, kw)
    return grid["cut"]


def _forward_cut(f, grid):
    """The kept columns of f's spectra [..., c] (unmasked along the other axes)."""
    c, _, fft, kw = _cut(grid)
    g = fft.rfft(f, axis=-1, **kw)[..., :c]
    for ax in range(-len(grid["shape"]), -1):
        g = fft.fft(g, axis=ax, overwrite_x=True, **kw)
    return g


def _spectrum(g, grid):
    """Masked full-size spectra from kept columns g [..., c]."""
    c, mc, _, _ = _cut(grid)
    out = np.zeros(g.shape[:-1] + (grid["shape"][-1] // 2 + 1,), dtype=g.dtype)
    np.multiply(g, mc, out=out[..., :c])
    return out


def _physical(vh, grid):
    """The dealiased field in physical space: irfftn(vh * mask), the complex passes over the
    kept columns only (irfft zero-pads the dropped ones)."""
    c, mc, fft, kw = _cut(grid)
    g = vh[..., :c] * mc
    for ax in range(-len(grid["shape"]), -1):
        g = fft.ifft(g, axis=ax, overwrite_x=True, **kw)
    return fft.irfft(g, n=grid["shape"][-1], axis=-1, **kw)
'''

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


def _output(vh, grid, prm):
    """The solution at the data points. A finer internal grid is sampled at them (they are
    internal points when the ratio is an integer), or its series evaluated there: truncating it
    to the data's modes would return a different field (the converged solution's content above
    the data's Nyquist mode is not an error). A coarser one is zero-padded (its series evaluated
    at the data points), and so is one at most 3/2 finer: its modes are the data's |m| < n/2 and
    the dealiased ones |m| < 3/2 n/3, all below the data's Nyquist mode (exact, no product)."""
    data, inner = grid["data_shape"], grid["shape"]
    if inner == data:
        return list(np.fft.irfftn(vh, s=data, axes=grid["axes"]))
    if any(i < d for i, d in zip(inner, data)) or all(2 * i <= 3 * d for i, d in zip(inner, data)):
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
