"""Reference data for 1D reaction–diffusion u_t = ν u_xx + ρ u(1 − u) (periodic), PDEBench-style.

Scheme (PDEBench ``ReactionDiffusionEq``, config ``Rho1e0_Nu5e-1``), in each stage of the
predictor–corrector of :mod:`.fv1d` (u* = S(uⁿ, uⁿ, Δt/2), uⁿ⁺¹ = S(uⁿ, u*, Δt)):

    S(u, v, h) = L_h(u) + h·ν·(v_{i+1} − 2v_i + v_{i−1})/Δx²,

where L_h is the exact solution operator of the logistic ODE u' = ρu(1 − u) over h,
L_h(u) = 1/(1 + e^{−ρh}(1 − u)/u) = u/(e^{−ρh} + (1 − e^{−ρh})u). The step is fixed,
Δt = CFL·½Δx²/(ν + 1e-8) with CFL 0.25 (≈ 2.4e-7 for 1024 cells), and is clipped at the output
times; that is ~42,000 steps per output interval and ~4.2 million for t ∈ [0, 1].

Measured against ``reacdiff1d_dev.hdf5`` from its stored (float32-rounded) initial conditions,
2 samples, all 101 frames: max |Δu| = 6.0e-8 (one float32 ulp near 1), nRMSE 1.5e-8, 94 % of the
values bit-identical; ~104 CPU-s per sample in batches of 2. The float32 path reproduces
``reacdiff1d_dev_f32stall.hdf5`` bit for bit (measured: 2 samples, 11 frames).

Precision. The shared reference ``reacdiff1d_dev.hdf5`` was made in float64, which is this
module's default. The float64 path evaluates L_h in the division-light form above and the
diffusion as a three-point Laplacian, with preallocated buffers (its per-step differences from
PDEBench's operation order are ~1e-16, invisible once stored as float32). ``dtype=np.float32``
follows PDEBench's operation order instead, to reproduce its float32 behaviour, including the
stall described in the data README (increments below half an ulp once u > ½).
"""

from __future__ import annotations

import math

import numpy as np

from pdesharp.data.generate import fv1d
from pdesharp.data.generate.initial import draw_and_simulate

DEFAULTS = {"nu": 0.5, "rho": 1.0}
CFL = 0.25
T_END = 1.0

BATCH = 10  # samples per batch of `pdesharp data generate` (batches amortise the small steps)
ATTRS = {  # provenance written into generated files by pdesharp.data.generate.generate_to_file
    "scheme": "PDEBench ReactionDiffusionEq: exact logistic step plus explicit 2nd-order "
              "diffusion, half-step predictor / full-step corrector, dt = CFL*dx^2/(2 nu)",
    "cfl": CFL,
    "precision": "float64 unless dtype=float32 is asked for (PDEBench's float32 default stalls)",
    "initial_condition": "init_multi (k_tot=4, normalised to [0, 1]) drawn with NumPy's "
                         "default_rng, not PDEBench's JAX PRNG",
}


def stable_step(nu: float, dx: float, cfl: float = CFL) -> float:
    """PDEBench's Δt = CFL·½Δx²/(ν + 1e-8), evaluated in double precision (as it is there)."""
    return 0.5 * dx**2 / (nu + 1.0e-8) * cfl


class _Float64Stages:
    """S(u, v, h) for float64 with no temporary allocations in the hot loop.

    Arrays of a realistic batch exceed glibc's mmap threshold, so a fresh temporary per
    operation costs page faults; three rotating output buffers and two scratch arrays avoid
    it. The Laplacian is the difference of the periodic jumps v_i − v_{i−1}, which needs no
    padded copy of v. Seven full-array operations per stage.
    """

    def __init__(self, shape: tuple[int, int], nu: float, rho: float, dx: float) -> None:
        b, n = shape
        self.nu, self.rho, self.inv_dx2 = nu, rho, 1.0 / (dx * dx)
        self.outputs = [np.empty(shape) for _ in range(3)]
        self.jumps = np.empty((b, n + 1))
        self.scratch = np.empty(shape)
        self.coeffs: dict[float, tuple[float, float, float]] = {}

    def _coefficients(self, h: float) -> tuple[float, float, float]:
        c = self.coeffs.get(h)
        if c is None:
            if len(self.coeffs) > 64:  # only Δt and Δt/2 recur; clipped steps are one-offs
                self.coeffs.clear()
            decay = math.exp(-self.rho * h)
            c = self.coeffs[h] = (decay, 1.0 - decay, h * self.nu * self.inv_dx2)
        return c

    def __call__(self, u: np.ndarray, v: np.ndarray, h, predictor: bool = False) -> np.ndarray:
        out = next(buf for buf in self.outputs if buf is not u and buf is not v)
        decay, growth, diffusion = self._coefficients(float(h))
        scratch, jumps = self.scratch, self.jumps
        # logistic step: u / (e + (1 − e)u)
        np.multiply(u, growth, out=scratch)
        scratch += decay
        np.divide(u, scratch, out=out)
        # diffusion of v: jumps[:, k] = v_k − v_{k−1} (periodic), Laplacian = their differences
        np.subtract(v[:, 1:], v[:, :-1], out=jumps[:, 1:-1])
        np.subtract(v[:, 0], v[:, -1], out=jumps[:, 0])
        jumps[:, -1] = jumps[:, 0]
        np.subtract(jumps[:, 1:], jumps[:, :-1], out=scratch)
        scratch *= diffusion
        out += scratch
        return out


