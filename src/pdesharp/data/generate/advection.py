"""Reference data for 1D linear advection u_t + β u_x = 0 (periodic), as PDEBench makes it.

Scheme (PDEBench ``AdvectionEq``, config ``beta1e-1``): second-order MUSCL finite volumes with the
limiter of :mod:`.fv1d`, the upwind (Rusanov with speed |β|) interface flux, the half-step /
full-step predictor–corrector, CFL 0.4 with Δt = CFL·Δx/(|β| + 1e-8), and output every 0.01.
It runs in float32 by default as PDEBench did. Started from the stored initial conditions of
``advection_dev.hdf5`` it reproduces all 201 frames of all 20 samples bit for bit, except values
below 1e-30 in the far tail of one windowed sample (subnormal flushing inside XLA that is not
emulated everywhere); see :func:`upwind_flux` and bench/gen1d_reproduce.py. About 0.1 s per
sample for the full run.
"""

from __future__ import annotations

import numpy as np

from pdesharp.data.generate import fv1d
from pdesharp.data.generate.initial import draw_and_simulate

DEFAULTS = {"beta": 0.1}
CFL = 0.4
T_END = 2.0

BATCH = 10  # samples per batch of `pdesharp data generate` (a checkpoint each)
ATTRS = {  # provenance written into generated files by pdesharp.data.generate.generate_to_file
    "scheme": "PDEBench AdvectionEq: 2nd-order MUSCL finite volume, MC limiter, upwind flux, "
              "half-step predictor / full-step corrector, adaptive dt clipped at output times",
    "cfl": CFL,
    "precision": "float32 (PDEBench's JAX arithmetic emulated: fused multiply-adds, float32 clock)",
    "initial_condition": "init_multi (k_tot=4) drawn with NumPy's default_rng, "
                         "not PDEBench's JAX PRNG",
}


def upwind_flux(v: np.ndarray, beta: float, dtype, predictor: bool = False) -> np.ndarray:
    """Interface fluxes [B, N+1] of the MUSCL states of ``v`` [B, N].

    F = ½(β u⁻ + β u⁺ − |β|(u⁺ − u⁻)), with the multiply-adds fused where XLA fused them when
    PDEBench made the data. Measured against ``advection_dev.hdf5``: β u⁻ is always fused into
    the first sum (of the 18 ways to associate and fuse this sum, no other reproduces the data;
    they leave 72–86 % of the values off by an ulp or more). The dissipation product |β|(u⁺ − u⁻)
    is fused in the corrector's flux, but in the predictor's only at the last interface
    (plausibly the scalar remainder of a vectorised loop over N + 1 values; a hypothesis, the
    pattern itself is measured); elsewhere the predictor rounds it separately. With this, all
    20 dev samples match bit for bit except values below 1e-30 in the far tail of one windowed
    sample.
    """
    left, right = fv1d.interface_states(fv1d.periodic_pad(v))
    b = dtype.type(beta)
    speed = dtype.type(abs(beta))
    central = fv1d.fma(left, b, right * b, dtype)
    jump = right - left
    flux = fv1d.fma(-speed, jump, central, dtype)
    if predictor and dtype == np.float32:
        last = flux[:, -1].copy()
        flux = central - speed * jump
        flux[:, -1] = last
    return dtype.type(0.5) * flux


def stable_step(beta: float, dx: float, dtype, cfl: float = CFL):
    """PDEBench's Δt = CFL·Δx/(|β| + 1e-8), evaluated in the working precision."""
    s = dtype.type
    return s(s(dx) / s(s(abs(beta)) + s(1.0e-8))) * s(cfl)


def simulate(initial: dict[str, np.ndarray], t_out: np.ndarray, params: dict[str, float],
             x_range: tuple[float, float] = (0.0, 1.0), dtype=np.float32,
             horizon: float | None = None, cfl: float = CFL) -> dict[str, np.ndarray]:
    """Evolve ``initial["u"]`` [B, N] to the times ``t_out`` (``t_out[0] = 0``).

    Returns ``{"u": [B, len(t_out), N]}`` in the working precision ``dtype``, frame 0 equal to
    the input. ``horizon`` is the end time of the run the frames belong to (default
    ``t_out[-1]``); pass PDEBench's 2.0 to reproduce a leading window of its data exactly.
    """
    dtype = fv1d.working_dtype(dtype)
    p = fv1d.require_params(params, DEFAULTS)
    u0 = fv1d.check_initial(initial)
    nx = u0.shape[1]
    dx = (float(x_range[1]) - float(x_range[0])) / nx
    ratio_scale = dtype.type(1.0 / dx)
    beta = p["beta"]

    def stage(u, v, h, predictor):
        flux = upwind_flux(v, beta, dtype, predictor)
        return fv1d.flux_difference_update(u, flux, h * ratio_scale, dtype)

    frames = fv1d.march(u0, t_out, stage, stable_step(beta, dx, dtype, cfl), dtype, horizon)
    return {"u": frames}


def generate(n_samples: int, seed: int, params: dict[str, float] | None = None, nx: int = 1024,
             **options) -> dict[str, np.ndarray]:
    """Draw ``n_samples`` initial conditions (:func:`.initial.init_multi`, 4 modes) and simulate.

    Options: ``t_end`` (2.0), ``dt_save`` (0.01), ``x_range`` ((0, 1)), ``dtype`` (float32),
    ``cfl`` (0.4), and the initial-condition options of ``init_multi`` (``k_tot``, ``p_abs``,
    ``p_window``, ...). Returns the CodePDE layout: ``tensor`` [B, T, N] float32,
    ``t-coordinate`` [T], ``x-coordinate`` [N] (cell centres).
    """
    return draw_and_simulate(simulate, n_samples, seed, params, nx, DEFAULTS,
                             default_t_end=T_END, default_normalise=False, **options)

