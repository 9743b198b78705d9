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

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.families.fv_kernels import locals_lines
from pdesharp.builtin.physics import LawFacts, npcode


def compiled_implicit(law: BalanceLaw, facts: LawFacts) -> str:
    """The compiled (Numba) TR-BDF2 step of the finite-volume family's compiled path (1D
    periodic): the same algorithm as IMPLICIT_BLOCK, sample by sample, the periodic
    block-tridiagonal system solved by block Thomas elimination instead of a banded LU with
    Woodbury corners (the two agree to round-off)."""
    return numba_implicit_physics(law, facts) + IMPLICIT_KERNELS


def numba_implicit_physics(law: BalanceLaw, facts: LawFacts) -> str:
    """viscous_matrix and primitive_jacobian of the NumPy path as scalar kernels (2D _out)."""
    imp = facts.implicit
    B = [[sp.diff(v, law.grads[0][j]) for j in imp] for v in law.viscous[0]]
    J = [[facts.dwdq[g, i] for i in range(law.nvar)] for g in imp]
    flat_b, flat_j = [e for row in B for e in row], [e for row in J for e in row]
    vmat = "".join(f"    _out[{i}, {k}] = {npcode(e)}\n" for i, row in enumerate(B)
                   for k, e in enumerate(row))
    pjac = "".join(f"    _out[{g}, {i}] = {npcode(e)}\n" for g, row in enumerate(J)
                   for i, e in enumerate(row))
    return (f"_IMPL = np.array({imp!r})  # IMPLICIT, as an array the kernels can index\n\n\n"
            "@_njit\ndef _k_vmat(_w, _x, _t, _P, _out):\n" + locals_lines(law, flat_b) + vmat
            + "\n\n@_njit\ndef _k_pjac(_w, _P, _out):\n" + locals_lines(law, flat_j) + pjac + "\n\n")


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

