"""Strang splitting: exact diffusion, exact (or RK4) local source, explicit finite-volume flux.

For a scalar law ``dt u + div F(u) = D lap(u) + S(u, x, t)`` with constant D on a periodic box
(1D or 2D), each step is ``D(dt/2) R(dt) D(dt/2)`` with ``R = S(dt/2) H(dt) S(dt/2)``, and
without a flux ``S(dt/2) D(dt) S(dt/2)`` (one diffusion step per step, the dearer part): the
diffusion is solved exactly in Fourier space (with the spectral symbol k^2 or the central
difference one; on small 1D grids as a product with the same operator's dense circulant
matrix), the local ODE ``du/dt = S(u, x)`` in closed form when SymPy finds one (RK4 sub-steps
otherwise, and always when S depends on t), and the flux by one explicit finite-volume step.
Splitting error is O(dt^2); ``SPLIT_DT`` caps the step. Without a flux,
``SPLITTING = "richardson"`` combines n and 2n Strang steps as (4 S_2n - S_n) / 3, which cancels
the dt^2 term of Strang's even error expansion (order 4 at three times the work per step).
Compositions of order > 2 with real coefficients (Yoshida, Suzuki) need a negative sub-step,
i.e. backward diffusion, which multiplies the grid's highest mode by exp(D k_max^2 |tau|)
(exp(~2e3) for D = 0.5, 1024 cells, tau = 1e-3): unusable for a parabolic part.

Stability rule: the flux's CFL bound and, for a source without closed form, CFL / max|S'|;
the diffusion is unconditionally stable.
"""

from __future__ import annotations

import math

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.design import Axis, Design, Family, Problem
from pdesharp.builtin.families.common import (EVOLVE, FOURIER, GRID, emit_number, fixed_axes,
                                              problem_constants)
from pdesharp.builtin.families.fv import (FLUX_AXES, FV_BLOCK, SPACE_ORDER, TIME_AXES,
                                          flux_moves, flux_title, single_wave)
from pdesharp.builtin.physics import params_lines, physics_source


def _interval(p: Problem) -> float:
    """The output interval (0.01 where the task gives none): one Strang step's longest span."""
    return p.dt_output or 0.01


def _step(d: Design, p: Problem) -> float:
    """The design's splitting step: SPLIT_DT, or the whole output interval when unbounded."""
    return d["SPLIT_DT"] if math.isfinite(d["SPLIT_DT"]) else _interval(p)


