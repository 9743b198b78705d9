"""Float32-faithful building blocks of the 1D CNS scheme used by :mod:`.cns`.

Each expression is written in the order PDEBench's JAX code evaluates it, and every ``a*b + c``
that XLA:CPU contracts into a fused multiply-add on the machine that made the dev data is
evaluated with one rounding (:func:`fma`). Which sums get contracted was established against
``cns1d_dev.hdf5``: contracting the energy ``p/(G-1) + rho v^2/2`` alone lowers the frame-1
mismatch from 2.2e-5 to 1.0e-6 nRMSE, and LLVM contracts the first product of ``a*b +/- c*d``,
which a JAX probe on this machine confirms. With ``Constants.fused = False`` the same code is a
plain float32 (or float64) implementation of the scheme.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
    fused: bool = False         # emulate XLA:CPU's contraction of a*b + c into one rounding

    @classmethod
    def build(cls, eta: float, zeta: float, gamma: float, cfl: float, p_floor: float,
              dx: float, dtype: type, fused: bool = False) -> Constants:
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
                   half=c(0.5), two=c(2.0), zero=c(0.0), fused=fused and dtype is np.float32)


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


def pad(u: np.ndarray, g: int) -> np.ndarray:
    """Periodic ghost cells: g on each side of the last axis."""
    return np.concatenate([u[:, -g:], u, u[:, :g]], axis=1)


def mc_slopes(u: np.ndarray, k: Constants) -> np.ndarray:
    """Monotonised-central limited slopes of a padded field (cells 1 .. n-2 of the padding)."""
    a = u[:, 1:-1] - u[:, :-2]
    b = u[:, 2:] - u[:, 1:-1]
    c = (u[:, 2:] - u[:, :-2]) * k.half
    return (np.sign(c) * (k.half + k.half * np.sign(a * b))) * np.minimum(
        k.two * np.minimum(np.abs(a), np.abs(b)), np.abs(c))


def face_states(rho: np.ndarray, v: np.ndarray, p: np.ndarray, k: Constants):
    """Left and right states at the n+1 faces of the n cells (face i is the left face of cell i).

    Returns (rho_l, v_l, p_l, rho_r, v_r, p_r), each [B, n+1].
    """
    q = [pad(w, 2) for w in (rho, v, p)]
    grads = [mc_slopes(w, k) for w in q]  # padded cells 1 .. n+2
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


def primitive(rho, mom, energy, k: Constants):
    v = mom / rho
    p = k.gm1 * (energy - (k.half * (mom * mom)) / rho)
    return v, p


def inviscid_update(rho, v, p, rho_f, v_f, p_f, dt, k: Constants):
    """One forward-Euler update of (rho, v, p) with fluxes evaluated on (rho_f, v_f, p_f)."""
    mom = v * rho
    energy = fma(k, p, k.inv_gm1, k.half * (mom * v))
    f_rho, f_mom, f_en = hllc_flux(*face_states(rho_f, v_f, p_f, k), k)
    dtdx = (dt * k.inv_dx)[:, None]
    rho = rho - dtdx * (f_rho[:, 1:] - f_rho[:, :-1])
    mom = mom - dtdx * (f_mom[:, 1:] - f_mom[:, :-1])
    energy = energy - dtdx * (f_en[:, 1:] - f_en[:, :-1])
    v, p = primitive(rho, mom, energy, k)
    p = np.where(p > k.tiny, p, k.p_floor)
    return rho, v, p


@dataclass
class ViscousCoefficients:
    """Density-dependent factors of the viscous fluxes; density is constant over the sub-steps."""

    rho: np.ndarray
    mom_x: np.ndarray   # c rho_face / dx at the n+1 faces
    en_x: np.ndarray    # c/2 rho_face / dx
    mom_yz: np.ndarray  # eta rho / dy of PDEBench's one-cell y and z directions
    en_yz: np.ndarray

    @classmethod
    def build(cls, rho: np.ndarray, k: Constants) -> ViscousCoefficients:
        rp = pad(rho, 1)
        rho_face = k.half * (rp[:, 1:] + rp[:, :-1])
        return cls(rho=rho, mom_x=(k.visc_x * rho_face) * k.inv_dx,
                   en_x=(k.half_visc_x * rho_face) * k.inv_dx,
                   mom_yz=(k.eta * rho) * k.inv_dyz, en_yz=(k.half_eta * rho) * k.inv_dyz)


def viscous_substep(c: ViscousCoefficients, v, p, dt, k: Constants, pdebench_rounding: bool):
    """Density-weighted viscous diffusion of momentum and kinetic energy over ``dt`` [B]."""
    rho, half = c.rho, k.half
    v0 = v
    vp = pad(v, 1)
    mom = v * rho
    energy = fma(k, p, k.inv_gm1, half * (mom * v))
    v_hi, v_lo = vp[:, 1:], vp[:, :-1]
    dv2 = fma(k, v_hi, v_hi, -(v_lo * v_lo))  # (v^2)_x across each face
    f_mom = c.mom_x * (v_hi - v_lo)
    f_en = c.en_x * dv2
    dtdx = (dt * k.inv_dx)[:, None]
    mom = _add_product(k, mom, v, rho, dtdx, f_mom[:, 1:] - f_mom[:, :-1])
    energy = fma(k, dtdx, f_en[:, 1:] - f_en[:, :-1], energy)
    v, p = primitive(rho, mom, energy, k)
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
        v, p = primitive(rho, mom, energy, k)
    return v, p


# Whether XLA contracts ``m + dt*dF`` with m = v*rho as fma(v, rho, dt*dF) (True: the product
# is recomputed inside the fused kernel and LLVM fuses the first operand) or as fma(dt, dF, m)
# (False: m is materialised). Over the full dev run True gives nRMSE 1.7e-6 / 8.1e-6 and max
# |diff| 3.5e-3; False gives 1.5e-6 / 4.9e-5 and 4.6e-3.
_FUSE_MOMENTUM_PRODUCT = True


def _add_product(k: Constants, mom, v, rho, dt, dflux):
    if _FUSE_MOMENTUM_PRODUCT:
        return fma(k, v, rho, dt * dflux)
    return fma(k, dt, dflux, mom)


__all__ = ["Constants", "ViscousCoefficients", "face_states", "fma", "hllc_flux", "inviscid_update",
           "mc_slopes", "pad", "primitive", "viscous_substep"]
