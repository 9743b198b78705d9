"""Compiled (Numba) path of the finite-volume family: the same scheme, as loops.

Why: the NumPy path runs ~20 array passes per Runge-Kutta stage, each over the whole batch, so
per-step interpreter overhead dominates on 1D grids of ~1000 cells (Burgers with explicit
viscous terms takes ~33,000 steps). Here one compiled call advances the whole batch from one
output time to the next: the loops run over the batch inside the kernel (serial; the machine's
cores are the evaluator's business), and the step rule, reconstruction, Riemann solver and
Runge-Kutta stages are the NumPy path's formulas in the same order, so both paths agree to
round-off (tests/builtin/test_fv_kernels.py).

Generic: the physics (conserved <-> primitive maps, flux, wave speeds, viscous flux,
diffusivity, source) is emitted from the same SymPy expressions as the NumPy functions, as small
scalar ``@njit`` functions that write into a per-cell buffer; nothing depends on the task.

Scope, and why not more: 1D periodic boxes, with closed-form eigenvalues of dF/dU. Walls need
the task's time-dependent boundary data each stage (a Python function) and 2D is done dimension
by dimension over moved axes; both keep the NumPy path (``COMPILED = False`` in the solver, and
numba is then not even imported, so no import time is paid). The implicit TR-BDF2 viscous step
stays NumPy/SciPy (one banded solve per stage); the explicit stages around it are compiled. If
Numba is not importable, or cannot type an emitted expression (a Piecewise, say), the solver
runs the NumPy path and says so in ``KERNEL_USED``.
"""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.physics import LawFacts, npcode, safe


def compiled_supported(law: BalanceLaw, facts: LawFacts) -> bool:
    """Whether the compiled path covers this law (see the module docstring for why not all)."""
    return (law.dim == 1 and law.periodic and not law.has_high
            and (not law.has_flux or facts.eigenvalues[0] is not None))


# ---- physics as scalar kernels ------------------------------------------------------------------
def _locals(law: BalanceLaw, exprs, *, prims: str | None = "_w", cons: list | None = None,
            grads: str | None = None) -> str:
    """Lines binding the names ``exprs`` use: unknowns from ``_w[k]``, parameters from
    ``_P[i]``, the coordinate from ``_x``, the time from ``_t``."""
    used = set().union(*[sp.sympify(e).free_symbols for e in exprs]) if exprs else set()
    out = []
    if cons is not None:
        out += [f"    {safe(s.name)} = _u[{k}]" for k, s in enumerate(cons) if s in used]
    if prims is not None:
        out += [f"    {safe(s.name)} = _w[{k}]" for k, s in enumerate(law.prims) if s in used]
    if grads is not None:
        out += [f"    {safe(s.name)} = _g[{k}]" for k, s in enumerate(law.grads[0]) if s in used]
    out += [f"    {safe(s.name)} = _P[{i}]" for i, s in enumerate(law.params) if s in used]
    out += [f"    {safe(c.name)} = _x" for c in law.coords if c in used]
    if law.t in used:
        out.append(f"    {safe(law.t.name)} = _t")
    return "".join(line + "\n" for line in out)


def _writer(head: str, law: BalanceLaw, exprs, **kw) -> str:
    body = "".join(f"    _out[{k}] = {npcode(e)}\n" for k, e in enumerate(exprs))
    return f"@_njit\ndef {head}:\n" + _locals(law, exprs, **kw) + body + "\n\n"


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
            "@_njit\ndef _k_vmat(_w, _x, _t, _P, _out):\n" + _locals(law, flat_b) + vmat
            + "\n\n@_njit\ndef _k_pjac(_w, _P, _out):\n" + _locals(law, flat_j) + pjac + "\n\n")


