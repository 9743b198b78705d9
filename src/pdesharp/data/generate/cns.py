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

Rounding (``pdebench_rounding=True``, the default in float32). Float32 round-off is not noise in
this problem: each conversion p -> E -> p multiplies p by float32(2/3) * 1.5 = 1 + 3e-8, and with
~50 such conversions per step PDEBench's stored run gains ~1 % total energy over t in [0, 1]
(README of the dev data). To follow that run rather than merely the PDE, we reproduce its float32
arithmetic: the same operation order (:mod:`.cns_scheme`), the fused multiply-adds XLA:CPU emits,
and the two extra y/z viscous sweeps of PDEBench's one-cell y and z directions (each re-derives v
and p, and their ghost cells still hold the velocity from the start of the sub-step). Measured on
the two ``cns1d_dev.hdf5`` samples at t = 0.01: nRMSE 1.0e-6 with all of this, 2.2e-5 without the
fused multiply-adds, 1.2e-4 for the float64 scheme. Over all 101 frames (t in [0, 1]): nRMSE
1.7e-6 and 8.1e-6 (max |diff| 3.5e-3 in pressure ~40, 3.2e-4 in density, 6.6e-5 in velocity),
against 1.1e-3 and 1.9e-3 without the fused multiply-adds (``bench/cns_darcy_reproduce.py``).
Bit-identity is not reached (2 % of the values): which products XLA fuses depends on its kernel
fusion decisions, which we can only infer.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from pdesharp.data.generate.cns_ic import init_multi_hd
from pdesharp.data.generate.cns_scheme import (
    Constants,
    ViscousCoefficients,
    inviscid_update,
    viscous_substep,
)

BATCH = 2  # samples per batch of `pdesharp data generate` (a checkpoint each)
ATTRS = {
    "method": "PDEBench CFD_multi_Hydra method: MUSCL (MC limiter) + HLLC, predictor-corrector, "
              "density-weighted viscosity in operator-split sub-steps",
    "gamma": 5.0 / 3.0,
    "cfl": 0.3,
    "p_floor": 1e-4,
    "precision": "float32",
}

DEFAULT_PARAMS = {"eta": 0.1, "zeta": 0.1}


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
        r1, v1, p1 = inviscid_update(rho, v, p, rho, v, p, dt * k.half, k)
        r2, v2, p2 = inviscid_update(rho, v, p, r1, v1, p1, dt, k)
        dt_vis = np.minimum(k.dt_visc, dt)
        t_vis = np.zeros_like(dt)
        coeffs = ViscousCoefficients.build(r2, k)
        while True:
            sub = (dt - t_vis) > k.tiny
            if not sub.any():
                break
            dt_ev = np.minimum(np.minimum(dt, dt_vis), dt - t_vis)
            v3, p3 = viscous_substep(coeffs, v2, p2, dt_ev, k, pdebench_rounding)
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
    ``params`` holds ``eta`` and ``zeta`` (default 0.1 each). ``pdebench_rounding`` reproduces
    PDEBench's float32 rounding pattern (module notes); False gives the plain scheme, which is
    what a float64 run should use. ``clock`` picks the stop times (:func:`march_targets`).
    """
    dtype = np.dtype(dtype).type
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {np.dtype(dtype).name}")
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
                        dtype, fused=pdebench_rounding)
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
    # A sample that blew up (NaN) or whose time step collapsed stops advancing; say so instead of
    # handing back frames that silently repeat a stale state. PDEBench drops such samples.
    finite = np.all([np.all(np.isfinite(a), axis=1) for a in state], axis=0)
    stalled = ~(t >= t_end - k.tiny)
    bad = np.flatnonzero(~finite | stalled)
    if bad.size:
        warnings.warn(f"cns1d: sample(s) {bad.tolist()} became non-finite or stopped advancing "
                      f"before t = {float(t_end)}; their later frames are not valid",
                      RuntimeWarning, stacklevel=2)
    return frames


def generate(n_samples: int, seed: int, params: dict[str, float] | None = None, nx: int = 1024,
             **options) -> dict[str, np.ndarray]:
    """``n_samples`` CNS trajectories from ``init_multi_HD``-style random initial states.

    Returns {"Vx", "density", "pressure": [B, T, nx] float32, "t-coordinate": [T],
    "x-coordinate": [nx]} with T = 101 frames on t in [0, 1]. Options: ``t_end``, ``dt_save``,
    ``x_range`` and the :func:`simulate` keywords ``cfl``, ``p_floor``, ``gamma``, ``clock``,
    ``pdebench_rounding``. The initial states come from :func:`.cns_ic.init_multi_hd` (NumPy
    ``default_rng(seed)``; PDEBench's JAX stream cannot be reproduced, so same-seed samples differ).
    """
    t_end = float(options.pop("t_end", 1.0))
    dt_save = float(options.pop("dt_save", 0.01))
    x_range = tuple(options.pop("x_range", (-1.0, 1.0)))
    sim_opts = {key: options.pop(key) for key in ("cfl", "p_floor", "gamma", "clock",
                                                  "pdebench_rounding") if key in options}
    sample_range = options.pop("sample_range", None)  # simulate samples a..b-1 of the draw
    if options:
        raise TypeError(f"unknown cns1d generator option(s): {', '.join(sorted(options))}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    n_frames = int(math.ceil(t_end / dt_save - 1e-9)) + 1
    xc = cell_centres(nx, x_range)
    ic = init_multi_hd(xc, n_samples, seed)
    if sample_range is not None:
        ic = {k: v[slice(*sample_range)] for k, v in ic.items()}
    t_out = np.arange(n_frames, dtype=np.float32) * np.float32(dt_save)
    out = simulate(ic, t_out, params, x_range=x_range, **sim_opts)
    return {"Vx": out["v"], "density": out["rho"], "pressure": out["p"],
            "t-coordinate": t_out, "x-coordinate": xc.astype(np.float32)}


def cell_centres(n: int, x_range=(-1.0, 1.0)) -> np.ndarray:
    """The n cell centres x_L + (i + 1/2) dx."""
    x_l, x_r = float(x_range[0]), float(x_range[1])
    dx = (x_r - x_l) / n
    return x_l + (np.arange(n) + 0.5) * dx


__all__ = ["ATTRS", "Constants", "cell_centres", "generate", "march_targets", "simulate"]
