"""Fourier pseudo-spectral method with an exponential integrator (periodic boxes, 1D or 2D).

``dt w = L w + N(w, x, t)``: the linear, constant-coefficient, diagonal part L (advection,
diffusion, dispersion dx(u, 3), hyper-diffusion dx(u, 4), linear reaction) is integrated exactly
by ETDRK4 (Cox-Matthews, coefficients by the Kassam-Trefethen contour integral) or by the
integrating-factor RK4; the rest (nonlinear fluxes, sources, x- and t-dependent terms) is
evaluated in physical space on the 2/3-dealiased field. This is the family for smooth solutions
and for the higher-order terms (KdV, Kuramoto-Sivashinsky) no finite-volume scheme here treats.

Stability rule: dt <= CFL / sum_a(max|lambda_a| / h_a) for the nonlinear flux and CFL / max|dN/dw|
for the source; steps are the output interval over a power of two, so the exponentials are
computed once.
"""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.exact import linear_system
from pdesharp.builtin.families.common import (EVOLVE, FOURIER, GRID, fixed_axes,
                                              problem_constants)
from pdesharp.builtin.physics import npcode, params_lines, physics_source


def linear_parts(law: BalanceLaw):
    """Per component: advection A[a][i], diffusion D[a][i], reaction c[i] (constants, taken at
    w = 0) and the high-order terms; None when the viscous or high-order part is not a constant
    diagonal operator (it would be stiff and explicit)."""
    zero = {w: 0 for w in law.prims} | {g: 0 for row in law.grads for g in row}
    const = lambda e: not sp.sympify(e).has(*law.prims, *law.coords, law.t)  # noqa: E731
    A, D = [], []
    for a in range(law.dim):
        arow, drow = [], []
        for i, w in enumerate(law.prims):
            coef = sp.simplify(sp.diff(law.flux[a][i], w).xreplace(zero))
            arow.append(coef if const(coef) else sp.Integer(0))
            v = law.viscous[a][i]
            d = sp.simplify(sp.diff(v, law.grads[a][i]))
            if not const(d) or sp.simplify(v - d * law.grads[a][i]) != 0:
                return None
            drow.append(d)
        A.append(arow)
        D.append(drow)
    c = []
    for i, w in enumerate(law.prims):
        coef = sp.simplify(sp.diff(law.source[i], w).xreplace(zero))
        c.append(coef if const(coef) else sp.Integer(0))
    high = []
    for i, row in enumerate(law.high):
        for coef, j, orders in row:
            if j != i:
                return None
            high.append((i, tuple(orders), coef))
    return A, D, c, high


