"""Darcy flow reference data in the FNO convention (CodePDE's darcy task).

Problem: -div(a grad u) = 1 on (0,1)^2, u = 0 on the boundary, on an s x s grid (s = 421 for the
FNO ``piececonst_r421`` data CodePDE scores against).

Coefficient (``generate``): a Gaussian random field (:mod:`.grf`, alpha = 2, tau = 3) thresholded
to ``high`` where it is >= 0 and ``low`` elsewhere. The FNO paper states 12 / 3 (our default);
CodePDE's Python port of the generator uses 12 / 4.

Solution (``solve``), the FNO ``solve_gwf`` method, which defines the reference values:

1. the s x s coefficient values sit at the cell centres (i + 1/2)/s;
2. a bicubic interpolating spline moves them to the s x s nodes j/(s-1) that span [0,1]^2;
3. on the nodes, a 5-point finite-difference system with arithmetic face averages of the nodal
   coefficient, scaled by (s-1)^2, with u = 0 on the boundary nodes, is solved directly;
4. the nodal solution is splined back to the cell centres, so ``sol[k, i, j]`` and
   ``coeff[k, i, j]`` refer to the same point (the published port transposes twice; the net
   orientation is this one) and ``sol`` is small but not zero on its outer ring.

Everything is computed in float64; ``generate`` returns float32 as the data files store.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.interpolate import RectBivariateSpline
from scipy.sparse.linalg import spsolve

from pdesharp.data.generate.grf import sample_grf

BATCH = 1  # samples per batch of `pdesharp data generate`: one sparse solve each
ATTRS = {
    "method": "FNO solve_gwf: cell-centre coefficient -> bicubic spline to nodes -> 5-point FD "
              "(arithmetic face means, (s-1)^2 scaling, u=0 on boundary nodes) -> spline back",
    "grf": "alpha=2, tau=3, zero-Neumann cosine series, legacy NumPy RandomState normals, one "
           "s x s block per sample",
    "forcing": 1.0,
    "precision": "float64 computation, float32 storage",
}


def centre_coordinates(s: int) -> np.ndarray:
    """The s cell centres (i + 1/2)/s of [0, 1]."""
    return np.linspace(1.0 / (2 * s), (2 * s - 1) / (2 * s), s)


def node_coordinates(s: int) -> np.ndarray:
    """The s nodes j/(s-1) of [0, 1], boundary included."""
    return np.linspace(0.0, 1.0, s)


def fd_matrix(a_nodes: np.ndarray) -> sparse.csc_matrix:
    """5-point matrix of -div(a grad .) on the interior nodes, row-major (i, j) ordering.

    Face coefficients are arithmetic means of the two nodal values; the whole matrix is scaled
    by (s-1)^2 (h = 1/(s-1)). Boundary nodes carry u = 0 and are eliminated.
    """
    s = a_nodes.shape[0]
    n = s - 2
    a = a_nodes
    centre = a[1:-1, 1:-1]
    # Face coefficients between each interior node and its four neighbours.
    west = (a[:-2, 1:-1] + centre) / 2
    east = (a[2:, 1:-1] + centre) / 2
    south = (a[1:-1, :-2] + centre) / 2
    north = (a[1:-1, 2:] + centre) / 2
    diag = (west + east + south + north).ravel()
    idx = np.arange(n * n).reshape(n, n)
    # Coupling (i, j) -- (i+1, j): face coefficient east[i, j], for i < n-1.
    c_i = -east[:-1, :].ravel()
    r_i, q_i = idx[:-1, :].ravel(), idx[1:, :].ravel()
    # Coupling (i, j) -- (i, j+1): face coefficient north[i, j], for j < n-1.
    c_j = -north[:, :-1].ravel()
    r_j, q_j = idx[:, :-1].ravel(), idx[:, 1:].ravel()
    rows = np.concatenate([idx.ravel(), r_i, q_i, r_j, q_j])
    cols = np.concatenate([idx.ravel(), q_i, r_i, q_j, r_j])
    vals = np.concatenate([diag, c_i, c_i, c_j, c_j]) * float((s - 1) ** 2)
    return sparse.csc_matrix((vals, (rows, cols)), shape=(n * n, n * n))


def solve_one(coeff: np.ndarray, forcing: float = 1.0) -> np.ndarray:
    """FNO ``solve_gwf`` for one [s, s] cell-centre coefficient; returns u at the cell centres."""
    a = np.asarray(coeff, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 4:
        raise ValueError(f"coefficient must be a square [s, s] array with s >= 4, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("coefficient contains NaN or Inf")
    s = a.shape[0]
    xc, xn = centre_coordinates(s), node_coordinates(s)
    # FITPACK clamps evaluation points outside the data range, so the nodes at 0 and 1 get the
    # spline's values at the outermost centres; this is what the reference data contain.
    a_nodes = RectBivariateSpline(xc, xc, a, kx=3, ky=3)(xn, xn, grid=True)
    rhs = np.full((s - 2) * (s - 2), float(forcing))
    # The matrix is structurally symmetric; a minimum-degree ordering on A^T + A is about 1.5x
    # faster than SciPy's default COLAMD here and agrees with it to ~1e-12 relative.
    u_inner = spsolve(fd_matrix(a_nodes), rhs, permc_spec="MMD_AT_PLUS_A")
    u_nodes = np.zeros((s, s))
    u_nodes[1:-1, 1:-1] = u_inner.reshape(s - 2, s - 2)
    return RectBivariateSpline(xn, xn, u_nodes, kx=3, ky=3)(xc, xc, grid=True)


def solve(coeff: np.ndarray, forcing: float = 1.0) -> np.ndarray:
    """[B, s, s] (or [s, s]) cell-centre coefficients -> solutions of the same shape, float64."""
    a = np.asarray(coeff)
    if a.ndim == 2:
        return solve_one(a, forcing)
    if a.ndim != 3:
        raise ValueError(f"coefficients must be [B, s, s] or [s, s], got shape {a.shape}")
    return np.stack([solve_one(a[k], forcing) for k in range(a.shape[0])])


def threshold(field: np.ndarray, low: float, high: float) -> np.ndarray:
    """Piecewise-constant coefficient: ``high`` where ``field >= 0``, ``low`` elsewhere."""
    return np.where(field >= 0, float(high), float(low))


def generate(n_samples: int, seed: int, params: dict[str, float] | None = None, nx: int = 421, *,
             low: float = 3.0, high: float = 12.0, alpha: float = 2.0, tau: float = 3.0,
             sample_range: tuple[int, int] | None = None,
             **options: object) -> dict[str, np.ndarray]:
    """``n_samples`` FNO-convention Darcy samples: {"coeff", "sol"}: [B, nx, nx] float32.

    The random stream is NumPy's legacy generator seeded once with ``seed`` (as
    ``np.random.seed(seed)`` would, without touching global state); sample k uses the k-th
    nx x nx block of normals. ``params`` may carry ``low``/``high``/``alpha``/``tau`` too (for the
    CLI); keyword arguments given explicitly take precedence over the defaults only.
    ``sample_range=(a, b)`` draws all ``n_samples`` fields but solves and returns samples a..b-1.
    """
    if options:
        raise TypeError(f"unknown darcy generator option(s): {', '.join(sorted(options))}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    p = dict(params or {})
    low = float(p.pop("low", low))
    high = float(p.pop("high", high))
    alpha = float(p.pop("alpha", alpha))
    tau = float(p.pop("tau", tau))
    p.pop("beta", None)  # the task's nominal parameter; the forcing is 1 by definition
    if p:
        raise ValueError(f"unknown darcy parameter(s): {', '.join(sorted(p))}")
    if not (low > 0 and high > 0):
        raise ValueError(f"coefficient values must be positive, got low={low}, high={high}")
    rng = np.random.RandomState(seed)
    field = sample_grf(n_samples, nx, rng, alpha, tau)
    coeff = threshold(field, low, high)
    if sample_range is not None:
        coeff = coeff[slice(*sample_range)]
    sol = solve(coeff)
    return {"coeff": coeff.astype(np.float32), "sol": sol.astype(np.float32)}


__all__ = ["ATTRS", "centre_coordinates", "fd_matrix", "generate", "node_coordinates", "solve",
           "solve_one", "threshold"]