def numba_physics(law: BalanceLaw, facts: LawFacts) -> str:
    """Scalar @njit physics: one cell (or face) per call, results into ``_out``."""
    out = ["# ---- physics as compiled scalar kernels (same SymPy expressions as above) ----\n",
           f"PARAMS = {[p.name for p in law.params]!r}  # the order of _P\n\n\n"]
    out.append(_writer("_k_cons(_w, _P, _out)", law, law.q))
    out.append(_writer("_k_prim(_u, _P, _out)", law, facts.to_prim, prims=None,
                       cons=facts.cons_symbols))
    if law.has_flux:
        out.append(_writer("_k_flux(_w, _x, _t, _P, _out)", law, law.flux[0]))
        ev = facts.eigenvalues[0]
        lam = "".join(f"    _l{k} = {npcode(e)}\n" for k, e in enumerate(ev))
        names = ", ".join(f"_l{k}" for k in range(len(ev)))
        pair = (f"min({names}), max({names})" if len(ev) > 1 else f"{names}, {names}")
        out.append("@_njit\ndef _k_speeds(_w, _x, _t, _P):\n" + _locals(law, ev) + lam
                   + f"    return {pair}\n\n\n")
    else:
        out.append(_STUB_FLUX)
    if law.has_viscous:
        out.append(_writer("_k_vflux(_w, _g, _x, _t, _P, _out)", law, law.viscous[0],
                           grads="_g"))
        dif = facts.diffusivity[0] or [sp.Abs(e) for e in facts.diffusion_matrix[0]]
        terms = ", ".join(f"abs({npcode(e)})" for e in dif)
        out.append("@_njit\ndef _k_diff(_w, _x, _t, _P):\n" + _locals(law, dif)
                   + (f"    return max({terms})\n\n\n" if len(dif) > 1 else
                      f"    return {terms}\n\n\n"))
    else:
        out.append(_STUB_VISCOUS)
    if law.has_source:
        out.append(_writer("_k_source(_w, _x, _t, _P, _out)", law, law.source))
    else:
        out.append(_STUB_SOURCE)
    return "".join(out)


_STUB_FLUX = '''@_njit
def _k_flux(_w, _x, _t, _P, _out):  # no flux: never called (HAS_FLUX is False)
    _out[:] = 0.0


@_njit
def _k_speeds(_w, _x, _t, _P):
    return 0.0, 0.0


'''
_STUB_VISCOUS = '''@_njit
def _k_vflux(_w, _g, _x, _t, _P, _out):  # no viscous flux: never called
    _out[:] = 0.0


@_njit
def _k_diff(_w, _x, _t, _P):
    return 0.0


'''
_STUB_SOURCE = '''@_njit
def _k_source(_w, _x, _t, _P, _out):  # no source: never called
    _out[:] = 0.0


'''

NJIT = '''
# ---- block: compiled kernels (1D periodic; the batch loop runs inside each kernel) ----
_RECON = ("first", "muscl", "weno5").index(RECONSTRUCTION)  # integers: numba folds them
_LIMIT = ("minmod", "van_leer", "mc", "none").index(LIMITER)
_HLL = RIEMANN == "hll"
_RK = ("euler", "rk2mid", "ssprk2", "ssprk3", "rk4").index(INTEGRATOR)
KERNEL_USED = "numba" if USE_NUMBA else "numpy"  # set to "numpy" if numba cannot compile


def _njit(f):
    """Compiled lazily at the first call when the compiled path is on; else never called."""
    return numba.njit(f) if USE_NUMBA else f

'''

