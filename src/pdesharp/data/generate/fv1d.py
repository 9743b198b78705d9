"""Finite-volume machinery shared by the 1D scalar generators (advection, Burgers, reacdiff).

The three generators reproduce the reference data that PDEBench's ``data_gen_NLE`` scripts make
(and that CodePDE scores against). This module holds what they share, written from the published
scheme description, not from PDEBench's code:

* periodic cell-centred grids with two ghost cells per side;
* a second-order MUSCL reconstruction with PDEBench's limiter (a monotonised-central limiter, which
  PDEBench calls "van Leer"): slope = sign(Δc)·[Δl·Δr > 0]·min(2·min(|Δl|, |Δr|), |Δc|), with a
  factor ½ instead of 0 or 1 when Δl·Δr is zero (that factor only matters if the product
  underflows, but we keep it, flush-to-zero included: see :func:`mc_slope`);
* a two-stage predictor–corrector in time: a half step from uⁿ gives u*, then the full step from
  uⁿ uses fluxes of u* (:func:`march`);
* PDEBench's clock. Output times are reached by clipping the step, ``dt = min(dt_stable,
  t_end - t, t_save - t)``; steps with ``dt <= 1e-8`` are skipped but still advance ``t``; ``t``
  and the save times are accumulated in the working precision (``t_save += dt_save``), and the
  final frame is the state at ``t_end`` exactly. In float32 these rounding details move the
  output times by up to ~1e-6, which is visible at the round-off level of the data, so the clock
  is emulated exactly (measured on advection: with exact k·0.01 save times instead, 89 % of the
  values differ and the nRMSE against the data is 1.4e-6; with the emulated clock, 0.98 are
  bit-identical and the nRMSE is 8e-9).

Floating point: PDEBench ran these schemes in JAX on a CPU, where XLA lets LLVM contract
``a*b + c`` into one fused multiply-add. :func:`fma` emulates that for float32 (the product of two
float32 numbers is exact in float64, so one float64 add and one rounding give the fused result up
to a double-rounding case of probability ~2⁻²⁹). The generators place it exactly where
measurement against the shared dev data showed the contraction happened; in float64 the
contraction is not emulated (its effect, ~1e-16, is far below anything stored as float32).
What the emulation buys, measured against the float32 dev data: without FMA, advection nRMSE
3.1e-7 (15 % of values bit-identical) and Burgers 1.6e-7 over 40 frames (60 %); running the
schemes in float64 instead gives 4.8e-6 (advection, all frames) and 5.1e-5 (Burgers, 40 frames,
max |Δu| 1.5e-3), i.e. the float32 data carry their own round-off, which a float64 run does not.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

GHOST = 2  # ghost cells per side: the MUSCL stencil of an interface reaches two cells out
MIN_STEP = 1.0e-8  # PDEBench skips the update of steps not longer than this (t still advances)

# (u, v, h, predictor) -> u − h·(flux difference of v) [+ source]: one stage of the
# predictor–corrector; ``predictor`` is True for the half step (v is u itself).
Stage = Callable[[np.ndarray, np.ndarray, np.ndarray, bool], np.ndarray]
# u [B, N] -> stable step per sample [B, 1] (working dtype)
StepLimit = Callable[[np.ndarray], np.ndarray]


class GeneratorInputError(ValueError):
    """Initial data, output times or parameters that a generator cannot work with."""


def working_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise GeneratorInputError(f"working precision must be float32 or float64, got {dt}")
    return dt


def cell_centres(nx: int, x_range: tuple[float, float] = (0.0, 1.0),
                 dtype=np.float32) -> np.ndarray:
    """x_i = x_L + (i + ½)Δx as PDEBench forms them: edges by linspace, then + ½Δx, in ``dtype``."""
    if nx < 4:
        raise GeneratorInputError(f"need at least 4 cells for the MUSCL stencil, got nx={nx}")
    x_left, x_right = (float(v) for v in x_range)
    if not x_right > x_left:
        raise GeneratorInputError(f"x_range must be increasing, got {x_range}")
    dtype = working_dtype(dtype)
    dx = (x_right - x_left) / nx
    edges = np.linspace(x_left, x_right, nx + 1).astype(dtype)
    return edges[:-1] + dtype.type(0.5 * dx)


def periodic_pad(u: np.ndarray, width: int = GHOST) -> np.ndarray:
    """[B, N] -> [B, N + 2·width], ghost cells copied from the opposite end."""
    return np.concatenate([u[:, -width:], u, u[:, :width]], axis=1)


def mc_slope(d_left: np.ndarray, d_right: np.ndarray, d_centre: np.ndarray,
             alpha: float = 2.0) -> np.ndarray:
    """Limited cell slope (times Δx) from one-sided and centred differences.

    Every operation here is exact in floating point (sign factors and a factor of 2), so the
    only rounding in the reconstruction is in the differences and in u ± ½·slope. XLA on a CPU
    runs with subnormals flushed to zero, so a product Δl·Δr below the smallest normal number
    counts as zero (factor ½); this matters only where |u| < ~1e-19, as in the far tails of
    windowed initial conditions, and is emulated because it changes those tails.
    """
    product = d_left * d_right
    product[np.abs(product) < np.finfo(product.dtype).tiny] = 0.0
    same_sign = 0.5 + 0.5 * np.sign(product)
    bound = np.minimum(alpha * np.minimum(np.abs(d_left), np.abs(d_right)), np.abs(d_centre))
    return np.sign(d_centre) * same_sign * bound


def interface_states(padded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MUSCL states on both sides of each of the N + 1 interfaces of the N real cells.

    ``padded`` is [B, N + 4]. Interface k (k = 0..N) separates real cells k−1 and k; the
    returned ``left`` is the right-face value of cell k−1 and ``right`` the left-face value of
    cell k, both [B, N + 1].
    """
    centre = padded[:, 1:-1]  # real cells -1 .. N
    d_left = centre - padded[:, :-2]
    d_right = padded[:, 2:] - centre
    d_centre = (padded[:, 2:] - padded[:, :-2]) * 0.5
    half_slope = 0.5 * mc_slope(d_left, d_right, d_centre)
    face_lo = centre - half_slope  # value at each cell's left face
    face_hi = centre + half_slope  # value at each cell's right face
    return face_hi[:, :-1], face_lo[:, 1:]