class SplitFamily(Family):
    name = "split"
    axes = FLUX_AXES + TIME_AXES + (
        Axis("SYMBOL", "fd2", ("spectral", "fd2"),
             "Fourier symbol of the exact diffusion: spectral (k^2) | fd2 (central differences)"),
        Axis("SPLIT_DT", math.inf, (), "largest splitting step"),
        Axis("SPLITTING", "strang", ("strang", "richardson"),
             "strang (order 2) | richardson: (4 S_2n - S_n)/3 of n and 2n Strang steps (order 4)"),
    )

    def applies(self, p: Problem) -> bool:
        law = p.struct
        if not isinstance(law, BalanceLaw) or not law.periodic or law.nvar != 1 or law.has_high \
                or not law.flux_form:
            return False
        if not law.conservative_is_primitive or law.scalar_diffusion() is None:
            return False
        stiff = p.facts.get("stiffness", 0.0) > 20.0
        return law.has_source or (law.has_flux and stiff)

    def _source_exact(self, p: Problem) -> bool:
        return p.struct.has_source and p.law_facts.ode_solution is not None

    def relevant(self, p: Problem) -> list[str]:
        law = p.struct
        out = ["SYMBOL", "SPLIT_DT"]
        if not law.has_flux:  # with a limited flux step, no smooth error expansion to extrapolate
            out += ["SPLITTING"]
        if law.has_flux:
            out += ["RECONSTRUCTION", "LIMITER", "RIEMANN", "INTEGRATOR", "CFL"]
        elif not self._source_exact(p):
            out += ["CFL"]  # the RK4 source sub-steps follow CFL / max|S'|
        return out

    def active(self, d: Design, p: Problem) -> set[str]:
        act = set(self.relevant(p))
        if d["RECONSTRUCTION"] != "muscl":
            act.discard("LIMITER")
        if single_wave(p.struct):
            act.discard("RIEMANN")
        return act

    def candidates(self, p: Problem) -> list[Design]:
        out = [self.design(SYMBOL="fd2"), self.design(SYMBOL="spectral")]
        if not p.struct.has_flux:  # only the splitting, its step and the symbol matter
            dt = _interval(p)
            # fourth order by extrapolation before Strang with shorter steps: a step costs
            # three Strang steps, but its error falls 16x (not 4x) per halving
            for frac in (8, 32):
                out += [self.design(SYMBOL=sym, SPLIT_DT=dt / frac, SPLITTING="richardson")
                        for sym in ("fd2", "spectral")]
            for frac in (4, 16):
                out += [self.design(SYMBOL="fd2", SPLIT_DT=dt / frac),
                        self.design(SYMBOL="spectral", SPLIT_DT=dt / frac)]
        return out

    def moves(self, d: Design, p: Problem, strategy: str, failed: bool):
        shorter = ("SPLIT_DT", _step(d, p) / 4,
                   "shorter splitting steps (splitting error is O(dt^2))")
        other = ("SYMBOL", "spectral" if d["SYMBOL"] == "fd2" else "fd2",
                 "the other diffusion symbol")
        if not p.struct.has_flux:
            if d["SPLITTING"] == "strang":
                order = ("SPLITTING", "richardson",
                         "Richardson extrapolation of the splitting (order 4 in time)")
            else:
                order = ("SPLITTING", "strang", "plain Strang steps (a third of the work)")
            if strategy == "robust":
                return [other, shorter, order]
            return [order, shorter, other] if d["SPLITTING"] == "strang" else [shorter, other, order]
        return [shorter, other] + flux_moves(d, strategy, failed) if strategy == "accuracy" \
            else flux_moves(d, strategy, failed) + [shorter, other]

    def speed_moves(self, d: Design, p: Problem):
        """Without a flux (which bounds the step itself): a 4x longer splitting step, up to one
        step per output interval."""
        if p.struct.has_flux or not math.isfinite(d["SPLIT_DT"]):
            return []
        longer = 4 * d["SPLIT_DT"]
        return [("SPLIT_DT", math.inf if longer >= _interval(p) else longer,
                 "longer splitting steps (fewer diffusion steps: faster)")]

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        out = {"SPLIT_DT": _step(d, p) / 4}
        if p.struct.has_flux:
            out["CFL"] = round(d["CFL"] / 2, 5)
        return out

    def title(self, d: Design, p: Problem) -> str:
        law = p.struct
        dt = "" if math.isinf(d["SPLIT_DT"]) else f", step <= {d['SPLIT_DT']:.3g}"
        parts = [f"exact diffusion ({d['SYMBOL']} symbol)"]
        if law.has_source:
            parts.append("exact source step" if self._source_exact(p) else "RK4 source sub-steps")
        if law.has_flux:
            parts.append(flux_title(d))
        head = "Strang splitting" if d["SPLITTING"] == "strang" or law.has_flux else \
            "Richardson-extrapolated Strang splitting (order 4)"
        return head + ": " + ", ".join(parts) + dt

    def orders(self, d: Design, p: Problem):
        law = p.struct
        if law.has_flux:
            space = SPACE_ORDER[d["RECONSTRUCTION"]]
        else:
            space = 8 if d["SYMBOL"] == "spectral" else 2
        return (space, 4 if d["SPLITTING"] == "richardson" and not law.has_flux else 2)

    def cost(self, d: Design, p: Problem) -> float:
        recon = 2.5 if d["RECONSTRUCTION"] == "weno5" else 1.0
        if p.struct.has_flux:
            return 0.5 * recon * (0.4 / d["CFL"])
        # a Strang step is one diffusion step (an FFT pair or a dense product) and one source
        # step; SPLIT_DT sets the steps per output interval, and Richardson runs n and 2n of
        # them: three Strang steps' work per step (its gain, fewer steps at equal accuracy, is
        # the search's to measure). Under fastest-below the judges offer only moves this cost
        # predicts clearly cheaper: a longer step, plain Strang from Richardson
        steps = math.ceil(_interval(p) / _step(d, p) - 1e-9)
        return 0.3 * max(1, steps) * (3 if d["SPLITTING"] == "richardson" else 1)

    def render(self, d: Design, p: Problem) -> str:
        law = p.struct
        D = law.scalar_diffusion()
        flags = {"PERIODIC": True, "HAS_FLUX": law.has_flux, "HAS_VISCOUS": False,
                 "HAS_SOURCE": law.has_source, "SOURCE_SPLIT": True,
                 "SOURCE_EXACT": self._source_exact(p), "DT_MAX": math.inf,
                 "CFL_DIFF": 0.4}  # read by the shared step-size rule, unused (exact diffusion)
        code = problem_constants(p, flags) + fixed_axes(self, d, p) + "\n\n"
        code += physics_source(law, p.law_facts)
        code += ("def diffusion_coefficient(prm):\n    \"\"\"The constant D of the diffusion term.\"\"\"\n"
                 + params_lines(law.params, [D]) + f"    return {emit_number(D)}\n\n\n")
        return code + GRID + FOURIER + FV_BLOCK + SPLIT_DRIVER + EVOLVE_SPECTRAL