class _Float32Stages:
    """S(u, v, h) in float32 in PDEBench's operation order, with preallocated buffers.

    Logistic step 1/(1 + e·(1 − u)/u) as written there; then the flux difference of the
    diffusion flux (−ν·jump)·(1/Δx), subtracted with the multiply-add fused as XLA does (an
    exact float64 product and sum, rounded once). e^(−ρh) is rounded from double precision:
    XLA's float32 exp is correctly rounded at these arguments and NumPy's is not (it gives
    1 − 5·2⁻²⁴ for e^(−2⁻²²)); in the stalling regime that one ulp decides every increment.
    """

    def __init__(self, shape: tuple[int, int], nu: float, rho: float, dx: float) -> None:
        b, n = shape
        f32 = np.float32
        self.minus_nu, self.inv_dx, self.rho = f32(-nu), f32(1.0 / dx), rho
        self.outputs = [np.empty(shape, f32) for _ in range(3)]
        self.reacted = np.empty(shape, f32)
        self.flux = np.empty((b, n + 1), f32)
        self.scratch = np.empty(shape, f32)
        self.wide = np.empty(shape, np.float64)

    def __call__(self, u: np.ndarray, v: np.ndarray, h, predictor: bool = False) -> np.ndarray:
        f32 = np.float32
        out = next(buf for buf in self.outputs if buf is not u and buf is not v)
        one = f32(1.0)
        decay = f32(math.exp(float(f32(-self.rho) * f32(h))))
        r, flux, scratch, wide = self.reacted, self.flux, self.scratch, self.wide
        np.subtract(one, u, out=r)
        r *= decay
        r /= u
        r += one
        np.divide(one, r, out=r)
        np.subtract(v[:, 1:], v[:, :-1], out=flux[:, 1:-1])
        np.subtract(v[:, 0], v[:, -1], out=flux[:, 0])
        flux[:, -1] = flux[:, 0]
        flux *= self.minus_nu
        flux *= self.inv_dx
        np.subtract(flux[:, 1:], flux[:, :-1], out=scratch)
        np.multiply(scratch, -(f32(h) * self.inv_dx), out=wide, dtype=np.float64)
        np.add(wide, r, out=wide, dtype=np.float64)
        np.copyto(out, wide, casting="unsafe")
        return out


def simulate(initial: dict[str, np.ndarray], t_out: np.ndarray, params: dict[str, float],
             x_range: tuple[float, float] = (0.0, 1.0), dtype=np.float64,
             horizon: float | None = None, cfl: float = CFL) -> dict[str, np.ndarray]:
    """Evolve ``initial["u"]`` [B, N] to the times ``t_out`` (``t_out[0] = 0``).

    Default precision is float64, as the shared reference was computed (float32 reproduces
    PDEBench's default, which stalls; see the module docstring). Returns
    ``{"u": [B, len(t_out), N]}`` in the working precision; frame 0 is the input.
    """
    dtype = fv1d.working_dtype(dtype)
    p = fv1d.require_params(params, DEFAULTS)
    if p["nu"] <= 0:
        raise fv1d.GeneratorInputError(f"nu must be > 0 (the step is ½Δx²/ν), got {p['nu']}")
    u0 = fv1d.check_initial(initial)
    nx = u0.shape[1]
    dx = (float(x_range[1]) - float(x_range[0])) / nx
    if dtype == np.float64:
        stage = _Float64Stages(u0.shape, p["nu"], p["rho"], dx)
    else:
        stage = _Float32Stages(u0.shape, p["nu"], p["rho"], dx)
    # u = 0 exactly is a fixed point of the logistic step; PDEBench's form divides by it
    # (1/(1 + inf) = 0), which is correct, so the warning is noise
    with np.errstate(divide="ignore"):
        frames = fv1d.march(u0, t_out, stage, stable_step(p["nu"], dx, cfl), dtype, horizon)
    return {"u": frames}


def generate(n_samples: int, seed: int, params: dict[str, float] | None = None, nx: int = 1024,
             **options) -> dict[str, np.ndarray]:
    """Draw ``n_samples`` normalised initial conditions (:func:`.initial.init_multi` with
    ``normalise=True``, values in [0, 1]) and simulate to t = 1 with output every 0.01 (101
    frames), in float64 unless ``dtype`` says otherwise. Options as for
    :func:`.advection.generate`. Returns ``tensor`` [B, T, N] float32, ``t-coordinate`` [T],
    ``x-coordinate`` [N]. About 4.2 million steps for nx = 1024 (the step scales as Δx²):
    measured ~104 CPU-seconds per sample in batches of 2 and ~45 in batches of 20 (one core,
    bench/gen1d_reproduce.py), so generate in batches."""
    options.setdefault("dtype", np.float64)
    return draw_and_simulate(simulate, n_samples, seed, params, nx, DEFAULTS,
                             default_t_end=T_END, default_normalise=True, **options)