KERNELS = '''

@_njit
def _nb_slope(dl, dr):
    """_limited_slope of the NumPy path, one cell."""
    if _LIMIT == 3:
        return 0.5 * (dl + dr)
    if not dl * dr > 0.0:
        return 0.0
    if _LIMIT == 0:
        return np.sign(dl) * min(abs(dl), abs(dr))
    if _LIMIT == 1:
        return 2.0 * dl * dr / (dl + dr)
    dc = 0.5 * (dl + dr)
    return np.sign(dc) * min(abs(dc), 2.0 * min(abs(dl), abs(dr)))


@_njit
def _nb_weno5(vm2, vm1, v0, vp1, vp2):
    """_weno5_face of the NumPy path, one face."""
    eps = 1e-12
    b0 = 13 / 12 * (vm2 - 2 * vm1 + v0) ** 2 + 0.25 * (vm2 - 4 * vm1 + 3 * v0) ** 2
    b1 = 13 / 12 * (vm1 - 2 * v0 + vp1) ** 2 + 0.25 * (vm1 - vp1) ** 2
    b2 = 13 / 12 * (v0 - 2 * vp1 + vp2) ** 2 + 0.25 * (3 * v0 - 4 * vp1 + vp2) ** 2
    a0, a1, a2 = 0.1 / (eps + b0) ** 2, 0.6 / (eps + b1) ** 2, 0.3 / (eps + b2) ** 2
    p0 = (2 * vm2 - 7 * vm1 + 11 * v0) / 6
    p1 = (-vm1 + 5 * v0 + 2 * vp1) / 6
    p2 = (2 * v0 + 5 * vp1 - vp2) / 6
    return (a0 * p0 + a1 * p1 + a2 * p2) / (a0 + a1 + a2)


@_njit
def _nb_rhs(U, t, P, xc, xf, h, viscous, dU):
    """_rhs of the NumPy path into dU, sample by sample (periodic ghosts by index)."""
    nv, B, n = U.shape
    m = n + 2 * NG
    Wp = np.empty((nv, m))
    u, w, wl, wr = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    ul, ur, fl, fr, g = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    F, V = np.zeros((nv, n + 1)), np.zeros((nv, n + 1))
    for b in range(B):
        for i in range(m):
            c = (i - NG) % n
            for k in range(nv):
                u[k] = U[k, b, c]
            _k_prim(u, P, w)
            for k in range(nv):
                Wp[k, i] = w[k]
        for f in range(n + 1):
            i = NG - 1 + f  # the cell left of face f
            if HAS_FLUX:
                for k in range(nv):
                    if _RECON == 0:
                        wl[k], wr[k] = Wp[k, i], Wp[k, i + 1]
                    elif _RECON == 2:
                        wl[k] = _nb_weno5(Wp[k, i - 2], Wp[k, i - 1], Wp[k, i], Wp[k, i + 1],
                                          Wp[k, i + 2])
                        wr[k] = _nb_weno5(Wp[k, i + 3], Wp[k, i + 2], Wp[k, i + 1], Wp[k, i],
                                          Wp[k, i - 1])
                    else:
                        sl = _nb_slope(Wp[k, i] - Wp[k, i - 1], Wp[k, i + 1] - Wp[k, i])
                        sr = _nb_slope(Wp[k, i + 1] - Wp[k, i], Wp[k, i + 2] - Wp[k, i + 1])
                        wl[k] = Wp[k, i] + 0.5 * sl
                        wr[k] = Wp[k, i + 1] - 0.5 * sr
                _k_cons(wl, P, ul)
                _k_cons(wr, P, ur)
                _k_flux(wl, xf[f], t, P, fl)
                _k_flux(wr, xf[f], t, P, fr)
                lminl, lmaxl = _k_speeds(wl, xf[f], t, P)
                lminr, lmaxr = _k_speeds(wr, xf[f], t, P)
                if _HLL:
                    sL = min(min(lminl, lminr), 0.0)
                    sR = max(max(lmaxl, lmaxr), 0.0)
                    width = sR - sL if sR - sL > 0.0 else 1.0
                    for k in range(nv):
                        F[k, f] = (sR * fl[k] - sL * fr[k] + sL * sR * (ur[k] - ul[k])) / width
                else:
                    a = max(max(abs(lminl), abs(lmaxl)), max(abs(lminr), abs(lmaxr)))
                    for k in range(nv):
                        F[k, f] = 0.5 * (fl[k] + fr[k]) - 0.5 * a * (ur[k] - ul[k])
            if HAS_VISCOUS and viscous:
                for k in range(nv):
                    wl[k] = 0.5 * (Wp[k, i] + Wp[k, i + 1])
                    g[k] = (Wp[k, i + 1] - Wp[k, i]) / h
                _k_vflux(wl, g, xf[f], t, P, fl)
                for k in range(nv):
                    V[k, f] = fl[k]
        for c in range(n):
            for k in range(nv):
                dU[k, b, c] = -(F[k, c + 1] - F[k, c]) / h + (V[k, c + 1] - V[k, c]) / h
            if HAS_SOURCE and not SOURCE_SPLIT:
                for k in range(nv):
                    w[k] = Wp[k, NG + c]
                _k_source(w, xc[c], t, P, fl)
                for k in range(nv):
                    dU[k, b, c] += fl[k]


@_njit
def _nb_stable_dt(U, t, P, xc, h, explicit_viscous):
    """_stable_dt of the NumPy path: one step for the whole batch."""
    nv, B, n = U.shape
    u, w, w2, s1, s2 = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    speed, dmax, srate = 0.0, 0.0, 0.0
    for b in range(B):
        for c in range(n):
            for k in range(nv):
                u[k] = U[k, b, c]
            _k_prim(u, P, w)
            if HAS_FLUX:
                lmin, lmax = _k_speeds(w, xc[c], t, P)
                speed = max(speed, max(abs(lmin), abs(lmax)))
            if HAS_VISCOUS and explicit_viscous:
                dmax = max(dmax, _k_diff(w, xc[c], t, P))
            if HAS_SOURCE and not SOURCE_EXACT:
                for k in range(nv):
                    w2[k] = w[k] + 1e-6 * (1.0 + abs(w[k]))
                _k_source(w2, xc[c], t, P, s2)
                _k_source(w, xc[c], t, P, s1)
                for k in range(nv):
                    srate = max(srate, abs((s2[k] - s1[k]) / (1e-6 * (1.0 + abs(w[k])))))
    dt = DT_MAX
    if HAS_FLUX and speed / h > 0:
        dt = min(dt, CFL / (speed / h))
    if HAS_VISCOUS and explicit_viscous and 2.0 * dmax / h ** 2 > 0:
        dt = min(dt, CFL_DIFF / (2.0 * dmax / h ** 2))
    if HAS_SOURCE and not SOURCE_EXACT and srate > 0:
        dt = min(dt, CFL / srate)
    return dt


@_njit
def _nb_step(U, t, dt, P, xc, xf, h, viscous):
    """_explicit_step of the NumPy path (INTEGRATOR), the whole batch. Stages are combined by
    flat loops with the NumPy path's expressions (array expressions cost seconds to compile)."""
    k1, k2, V = np.empty_like(U), np.empty_like(U), np.empty_like(U)
    u, a, b, v = U.reshape(U.size), k1.reshape(U.size), k2.reshape(U.size), V.reshape(U.size)
    _nb_rhs(U, t, P, xc, xf, h, viscous, k1)
    if _RK == 0:
        for i in range(u.size):
            v[i] = u[i] + dt * a[i]
        return V
    if _RK == 1:
        for i in range(u.size):
            v[i] = u[i] + 0.5 * dt * a[i]
        _nb_rhs(V, t + 0.5 * dt, P, xc, xf, h, viscous, k2)
        for i in range(u.size):
            v[i] = u[i] + dt * b[i]
        return V
    if _RK == 2:
        for i in range(u.size):
            v[i] = u[i] + dt * a[i]
        _nb_rhs(V, t + dt, P, xc, xf, h, viscous, k2)
        for i in range(u.size):
            v[i] = 0.5 * (u[i] + v[i] + dt * b[i])
        return V
    if _RK == 4:
        k3, k4 = np.empty_like(U), np.empty_like(U)
        c, d = k3.reshape(U.size), k4.reshape(U.size)
        for i in range(u.size):
            v[i] = u[i] + 0.5 * dt * a[i]
        _nb_rhs(V, t + 0.5 * dt, P, xc, xf, h, viscous, k2)
        for i in range(u.size):
            v[i] = u[i] + 0.5 * dt * b[i]
        _nb_rhs(V, t + 0.5 * dt, P, xc, xf, h, viscous, k3)
        for i in range(u.size):
            v[i] = u[i] + dt * c[i]
        _nb_rhs(V, t + dt, P, xc, xf, h, viscous, k4)
        for i in range(u.size):
            v[i] = u[i] + dt / 6.0 * (a[i] + 2 * b[i] + 2 * c[i] + d[i])
        return V
    for i in range(u.size):  # SSP-RK3 (Shu-Osher)
        v[i] = u[i] + dt * a[i]
    _nb_rhs(V, t + dt, P, xc, xf, h, viscous, k2)
    for i in range(u.size):
        v[i] = 0.75 * u[i] + 0.25 * (v[i] + dt * b[i])
    _nb_rhs(V, t + 0.5 * dt, P, xc, xf, h, viscous, k1)
    for i in range(u.size):
        v[i] = u[i] / 3.0 + 2.0 / 3.0 * (v[i] + dt * a[i])
    return V


@_njit
def _nb_finite(U):
    for x in U.reshape(U.size):
        if not np.isfinite(x):
            return False
    return True


@_njit
def _nb_advance(U, t0, t1, P, xc, xf, h, viscous):
    """_advance_to of the NumPy path for explicit designs: every step in one compiled call.
    (viscous is an argument, always True: a literal True would compile a second specialisation
    of every kernel it reaches.)"""
    t = t0
    while t1 - t > 1e-12 * max(1.0, abs(t1)):
        dt = min(_nb_stable_dt(U, t, P, xc, h, viscous), t1 - t)
        if not np.isfinite(dt):
            dt = t1 - t
        if dt <= 0.0 or not _nb_finite(U):
            return U, False  # blown up: the caller reports NaN
        U = _nb_step(U, t, dt, P, xc, xf, h, viscous)
        t += dt
    return U, True


def _advance_compiled(U, t0, t1, grid, prm):
    """The compiled _advance_to, or None when numba cannot compile this problem's kernels (the
    NumPy path then runs, and KERNEL_USED says so)."""
    global KERNEL_USED
    P = np.array([prm[k] for k in PARAMS], dtype=np.float64)
    xc, xf, h = grid["centres"][0], grid["edges"][0], float(grid["h"][0])
    U = np.ascontiguousarray(U, dtype=np.float64)
    try:
        if not (HAS_VISCOUS and VISCOUS != "explicit"):
            U, ok = _nb_advance(U, float(t0), float(t1), P, xc, xf, h, True)
            return U if ok else np.full_like(U, np.nan)
        explicit = HAS_FLUX or HAS_SOURCE  # the viscous part is split off: TR-BDF2
        t = t0
        while t1 - t > 1e-12 * max(1.0, abs(t1)):
            dt = min(_nb_stable_dt(U, t, P, xc, h, False), t1 - t)
            if not np.isfinite(dt):
                dt = t1 - t
            if dt <= 0.0 or not _nb_finite(U):
                return np.full_like(U, np.nan)
            grid["flip"] = not grid.get("flip", False)
            if grid["flip"]:
                U = _nb_viscous_implicit(U, t, dt, P, xf, h)
                U = _nb_step(U, t, dt, P, xc, xf, h, False) if explicit else U
            else:
                U = _nb_step(U, t, dt, P, xc, xf, h, False) if explicit else U
                U = _nb_viscous_implicit(U, t, dt, P, xf, h)
            t += dt
        return U
    except numba.core.errors.TypingError as exc:  # an expression numba cannot type
        print("compiled kernels unavailable, NumPy path instead:", str(exc).splitlines()[0])
        KERNEL_USED = "numpy"
        return None
'''