SPLIT_DRIVER = '''
# ---- block: Strang splitting (exact diffusion / exact or RK4 source / explicit flux) ----
# The diffusion step as a dense circulant matrix product on 1D grids of at most 256 cells with
# B N^2 at most DENSE_MAX (B rows of N cells): there one matmul beats the rfft, multiply, irfft
# calls' overheads (8 x 160: 18 us against 45); beyond, the transforms' B N log N wins (1 x 512:
# 45 us against 30), and OpenBLAS starts threads above MNK = 2^18 (slower on a busy machine)
DENSE_MAX = 2**18


def _dense(shape):
    """Whether data [B, N] take the dense diffusion step (the rule above)."""
    return DIM == 1 and shape[-1] <= 256 and shape[0] * shape[-1] ** 2 <= DENSE_MAX


def _init_state(W0, prm):
    grid = _grid(W0[0].shape[1:])
    ks = _wavenumbers(grid["shape"])
    k2 = 0.0
    for k, h in zip(ks, grid["h"]):
        k2 = k2 + (k**2 if SYMBOL == "spectral" else (2.0 - 2.0 * np.cos(k * h)) / h**2)
    grid["k2"], grid["cache"], grid["dense"] = k2, {}, _dense(W0[0].shape)
    return np.array(to_conservative(W0, prm)), grid


def _output(U, grid, prm):
    return U  # the unknowns are the conserved quantities (the family's condition)


def _propagator(tau, grid, prm):
    """exp(tau D lap) on the periodic grid (SYMBOL: spectral or fd2), cached per tau: the factor
    on the spectra, or on a small 1D grid (grid["dense"]) the circulant matrix H[i, j] = g[j - i]
    with g = irfft(factor) the kernel: U @ H is one BLAS call for three FFT calls."""
    key = round(tau, 14)
    if key not in grid["cache"]:
        if len(grid["cache"]) > 8:  # steps that follow the CFL bound vary: keep the cache small
            grid["cache"].clear()
        op = np.exp(-diffusion_coefficient(prm) * grid["k2"] * tau)
        if grid["dense"]:  # row i is the kernel shifted by i: windows of [g, g], backwards
            n = grid["shape"][0]
            windows = np.lib.stride_tricks.sliding_window_view(np.tile(np.fft.irfft(op, n), 2), n)
            op = np.ascontiguousarray(windows[n:0:-1])
        grid["cache"][key] = op
    return grid["cache"][key]


def _diffuse(U, tau, grid, prm):
    """Exact solution of u_t = D lap(u) over tau."""
    if tau == 0.0:
        return U
    op = _propagator(tau, grid, prm)
    if grid["dense"]:
        return (U.reshape(-1, op.shape[0]) @ op).reshape(U.shape)
    if U.ndim == 3:  # 1D: rfft/irfft skip rfftn's argument handling (most of a small call)
        return np.fft.irfft(np.fft.rfft(U, axis=-1) * op, n=grid["shape"][0], axis=-1)
    axes = tuple(range(2, U.ndim))
    return np.fft.irfftn(np.fft.rfftn(U, axes=axes) * op, s=grid["shape"], axes=axes)


def _react(U, t, tau, grid, prm):
    if not HAS_SOURCE:
        return U
    if SOURCE_EXACT:
        return np.asarray(source_exact(U[0], tau, grid["X"], prm))[None]  # a view, no copy
    h = tau / 4
    for m in range(4):  # four RK4 sub-steps of the local source ODE
        s = t + m * h
        k1 = np.array(source(U, grid["X"], s, prm))
        k2 = np.array(source(U + 0.5 * h * k1, grid["X"], s + 0.5 * h, prm))
        k3 = np.array(source(U + 0.5 * h * k2, grid["X"], s + 0.5 * h, prm))
        k4 = np.array(source(U + h * k3, grid["X"], s + h, prm))
        U = U + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return U


def _strang(U, t, dt, n, lead, close, grid, prm):
    """With a flux: n Strang steps D(dt/2) R(dt) D(dt/2) from t, R = S(dt/2) H(dt) S(dt/2). The
    diffusion half steps between two steps are one exact step D(dt) (one FFT pair per step);
    ``lead`` is the diffusion time before the first step (dt/2 plus any half step still owed),
    ``close`` whether the last half step is taken (else the caller owes it)."""
    U = _diffuse(U, lead, grid, prm)
    for i in range(n):
        s = t + i * dt
        U = _react(U, s, 0.5 * dt, grid, prm)
        U = _explicit_step(U, s, dt, grid, prm, viscous=False)
        U = _react(U, s + 0.5 * dt, 0.5 * dt, grid, prm)
        if i < n - 1 or close:
            U = _diffuse(U, dt if i < n - 1 else 0.5 * dt, grid, prm)
    return U


def _rdr(U, t, dt, n, grid, prm):
    """Without a flux: n Strang steps S(dt/2) D(dt) S(dt/2) from t. The source half steps
    between two steps are one source step over the same interval (the local ODE's flow), so n
    steps cost n diffusion steps, the dearer part (a dense product or an FFT pair each), and
    n + 1 pointwise source steps; the state is whole at the end (no step owed)."""
    U = _react(U, t, 0.5 * dt, grid, prm)
    for i in range(n):
        U = _diffuse(U, dt, grid, prm)
        U = _react(U, t + (i + 0.5) * dt, dt if i < n - 1 else 0.5 * dt, grid, prm)
    return U


def _splitting(U, t, span, n, grid, prm):
    """n equal S D S Strang steps over span, or SPLITTING = "richardson": n and 2n of them
    combined as (4 S_2n - S_n) / 3. Strang's error expands in even powers of the step (a
    symmetric composition), so the dt^2 term cancels: fourth order in time at three Strang
    steps per step."""
    h = span / n
    if SPLITTING == "richardson":
        return (4.0 * _rdr(U, t, 0.5 * h, 2 * n, grid, prm) - _rdr(U, t, h, n, grid, prm)) / 3.0
    return _rdr(U, t, h, n, grid, prm)


def _advance_to(U, t0, t1, grid, prm):
    """Equal Strang steps (at most SPLIT_DT and the explicit parts' stable step) from t0 to t1."""
    t, owed = t0, 0.0  # owed (with a flux): the last Strang step's closing diffusion half step
    while t1 - t > 1e-12 * max(1.0, abs(t1)):
        dt = min(_stable_dt(U, t, grid, prm, explicit_viscous=False), SPLIT_DT)
        if not np.all(np.isfinite(U)) or dt <= 0.0:
            return np.full_like(U, np.nan)
        if HAS_FLUX or (HAS_SOURCE and not SOURCE_EXACT):
            span = min(t1 - t, dt)  # the stable step changes with U: one step at a time
        else:
            span = t1 - t  # no step bound depends on U: the whole interval in equal steps
        n = max(1, int(np.ceil(span / dt - 1e-9))) if np.isfinite(dt) else 1
        if HAS_FLUX:  # (SPLITTING is not a design axis there: no smooth error expansion)
            U = _strang(U, t, span / n, n, owed + 0.5 * span / n, False, grid, prm)
            owed = 0.5 * span / n
        else:
            U = _splitting(U, t, span, n, grid, prm)
        t += span
    return _diffuse(U, owed, grid, prm)
'''


