"""The normalised PDE residual of a prediction, computed from the task's own equation.

No reference solution is needed: each equation ``dt(q) + rest = 0`` (see
:meth:`pdesharp.equation.ParsedSystem.split_time_derivative`) is evaluated numerically on the
solver's output frames by walking the SymPy tree. Derivative nodes become numerical derivatives
of the numerically evaluated inner expression:

- periodic axes: spectral (FFT) derivatives of any order;
- other axes: compact second-order differences. A first derivative of an expression that itself
  contains a derivative along the same axis (flux form, e.g. Darcy's ``dx(a*dx(u))``) is
  evaluated conservatively on the staggered faces, with arithmetic face means of the other
  factors, which is the 5-point stencil a finite-difference or finite-volume solver uses. Points
  whose stencil would leave the grid (the boundary ring) are excluded;
- time: fourth-order finite differences across the output frames (one-sided at the ends).

The residual of one equation, sample and output frame is
``rms(dt q + rest) / (rms(dt q) + rms(rest))`` over space (for a steady equation the two groups
are the terms with and without unknowns, i.e. operator and forcing), so 0 means the equation
holds and 1 means the terms do not balance at all; it is averaged over frames 1..T-1, samples
and equations. A value that is not finite where the equation is evaluated (the prediction or
one of its derivatives overflows) makes the sample's residual infinite: points are left out only
where a stencil would leave the grid, never because a solver's output overflowed there.

Limits, by construction: second derivatives amplify round-off by ~1/h^2, so a float32 prediction
on 1024 points has a floor near 1e-2 (return float64); and dynamics faster than the output
interval (a non-smooth IC under strong diffusion) cannot be resolved by differences across frames.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from pdesharp.data.reference import ReferenceData
from pdesharp.grid import axis_points, convention
from pdesharp.task import Task

# What "PDE residual" means, in one sentence for users (eval's table, report.md).
EXPLANATION = ("PDE residual: how far the solver's output is from satisfying the equation "
               "itself, with no reference data: the equation's terms evaluated on the output "
               "frames by numerical derivatives, rms(dt q + rest) / (rms(dt q) + rms(rest)) "
               "averaged over frames and samples; 0 means the equation holds exactly, 1 that "
               "its terms do not balance at all.")

_FUNCS = {"sin": np.sin, "cos": np.cos, "exp": np.exp, "tanh": np.tanh, "log": np.log,
          "sqrt": np.sqrt, "Abs": np.abs}


class ResidualError(ValueError):
    """The residual cannot be evaluated for this task/prediction; the message says why."""


def _faces(v, axis: int):
    """Arithmetic mean of neighbours along ``axis`` (values at the N-1 interior faces)."""
    if np.ndim(v) == 0 or np.shape(v)[axis] == 1:
        return v
    lo = [slice(None)] * np.ndim(v)
    hi = list(lo)
    lo[axis], hi[axis] = slice(0, -1), slice(1, None)
    return 0.5 * (v[tuple(lo)] + v[tuple(hi)])


def _pad_interior(v: np.ndarray, axis: int) -> np.ndarray:
    """Interior values (N-2 along axis) back to N points with NaN on the two boundary points."""
    pad = [(0, 0)] * v.ndim
    pad[axis] = (1, 1)
    return np.pad(v.astype(float), pad, constant_values=np.nan)


def spectral_derivative(f: np.ndarray, axis: int, period: float, order: int) -> np.ndarray:
    n = f.shape[axis]
    k = 2.0 * np.pi * np.fft.rfftfreq(n, d=period / n)
    mult = (1j * k) ** order
    if order % 2 == 1 and n % 2 == 0:
        mult[-1] = 0.0  # the Nyquist mode has no odd derivative on a real grid
    shape = [1] * f.ndim
    shape[axis] = len(k)
    return np.fft.irfft(np.fft.rfft(f, axis=axis) * mult.reshape(shape), n=n, axis=axis)


def time_derivative(f: np.ndarray, t: np.ndarray, axis: int = 1) -> np.ndarray:
    """Fourth-order differences on uniform frames (one-sided at the ends), else np.gradient."""
    nt = f.shape[axis]
    dts = np.diff(np.asarray(t, dtype=float))
    if nt < 2:
        raise ResidualError("the prediction has a single frame; no time derivative exists")
    uniform = nt >= 5 and np.allclose(dts, dts.mean(), rtol=1e-4, atol=0)
    if not uniform:
        return np.gradient(f, np.asarray(t, dtype=float), axis=axis, edge_order=2 if nt > 2 else 1)
    f = np.moveaxis(f, axis, 0)
    dt = float(dts.mean())
    d = np.empty_like(f, dtype=float)
    d[2:-2] = (f[:-4] - 8 * f[1:-3] + 8 * f[3:-1] - f[4:]) / (12 * dt)
    d[0] = (-25 * f[0] + 48 * f[1] - 36 * f[2] + 16 * f[3] - 3 * f[4]) / (12 * dt)
    d[1] = (-3 * f[0] - 10 * f[1] + 18 * f[2] - 6 * f[3] + f[4]) / (12 * dt)
    d[-1] = (25 * f[-1] - 48 * f[-2] + 36 * f[-3] - 16 * f[-4] + 3 * f[-5]) / (12 * dt)
    d[-2] = (3 * f[-1] + 10 * f[-2] - 18 * f[-3] + 6 * f[-4] - f[-5]) / (12 * dt)
    return np.moveaxis(d, 0, axis)


class _Evaluator:
    """Numerical evaluation of SymPy expressions on the prediction's grid."""

    def __init__(self, task: Task, fields: dict[str, np.ndarray], ref: ReferenceData):
        system = task.system
        self.system = system
        self.periodic = task.boundary.strip().lower().startswith("periodic")
        first = next(iter(fields.values()))
        self.shape = first.shape
        # per axis, how many points at each end stencils left out (NaN there): one per
        # second difference or flux difference, more where they nest (a face mean of a NaN
        # end spreads it one point inward); counted over every term, so never too few
        self.ring: dict[int, int] = {}
        offset = 1 if task.steady else 2
        self.axis = {name: offset + k for k, name in enumerate(system.space)}
        self.values: dict[str, np.ndarray] = {k: np.asarray(v, dtype=float) for k, v in fields.items()}
        for name in system.coefficients:
            c = np.asarray(ref.coefficients[name], dtype=float)[: self.shape[0]]
            self.values[name] = c if task.steady else c[:, None]
        self.h: dict[str, float] = {}
        self.period: dict[str, float] = {}
        self.coords: dict[str, np.ndarray] = {}
        for name, ax in self.axis.items():
            lo, hi = task.domain[name]
            n = self.shape[ax]
            h = convention(task.grid).spacing(lo, hi, n)
            pts = axis_points(lo, hi, n, task.grid)
            if ref.x is not None and name == system.space[0] and len(ref.x) == n:
                pts = np.asarray(ref.x, dtype=float)
            self.h[name], self.period[name] = h, hi - lo
            shape = [1] * len(self.shape)
            shape[ax] = n
            self.coords[name] = pts.reshape(shape)
        self.t = None
        if not task.steady:
            if ref.t is None or len(ref.t) != self.shape[1]:
                raise ResidualError("the reference file has no time coordinate matching the frames")
            self.t = np.asarray(ref.t, dtype=float)
        self.constants = {sp.Symbol(k, real=True): float(v) for k, v in task.constants.items()}

    # -- expression walk ------------------------------------------------------------------
    def ev(self, e: sp.Expr, stag: str | None = None):
        if isinstance(e, sp.Derivative):
            counts = list(e.variable_count)
            var, n = counts[-1]
            # mixed derivatives: the outermost variable acts on the derivative of the rest
            inner = sp.Derivative(e.expr, *counts[:-1]) if len(counts) > 1 else e.expr
            return self._derivative(inner, var.name, int(n), stag)
        if e.is_Number:
            return float(e)
        if e.is_Symbol:
            if e in self.constants:
                return self.constants[e]
            if e.name in self.coords:
                c = self.coords[e.name]
                return _faces(c, self.axis[stag]) if stag else c
            if self.t is not None and e.name == self.system.time:
                return self.t.reshape([1, -1] + [1] * (len(self.shape) - 2))
            raise ResidualError(f"no value for symbol {e.name!r}")
        if isinstance(e, sp.core.function.AppliedUndef):
            v = self.values.get(e.func.__name__)
            if v is None:
                raise ResidualError(f"the prediction does not contain {e.func.__name__!r}")
            return _faces(v, self.axis[stag]) if stag else v
        if e.is_Add:
            return sum(self.ev(a, stag) for a in e.args)
        if e.is_Mul:
            out = 1.0
            for a in e.args:
                out = out * self.ev(a, stag)
            return out
        if e.is_Pow:
            base, ex = e.args
            return np.power(self.ev(base, stag), self.ev(ex, stag))
        name = type(e).__name__
        if name in _FUNCS:
            return _FUNCS[name](self.ev(e.args[0], stag))
        if e == sp.pi:
            return float(np.pi)
        raise ResidualError(f"cannot evaluate {e} numerically")

    def _derivative(self, inner: sp.Expr, var: str, n: int, stag: str | None):
        if var == self.system.time:
            val = time_derivative(np.broadcast_to(self.ev(inner), self.shape), self.t)
            return _faces(val, self.axis[stag]) if stag else val
        ax = self.axis[var]
        h = self.h[var]
        if self.periodic:
            f = np.broadcast_to(self.ev(inner), self.shape)
            val = spectral_derivative(f, ax, self.period[var], n)
            return _faces(val, self.axis[stag]) if stag else val
        if stag == var and n == 1:
            return np.diff(np.broadcast_to(self.ev(inner), self.shape), axis=ax) / h
        if stag is not None:
            return _faces(self._derivative(inner, var, n, None), self.axis[stag])
        x = sp.Symbol(var, real=True)
        nested = any(x in d.variables for d in inner.atoms(sp.Derivative))
        if n == 1 and nested:
            flux = np.broadcast_to(self.ev(inner, stag=var), self._face_shape(ax))
            self.ring[ax] = self.ring.get(ax, 0) + 1
            return _pad_interior(np.diff(flux, axis=ax) / h, ax)
        f = np.broadcast_to(self.ev(inner), self.shape)
        if n == 1:
            return np.gradient(f, h, axis=ax, edge_order=2)
        if n == 2:
            lo, mid, hi = ([slice(None)] * f.ndim for _ in range(3))
            lo[ax], mid[ax], hi[ax] = slice(0, -2), slice(1, -1), slice(2, None)
            self.ring[ax] = self.ring.get(ax, 0) + 1
            return _pad_interior((f[tuple(hi)] - 2 * f[tuple(mid)] + f[tuple(lo)]) / h**2, ax)
        val = f
        for _ in range(n):
            val = np.gradient(val, h, axis=ax, edge_order=2)
        return val

    def valid(self) -> np.ndarray:
        """Where the equation is evaluated: every point but the boundary ring of each axis
        that stencils could not cover (:func:`_pad_interior`; :attr:`ring` wide)."""
        ok = np.ones(self.shape, dtype=bool)
        for ax, width in self.ring.items():
            for ends in (slice(0, width), slice(-width, None)):
                index = [slice(None)] * len(self.shape)
                index[ax] = ends
                ok[tuple(index)] = False
        return ok

    def _face_shape(self, ax: int) -> tuple[int, ...]:
        s = list(self.shape)
        s[ax] -= 1
        return tuple(s)

    def full(self, e: sp.Expr) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.ev(e), dtype=float), self.shape)