def fma(a, b, c, dtype) -> np.ndarray:
    """a·b + c rounded once in float32 (a contracted multiply-add); plain in float64."""
    if np.dtype(dtype) == np.float32:
        wide = np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
        return wide.astype(np.float32)
    return a * b + c


def flux_difference_update(u: np.ndarray, flux: np.ndarray, ratio, dtype) -> np.ndarray:
    """u_i − ratio·(F_{i+½} − F_{i−½}), ratio = h/Δx, with the multiply-add fused as XLA did."""
    return fma(-ratio, flux[:, 1:] - flux[:, :-1], u, dtype)


# --------------------------------------------------------------------------- clock and time loop

def save_spacing(t_out: np.ndarray) -> float | None:
    """The constant output spacing of ``t_out`` (None if it is not uniform).

    Output times stored as float32 (as in every PDEBench/CodePDE file) carry ~7 significant
    digits (k·0.01 stored at k = 5 is 0.049999997), while PDEBench accumulated the decimal
    value of its config. For float32 ``t_out`` we therefore round the spacing to 6 significant
    digits (float32 resolves ~1e-7 relative, so no real spacing is moved further than that).
    """
    t = np.asarray(t_out)
    if t.size < 2:
        return None
    steps = np.diff(t.astype(np.float64))
    spacing = float((t[-1].astype(np.float64) - t[0]) / (t.size - 1))
    # storage rounding of each time (a few ulps of t_end) is not non-uniformity
    eps = np.finfo(t.dtype).eps if np.issubdtype(t.dtype, np.floating) else 0.0
    slack = 8.0 * eps * max(abs(float(t[-1])), abs(float(t[0])))
    if spacing <= 0 or not np.allclose(steps, spacing, rtol=1e-9, atol=slack):
        return None
    if t.dtype == np.float32:
        spacing = float(f"{spacing:.6g}")
    return spacing


def output_stops(t_out: np.ndarray, dtype, horizon: float | None = None
                 ) -> tuple[list, object, bool]:
    """Times at which frames 1..T−1 are taken, the end time of the run (both in ``dtype``), and
    whether the last frame is the state at that end time.

    Uniform ``t_out``: the save time is accumulated as PDEBench does, t_save ← t_save + Δt_save
    in the working precision. The last frame is the state at the end time ``horizon`` (default
    ``t_out[-1]``) if that is where the frames end, as PDEBench overwrites its last frame with
    the final state. Pass ``horizon`` larger than ``t_out[-1]`` to reproduce a leading window of
    a longer run bit for bit (every step is also clipped at the run's end time).
    """
    dtype = working_dtype(dtype)
    t = np.asarray(t_out, dtype=np.float64)
    if t.ndim != 1 or t.size < 2:
        raise GeneratorInputError(f"t_out must be 1D with at least 2 times, got shape {t.shape}")
    if t[0] != 0.0:
        raise GeneratorInputError(f"t_out[0] must be 0 (the initial condition), got {t[0]}")
    if np.any(np.diff(t) <= 0):
        raise GeneratorInputError("t_out must be strictly increasing")
    end = dtype.type(t[-1] if horizon is None else horizon)
    if end < dtype.type(t[-1]):
        raise GeneratorInputError(f"horizon {horizon} lies before the last output time {t[-1]}")
    spacing = save_spacing(np.asarray(t_out))
    if spacing is None:
        stops = [dtype.type(v) for v in t[1:]]
    else:
        step = dtype.type(spacing)
        stops, acc = [], dtype.type(0.0)
        for _ in range(t.size - 1):
            acc = dtype.type(acc + step)
            stops.append(acc)
    stops = [min(s, end) for s in stops]
    return stops, end, bool(end == dtype.type(t[-1]))


