"""1D compressible Navier-Stokes reference data in PDEBench's form (CodePDE's cns1d task).

Equations on the periodic interval [x_L, x_R] (default [-1, 1]), Gamma = 5/3::

    rho_t + (rho v)_x = 0
    (rho v)_t + (rho v^2 + p)_x = (c rho v_x)_x
    E_t + ((E + p) v)_x = (c/2 rho (v^2)_x)_x,       c = eta + zeta + eta/3,  E = p/(G-1) + rho v^2/2

The viscous terms carry a density factor: PDEBench's generator uses rho * c as the viscosity
(its comment calls this "not realistic viscosity but fast to calculate"), and the data were made
with it. CodePDE's prompt writes the terms without rho.

Scheme (the method of PDEBench's ``CFD_multi_Hydra.py``, written anew here and vectorised over
the batch, with per-sample time steps as PDEBench's vmapped loop has):

* finite volumes on cell centres, periodic ghost cells;
* second-order reconstruction of the primitive variables (rho, v, p) with the monotonised-central
  limiter; a face state with rho <= 0 or p <= 0 falls back to the cell average;
* HLLC Riemann fluxes; predictor (dt/2) - corrector (dt) step; p floored at ``p_floor``;
* dt = CFL dx / max(c_s + |v|), clipped so that every output time is hit;
* viscosity in operator-split sub-steps of at most CFL dx^2 / (2 (4 eta/3 + zeta)) after each
  inviscid step, face density the arithmetic mean of its two cells.

PDEBench runs its 1D problems on a 3D grid with one cell in y and z. Those dimensions are not
inert in float32: each viscous sub-step re-derives v and p from the conserved variables once per
direction, and the y/z ghost cells hold the velocity from the start of the sub-step, which adds
a cross term of relative size ~1e-7. Both are reproduced (``pdebench_rounding=True``) so that our
float32 trajectories follow PDEBench's to round-off instead of drifting by the ~1 % that float32
round-off alone accumulates over t in [0, 1] in this problem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdesharp.data.generate.cns_ic import init_multi_hd

ATTRS = {
    "method": "PDEBench CFD_multi_Hydra method: MUSCL (MC limiter) + HLLC, predictor-corrector, "
              "density-weighted viscosity in operator-split sub-steps",
    "gamma": 5.0 / 3.0,
    "cfl": 0.3,
    "p_floor": 1e-4,
    "precision": "float32",
}

DEFAULT_PARAMS = {"eta": 0.1, "zeta": 0.1}


@dataclass(frozen=True)
class Constants:
    """Scheme constants, rounded to the working precision the way PDEBench's JAX code rounds
    its Python-float constants (each product of Python floats is formed in double first)."""

    gamma: np.floating
    gm1: np.floating            # Gamma - 1
    inv_gm1: np.floating        # 1 / (Gamma - 1)
    g_over_gm1: np.floating     # Gamma / (Gamma - 1)
    visc_x: np.floating         # eta + zeta + eta/3: longitudinal momentum diffusivity
    half_visc_x: np.floating    # (eta + zeta + eta/3) / 2
    eta: np.floating            # transverse (y, z) momentum diffusivity
    half_eta: np.floating
    cfl: np.floating
    dx: np.floating
    inv_dx: np.floating
    inv_dyz: np.floating        # 1 / (2 * length) of PDEBench's one-cell y and z directions
    dt_visc: np.floating        # viscous sub-step bound, CFL already applied
    p_floor: np.floating
    tiny: np.floating           # 1e-8: PDEBench's guards on dt and the viscous loop
    half: np.floating
    two: np.floating
    zero: np.floating
    fused: bool = True          # emulate XLA:CPU's contraction of a*b + c into one rounding

    @classmethod
    def build(cls, eta: float, zeta: float, gamma: float, cfl: float, p_floor: float,
              dx: float, dtype: type) -> Constants:
        c = lambda v: dtype(v)  # noqa: E731 - a rounding helper, nothing more
        visc = zeta + eta / 3.0
        visc4 = 4.0 / 3.0 * eta + zeta
        dt_visc = c(c(0.5 * dx**2 / (visc4 + 1e-8)) * c(cfl))
        return cls(gamma=c(gamma), gm1=c(gamma - 1.0), inv_gm1=c(1.0 / (gamma - 1.0)),
                   g_over_gm1=c(gamma * (1.0 / (gamma - 1.0))), visc_x=c(eta + visc),
                   half_visc_x=c(0.5 * (eta + visc)), eta=c(eta), half_eta=c(0.5 * eta),
                   cfl=c(cfl), dx=c(dx), inv_dx=c(1.0 / dx),
                   # PDEBench's y and z boxes are [-1, 1] with one cell, whatever x is.
                   inv_dyz=c(0.5), dt_visc=dt_visc, p_floor=c(p_floor), tiny=c(1e-8),
                   half=c(0.5), two=c(2.0), zero=c(0.0))


def fma(k: Constants, a, b, c):
    """a*b + c, rounded once when ``k.fused`` (as XLA:CPU's fused multiply-add does).

    For float32 operands the product is exact in float64, so one float64 addition and a cast
    give the fused result except in the rare double-rounding tie (~2^-29 of cases).
    """
    if not k.fused:
        return a * b + c
    out = np.multiply(a, b, dtype=np.float64)
    out += c
    return out.astype(np.result_type(a, b, c), copy=False)


def _pad(u: np.ndarray, g: int) -> np.ndarray:
    """Periodic ghost cells: g on each side of the last axis."""
    return np.concatenate([u[:, -g:], u, u[:, :g]], axis=1)


def _mc_slopes(u: np.ndarray, k: Constants) -> np.ndarray:
    """Monotonised-central limited slopes of a padded field (cells 1 .. n-2 of the padding)."""
    a = u[:, 1:-1] - u[:, :-2]
    b = u[:, 2:] - u[:, 1:-1]
    c = (u[:, 2:] - u[:, :-2]) * k.half
    return (np.sign(c) * (k.half + k.half * np.sign(a * b))) * np.minimum(
        k.two * np.minimum(np.abs(a), np.abs(b)), np.abs(c))


def _face_states(rho: np.ndarray, v: np.ndarray, p: np.ndarray, k: Constants):
    """Left and right states at the n+1 faces of the n cells (face i is the left face of cell i).

    Returns (rho_l, v_l, p_l, rho_r, v_r, p_r), each [B, n+1].
    """
    q = [_pad(w, 2) for w in (rho, v, p)]
    grads = [_mc_slopes(w, k) for w in q]  # padded cells 1 .. n+2
    half = k.half
    centre = [w[:, 1:-1] for w in q]
    lo = [w - half * g for w, g in zip(centre, grads)]  # value at a cell's left face
    hi = [w + half * g for w, g in zip(centre, grads)]  # value at a cell's right face
    ok_lo = (lo[0] > 0) & (lo[2] > 0)
    ok_hi = (hi[0] > 0) & (hi[2] > 0)
    lo = [np.where(ok_lo, w, u) for w, u in zip(lo, centre)]
    hi = [np.where(ok_hi, w, u) for w, u in zip(hi, centre)]
    # Face between padded cells j and j+1 (j = 1 .. n+1): left state = right face of cell j.
    left = [w[:, :-1] for w in hi]
    right = [w[:, 1:] for w in lo]
    return (*left, *right)


def hllc_flux(rho_l, v_l, p_l, rho_r, v_r, p_r, k: Constants):
    """HLLC fluxes (mass, momentum, energy) with Davis-type wave-speed estimates."""
    cs_l = np.sqrt((k.gamma * p_l) / rho_l)
    cs_r = np.sqrt((k.gamma * p_r) / rho_r)
    cmax = np.maximum(cs_r, cs_l)
    s_l = np.minimum(v_r, v_l) - cmax
    s_r = np.maximum(v_r, v_l) + cmax
    half = k.half
    m_l, m_r = rho_l * v_l, rho_r * v_r
    e_l = fma(k, k.inv_gm1, p_l, half * (m_l * v_l))
    e_r = fma(k, k.inv_gm1, p_r, half * (m_r * v_r))
    dr = s_r - v_r
    dl = s_l - v_l
    v_star = (fma(k, dr, m_r, -(dl * m_l)) - p_r) + p_l
    v_star = v_star / fma(k, dr, rho_r, -(dl * rho_l))
    rdl = rho_l * dl
    p_star = fma(k, rdl, v_star - v_l, p_l)
    rho_star_l = rdl / (s_l - v_star)
    rho_star_r = (rho_r * dr) / (s_r - v_star)
    vs2 = v_star * v_star

    def star(rho_s):
        return (rho_s * v_star, fma(k, rho_s, vs2, p_star),
                fma(k, k.g_over_gm1, p_star, (half * rho_s) * vs2) * v_star)

    f_left = (m_l, fma(k, m_l, v_l, p_l), (e_l + p_l) * v_l)
    f_right = (m_r, fma(k, m_r, v_r, p_r), (e_r + p_r) * v_r)
    f_sl, f_sr = star(rho_star_l), star(rho_star_r)
    use_left = s_l > 0
    use_sl = (s_l * v_star) < 0
    use_sr = (s_r * v_star) < 0
    out = []
    for fl, fr, fsl, fsr in zip(f_left, f_right, f_sl, f_sr):
        f = np.where(use_left, fl, fr)
        f = np.where(use_sl, fsl, f)
        out.append(np.where(use_sr, fsr, f))
    return out


def _primitive(rho, mom, energy, k: Constants):
    v = mom / rho
    p = k.gm1 * (energy - (k.half * (mom * mom)) / rho)
    return v, p


def _inviscid_update(rho, v, p, rho_f, v_f, p_f, dt, k: Constants):
    """One forward-Euler update of (rho, v, p) with fluxes evaluated on (rho_f, v_f, p_f)."""
    mom = v * rho
    energy = fma(k, p, k.inv_gm1, k.half * (mom * v))
    f_rho, f_mom, f_en = hllc_flux(*_face_states(rho_f, v_f, p_f, k), k)
    dtdx = (dt * k.inv_dx)[:, None]
    rho = rho - dtdx * (f_rho[:, 1:] - f_rho[:, :-1])
    mom = mom - dtdx * (f_mom[:, 1:] - f_mom[:, :-1])
    energy = energy - dtdx * (f_en[:, 1:] - f_en[:, :-1])
    v, p = _primitive(rho, mom, energy, k)
    p = np.where(p > k.tiny, p, k.p_floor)
    return rho, v, p


@dataclass
class _ViscousCoefficients:
    """Density-dependent factors of the viscous fluxes; density is constant over the sub-steps."""

    rho: np.ndarray
    mom_x: np.ndarray   # c rho_face / dx at the n+1 faces
    en_x: np.ndarray    # c/2 rho_face / dx
    mom_yz: np.ndarray  # eta rho / dy of PDEBench's one-cell y and z directions
    en_yz: np.ndarray

    @classmethod
    def build(cls, rho: np.ndarray, k: Constants) -> _ViscousCoefficients:
        rp = _pad(rho, 1)
        rho_face = k.half * (rp[:, 1:] + rp[:, :-1])
        return cls(rho=rho, mom_x=(k.visc_x * rho_face) * k.inv_dx,
                   en_x=(k.half_visc_x * rho_face) * k.inv_dx,
                   mom_yz=(k.eta * rho) * k.inv_dyz, en_yz=(k.half_eta * rho) * k.inv_dyz)


def _viscous_substep(c: _ViscousCoefficients, v, p, dt, k: Constants, pdebench_rounding: bool):
    """Density-weighted viscous diffusion of momentum and kinetic energy over ``dt`` [B]."""
    rho, half = c.rho, k.half
    v0 = v
    vp = _pad(v, 1)
    mom = v * rho
    energy = fma(k, p, k.inv_gm1, half * (mom * v))
    v_hi, v_lo = vp[:, 1:], vp[:, :-1]
    dv2 = fma(k, v_hi, v_hi, -(v_lo * v_lo))  # (v^2)_x across each face
    f_mom = c.mom_x * (v_hi - v_lo)
    f_en = c.en_x * dv2
    dtdx = (dt * k.inv_dx)[:, None]
    mom = _add_product(k, mom, v, rho, dtdx, f_mom[:, 1:] - f_mom[:, :-1])
    energy = fma(k, dtdx, f_en[:, 1:] - f_en[:, :-1], energy)
    v, p = _primitive(rho, mom, energy, k)
    if not pdebench_rounding:
        return v, p
    # PDEBench's y and z sweeps: one-cell directions whose ghost cells still hold the velocity
    # from the start of the sub-step (the ghost refresh happens once, before the x sweep).
    # Their momentum flux difference K (v0 - v) - K (v - v0) equals 2 K (v0 - v) exactly.
    dtdy = (dt * k.inv_dyz)[:, None]
    v0_sq = v0 * v0
    for _ in range(2):
        mom = v * rho
        energy = fma(k, p, k.inv_gm1, half * (mom * v))
        d_mom = c.mom_yz * (v0 - v)
        d_mom += d_mom
        v_sq = v * v
        d_en = c.en_yz * fma(k, v0, v0, -v_sq) - c.en_yz * fma(k, v, v, -v0_sq)
        mom = _add_product(k, mom, v, rho, dtdy, d_mom)
        energy = fma(k, dtdy, d_en, energy)
        v, p = _primitive(rho, mom, energy, k)
    return v, p


# Whether XLA contracts ``m + dt*dF`` with m = v*rho as fma(v, rho, dt*dF) (True) or as
# fma(dt, dF, m) (False). Which product LLVM fuses depends on XLA's fusion decisions; the two
# are indistinguishable on the dev data at our measurement resolution (see the module notes).
_FUSE_MOMENTUM_PRODUCT = False


def _add_product(k: Constants, mom, v, rho, dt, dflux):
    if _FUSE_MOMENTUM_PRODUCT:
        return fma(k, v, rho, dt * dflux)
    return fma(k, dt, dflux, mom)


def _advance(state, t, target, t_end, k: Constants, pdebench_rounding: bool):
    """March every sample from t [B] to ``target`` with PDEBench's step logic (in place)."""
    rho, v, p = state
    while True:
        cs = np.sqrt((k.gamma * p) / rho)
        dt = k.dx / (np.max(cs + np.abs(v), axis=1) + k.tiny) * k.cfl
        dt_raw = dt = np.minimum(np.minimum(dt, t_end - t), target - t)
        active = dt > k.tiny
        if not active.any():
            # PDEBench still adds a skipped step's dt (<= 1e-8) to the clock, which lands t
            # exactly on the target (the difference is exact); later ones add zero.
            t = t + dt_raw
            break
        if not active.all():
            dt = np.where(active, dt, k.zero)
        r1, v1, p1 = _inviscid_update(rho, v, p, rho, v, p, dt * k.half, k)
        r2, v2, p2 = _inviscid_update(rho, v, p, r1, v1, p1, dt, k)
        dt_vis = np.minimum(k.dt_visc, dt)
        t_vis = np.zeros_like(dt)
        coeffs = _ViscousCoefficients.build(r2, k)
        while True:
            sub = (dt - t_vis) > k.tiny
            if not sub.any():
                break
            dt_ev = np.minimum(np.minimum(dt, dt_vis), dt - t_vis)
            v3, p3 = _viscous_substep(coeffs, v2, p2, dt_ev, k, pdebench_rounding)
            if sub.all():
                v2, p2 = v3, p3
            else:
                v2 = np.where(sub[:, None], v3, v2)
                p2 = np.where(sub[:, None], p3, p2)
            t_vis = np.where(sub, t_vis + dt_ev, t_vis)
        sel = active[:, None]
        rho = np.where(sel, r2, rho)
        v = np.where(sel, v2, v)
        p = np.where(sel, p2, p)
        t = t + dt_raw  # PDEBench advances the clock even when it skips a (tiny) step
    state[:] = [rho, v, p]
    return t


def march_targets(t_out: np.ndarray, clock: str, dtype: type) -> list:
    """The times the integrator stops at to record frames 1.., as (time, frame index or None).

    ``clock="pdebench"`` reproduces PDEBench's bookkeeping for uniformly spaced outputs: the save
    time is accumulated in working precision (t_k = t_{k-1} + dt_save), so it drifts from
    k * dt_save by a few ulps, and the last frame is the state at the end time, reached from the
    last accumulated save time if that falls short of it. ``clock="exact"`` stops at ``t_out``;
    ``clock="auto"`` is "pdebench" for uniform ``t_out`` and "exact" otherwise.
    """
    t_out = np.asarray(t_out, dtype=np.float64)
    t_end = dtype(t_out[-1])
    steps = np.diff(t_out)
    uniform = bool(np.allclose(steps, steps[0], rtol=1e-4, atol=0))
    if clock == "auto":
        clock = "pdebench" if uniform else "exact"
    if clock == "exact":
        return [(dtype(t), i) for i, t in enumerate(t_out[1:], start=1)]
    if clock != "pdebench":
        raise ValueError(f"clock must be 'auto', 'pdebench' or 'exact', got {clock!r}")
    if not uniform:
        raise ValueError("clock='pdebench' needs uniformly spaced t_out; use clock='exact'")
    dt_save = dtype(steps[0])
    out, tsave = [], dtype(t_out[0])
    for i in range(1, len(t_out) - 1):
        tsave = dtype(tsave + dt_save)
        out.append((tsave, i))
    tsave = dtype(tsave + dt_save)
    if tsave < t_end:
        out.append((tsave, None))  # PDEBench stops here, then overwrites with the end state
    out.append((t_end, len(t_out) - 1))
    return out


def simulate(initial: dict[str, np.ndarray], t_out: np.ndarray, params: dict[str, float] | None,
             x_range=(-1.0, 1.0), dtype=np.float32, *, gamma: float = 5.0 / 3.0,
             cfl: float = 0.3, p_floor: float = 1e-4, clock: str = "auto",
             pdebench_rounding: bool = True) -> dict[str, np.ndarray]:
    """Integrate a batch of 1D CNS initial states and record them at ``t_out``.

    ``initial = {"v", "rho", "p"}``, each [B, N] on the N cell centres of ``x_range``;
    returns the same keys, each [B, len(t_out), N] in ``dtype``, frame 0 = the input.
    ``params`` holds ``eta`` and ``zeta`` (default 0.1 each).
    """
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    pr = {**DEFAULT_PARAMS, **(params or {})}
    unknown = set(pr) - {"eta", "zeta"}
    if unknown:
        raise ValueError(f"unknown cns1d parameter(s): {', '.join(sorted(unknown))}")
    try:
        rho, v, p = (np.array(initial[k], dtype=dtype, ndmin=2) for k in ("rho", "v", "p"))
    except KeyError as exc:
        raise ValueError(f"initial state needs keys 'rho', 'v', 'p'; missing {exc}") from None
    if not (rho.shape == v.shape == p.shape) or rho.ndim != 2 or rho.shape[1] < 4:
        raise ValueError(f"rho, v, p must share one [B, N] shape with N >= 4, got "
                         f"{rho.shape}, {v.shape}, {p.shape}")
    if not (np.all(np.isfinite(rho)) and np.all(np.isfinite(v)) and np.all(np.isfinite(p))):
        raise ValueError("initial state contains NaN or Inf")
    if np.any(rho <= 0) or np.any(p <= 0):
        raise ValueError("initial density and pressure must be positive")
    t_out = np.asarray(t_out, dtype=np.float64)
    if t_out.ndim != 1 or len(t_out) < 2 or np.any(np.diff(t_out) <= 0):
        raise ValueError("t_out must be an increasing 1D array with at least two times")
    n = rho.shape[1]
    length = float(x_range[1]) - float(x_range[0])
    k = Constants.build(float(pr["eta"]), float(pr["zeta"]), gamma, cfl, p_floor, length / n,
                        dtype)
    frames = {key: np.empty((rho.shape[0], len(t_out), n), dtype=dtype) for key in ("rho", "v", "p")}
    frames["rho"][:, 0], frames["v"][:, 0], frames["p"][:, 0] = rho, v, p
    state = [rho, v, p]
    t = np.full(rho.shape[0], dtype(t_out[0]), dtype=dtype)
    t_end = dtype(t_out[-1])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for target, index in march_targets(t_out, clock, dtype):
            t = _advance(state, t, dtype(target), t_end, k, pdebench_rounding)
            if index is not None:
                for key, arr in zip(("rho", "v", "p"), state):
                    frames[key][:, index] = arr
    return frames


def generate(n_samples: int, seed: int, params: dict[str, float] | None = None, nx: int = 1024,
             **options) -> dict[str, np.ndarray]:
    """``n_samples`` CNS trajectories from ``init_multi_HD``-style random initial states.

    Returns {"Vx", "density", "pressure": [B, T, nx] float32, "t-coordinate": [T],
    "x-coordinate": [nx]} with T = 101 frames on t in [0, 1] (options ``t_end``, ``dt_save``).
    """
    t_end = float(options.pop("t_end", 1.0))
    dt_save = float(options.pop("dt_save", 0.01))
    x_range = tuple(options.pop("x_range", (-1.0, 1.0)))
    sim_opts = {key: options.pop(key) for key in ("cfl", "p_floor", "gamma", "clock")
                if key in options}
    if options:
        raise TypeError(f"unknown cns1d generator option(s): {', '.join(sorted(options))}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    n_frames = int(math.ceil(t_end / dt_save - 1e-9)) + 1
    xc = cell_centres(nx, x_range)
    ic = init_multi_hd(xc, n_samples, seed)
    t_out = np.arange(n_frames, dtype=np.float32) * np.float32(dt_save)
    out = simulate(ic, t_out, params, x_range=x_range, **sim_opts)
    return {"Vx": out["v"], "density": out["rho"], "pressure": out["p"],
            "t-coordinate": t_out, "x-coordinate": xc.astype(np.float32)}


def cell_centres(n: int, x_range=(-1.0, 1.0)) -> np.ndarray:
    """The n cell centres x_L + (i + 1/2) dx."""
    x_l, x_r = float(x_range[0]), float(x_range[1])
    dx = (x_r - x_l) / n
    return x_l + (np.arange(n) + 0.5) * dx


__all__ = ["ATTRS", "Constants", "cell_centres", "generate", "hllc_flux", "march_targets",
           "simulate"]
