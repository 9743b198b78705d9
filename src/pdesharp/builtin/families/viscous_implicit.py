"""Implicit viscous step for 1D finite volumes: TR-BDF2 on frozen coefficients.

Why: a viscous time-step bound h^2/(2D) far below the advective one forces an explicit scheme
into tens of viscous steps per advective step (sub-cycling). Here the viscous part
``dt U = dx V(W, dx W)`` is split off (Strang) and solved implicitly: the unknowns Z whose
gradients V uses (``IMPLICIT``) obey ``dt Z = J dx(B dx Z)`` with B = dV/d(Z_x) at the faces
and J = dZ/dU at the cells frozen at the start of the step; TR-BDF2 (L-stable, second order)
solves it with one banded factorisation-sized solve per stage, and every conserved quantity is
then updated with the same stage weights, so mass, momentum and energy stay conserved.

Stability rule: none (L-stable); the step is the explicit parts' CFL step. Periodic corners of
the block-tridiagonal matrix are handled by the Woodbury identity.
"""

IMPLICIT_BLOCK = '''
# ---- block: implicit viscous step (TR-BDF2 on frozen coefficients, 1D) ----
from scipy.linalg import solve_banded as _solve_banded

_GAMMA = 2.0 - np.sqrt(2.0)  # TR-BDF2: trapezoid to gamma*tau, then BDF2 (stiffly accurate)
_DIAG = _GAMMA / 2.0
_WEIGHT = np.sqrt(2.0) / 4.0


def _ghosts(t, grid, prm):
    """Per implicit unknown and wall: Z_ghost = alpha * Z_edge + beta (outflow: 1, 0)."""
    h = grid["h"][0]
    out = np.zeros((len(IMPLICIT), 2, 2))
    out[:, :, 0] = 1.0
    if PERIODIC:
        return out
    conds = boundary_conditions(t, prm)
    for g, k in enumerate(IMPLICIT):
        for s in (0, 1):
            cond = conds[k][s]
            if cond is None:
                continue
            a, b, val = cond
            inner, outer = (0.5 * a + b / h, 0.5 * a - b / h) if s == 0 else \\
                (0.5 * a - b / h, 0.5 * a + b / h)
            out[g, s] = (-inner / outer, float(np.mean(val)) / outer)
    return out


def _viscous_operator(W, t, grid, prm):
    """CL, CR [G, G, B, n]: (A Z)_g,c = sum_k CR (Z_k,c+1 - Z_k,c) - CL (Z_k,c - Z_k,c-1)."""
    n, h = W.shape[-1], grid["h"][0]
    Wp = _pad(W, 0, t, grid, prm)
    Wf = 0.5 * (Wp[..., NG - 1: NG + n] + Wp[..., NG: NG + n + 1])
    Bf = np.array(viscous_matrix(Wf, grid["faces"][0], t, prm))  # [var, G, B, n + 1]
    J = np.array(primitive_jacobian(W, prm))  # [G, var, B, n]
    CL = np.einsum("gibc,ikbc->gkbc", J, Bf[..., :-1]) / h**2
    CR = np.einsum("gibc,ikbc->gkbc", J, Bf[..., 1:]) / h**2
    return CL, CR


def _neighbours(Z, ghost):
    if PERIODIC:
        return np.roll(Z, 1, -1), np.roll(Z, -1, -1)
    left = ghost[:, 0, 0, None] * Z[..., 0] + ghost[:, 0, 1, None]
    right = ghost[:, 1, 0, None] * Z[..., -1] + ghost[:, 1, 1, None]
    return (np.concatenate([left[..., None], Z[..., :-1]], -1),
            np.concatenate([Z[..., 1:], right[..., None]], -1))


def _apply(Z, ops, ghost):
    CL, CR = ops
    Zl, Zr = _neighbours(Z, ghost)
    return np.einsum("gkbc,kbc->gbc", CR, Zr - Z) - np.einsum("gkbc,kbc->gbc", CL, Z - Zl)


def _implicit_solve(ops, R, theta, ghost):
    """Z with (I - theta A) Z = R, ghost constants included (Woodbury for periodic corners)."""
    CL, CR = ops
    G, _, B, n = CL.shape
    u = 2 * G - 1
    size = B * n * G
    idx = (np.arange(B)[:, None, None] * n + np.arange(n)[None, :, None]) * G \\
        + np.arange(G)[None, None, :]  # [B, n, G] -> row
    ab = np.zeros((2 * u + 1, size))
    rhs = np.moveaxis(R, 0, -1).copy()  # [B, n, G]
    for g in range(G):
        for k in range(G):
            diag = (g == k) + theta * (CR[g, k] + CL[g, k]).copy()  # [B, n]
            if not PERIODIC:  # the ghost relation folds into the edge cells
                diag[:, 0] -= theta * CL[g, k, :, 0] * ghost[k, 0, 0]
                diag[:, -1] -= theta * CR[g, k, :, -1] * ghost[k, 1, 0]
                rhs[:, 0, g] += theta * CL[g, k, :, 0] * ghost[k, 0, 1]
                rhs[:, -1, g] += theta * CR[g, k, :, -1] * ghost[k, 1, 1]
            ab[u + g - k, idx[:, :, k].ravel()] = diag.ravel()
            ab[u + g - k - G, idx[:, 1:, k].ravel()] = -theta * CR[g, k, :, :-1].ravel()
            ab[u + g - k + G, idx[:, :-1, k].ravel()] = -theta * CL[g, k, :, 1:].ravel()
    if not PERIODIC:
        z = _solve_banded((u, u), ab, rhs.reshape(size))
        return np.moveaxis(z.reshape(B, n, G), -1, 0)
    # M = M_band + P Q^T: P picks the first and last cell of each sample, Q^T the corner terms
    cols = np.zeros((size, 2 * G))
    for j in range(G):
        cols[idx[:, 0, j], j] = 1.0
        cols[idx[:, -1, j], G + j] = 1.0
    sol = _solve_banded((u, u), ab, np.concatenate([rhs.reshape(size, 1), cols], axis=1))
    y = sol[:, 0].reshape(B, n, G)
    Zc = sol[:, 1:].reshape(B, n, G, 2 * G)

    def qt(V):  # Q^T V for V [B, n, G, m] -> [B, 2G, m]
        top = np.einsum("jkb,bkm->bjm", -theta * CL[:, :, :, 0], V[:, -1])
        bottom = np.einsum("jkb,bkm->bjm", -theta * CR[:, :, :, -1], V[:, 0])
        return np.concatenate([top, bottom], axis=1)

    S = np.eye(2 * G)[None] + qt(Zc)
    corr = np.linalg.solve(S, qt(y[..., None]))  # [B, 2G, 1]
    z = y - np.einsum("bngm,bm->bng", Zc, corr[..., 0])
    return np.moveaxis(z, -1, 0)


def _viscous_divergence(W, t, grid, prm):
    n, h = W.shape[-1], grid["h"][0]
    Wp = _pad(W, 0, t, grid, prm)
    V = _viscous_faces(Wp, n, h, grid["faces"][0], t, prm, 0)
    return (V[..., 1:] - V[..., :-1]) / h


def _viscous_implicit(U, t, tau, grid, prm):
    """Advance dt U = dx V over tau with TR-BDF2 (frozen coefficients); conservative update."""
    W0 = np.array(to_primitive(U, prm))
    ops = _viscous_operator(W0, t, grid, prm)
    Z0 = W0[IMPLICIT]
    g0, g1, g2 = (_ghosts(s, grid, prm) for s in (t, t + _GAMMA * tau, t + tau))
    f0 = _apply(Z0, ops, g0)
    Zg = _implicit_solve(ops, Z0 + _DIAG * tau * f0, _DIAG * tau, g1)
    fg = _apply(Zg, ops, g1)
    Z1 = _implicit_solve(ops, Z0 + _WEIGHT * tau * (f0 + fg), _DIAG * tau, g2)
    states = []
    for Z in (Z0, Zg, Z1):
        W = W0.copy()
        W[IMPLICIT] = Z
        states.append(W)
    times = (t, t + _GAMMA * tau, t + tau)
    R = [_viscous_divergence(W, s, grid, prm) for W, s in zip(states, times)]
    return U + tau * (_WEIGHT * (R[0] + R[1]) + _DIAG * R[2])
'''
