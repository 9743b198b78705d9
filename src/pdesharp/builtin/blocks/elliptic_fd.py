# ---- block: steady -div(K grad u) + c u = f, five-point stencil, sparse direct solve ----
import scipy.sparse as _sps
import scipy.sparse.linalg as _spla
from scipy.interpolate import RectBivariateSpline as _Spline


def _face_mean(k1, k2):
    """Face conductivity from the two neighbouring values (FACE_MEAN: arithmetic or harmonic)."""
    if FACE_MEAN == "harmonic":
        return 2.0 * k1 * k2 / np.where(k1 + k2 != 0.0, k1 + k2, 1.0)
    return 0.5 * (k1 + k2)


def _assemble(Kx, Ky, c, f, hx, hy, wall_x, wall_y, g):
    """Matrix and right-hand side on an n x m block of unknowns.

    ``wall_x`` is the distance from the outermost unknown to the wall along x, in units of hx
    (1 for a node grid, where the wall is the next node; 1/2 for cell centres). Boundary faces
    use the unknown's own conductivity, which is what a ghost value at the wall means.
    """
    n, m = Kx.shape
    idx = np.arange(n * m).reshape(n, m)
    diag = np.asarray(c, dtype=np.float64) * np.ones((n, m))
    rhs = np.asarray(f, dtype=np.float64) * np.ones((n, m))
    rows, cols, vals = [], [], []
    for K, h, wall, axis in ((Kx, hx, wall_x, 0), (Ky, hy, wall_y, 1)):
        lo = [slice(None)] * 2
        hi = [slice(None)] * 2
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        kf = _face_mean(K[tuple(lo)], K[tuple(hi)]) / h**2
        a, b = idx[tuple(lo)].ravel(), idx[tuple(hi)].ravel()
        rows += [a, b]
        cols += [b, a]
        vals += [-kf.ravel(), -kf.ravel()]
        diag[tuple(lo)] += kf
        diag[tuple(hi)] += kf
        for edge in (0, -1):
            sel = [slice(None)] * 2
            sel[axis] = edge
            kb = K[tuple(sel)] / (wall * h * h)
            diag[tuple(sel)] += kb
            rhs[tuple(sel)] += kb * g
    A = _sps.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(n * m, n * m)) + _sps.diags(diag.ravel())
    return A.tocsc(), rhs.ravel()


def _solve_one(fields):
    """u at the cell centres for one sample; ``fields`` maps coefficient names to [n, m] arrays."""
    n, m = next(iter(fields.values())).shape
    (x0, x1), (y0, y1) = DOMAIN
    xc = x0 + (np.arange(n) + 0.5) * (x1 - x0) / n
    yc = y0 + (np.arange(m) + 0.5) * (y1 - y0) / m
    if GRID == "nodes":
        # nodes spanning the closed domain; coefficients moved there by a bicubic spline
        xn, yn = np.linspace(x0, x1, n), np.linspace(y0, y1, m)
        at = {k: _Spline(xc, yc, v, bbox=[x0, x1, y0, y1])(xn, yn) for k, v in fields.items()}
        X, Y = np.meshgrid(xn, yn, indexing="ij")
        Kx, Ky, c, f = coefficients(at, X, Y)
        hx, hy = (x1 - x0) / (n - 1), (y1 - y0) / (m - 1)
        inner = (slice(1, -1), slice(1, -1))
        # the wall nodes are Dirichlet data; face means need the neighbouring wall value of K
        A, b = _assemble_nodes(Kx, Ky, c, f, hx, hy)
        un = np.full((n, m), BOUNDARY_VALUE)
        un[inner] = _spla.spsolve(A, b).reshape(n - 2, m - 2)
        return _Spline(xn, yn, un)(xc, yc)
    X, Y = np.meshgrid(xc, yc, indexing="ij")
    Kx, Ky, c, f = coefficients(fields, X, Y)
    A, b = _assemble(Kx, Ky, c, f, (x1 - x0) / n, (y1 - y0) / m, 0.5, 0.5, BOUNDARY_VALUE)
    return _spla.spsolve(A, b).reshape(n, m)


def _assemble_nodes(Kx, Ky, c, f, hx, hy):
    """Node-grid system for the interior nodes, with face means that include wall nodes."""
    n, m = Kx.shape
    ni, mi = n - 2, m - 2
    idx = np.arange(ni * mi).reshape(ni, mi)
    diag = (np.asarray(c, dtype=np.float64) * np.ones((n, m)))[1:-1, 1:-1].copy()
    rhs = (np.asarray(f, dtype=np.float64) * np.ones((n, m)))[1:-1, 1:-1].copy()
    rows, cols, vals = [], [], []
    g = BOUNDARY_VALUE
    for K, h, axis in ((Kx, hx, 0), (Ky, hy, 1)):
        Ki = K[1:-1, 1:-1]
        if axis == 0:
            kp, km = _face_mean(Ki, K[2:, 1:-1]) / h**2, _face_mean(Ki, K[:-2, 1:-1]) / h**2
        else:
            kp, km = _face_mean(Ki, K[1:-1, 2:]) / h**2, _face_mean(Ki, K[1:-1, :-2]) / h**2
        diag += kp + km
        lo = [slice(None)] * 2
        hi = [slice(None)] * 2
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        a, b = idx[tuple(lo)].ravel(), idx[tuple(hi)].ravel()
        kf = kp[tuple(lo)].ravel()
        rows += [a, b]
        cols += [b, a]
        vals += [-kf, -kf]
        first = [slice(None)] * 2
        last = [slice(None)] * 2
        first[axis], last[axis] = 0, -1
        rhs[tuple(first)] += km[tuple(first)] * g
        rhs[tuple(last)] += kp[tuple(last)] * g
    A = _sps.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(ni * mi, ni * mi)) + _sps.diags(diag.ravel())
    return A.tocsc(), rhs.ravel()


def _solve_batch(fields):
    first = np.asarray(next(iter(fields.values())))
    out = np.empty(first.shape, dtype=np.float64)
    for s in range(first.shape[0]):
        out[s] = _solve_one({k: np.asarray(v[s], dtype=np.float64) for k, v in fields.items()})
    return out
