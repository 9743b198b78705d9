"""Random initial conditions of the PDEBench 1D scalar data sets (its ``init_multi`` family).

What PDEBench draws, per sample (written from the published description; see the data README):

* ``n_modes`` (2) mode indices n drawn uniformly from 1..k_tot, *with* replacement. Every one of
  the k_tot modes contributes A_n·sin(k_n x + φ_n) with A_n ~ U(0, 1), φ_n ~ U(0, 2π), where
  k_n = 2π·n·c_n/(x_last − x_first) and c_n is how often n was drawn. So a mode drawn twice has
  its wavenumber doubled, and the modes not drawn (k_n = 0) add the constant A_n·sin(φ_n): the
  fields have a random mean. Because the wavenumber uses the distance between the first and the
  last cell centre rather than the domain length, the field is not exactly periodic: it has a
  small jump at the boundary. Both quirks are kept because the reference data have them.
* with probability ``p_abs`` (0.1) the field is replaced by its absolute value; then it is
  multiplied by a random sign (±1, equally likely);
* with probability ``p_window`` (0.1) it is multiplied by the window
  ½[tanh((x − x_L)/w) − tanh((x − x_R)/w)], x_L ~ U(0.1, 0.45), x_R ~ U(0.55, 0.9), w = 0.01;
* with ``normalise`` (PDEBench's ``if_norm``, used for reaction–diffusion) it is shifted and
  scaled to min 0 and max 1.

Random numbers come from NumPy's ``default_rng(seed)``. PDEBench uses JAX's counter-based PRNG
(``PRNGKey(init_key)``), which NumPy cannot reproduce: the same seed gives the same
*distribution*, not the same fields as PDEBench. To reproduce a stored trajectory, start the
generator's ``simulate`` from the stored frame 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pdesharp.data.generate import fv1d

DT_SAVE = 0.01


def init_multi(x: np.ndarray, n_samples: int, seed: int | np.random.Generator, *, k_tot: int = 4,
               n_modes: int = 2, p_abs: float = 0.1, p_window: float = 0.1,
               window_width: float = 0.01, normalise: bool = False,
               dtype=np.float32) -> np.ndarray:
    """``n_samples`` random fields [B, N] on the cell centres ``x``; see the module docstring.

    Computed in float64 and rounded to ``dtype`` once at the end; with ``normalise`` the
    rounded fields have min exactly 0 and max exactly 1.
    """
    dtype = fv1d.working_dtype(dtype)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < 2:
        raise fv1d.GeneratorInputError(f"x must be 1D cell centres, got shape {x.shape}")
    if n_samples < 1 or k_tot < 1 or n_modes < 1:
        raise fv1d.GeneratorInputError(
            f"need n_samples, k_tot, n_modes >= 1; got {n_samples}, {k_tot}, {n_modes}")
    for name, p in (("p_abs", p_abs), ("p_window", p_window)):
        if not 0.0 <= p <= 1.0:
            raise fv1d.GeneratorInputError(f"{name} must be a probability, got {p}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    drawn = rng.integers(0, k_tot, size=(n_samples, n_modes))
    counts = (drawn[:, :, None] == np.arange(k_tot)).sum(axis=1)  # [B, k_tot], 0, 1 or 2...
    wavenumber = 2.0 * np.pi * np.arange(1, k_tot + 1) * counts / (x[-1] - x[0])
    amplitude = rng.uniform(size=(n_samples, k_tot, 1))
    phase = 2.0 * np.pi * rng.uniform(size=(n_samples, k_tot, 1))
    u = np.sum(amplitude * np.sin(wavenumber[:, :, None] * x + phase), axis=1)

    take_abs = rng.random(n_samples) < p_abs
    u = np.where(take_abs[:, None], np.abs(u), u)
    u *= rng.choice([1.0, -1.0], size=(n_samples, 1))

    windowed = rng.random(n_samples) < p_window
    x_lo = rng.uniform(0.1, 0.45, size=(n_samples, 1))
    x_hi = rng.uniform(0.55, 0.9, size=(n_samples, 1))
    window = 0.5 * (np.tanh((x - x_lo) / window_width) - np.tanh((x - x_hi) / window_width))
    u = np.where(windowed[:, None], u * window, u)

    u = u.astype(dtype)
    if normalise:
        u -= u.min(axis=1, keepdims=True)
        top = u.max(axis=1, keepdims=True)
        # a constant field cannot be scaled to [0, 1]; it stays at 0 rather than becoming NaN
        u /= np.where(top > 0, top, dtype.type(1.0))
        np.clip(u, 0.0, 1.0, out=u)
    return u


def pdebench_times(t_end: float, dt_save: float = DT_SAVE, dtype=np.float32) -> np.ndarray:
    """Output times as PDEBench writes them, one per frame, stored as float32.

    PDEBench forms k·Δt_save in its working precision (so a float32 run stores
    float32(k)·float32(0.01), a float64 run k·0.01 rounded once) and saves ceil(t_end/Δt_save)
    + 1 frames; CodePDE drops the extra time value PDEBench writes, leaving one per frame.
    """
    if t_end <= 0 or dt_save <= 0:
        raise fv1d.GeneratorInputError(f"need t_end > 0 and dt_save > 0, got {t_end}, {dt_save}")
    dtype = fv1d.working_dtype(dtype)
    n_frames = int(np.ceil(round(t_end / dt_save, 9))) + 1
    return (np.arange(n_frames).astype(dtype) * dtype.type(dt_save)).astype(np.float32)


Simulate = Callable[..., dict[str, np.ndarray]]


def draw_and_simulate(simulate: Simulate, n_samples: int, seed: int,
                      params: dict[str, float] | None, nx: int, defaults: dict[str, float], *,
                      default_t_end: float, default_normalise: bool, dtype=np.float32,
                      sample_range: tuple[int, int] | None = None,
                      **options) -> dict[str, np.ndarray]:
    """Shared body of the 1D ``generate`` functions: draw ICs, choose times, simulate, pack.

    ``options`` may hold ``t_end``, ``dt_save``, ``x_range``, ``cfl`` and the keyword options of
    :func:`init_multi`; anything else is an error. ``sample_range=(a, b)``: draw all
    ``n_samples`` initial conditions (so the stream is the same) but simulate and return only
    samples a..b-1 (each sample keeps its own clock, so it does not depend on its batch).
    """
    params = fv1d.require_params(params, defaults)
    t_end = float(options.pop("t_end", default_t_end))
    dt_save = float(options.pop("dt_save", DT_SAVE))
    x_range = tuple(float(v) for v in options.pop("x_range", (0.0, 1.0)))
    sim_options = {k: options.pop(k) for k in ("cfl",) if k in options}
    known = {"k_tot", "n_modes", "p_abs", "p_window", "window_width", "normalise"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise fv1d.GeneratorInputError(
            f"unknown generator options {unknown}; known: t_end, dt_save, x_range, dtype, cfl, "
            f"{', '.join(sorted(known))}")
    ic_options = {"k_tot": 4, "normalise": default_normalise, **options}
    x = fv1d.cell_centres(nx, x_range, dtype)
    u0 = init_multi(x, n_samples, seed, dtype=dtype, **ic_options)
    if sample_range is not None:
        u0 = u0[slice(*sample_range)]
    t = pdebench_times(t_end, dt_save, dtype)
    frames = simulate({"u": u0}, t, params, x_range=x_range, dtype=dtype, **sim_options)["u"]
    return {
        "tensor": frames.astype(np.float32),
        "t-coordinate": t,
        "x-coordinate": fv1d.cell_centres(nx, x_range, np.float32),
    }