# Without a flux, and with a source step that sets no step bound (exact, or none), the frames
# are equal S D S Strang steps with no step-size rule to consult: the frame loop without its
# per-frame step rule. On a small 1D grid (_dense) a diffusion step is one product with the dense
# circulant propagator, elsewhere an FFT pair. S D S, not D S D: one diffusion step per step
# (the source half steps merge, and cost a pointwise formula), where D S D on values costs two
# products per frame. APEBench Fisher-KPP (one Strang step per frame, 4 x 160 points, warm, in
# the bench's worker): 0.79-1.30 ms per sample by D S D products, 0.65-1.22 by S D S.
EVOLVE_SPECTRAL = EVOLVE.replace("def _evolve(", "def _evolve_frames(") + '''

def _per_frame(span):
    """Equal Strang steps over an output interval: at most SPLIT_DT each."""
    return max(1, int(np.ceil(span / SPLIT_DT - 1e-9))) if np.isfinite(SPLIT_DT) else 1


def _strang_frames(U, span, frames, grid, prm):
    """Equal frames of n equal Strang steps S(h/2) D(h) S(h/2) each, [var, B, T, N...]: the
    source half steps at a frame's end and the next one's start are one step S(h) (the local
    ODE's flow: autonomous and exact here), so the run carries Y = S(h/2)^-1 of the frame, and
    the frames are S(h/2) Y of every frame at once, one pointwise call on the stack: n source
    steps a frame, not n + 1 (Fisher-KPP, one step a frame: a third fewer calls)."""
    n = _per_frame(span)
    h = span / n
    X, op, dense = grid["X"], _propagator(h, grid, prm), grid["dense"]

    # the two steps as plain calls on [B, N...] (one unknown), run frames x n times: the frame
    # loop's dispatch (_react's flags, _propagator's cache) was half of Fisher-KPP's per-frame
    # time (4 x 160: 21 us a frame, of which the product and the source's three array
    # operations take 10)
    def react(Y, tau):
        return np.asarray(source_exact(Y, tau, X, prm))

    def diffuse(Y, out=None):
        if dense:  # (into the frame's row of Z: no copy)
            return np.matmul(Y, op, out=out)
        Y = _diffuse(Y[None], h, grid, prm)[0]
        if out is not None:
            out[...] = Y
        return Y

    Z = np.empty((frames,) + U.shape[1:])  # [T - 1, B, N...]: each frame before its last S(h/2)
    Y = react(U[0], 0.5 * h)
    for j in range(frames):
        for _ in range(n - 1):
            Y = react(diffuse(Y), h)
        diffuse(Y, out=Z[j])
        if j < frames - 1:
            Y = react(Z[j], h)
    W = np.empty(U.shape[:2] + (frames + 1,) + U.shape[2:])  # [var, B, T, N...]
    W[:, :, 0] = U
    W[0, :, 1:] = np.swapaxes(react(Z, 0.5 * h), 0, 1)  # (a contiguous result: one copy)
    return W


def _evolve(W0, t_coordinate, prm):
    """The frames by equal Strang steps per output interval (see the block's comment); with a
    flux or a source step that bounds the step, the frame loop."""
    if HAS_FLUX or (HAS_SOURCE and not SOURCE_EXACT):
        return _evolve_frames(W0, t_coordinate, prm)
    W0 = [np.asarray(w, dtype=np.float64) for w in W0]
    wrap = [1 + a for a in range(DIM) if NODES and PERIODIC_AXES[a]]
    for ax in wrap:
        W0 = [np.take(w, np.arange(w.shape[ax] - 1), axis=ax) for w in W0]
    t_coordinate = np.asarray(t_coordinate, dtype=np.float64)
    U, grid = _init_state(W0, prm)  # [var, B, N...]
    spans = np.diff(t_coordinate)
    with np.errstate(all="ignore"):
        if HAS_SOURCE and SPLITTING == "strang" and len(spans) > 1 \
                and np.all(np.abs(spans - spans[0]) <= 1e-12 * abs(spans[0])):
            W = _output(_strang_frames(U, float(spans[0]), len(spans), grid, prm), grid, prm)
        else:
            frames = [U]
            for j in range(1, len(t_coordinate)):
                t0, span = float(t_coordinate[j - 1]), float(spans[j - 1])
                n = _per_frame(span)
                U = _splitting(U, t0, span, n, grid, prm)
                frames.append(U)
            W = _output(np.stack(frames, axis=2), grid, prm)  # [var, B, T, N...]
    out = list(W)  # fresh arrays (stacked here)
    for k, w in enumerate(W0):
        out[k][:, 0] = w  # the initial data as given
    for ax in wrap:  # the repeated node, on the time-stacked arrays [B, T, ...]
        out = [np.concatenate([o, np.take(o, [0], axis=ax + 1)], axis=ax + 1) for o in out]
    return out
'''