def _rms(v: np.ndarray, mask: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.sqrt(np.sum(np.where(mask, v, 0.0) ** 2, axis=axes) / np.maximum(mask.sum(axis=axes), 1))


def _normalised(first: np.ndarray, second: np.ndarray, steady: bool,
                valid: np.ndarray | None = None) -> np.ndarray:
    """Per sample: rms(first + second) / (rms(first) + rms(second)); time-dependent problems
    take it frame by frame and average over frames 1..T-1 (frame 0 is the given initial
    condition, not the solver's work), so that decaying late frames count as much as early ones
    and a short unresolvable transient (a non-smooth IC diffusing within one output interval)
    cannot dominate the whole score."""
    total = first + second
    mask = np.isfinite(total)
    axes = tuple(range(1 if steady else 2, total.ndim))
    if valid is not None:  # a non-finite value where the equation is evaluated: infinite
        broken = np.any(~mask & valid, axis=tuple(range(1, total.ndim)))
        if broken.any():
            return np.where(broken, np.inf, _normalised(first, second, steady, None))
    denom = _rms(first, mask, axes) + _rms(second, mask, axes)
    ratio = _rms(total, mask, axes) / np.where(denom > 0, denom, 1.0)
    return ratio if steady else ratio[:, 1:].mean(axis=1)


def residual_per_equation(task: Task, fields: dict[str, np.ndarray],
                          ref: ReferenceData) -> np.ndarray:
    """Normalised residual, [n_equations, B]."""
    ev = _Evaluator(task, fields, ref)
    system = task.system
    unknown_funcs = {system.function(u) for u in system.unknowns}
    out = []
    for i in range(len(system.exprs)):
        q, rest = system.split_time_derivative(i)
        if task.steady:
            terms = sp.Add.make_args(rest)
            op = sp.Add(*[a for a in terms if a.atoms(sp.core.function.AppliedUndef) & unknown_funcs])
            forcing = sp.Add(*[a for a in terms if not (a.atoms(sp.core.function.AppliedUndef) & unknown_funcs)])
            first, second = ev.full(op), ev.full(forcing)
        else:
            first = time_derivative(ev.full(q), ev.t)
            second = ev.full(rest)
        out.append(_normalised(first, second, task.steady, ev.valid()))
    return np.asarray(out)
