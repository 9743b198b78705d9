"""Darcy flow -div(a grad u) = 1 by a 5-point finite-volume scheme on the N x N cell centres of
(0,1)^2, arithmetic face means of a, and u = 0 on the walls half a cell beyond the outermost
centres; a sparse direct solve per sample."""
import numpy as np
import scipy.sparse as sps
from scipy.sparse.linalg import spsolve


def _solve_one(a):
    n = a.shape[0]
    h = 1.0 / n
    idx = np.arange(n * n).reshape(n, n)
    diag = np.zeros((n, n))
    rows, cols, vals = [], [], []
    for axis in (0, 1):
        lo = [slice(None)] * 2
        hi = [slice(None)] * 2
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        face = 0.5 * (a[tuple(lo)] + a[tuple(hi)]) / h**2  # interior faces
        diag[tuple(lo)] += face
        diag[tuple(hi)] += face
        rows += [idx[tuple(lo)].ravel(), idx[tuple(hi)].ravel()]
        cols += [idx[tuple(hi)].ravel(), idx[tuple(lo)].ravel()]
        vals += [-face.ravel(), -face.ravel()]
        # wall faces: u = 0 at distance h/2 from the outermost centres
        first = [slice(None)] * 2
        last = [slice(None)] * 2
        first[axis], last[axis] = 0, -1
        diag[tuple(first)] += a[tuple(first)] / (h * h / 2)
        diag[tuple(last)] += a[tuple(last)] / (h * h / 2)
    rows.append(idx.ravel())
    cols.append(idx.ravel())
    vals.append(diag.ravel())
    mat = sps.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n * n, n * n))
    return spsolve(mat, np.ones(n * n)).reshape(n, n)


def solver(a):
    a = np.asarray(a, dtype=np.float64)
    return np.stack([_solve_one(s) for s in a])