class SpectralFamily(Family):
    name = "spectral"
    axes = (
        Axis("INTEGRATOR", "etdrk4", ("etdrk4", "if_rk4"),
             "etdrk4 (exponential time differencing) | if_rk4 (integrating factor)"),
        Axis("CFL", 0.4, (), "Courant number of the nonlinear part"),
        Axis("REFINE", 1, (), "internal grid = REFINE x data grid (Fourier interpolation), so"
                              " the 2/3 rule keeps every mode of the data"),
    )

    def applies(self, p: Problem) -> bool:
        law = p.struct
        return (isinstance(law, BalanceLaw) and law.periodic and law.conservative_is_primitive
                and (law.has_flux or law.has_source or law.has_high)
                and linear_system(law) is None  # the exact propagator is strictly better
                and linear_parts(law) is not None)

    def smooth(self, p: Problem) -> bool:
        """Will the solution stay resolved? Not with an inviscid nonlinear flux (shocks)."""
        law = p.struct
        if law.has_high or not law.has_flux or law.flux_is_linear():
            return True
        return law.has_viscous and p.facts.get("cell_peclet", float("inf")) < 2.0

    def candidates(self, p: Problem) -> list[Design]:
        return [self.design(), self.design(INTEGRATOR="if_rk4"), self.design(REFINE=2)]

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        other = "if_rk4" if d["INTEGRATOR"] == "etdrk4" else "etdrk4"
        smaller = ("CFL", round(d["CFL"] * 0.5, 4), "a twice smaller step")
        larger = ("CFL", round(min(d["CFL"] * 1.5, 0.9), 4), "a larger step (faster)")
        finer = ("REFINE", 2 * d["REFINE"], "a twice finer internal grid (more retained modes)")
        if failed:
            return [smaller, ("INTEGRATOR", other, "the other exponential integrator")]
        if strategy == "accuracy":
            return [smaller, finer, ("INTEGRATOR", other, "the other exponential integrator")]
        return [("INTEGRATOR", other, "the other exponential integrator"), larger, smaller]

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        return {"CFL": round(d["CFL"] / 2, 5)}

    def title(self, d: Design, p: Problem) -> str:
        integ = "ETDRK4" if d["INTEGRATOR"] == "etdrk4" else "integrating-factor RK4"
        ref = f", {d['REFINE']}x internal grid" if d["REFINE"] > 1 else ""
        return f"pseudo-spectral, 2/3 dealiasing, {integ} (exact linear part), CFL {d['CFL']}{ref}"

    def orders(self, d: Design, p: Problem):
        return (8 if self.smooth(p) else 1, 4)

    def cost(self, d: Design, p: Problem) -> float:
        return 2.0 * (0.4 / d["CFL"]) * d["REFINE"] ** (p.dim + 1)

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        A, D, c, high = linear_parts(law)
        flags = {"PERIODIC": True, "HAS_FLUX": law.has_flux, "HAS_VISCOUS": law.has_viscous,
                 "HAS_SOURCE": law.has_source}
        code = problem_constants(p, flags) + fixed_axes(self, d, p) + "\n\n"
        code += physics_source(law, p.law_facts)
        row = lambda r: "[" + ", ".join(f"float({npcode(e)})" for e in r) + "]"  # noqa: E731
        code += ("def linear_parts(prm):\n    \"\"\"The constant diagonal linear part of dt w: advection"
                 " A[axis][i], diffusion D[axis][i],\n    reaction c[i] and high-order terms (i,"
                 " orders, coefficient).\"\"\"\n"
                 + params_lines(law.params, [e for r in A + D for e in r] + c + [e for *_, e in high])
                 + f"    A = [{', '.join(row(r) for r in A)}]\n"
                 + f"    D = [{', '.join(row(r) for r in D)}]\n"
                 + f"    c = {row(c)}\n"
                 + "    high = [" + ", ".join(f"({i}, {o!r}, float({npcode(e)}))" for i, o, e in high)
                 + "]\n    return A, D, c, high\n\n\n")
        return code + GRID + FOURIER + BLOCK + EVOLVE