IMPLICIT_KERNELS = '''
# ---- block: compiled TR-BDF2 viscous step (1D periodic; _viscous_implicit of the NumPy path) --


@_njit
def _nb_gauss(M, R):
    """Solve M X = R in place (small dense G x G, partial pivoting); X is left in R."""
    G = M.shape[0]
    for j in range(G):
        piv = j
        for r in range(j + 1, G):
            if abs(M[r, j]) > abs(M[piv, j]):
                piv = r
        if piv != j:
            for c in range(G):
                tmp = M[j, c]
                M[j, c] = M[piv, c]
                M[piv, c] = tmp
            for c in range(R.shape[1]):
                tmp = R[j, c]
                R[j, c] = R[piv, c]
                R[piv, c] = tmp
        for r in range(j + 1, G):
            f = M[r, j] / M[j, j]
            for c in range(j, G):
                M[r, c] -= f * M[j, c]
            for c in range(R.shape[1]):
                R[r, c] -= f * R[j, c]
    for j in range(G - 1, -1, -1):
        for c in range(R.shape[1]):
            acc = R[j, c]
            for k in range(j + 1, G):
                acc -= M[j, k] * R[k, c]
            R[j, c] = acc / M[j, j]


@_njit
def _nb_cyclic_solve(CL, CR, theta, R, Z):
    """Z with (I - theta A) Z = R for one sample: the periodic block-tridiagonal system of
    _implicit_solve, by block Thomas elimination of Z_0..Z_{n-2} with the last cell's unknowns as
    extra right-hand sides (Z_c = X_c + Y_c Z_{n-1}), then the last row for Z_{n-1}."""
    G, n = R.shape
    m, q = n - 1, 1 + G
    Cp, dp = np.zeros((m, G, G)), np.zeros((m, G, q))
    M, rhs, Mt = np.empty((G, G)), np.empty((G, q + G)), np.empty((G, G))
    for c in range(m):
        for g in range(G):
            for k in range(G):  # M = D_c - L_c Cp_{c-1}
                M[g, k] = (1.0 if g == k else 0.0) + theta * (CR[g, k, c] + CL[g, k, c])
                if c > 0:
                    for j in range(G):
                        M[g, k] += theta * CL[g, j, c] * Cp[c - 1, j, k]
            rhs[g, 0] = R[g, c]  # [r_c | -E_c] - L_c dp_{c-1}, then U_c for Cp
            for k in range(G):
                e = 0.0
                if c == 0:
                    e += -theta * CL[g, k, 0]
                if c == m - 1:
                    e += -theta * CR[g, k, m - 1]
                rhs[g, 1 + k] = -e
                rhs[g, q + k] = -theta * CR[g, k, c]
            if c > 0:
                for j in range(G):
                    for col in range(q):
                        rhs[g, col] += theta * CL[g, j, c] * dp[c - 1, j, col]
        _nb_gauss(M, rhs)
        for g in range(G):
            for col in range(q):
                dp[c, g, col] = rhs[g, col]
            for k in range(G):
                Cp[c, g, k] = rhs[g, q + k]
    for c in range(m - 2, -1, -1):  # back substitution: dp becomes [X_c | Y_c]
        for g in range(G):
            for col in range(q):
                acc = dp[c, g, col]
                for k in range(G):
                    acc -= Cp[c, g, k] * dp[c + 1, k, col]
                dp[c, g, col] = acc
    last = n - 1  # L_last Z_{n-2} + D_last Z_last + U_last Z_0 = R_last
    sol = np.empty((G, 1))
    for g in range(G):
        s = R[g, last]
        for k in range(G):
            Mt[g, k] = (1.0 if g == k else 0.0) + theta * (CR[g, k, last] + CL[g, k, last])
            s += theta * CL[g, k, last] * dp[m - 1, k, 0] + theta * CR[g, k, last] * dp[0, k, 0]
            for j in range(G):
                Mt[g, k] -= theta * CL[g, j, last] * dp[m - 1, j, 1 + k] + \\
                    theta * CR[g, j, last] * dp[0, j, 1 + k]
        sol[g, 0] = s
    _nb_gauss(Mt, sol)
    for g in range(G):
        Z[g, last] = sol[g, 0]
    for c in range(m):
        for g in range(G):
            acc = dp[c, g, 0]
            for k in range(G):
                acc += dp[c, g, 1 + k] * sol[k, 0]
            Z[g, c] = acc


@_njit
def _nb_apply(CL, CR, Z, out):
    """(A Z) of _apply: sum_k CR (Z_k,c+1 - Z_k,c) - CL (Z_k,c - Z_k,c-1), periodic."""
    G, n = Z.shape
    for g in range(G):
        for c in range(n):
            a, b = 0.0, 0.0
            for k in range(G):
                a += CR[g, k, c] * (Z[k, (c + 1) % n] - Z[k, c])
                b += CL[g, k, c] * (Z[k, c] - Z[k, (c - 1) % n])
            out[g, c] = a - b


@_njit
def _nb_viscous_div(W0, Z, t, P, xf, h, W, out):
    """_viscous_divergence of one sample into out: the state W0 [var, n] with the implicit
    unknowns replaced by Z (W is scratch), periodic."""
    nv, n = W.shape
    for k in range(nv):
        for c in range(n):
            W[k, c] = W0[k, c]
    for g in range(_IMPL.size):
        for c in range(n):
            W[_IMPL[g], c] = Z[g, c]
    wm, g, v = np.empty(nv), np.empty(nv), np.empty(nv)
    V = np.empty((nv, n + 1))
    for f in range(n + 1):
        left, right = (f - 1) % n, f % n
        for k in range(nv):
            wm[k] = 0.5 * (W[k, left] + W[k, right])
            g[k] = (W[k, right] - W[k, left]) / h
        _k_vflux(wm, g, xf[f], t, P, v)
        for k in range(nv):
            V[k, f] = v[k]
    for k in range(nv):
        for c in range(n):
            out[k, c] = (V[k, c + 1] - V[k, c]) / h


@_njit
def _nb_operator(U, b, t, P, xf, h, W0, CL, CR):
    """Sample b's primitive state into W0 and the frozen operator CL, CR of _viscous_operator."""
    nv, n = W0.shape
    G = _IMPL.size
    u, w = np.empty(nv), np.empty(nv)
    bl, br, jm = np.empty((nv, G)), np.empty((nv, G)), np.empty((G, nv))
    for c in range(n):
        for k in range(nv):
            u[k] = U[k, b, c]
        _k_prim(u, P, w)
        for k in range(nv):
            W0[k, c] = w[k]
    for c in range(n):  # faces c (left of cell c) and c + 1, periodic
        for k in range(nv):
            w[k] = 0.5 * (W0[k, (c - 1) % n] + W0[k, c])
        _k_vmat(w, xf[c], t, P, bl)
        for k in range(nv):
            w[k] = 0.5 * (W0[k, c] + W0[k, (c + 1) % n])
        _k_vmat(w, xf[c + 1], t, P, br)
        for k in range(nv):
            w[k] = W0[k, c]
        _k_pjac(w, P, jm)
        for g in range(G):
            for k in range(G):
                sl, sr = 0.0, 0.0
                for i in range(nv):
                    sl += jm[g, i] * bl[i, k]
                    sr += jm[g, i] * br[i, k]
                CL[g, k, c] = sl / h ** 2
                CR[g, k, c] = sr / h ** 2


@_njit
def _nb_combine(A, a, B, b, C, out):
    """out = A + a * (b * B + C) elementwise (2D): the TR-BDF2 stage right-hand sides."""
    for g in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[g, c] = A[g, c] + a * (b * B[g, c] + C[g, c])


@_njit
def _nb_viscous_implicit(U, t, tau, P, xf, h):
    """TR-BDF2 on frozen coefficients over tau, sample by sample; conservative update."""
    nv, B, n = U.shape
    G = _IMPL.size
    gamma = 2.0 - 2.0 ** 0.5
    diag, weight = gamma / 2.0, 2.0 ** 0.5 / 4.0
    out = np.empty_like(U)
    W0, W = np.empty((nv, n)), np.empty((nv, n))
    CL, CR = np.empty((G, G, n)), np.empty((G, G, n))
    Z0, Zg, Z1 = np.empty((G, n)), np.empty((G, n)), np.empty((G, n))
    f0, fg, R, zero = np.empty((G, n)), np.empty((G, n)), np.empty((G, n)), np.zeros((G, n))
    D0, Dg, D1 = np.empty((nv, n)), np.empty((nv, n)), np.empty((nv, n))
    for b in range(B):
        _nb_operator(U, b, t, P, xf, h, W0, CL, CR)
        for g in range(G):
            for c in range(n):
                Z0[g, c] = W0[_IMPL[g], c]
        _nb_apply(CL, CR, Z0, f0)
        _nb_combine(Z0, diag * tau, f0, 1.0, zero, R)
        _nb_cyclic_solve(CL, CR, diag * tau, R, Zg)
        _nb_apply(CL, CR, Zg, fg)
        _nb_combine(Z0, weight * tau, f0, 1.0, fg, R)
        _nb_cyclic_solve(CL, CR, diag * tau, R, Z1)
        _nb_viscous_div(W0, Z0, t, P, xf, h, W, D0)
        _nb_viscous_div(W0, Zg, t + gamma * tau, P, xf, h, W, Dg)
        _nb_viscous_div(W0, Z1, t + tau, P, xf, h, W, D1)
        for k in range(nv):
            for c in range(n):
                out[k, b, c] = U[k, b, c] + tau * (weight * (D0[k, c] + Dg[k, c])
                                                   + diag * D1[k, c])
    return out
'''