def march(u0: np.ndarray, t_out: np.ndarray, stage: Stage, step_limit: StepLimit | float,
          dtype, horizon: float | None = None) -> np.ndarray:
    """Run the predictor–corrector from ``u0`` [B, N]; return frames [B, len(t_out), N].

    Each step: ``u* = stage(u, u, dt/2)``, then ``u = stage(u, u*, dt)``. ``step_limit`` is the
    stable step, either one number for all samples and times (then one scalar clock drives the
    whole batch, the fast path) or a function of the state giving one step per sample (each
    sample then keeps its own clock, as PDEBench's vmap over samples does).
    """
    dtype = working_dtype(dtype)
    stops, end, finish = output_stops(t_out, dtype, horizon)
    u = np.ascontiguousarray(u0, dtype=dtype)
    frames = np.empty((u.shape[0], len(stops) + 1, u.shape[1]), dtype=dtype)
    frames[:, 0] = u
    # index of the frame that is the final state (PDEBench overwrites its last frame with it)
    last = len(stops) if finish else -1
    if callable(step_limit):
        u = _march_per_sample(u, frames, stops, end, stage, step_limit, dtype, last)
    else:
        u = _march_uniform(u, frames, stops, end, stage, dtype.type(step_limit), dtype, last)
    return frames


def _pc_step(u: np.ndarray, h, stage: Stage, dtype) -> np.ndarray:
    half = stage(u, u, h * dtype.type(0.5), True)
    return stage(u, half, h, False)


def _march_uniform(u, frames, stops, end, stage, dt_stable, dtype, last):
    t = dtype.type(0.0)
    scalar = dtype.type
    for k, stop in enumerate(stops, start=1):
        goal = end if k == last else stop
        while t < goal:
            target = stop if t < stop else goal
            dt = min(dt_stable, scalar(end - t), scalar(target - t))
            if dt > MIN_STEP:
                u = _pc_step(u, dt, stage, dtype)
            t = scalar(t + dt)
        frames[:, k] = u
    return u


def _march_per_sample(u, frames, stops, end, stage, step_limit, dtype, last):
    t = np.zeros((u.shape[0], 1), dtype=dtype)
    zero = dtype.type(0.0)
    for k, stop in enumerate(stops, start=1):
        goal = end if k == last else stop
        while True:
            active = t < goal
            if not active.any():
                break
            target = np.where(t < stop, stop, goal).astype(dtype)
            dt = np.minimum(np.minimum(step_limit(u), end - t), target - t).astype(dtype)
            dt = np.where(active, dt, zero)
            moving = dt > MIN_STEP
            if moving.any():
                u = np.where(moving, _pc_step(u, dt, stage, dtype), u)
            t = (t + dt).astype(dtype)
        frames[:, k] = u
    return u


def check_initial(initial: dict[str, np.ndarray], name: str = "u") -> np.ndarray:
    """The [B, N] initial field ``initial[name]`` (a single [N] field is taken as B = 1)."""
    if name not in initial:
        raise GeneratorInputError(f"initial data needs the field {name!r}; got {sorted(initial)}")
    u0 = np.asarray(initial[name])
    if u0.ndim == 1:
        u0 = u0[None, :]
    if u0.ndim != 2:
        raise GeneratorInputError(f"initial {name!r} must be [B, N], got shape {u0.shape}")
    if u0.shape[1] < 4:
        raise GeneratorInputError(f"need at least 4 cells, got N={u0.shape[1]}")
    if not np.all(np.isfinite(u0)):
        raise GeneratorInputError(f"initial {name!r} contains NaN or Inf")
    return u0


def require_params(params: dict[str, float] | None, defaults: dict[str, float]) -> dict[str, float]:
    """``defaults`` overridden by ``params``; unknown names are an error, not silently ignored."""
    merged = dict(defaults)
    for key, value in (params or {}).items():
        if key not in defaults:
            raise GeneratorInputError(
                f"unknown parameter {key!r}; this generator takes {sorted(defaults)}")
        merged[key] = float(value)
    return merged