BLOCK = '''
# ---- block: pseudo-spectral method of lines with an exponential integrator ----


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
    fine = tuple(REFINE * n for n in data)
    grid = _grid(fine)
    grid["data_shape"] = data
    # the Fourier interpolation keeps the data's first point as the origin: the fine points are
    # x0 + j h_fine with x0 the first data cell centre (not the fine grid's own cell centres)
    grid["X"] = tuple(x + 0.5 * (grid["h"][a] * REFINE - grid["h"][a]) for a, x in enumerate(grid["X"]))
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
    return (_resize(vh, data, fine) if REFINE > 1 else vh), grid


def _physical(vh, grid):
    return np.fft.irfftn(vh * grid["mask"], s=grid["shape"], axes=grid["axes"])


def _output(vh, grid, prm):
    data = grid["data_shape"]
    if REFINE > 1:
        vh = _resize(vh, grid["shape"], data)
    return list(np.fft.irfftn(vh, s=data, axes=grid["axes"]))


def _nonlinear(vh, t, grid, prm):
    """Fourier transform of dt w minus its exactly integrated linear part L w."""
    W = _physical(vh, grid)
    A, D, c = grid["lin"]
    out = np.zeros_like(vh)
    fft = lambda f: np.fft.rfftn(f, axes=grid["axes"])  # noqa: E731
    shape = (-1,) + (1,) * (W.ndim - 1)
    for a, k in enumerate(grid["k"]):
        if HAS_FLUX:
            F = np.array(flux(W, grid["X"], t, prm, a)) - A[a].reshape(shape) * W
            out -= 1j * k * fft(F)
    if HAS_SOURCE:
        out += fft(np.array(source(W, grid["X"], t, prm)) - c.reshape(shape) * W)
    return out * grid["mask"]


def _stable_dt(vh, t, grid, prm):
    W = _physical(vh, grid)
    rate = 0.0
    if HAS_FLUX:
        for a in range(DIM):
            lmin, lmax = wave_speeds(W, grid["X"], t, prm, a)
            rate += max(float(np.max(np.abs(lmin))), float(np.max(np.abs(lmax)))) / grid["h"][a]
    if HAS_SOURCE:
        eps = 1e-6 * (1.0 + np.abs(W))
        c = grid["lin"][2].reshape((-1,) + (1,) * (W.ndim - 1))
        f = lambda V: np.array(source(V, grid["X"], t, prm)) - c * V  # noqa: E731
        rate = max(rate, float(np.max(np.abs((f(W + eps) - f(W)) / eps))))
    return CFL / rate if rate > 0 else np.inf


def _coefficients(grid, h):
    """exp(hL), exp(hL/2) and the ETDRK4 weights (contour integral over a circle of radius 1
    around each hL, which avoids the cancellation of their closed forms for small |hL|)."""
    key = round(h, 14)
    if key in grid["cache"]:
        return grid["cache"][key]
    z = grid["L"] * h
    e, e2 = np.exp(z), np.exp(z / 2)
    if INTEGRATOR != "etdrk4":
        grid["cache"][key] = (e, e2)
        return e, e2
    r = np.exp(2j * np.pi * (np.arange(32) + 0.5) / 32)
    lr = z[..., None] + r
    q = h * np.mean((np.exp(lr / 2) - 1.0) / lr, axis=-1)
    f1 = h * np.mean((-4.0 - lr + np.exp(lr) * (4.0 - 3.0 * lr + lr**2)) / lr**3, axis=-1)
    f2 = h * np.mean((2.0 + lr + np.exp(lr) * (lr - 2.0)) / lr**3, axis=-1)
    f3 = h * np.mean((-4.0 - 3.0 * lr - lr**2 + np.exp(lr) * (4.0 - lr)) / lr**3, axis=-1)
    grid["cache"][key] = (e, e2, q, f1, f2, f3)
    return grid["cache"][key]


def _step(vh, t, h, grid, prm):
    N = lambda v, s: _nonlinear(v, t + s * h, grid, prm)  # noqa: E731
    if INTEGRATOR == "etdrk4":
        e, e2, q, f1, f2, f3 = _coefficients(grid, h)
        nv = N(vh, 0.0)
        a = e2 * vh + q * nv
        na = N(a, 0.5)
        b = e2 * vh + q * na
        nb = N(b, 0.5)
        c = e2 * a + q * (2.0 * nb - nv)
        nc = N(c, 1.0)
        return e * vh + f1 * nv + 2.0 * f2 * (na + nb) + f3 * nc
    e, e2 = _coefficients(grid, h)
    a = N(vh, 0.0)
    b = N(e2 * (vh + 0.5 * h * a), 0.5)
    c = N(e2 * vh + 0.5 * h * b, 0.5)
    d = N(e * vh + h * e2 * c, 1.0)
    return e * vh + h / 6.0 * (e * a + 2.0 * e2 * (b + c) + d)


def _advance_to(vh, t0, t1, grid, prm):
    """Equal steps (the interval over a power of two, within the stable step) from t0 to t1."""
    span = t1 - t0
    dt = _stable_dt(vh, t0, grid, prm)
    if not np.all(np.isfinite(vh)):
        return np.full_like(vh, np.nan)
    n = 1 if not np.isfinite(dt) or dt >= span else 2 ** int(np.ceil(np.log2(span / dt)))
    if n > 2**22:
        return np.full_like(vh, np.nan)  # the step collapsed: the solution is blowing up
    h = span / n
    for m in range(n):
        vh = _step(vh, t0 + m * h, h, grid, prm)
    return vh
'''
