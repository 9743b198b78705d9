"""The finite-volume stencil of the ``elliptic`` family, as solver source: the three- (five-)
point system with ghost values from the boundary conditions, a sparse direct or preconditioned
CG solve, Newton's method for a nonlinear reaction, and the accuracy axis beyond the data grid's
O(h^2): a grid REFINE (odd) times finer than the data's, every data point one of its points (no
interpolation of the solution back; the coefficient fields moved onto it by cubic splines or
piecewise constant, which keeps a jump between two data points on a face), and Richardson
extrapolation from the REFINE - 2 and REFINE grids, which cancels the h^2 term of the error
(order 4 where the solution is smooth; with an interface on the faces of both grids too).
"""

BLOCK = '''
# ---- block: finite-volume stencil, ghost values from the boundary conditions, sparse solve ----
import scipy.sparse as _sps
import scipy.sparse.linalg as _spla


def _layout(shape, nodes):
    """Coordinates X (broadcastable), spacings h and 1D point arrays of the solver's grid."""
    pts, h, X = [], [], []
    for a, n in enumerate(shape):
        lo, hi = DOMAIN[a]
        p = _points(n, lo, hi, nodes)
        pts.append(p)
        h.append((hi - lo) / (n - 1) if nodes else (hi - lo) / n)
        X.append(p.reshape((n,) + (1,) * (len(shape) - a - 1)))
    return {"shape": tuple(shape), "pts": pts, "h": h, "X": tuple(X), "nodes": nodes}


def _face_mean(k1, k2):
    if FACE_MEAN == "harmonic":
        return 2.0 * k1 * k2 / np.where(k1 + k2 != 0.0, k1 + k2, 1.0)
    return 0.5 * (k1 + k2)


def _faces(fields, grid, prm, a):
    """K on the + and - face of every point along axis a (the outer faces at the walls or the
    ghost points)."""
    if FIELD_K:  # cell values of a field: average the two neighbours
        K = conductivity(fields, grid["X"], prm, a)
        lo, hi = [slice(None)] * K.ndim, [slice(None)] * K.ndim
        lo[a], hi[a] = slice(0, -1), slice(1, None)
        Kf = _face_mean(K[tuple(lo)], K[tuple(hi)])
        first, last = [slice(None)] * K.ndim, [slice(None)] * K.ndim
        first[a], last[a] = slice(0, 1), slice(-1, None)
        return (np.concatenate([Kf, K[tuple(last)]], axis=a),
                np.concatenate([K[tuple(first)], Kf], axis=a))
    shifted = lambda s: tuple(x + s * grid["h"][a] if b == a else x  # noqa: E731
                              for b, x in enumerate(grid["X"]))
    return conductivity({}, shifted(0.5), prm, a), conductivity({}, shifted(-0.5), prm, a)


def _ghost(a, side, grid, prm):
    """u_outside = a0 * u_edge + a1 * u_inner + beta on the given side of axis a, and whether
    the side is a Dirichlet side of a node grid (then the edge value is simply prescribed)."""
    other = [p for b, p in enumerate(grid["pts"]) if b != a]
    T = other[0] if other else np.zeros(())
    ca, cb, g = boundary_data(a, side, T, prm)
    h = grid["h"][a]
    if grid["nodes"]:
        if cb == 0:
            return 0.0, 0.0, 0.0, g / ca
        sign = 1.0 if side == 0 else -1.0  # centred difference across the boundary node
        return sign * 2.0 * h * ca / cb, 1.0, -sign * 2.0 * h * g / cb, None
    inner, outer = (0.5 * ca + cb / h, 0.5 * ca - cb / h) if side == 0 else \\
        (0.5 * ca - cb / h, 0.5 * ca + cb / h)
    return -inner / outer, 0.0, g / outer, None


def _system(fields, grid, prm):
    """Matrix rows (A, rhs) of the linear part and the rows prescribed by Dirichlet nodes."""
    shape = grid["shape"]
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    Ns, bs, f = operator_terms(fields, grid["X"], prm)
    diag = np.zeros(shape)
    rhs = np.array(f, dtype=np.float64) * np.ones(shape)
    fixed = np.zeros(shape, dtype=bool)
    value = np.zeros(shape)
    rows, cols, vals = [], [], []
    for a in range(len(shape)):
        h = grid["h"][a]
        Kp, Km = _faces(fields, grid, prm, a)
        N, b = Ns[a] * np.ones(shape), bs[a] * np.ones(shape)
        cp, cm = -(Kp + N) / h**2, -(Km + N) / h**2
        diag += (Kp + Km + 2.0 * N) / h**2
        if CONVECTION == "upwind":
            cp = cp + np.minimum(b, 0.0) / h
            cm = cm - np.maximum(b, 0.0) / h
            diag += np.abs(b) / h
        else:
            cp, cm = cp + b / (2 * h), cm - b / (2 * h)
        for side, c in ((1, cp), (0, cm)):
            src, dst = [slice(None)] * len(shape), [slice(None)] * len(shape)
            src[a], dst[a] = (slice(0, -1), slice(1, None)) if side else (slice(1, None), slice(0, -1))
            rows.append(idx[tuple(src)].ravel())
            cols.append(idx[tuple(dst)].ravel())
            vals.append(c[tuple(src)].ravel())
            edge, inner = [slice(None)] * len(shape), [slice(None)] * len(shape)
            edge[a], inner[a] = (-1, -2) if side else (0, 1)
            a0, a1, beta, dirichlet = _ghost(a, side, grid, prm)
            if dirichlet is not None:
                fixed[tuple(edge)] = True
                value[tuple(edge)] = dirichlet
                continue
            ce = c[tuple(edge)]
            diag[tuple(edge)] += ce * a0
            rhs[tuple(edge)] -= ce * beta
            if a1:
                rows.append(idx[tuple(edge)].ravel())
                cols.append(idx[tuple(inner)].ravel())
                vals.append((ce * a1).ravel())
    n = idx.size
    A = _sps.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(n, n)) + _sps.diags(diag.ravel())
    keep = _sps.diags((~fixed).ravel().astype(float))
    return keep @ A, rhs.ravel() * (~fixed).ravel(), fixed.ravel(), value.ravel()


def _solve_on(fields, grid, prm):
    A, rhs, fixed, value = _system(fields, grid, prm)
    one = _sps.diags(fixed.astype(float))
    keep = ~fixed
    u = value.copy()
    for _ in range(1 if LINEAR else 50):
        r, dr = reaction(u.reshape(grid["shape"]), fields, grid["X"], prm)
        res = A @ u + keep * (r.ravel() - rhs) + fixed * (u - value)
        J = (A + _sps.diags(keep * dr.ravel()) + one).tocsr()
        du = _pcg(J, -res, fixed, keep * dr.ravel(), grid, prm) if SOLVER == "cg" else None
        if du is None:  # the direct solve (also where CG does not apply or did not converge)
            du = _spla.spsolve(J.tocsc(), -res)
        u = u + du
        if not LINEAR and np.linalg.norm(du) <= NEWTON_TOL * (1.0 + np.linalg.norm(u)):
            break
    return u.reshape(grid["shape"])


def _fast_inverse(grid, prm, scale, shift):
    """The inverse of  sum_a scale[a] * T_a + shift  on the free points of a 2D grid, T_a the
    unit second difference along axis a with the side types of the problem (Dirichlet-like or
    Neumann-like), diagonalised by a sine or cosine transform per axis (O(n log n))."""
    from scipy import fft as _fft

    ops, lam = [], []
    for a, n in enumerate(grid["shape"]):
        if grid["nodes"]:  # node grid: its Dirichlet sides' nodes are fixed, the rest is free
            m = n - 2
            ops.append((_fft.dst, 1))
            lam.append(2.0 - 2.0 * np.cos(np.pi * np.arange(1, m + 1) / (m + 1)))
            continue
        low, high = (_ghost(a, side, grid, prm)[0] < 0 for side in (0, 1))  # ghost -u: Dirichlet
        k = np.arange(n, dtype=float)
        if low and high:
            ops.append((_fft.dst, 2))
            lam.append(2.0 - 2.0 * np.cos(np.pi * (k + 1) / n))
        elif not low and not high:
            ops.append((_fft.dct, 2))
            lam.append(2.0 - 2.0 * np.cos(np.pi * k / n))
        else:
            ops.append((_fft.dst if low else _fft.dct, 4))
            lam.append(2.0 - 2.0 * np.cos(np.pi * (k + 0.5) / n))
    denom = scale[0] * lam[0][:, None] + scale[1] * lam[1][None, :] + shift
    denom = np.where(denom > 0.0, denom, np.max(denom))  # a pure Neumann box: its mean mode
    shape = denom.shape

    inverse = {_fft.dst: _fft.idst, _fft.dct: _fft.idct}
    if ops[0] == ops[1]:  # one call over both axes
        tr, kind = ops[0]
        nd, ind = (_fft.dstn, _fft.idstn) if tr is _fft.dst else (_fft.dctn, _fft.idctn)
        return lambda r: ind(nd(r.reshape(shape), type=kind, norm="ortho") / denom, type=kind,
                             norm="ortho").ravel()

    def apply(r):
        v = r.reshape(shape)
        for a, (tr, kind) in enumerate(ops):
            v = tr(v, type=kind, axis=a, norm="ortho")
        v = v / denom
        for a, (tr, kind) in enumerate(ops):
            v = inverse[tr](v, type=kind, axis=a, norm="ortho")
        return v.ravel()
    return apply


def _pcg(J, b, fixed, dr, grid, prm):
    """Conjugate gradients on the free rows of J, preconditioned by the fast inverse of the
    constant-coefficient operator (the geometric-mean conductivity per axis, the mean reaction):
    its condition number is about max K / min K, whatever the grid size. None where CG does not
    apply (1D, a non-symmetric or indefinite matrix, fixed points other than a node grid's
    boundary ring) or did not reach CG_TOL in 500 iterations: the caller solves directly."""
    shape = grid["shape"]
    if len(shape) != 2:
        return None
    free = np.flatnonzero(~fixed)
    ring = np.zeros(shape, dtype=bool)
    ring[0, :] = ring[-1, :] = ring[:, 0] = ring[:, -1] = True
    if fixed.any() and not (grid["nodes"] and np.array_equal(fixed, ring.ravel())):
        return None
    Jf = J[free][:, free].tocsr() if fixed.any() else J
    if abs(Jf - Jf.T).max() > 1e-12 * abs(Jf).max():
        return None
    bf = b[free]
    strides = (shape[1] - 2 if fixed.any() else shape[1], 1)
    scale = []
    for s in strides:
        off = -Jf.diagonal(s)
        off = off[off > 0]
        if off.size == 0:
            return None
        scale.append(float(np.exp(np.mean(np.log(off)))))
    M = _fast_inverse(grid, prm, scale, max(float(np.mean(dr[free])), 0.0))
    x = np.zeros_like(bf)
    r = bf.copy()
    nb = np.linalg.norm(bf)
    if nb == 0.0:
        out = np.zeros_like(b)
        return out
    z = M(r)
    p = z.copy()
    rz = r @ z
    for _ in range(500):
        Jp = Jf @ p
        pJp = p @ Jp
        if not pJp > 0.0:  # indefinite (or broken down): not a CG problem
            return None
        alpha = rz / pJp
        x += alpha * p
        r -= alpha * Jp
        if np.linalg.norm(r) <= CG_TOL * nb:
            out = np.zeros_like(b)
            out[free] = x
            return out
        z = M(r)
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    return None


# ---- block: a finer internal grid, Richardson extrapolation, the solution at the output ----
# the largest solve grid (points): REFINE is lowered to fit (memory and time stay bounded on
# the large grids of a test split or of a user's own data)
MAX_POINTS = {1: 2_000_000, 2: 250_000}


def _transfer(src, dst, how):
    """Values at the 1D points src -> values at dst, as a function of (values, axis): a plain
    pick where every dst point is a src point (exact), else "spline" (not-a-knot cubic spline,
    extrapolated beyond the outermost src points: fourth order for a smooth field up to the
    walls), "clamped" (the same spline, constant beyond the outermost src points, as FITPACK's
    bicubic splines evaluate there: a cubic extrapolation of a jump overshoots) or "constant"
    (the nearest src point's value: a jump between two data points stays between them)."""
    tol = 1e-9 * (src[-1] - src[0] + 1.0)
    idx = np.clip(np.searchsorted(src, dst), 0, len(src) - 1)
    near = np.where(np.abs(src[np.maximum(idx - 1, 0)] - dst) < np.abs(src[idx] - dst),
                    np.maximum(idx - 1, 0), idx)
    if how == "constant" or np.all(np.abs(src[near] - dst) <= tol):
        return lambda values, axis: np.take(values, near, axis=axis)
    from scipy.interpolate import CubicSpline

    at = np.clip(dst, src[0], src[-1]) if how == "clamped" else dst
    return lambda values, axis: CubicSpline(src, values, axis=axis)(at)


def _apply(values, ops):
    """The transfers ``ops`` (one per axis) applied to ``values`` [N1(, N2)]."""
    for a, op in enumerate(ops):
        values = op(values, a)
    return values


def _field_interp(v, nodes):
    """FIELD_INTERP for the field v. "auto": a smooth field takes the spline; a field with
    jumps (a neighbour difference above a quarter of its range) stays piecewise constant on a
    finer grid of the data's own kind, so each jump stays on a face, and takes the clamped
    spline onto another kind (cell data onto nodes)."""
    if FIELD_INTERP != "auto":
        return FIELD_INTERP
    span = float(np.max(v) - np.min(v))
    steps = max((float(np.max(np.abs(np.diff(v, axis=a)))) for a in range(v.ndim)
                 if v.shape[a] > 1), default=0.0)
    if not (span > 0.0 and steps > 0.25 * span):
        return "spline"
    return "clamped" if nodes != DATA_ON_NODES else "constant"


def _solve_level(fields, prm, data, r, nodes):
    """The solution at the data points from a grid r times finer (nodes: (N - 1) r + 1 nodes,
    cells: N r cells; odd r keeps every data point a grid point)."""
    shape = tuple((len(d) - 1) * r + 1 if nodes else len(d) * r for d in data)
    grid = _layout(shape, nodes)
    at = {k: _apply(v, [_transfer(d, g, _field_interp(v, nodes)) for d, g in zip(data,
                                                                          grid["pts"])])
          for k, v in fields.items()}
    u = _solve_on(at, grid, prm)
    return _apply(u, [_transfer(g, d, "spline") for g, d in zip(grid["pts"], data)])


def _levels(shape, nodes):
    r = max(int(REFINE), 1)
    r += 1 - r % 2  # odd: the data points stay grid points
    while r > 1 and np.prod([(n - 1) * r + 1 if nodes else n * r for n in shape]) \\
            > MAX_POINTS.get(len(shape), MAX_POINTS[2]):
        r -= 2
    return [r - 2, r] if EXTRAPOLATE == "richardson" and r > 1 else [r]


def _solve_one(fields, prm, shape, pts):
    data = [_points(n, lo, hi, DATA_ON_NODES) for n, (lo, hi) in zip(shape, DOMAIN)]
    nodes = DATA_ON_NODES or GRID == "nodes"
    levels = _levels(shape, nodes)
    sols = [_solve_level(fields, prm, data, r, nodes) for r in levels]
    u = sols[-1]
    if len(sols) == 2:  # u_r = u + C (h/r)^p + ...: cancel the leading term
        p = 1 if CONVECTION == "upwind" else 2
        (r0, r1), (u0, u1) = levels, sols
        u = (r1**p * u1 - r0**p * u0) / (r1**p - r0**p)
    if pts is None:
        return u
    return _apply(u, [_transfer(d, q, "spline") for d, q in zip(data, pts)])
'''
