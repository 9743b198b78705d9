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
is compiled too (:func:`.viscous_implicit.compiled_implicit`). If
Numba is not importable, or cannot type an emitted expression (a Piecewise, say), the solver
runs the NumPy path and says so in ``KERNEL_USED``.
"""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Problem
from pdesharp.builtin.physics import LawFacts, npcode, safe


def compiled_supported(law: BalanceLaw, facts: LawFacts) -> bool:
    """Whether the compiled path covers this law (see the module docstring for why not all)."""
    return (law.dim == 1 and law.periodic and not law.has_high
            and (not law.has_flux or facts.eigenvalues[0] is not None))


# What compiling costs and saves (bench/bench_compiled.py, this 2-core machine): numba's import
# and the JIT of an fv solver's kernels take ~3 s per evaluation (~8 s with the compiled TR-BDF2
# viscous step: more kernels), counted in the solver's time; the compiled loops then save ~150 ns
# per cell and Runge-Kutta stage against the NumPy passes. The rendered solver (KERNEL = "auto")
# compares the two at its first call, when the batch and the time span are known.
COMPILE_SECONDS = {"explicit": 3.0, "implicit": 8.0}
SAVED_PER_CELL_STAGE = 150e-9


def kernel_for(p: Problem) -> str:
    """"auto" where the compiled path covers the problem: the solver decides at its first call
    (``_auto_kernel``), because whether compiling pays depends on the batch, which is not known
    when the solver is written (a 2-sample split and a 100-sample one differ 50x in work), and
    on the first state's stable step. "numpy" where there is no compiled path."""
    return "auto" if compiled_supported(p.struct, p.law_facts) else "numpy"


# ---- physics as scalar kernels ------------------------------------------------------------------
def locals_lines(law: BalanceLaw, exprs, *, prims: str | None = "_w", cons: list | None = None,
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
    return f"@_njit\ndef {head}:\n" + locals_lines(law, exprs, **kw) + body + "\n\n"


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
        out.append("@_njit\ndef _k_speeds(_w, _x, _t, _P):\n" + locals_lines(law, ev) + lam
                   + f"    return {pair}\n\n\n")
    else:
        out.append(_STUB_FLUX)
    if law.has_viscous:
        out.append(_writer("_k_vflux(_w, _g, _x, _t, _P, _out)", law, law.viscous[0],
                           grads="_g"))
        dif = facts.diffusivity[0] or [sp.Abs(e) for e in facts.diffusion_matrix[0]]
        terms = ", ".join(f"abs({npcode(e)})" for e in dif)
        out.append("@_njit\ndef _k_diff(_w, _x, _t, _P):\n" + locals_lines(law, dif)
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
_KERNELS = []  # names of the functions below that compile (for _use_numba)


def _njit(f):
    """Compiled lazily at the first call when the compiled path is on; else never called.
    NumPy's error model: a division by zero gives inf/nan as on the NumPy path (which then
    reports NaN), not a ZeroDivisionError."""
    _KERNELS.append(f.__name__)
    return numba.njit(f, error_model="numpy") if USE_NUMBA else f


def _use_numba():
    """Turn the compiled path on after import (KERNEL = "auto"): import numba and replace each
    kernel by its lazily compiled version. Numba resolves a kernel's calls to other kernels
    through this module's globals when it compiles, so they reach the compiled versions."""
    global numba, USE_NUMBA, KERNEL_USED
    try:
        import numba as _numba
    except ImportError:
        return False
    numba = _numba
    for name in _KERNELS:
        globals()[name] = numba.njit(globals()[name], error_model="numpy")
    USE_NUMBA, KERNEL_USED = True, "numba"
    return True


def _auto_kernel(U, t0, grid, prm):
    """KERNEL = "auto": compile when the predicted work saves more than compiling costs.
    Work: cell-stages to the last output time at the first state's stable step, over the whole
    batch (the step shrinks as the solution steepens, so this errs towards NumPy)."""
    implicit = HAS_VISCOUS and VISCOUS != "explicit"
    dt = _stable_dt(U, t0, grid, prm, explicit_viscous=not implicit)
    span = grid.get("t_end", t0) - t0
    stages = STAGES_PER_STEP[INTEGRATOR]
    work = span / dt * stages * np.asarray(U)[0].size if np.isfinite(dt) and dt > 0 else np.inf
    cost = COMPILE_SECONDS["implicit" if implicit else "explicit"]
    return "numba" if work * SAVED_PER_CELL_STAGE > cost and _use_numba() else "numpy"

'''

KERNELS = '''

@_njit
def _nb_slope(dl, dr):
    """_limited_slope of the NumPy path, one cell."""
    if _LIMIT == 3:
        return 0.5 * (dl + dr)
    if not dl * dr > 0.0:
        return 0.0
    # dl and dr are nonzero with one sign here, so the sign is +-1 (np.sign is a ufunc, slower
    # to compile)
    if _LIMIT == 0:
        return (1.0 if dl > 0.0 else -1.0) * min(abs(dl), abs(dr))
    if _LIMIT == 1:
        return 2.0 * dl * dr / (dl + dr)
    dc = 0.5 * (dl + dr)
    return (1.0 if dc > 0.0 else -1.0) * min(abs(dc), 2.0 * min(abs(dl), abs(dr)))


# _weno5_face of the NumPy path is plain arithmetic: compiled as is for one face
_nb_weno5 = _njit(_weno5_face)


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
    """np.all(np.isfinite(U)); x - x is 0 unless x is inf or nan (no ufunc to compile)."""
    for x in U.reshape(U.size):
        if not x - x == 0.0:
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
        if not dt - dt == 0.0:  # not finite
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
    except numba.core.errors.NumbaError as exc:  # e.g. an expression numba cannot type
        print("compiled kernels unavailable, NumPy path instead:", str(exc).splitlines()[0])
        KERNEL_USED = "numpy"
        return None
'''


def compiled_block(law: BalanceLaw, facts: LawFacts, stages: dict[str, int],
                   implicit: str = "") -> str:
    """Everything the compiled path adds to an fv solver (after the NumPy blocks); ``stages``
    is the family's Runge-Kutta stages per step (for the KERNEL = "auto" work estimate, which
    reads the header's INTEGRATOR, so a judge's edit of it stays counted right); ``implicit``
    is the compiled TR-BDF2 block when the law has viscous terms."""
    implicit = implicit or ("\n\ndef _nb_viscous_implicit(*args):  # no viscous terms: never"
                            " called\n    raise NotImplementedError\n")
    costs = (f"COMPILE_SECONDS = {COMPILE_SECONDS!r}  # numba import + JIT per run (measured)\n"
             f"SAVED_PER_CELL_STAGE = {SAVED_PER_CELL_STAGE!r}  # compiled vs NumPy (measured)\n"
             f"STAGES_PER_STEP = {stages!r}  # Runge-Kutta stages per step, by INTEGRATOR\n")
    return NJIT + costs + numba_physics(law, facts) + KERNELS + implicit