def compiled_block(law: BalanceLaw, facts: LawFacts) -> str:
    """Everything the compiled path adds to an fv solver (after the NumPy blocks)."""
    implicit = (numba_implicit_physics(law, facts) + IMPLICIT_KERNELS) if law.has_viscous else (
        "\n\ndef _nb_viscous_implicit(*args):  # no viscous terms: never called\n"
        "    raise NotImplementedError\n")
    return NJIT + numba_physics(law, facts) + KERNELS + implicit


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
def _nb_viscous_implicit(U, t, tau, P, xf, h):
    """TR-BDF2 on frozen coefficients over tau, sample by sample; conservative update."""
    nv, B, n = U.shape
    G = _IMPL.size
    gamma = 2.0 - 2.0 ** 0.5
    diag, weight = gamma / 2.0, 2.0 ** 0.5 / 4.0
    out = np.empty_like(U)
    u, w = np.empty(nv), np.empty(nv)
    W0, W = np.empty((nv, n)), np.empty((nv, n))
    Bf, J = np.empty((n + 1, nv, G)), np.empty((n, G, nv))
    bm, jm = np.empty((nv, G)), np.empty((G, nv))
    CL, CR = np.empty((G, G, n)), np.empty((G, G, n))
    Z0, Zg, Z1 = np.empty((G, n)), np.empty((G, n)), np.empty((G, n))
    f0, fg, R = np.empty((G, n)), np.empty((G, n)), np.empty((G, n))
    D0, Dg, D1 = np.empty((nv, n)), np.empty((nv, n)), np.empty((nv, n))
    for b in range(B):
        for c in range(n):
            for k in range(nv):
                u[k] = U[k, b, c]
            _k_prim(u, P, w)
            for k in range(nv):
                W0[k, c] = w[k]
        for f in range(n + 1):
            left, right = (f - 1) % n, f % n
            for k in range(nv):
                w[k] = 0.5 * (W0[k, left] + W0[k, right])
            _k_vmat(w, xf[f], t, P, bm)
            for k in range(nv):
                for g in range(G):
                    Bf[f, k, g] = bm[k, g]
        for c in range(n):
            for k in range(nv):
                w[k] = W0[k, c]
            _k_pjac(w, P, jm)
            for g in range(G):
                for k in range(nv):
                    J[c, g, k] = jm[g, k]
        for g in range(G):
            for k in range(G):
                for c in range(n):
                    sl, sr = 0.0, 0.0
                    for i in range(nv):
                        sl += J[c, g, i] * Bf[c, i, k]
                        sr += J[c, g, i] * Bf[c + 1, i, k]
                    CL[g, k, c], CR[g, k, c] = sl / h ** 2, sr / h ** 2
            for c in range(n):
                Z0[g, c] = W0[_IMPL[g], c]
        _nb_apply(CL, CR, Z0, f0)
        for g in range(G):
            for c in range(n):
                R[g, c] = Z0[g, c] + diag * tau * f0[g, c]
        _nb_cyclic_solve(CL, CR, diag * tau, R, Zg)
        _nb_apply(CL, CR, Zg, fg)
        for g in range(G):
            for c in range(n):
                R[g, c] = Z0[g, c] + weight * tau * (f0[g, c] + fg[g, c])
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
