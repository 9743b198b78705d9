"""Reference data for time-dependent systems with constraints (equations without a time
derivative), in 1D, 2D or 3D: vorticity-streamfunction Navier-Stokes, Keller-Segel,
Vlasov-/drift-Poisson potentials, incompressible flow with a pressure.

Method: Fourier pseudo-spectral method of lines on a grid ``oversample`` times finer than the
output grid. A wall axis with homogeneous Dirichlet/Neumann conditions is unfolded: each unknown
is extended oddly (a sine, Dirichlet) or evenly (a cosine, Neumann) across the walls onto a
periodic box twice as long, which the equations map into itself when their terms respect the
parities (checked at random points; a term that does not, an explicit x at a wall, is refused).
At every right-hand-side evaluation the elliptic constraints are solved per Fourier mode,
``psi = A(k)^+ F`` (the mean of a singular operator set to zero), and with a projection
constraint ``D w = 0`` the rate is projected, ``P = I - G (D G)^+ D``. Time integration: DOP853
(rtol 1e-12, restarted at every frame), or ETDRK4 with Richardson step doubling to 1e-9 when the
viscous part is stiff (:mod:`.generic_time`). Output: the series evaluated at the output points
(no interpolation error), the pressure as ``-(D G)^+ D rate`` (zero mean).

Initial data: the random trigonometric polynomials of :mod:`.generic_ic` on the unfolded box,
made odd or even per wall, projected onto ``D w = 0`` when there is one, and scaled on a fixed
reference grid (max |w| = 1, or the task's range; the unknowns of a projection constraint share
one scale factor, which keeps them on the constraint). The constrained unknowns are not drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

import pdesharp.grid as conventions
from pdesharp.data.generate.generic_ic import _evaluate as _evaluate_modes
from pdesharp.data.generate.generic_ic import draw_coefficients, mode_vectors
from pdesharp.data.generate.generic_symbolic import SpectralGrid, UnsupportedTask
from pdesharp.data.generate.generic_time import dop853, etdrk4
from pdesharp.equation import array_function
from pdesharp.task import Task

DEFAULT_NX = {1: 256, 2: 64, 3: 32}
DEFAULT_OVERSAMPLE = {1: 4, 2: 3, 3: 2}
ATTRS = {"name": "Fourier pseudo-spectral method of lines with constraints solved per mode"
                 " (walls unfolded by odd/even extension)", "dealiasing": "2/3 rule"}


def law_of(task: Task):
    """The task's constrained structure, or UnsupportedTask (the generator's) naming why not."""
    from pdesharp.builtin.constraint import constrained_law
    from pdesharp.builtin.families.constrained import projection_commutes
    from pdesharp.builtin.refusal import UnsupportedTask as Refused

    try:
        law = constrained_law(task)
    except Refused as exc:
        raise UnsupportedTask(f"task {task.name!r}: {exc}") from None
    if "half" in law.kinds:
        raise UnsupportedTask(f"task {task.name!r}: a Dirichlet condition at one wall and a"
                              " Neumann one at the other (quarter-wave modes) with constraints")
    if not projection_commutes(law):
        raise UnsupportedTask(f"task {task.name!r}: a projection constraint whose viscous part"
                              " differs between the unknowns it constrains")
    if not _parities_kept(law, task):
        raise UnsupportedTask(
            f"task {task.name!r}: a term that does not keep the odd/even extension across the"
            " walls (an explicit coordinate, a term of the wrong parity); the generator unfolds"
            " walls by symmetry")
    return law


def check_constrained(task: Task) -> None:
    law_of(task)


class _Box:
    """The unfolded periodic box: per axis the points, the period and how to fold back."""

    def __init__(self, task: Task, law, n_fine: int):
        self.lo, self.walls, points, lengths = [], [], [], []
        for a, axis in enumerate(task.equation.space):
            lo, hi = (float(v) for v in task.domain[axis])
            wall = law.kinds[a] != "fourier"
            period = 2 * (hi - lo) if wall else hi - lo
            n = 2 * n_fine if wall else n_fine
            start = lo - (hi - lo) if wall else lo  # symmetric about lo: flip = reflection
            points.append(start + (np.arange(n) + 0.5) * period / n)
            lengths.append(period)
            self.lo.append(start)
            self.walls.append(wall)
        self.grid = SpectralGrid(tuple(points), tuple(lengths))

    def symmetrise(self, u: np.ndarray, parity: tuple[str, ...]) -> np.ndarray:
        """Odd (sin) or even (cos) about every wall of u [B, *shape]."""
        for a, (wall, par) in enumerate(zip(self.walls, parity)):
            if wall:
                u = 0.5 * (u + (-1.0 if par == "sin" else 1.0) * np.flip(u, axis=1 + a))
        return u


class _Operators:
    """The law's constant operators per Fourier mode of ``box`` and its pointwise terms."""

    def __init__(self, law, box: _Box, values: dict):
        self.law, self.grid, self.values = law, box.grid, values
        self.L, self.Ainv, self.P, self.DGD = _operators(law, box.grid, values)
        g, jets = box.grid, law.jets
        self.rest_jets = jets.used(law.rest)
        self.f_jets = jets.used(law.elliptic_rhs)
        base = [jets.symbol(j, (0,) * law.dim) for j in range(len(law.names))]
        args = base + [s for *_, s in self.rest_jets] + list(law.coords) + [law.t]
        self.rest = array_function(args, [sp.sympify(e).subs(values) for e in law.rest])
        fargs = base[:law.n_evolved] + [s for *_, s in self.f_jets] + list(law.coords) + [law.t]
        self.F = array_function(fargs, [sp.sympify(e).subs(values) for e in law.elliptic_rhs])
        self.X = g.coords()

    def _times(self, M, v):
        """Per-mode matrices M [*k, n, m] times v [B, m, *k]."""
        return np.einsum("...ij,bj...->bi...", M, v)

    def _spectrum(self, v, B):
        g = self.grid
        return g.fft(np.broadcast_to(np.asarray(v, dtype=float), (B,) + g.shape))

    def _field(self, vh, orders):
        return self.grid.ifft(vh * self.grid.symbol(tuple(orders)))

    def complete(self, wh, t):
        """Spectra [B, n_all, *k] of every unknown but the pressures (zeros)."""
        law, g = self.law, self.grid
        parts = [wh]
        if law.n_elliptic:
            w = [g.ifft(wh[:, i]) for i in range(law.n_evolved)]
            J = [self._field(wh[:, j], o) for j, o, _ in self.f_jets]
            F = self.F(*w, *J, *self.X, t)
            Fh = np.stack([self._spectrum(f, wh.shape[0]) for f in F], axis=1) * g.mask
            parts.append(self._times(self.Ainv, Fh))
        if law.n_pressure:
            parts.append(np.zeros((wh.shape[0], law.n_pressure) + wh.shape[2:], complex))
        return np.concatenate(parts, axis=1)

    def rate(self, wh, t, project=True):
        """Spectrum of dt w [B, ne, *k]: L w + N, projected onto D w = 0."""
        law, g = self.law, self.grid
        full = self.complete(wh, t)
        vals = [g.ifft(full[:, i]) for i in range(len(law.names))]
        J = [self._field(full[:, j], o) for j, o, _ in self.rest_jets]
        N = self.rest(*vals, *J, *self.X, t)
        Nh = np.stack([self._spectrum(v, wh.shape[0]) for v in N], axis=1) * g.mask
        out = self._times(self.L, wh) + Nh
        return self._times(self.P, out) if law.n_pressure and project else out

    def everything(self, wh, t):
        """Spectra of every unknown, the pressures included: -(D G)^+ D (L w + N)."""
        full = self.complete(wh, t)
        if self.law.n_pressure:
            n0 = self.law.n_evolved + self.law.n_elliptic
            full[:, n0:] = -self._times(self.DGD, self.rate(wh, t, project=False))
        return full


def generate_constrained(task: Task, n_samples: int, seed: int, nx: int | None = None,
                         n_frames: int | None = None, *, oversample: int | None = None,
                         rtol: float = 1e-12, tol: float = 1e-9, method: str = "auto",
                         info: dict | None = None, first: int = 0, redraws=None
                         ) -> dict[str, np.ndarray]:
    """``n_samples`` samples (``first`` ..) keyed as the task's HDF5 layout. ``oversample`` is
    the resolution knob: internal grid = oversample x output grid per axis (default 4 in 1D,
    3 in 2D, 2 in 3D, or the task's generator.oversample)."""
    law = law_of(task)
    dim = law.dim
    nx = int(nx or DEFAULT_NX[dim])
    spec = task.generator
    modes = spec.modes if spec else 4
    factor = int(oversample or (spec.oversample if spec and "oversample" in
                                spec.model_fields_set else DEFAULT_OVERSAMPLE[dim]))
    if 3 * modes >= nx * factor:
        raise ValueError(f"nx={nx} is too coarse for initial data with {modes} modes")
    n_frames = int(n_frames or task.n_frames or 101)
    t0, t1 = task.time_span  # type: ignore[misc]
    t_out = np.linspace(float(t0), float(t1), n_frames)
    values = _values(task)
    box = _Box(task, law, nx * factor)
    ops = _Operators(law, box, values)
    w0 = _initial(task, law, box, ops, n_samples, seed, modes, first, redraws)
    fields, what = _run(task, law, box, ops, w0, t_out, nx, rtol=rtol, tol=tol, method=method)
    if info is not None:
        info.update(what, oversample=factor, internal_grid=list(box.grid.shape), nx=nx, ic_modes=modes)
    out: dict[str, Any] = {task.data.fields[n]: np.ascontiguousarray(f)
                           for n, f in fields.items() if n in task.data.fields}
    if task.data.t_key:
        out[task.data.t_key] = t_out
    for axis, pts in zip(task.equation.space, conventions.output_grid(task, (nx,) * dim)):
        key = task.data.x_key if axis == "x" else f"{axis}-coordinate"
        if key:
            out[key] = pts
    return out


def _values(task: Task) -> dict:
    return {**{sp.Symbol(k, real=True): v for k, v in task.equation.constants.items()},
            **{sp.Symbol(k, real=True): v for k, v in task.parameters.items()}}


def simulate_constrained(task: Task, initial, t_out, nx: int, *, oversample: int | None = None,
                         rtol: float = 1e-12, tol: float = 1e-9, method: str = "auto"
                         ) -> dict[str, np.ndarray]:
    """Frames {unknown: [B, T, nx...]} from initial data given as functions of the coordinates
    (``initial[name](x, y) -> [B, ...]`` or broadcastable, for the evolved unknowns), evaluated
    on the unfolded internal grid (a sine is extended oddly by itself)."""
    law = law_of(task)
    factor = int(oversample or DEFAULT_OVERSAMPLE[law.dim])
    box = _Box(task, law, nx * factor)
    ops = _Operators(law, box, _values(task))
    mesh = np.meshgrid(*box.grid.points, indexing="ij")
    w0 = np.stack([np.asarray(initial[n](*mesh), dtype=float).reshape((-1,) + box.grid.shape)
                   for n in law.evolved], axis=1)
    if law.n_pressure:
        wh = np.stack([box.grid.fft(w0[:, i]) for i in range(law.n_evolved)], axis=1)
        wh = np.einsum("...ij,bj...->bi...", ops.P, wh)
        w0 = np.stack([box.grid.ifft(wh[:, i]) for i in range(law.n_evolved)], axis=1)
    fields, _ = _run(task, law, box, ops, w0, np.asarray(t_out, float), nx, rtol=rtol, tol=tol,
                     method=method)
    return fields


def _run(task, law, box, ops, w0, t_out, nx, *, rtol, tol, method):
    """Integrate w0 [B, ne, *shape] and evaluate every unknown at the output points."""
    g, dim = box.grid, law.dim
    t0, t1 = float(t_out[0]), float(t_out[-1])

    def rhs(fields, t, dealias):
        wh = np.stack([g.fft(f) for f in fields], axis=1) * g.mask
        r = ops.rate(wh, t)
        return [g.ifft(r[:, i]) for i in range(law.n_evolved)]

    lhat = np.stack([np.real(ops.L[..., i, i]) for i in range(law.n_evolved)])
    coupled = any(np.any(ops.L[..., i, j] != 0) for i in range(law.n_evolved)
                  for j in range(law.n_evolved) if i != j)
    stiff = float(np.max(np.abs(lhat * g.mask), initial=0.0)) * (t1 - t0) / 3.0 > 200
    use = method if method != "auto" else ("etdrk4" if stiff and not coupled else "dop853")
    if use == "etdrk4":
        frames, what = etdrk4(rhs, g, lhat * g.mask, w0, t_out, tol=tol)
    else:
        frames, what = dop853(rhs, w0, t_out, rtol=rtol)
    out_pts = conventions.output_grid(task, (nx,) * dim)
    evals = [np.exp(1j * np.outer(p - pts[0], 2 * np.pi * np.fft.fftfreq(len(pts), L / len(pts))))
             for p, pts, L in zip(out_pts, g.points, g.lengths)]
    B, T = w0.shape[0], len(t_out)
    fields = {n: np.empty((B, T) + (nx,) * dim) for n in law.names}
    for k in range(T):
        wh = np.stack([g.fft(frames[:, k, i]) for i in range(law.n_evolved)], axis=1) * g.mask
        spectra = ops.everything(wh, float(t_out[k]))
        for i, name in enumerate(law.names):
            fields[name][:, k] = _evaluate(g, spectra[:, i], evals)
    return fields, what


def _evaluate(g: SpectralGrid, spectrum: np.ndarray, evals) -> np.ndarray:
    """Values at the output points of the field whose rfftn is ``spectrum`` [B, *k]."""
    v = np.fft.fftn(g.ifft(spectrum), axes=g.axes) / np.prod(g.shape)
    for a, E in enumerate(evals):
        v = np.moveaxis(np.tensordot(v, E, axes=([1 + a], [1])), -1, 1 + a)
    return v.real


def _initial(task, law, box, ops, n, seed, modes, first, redraws) -> np.ndarray:
    """Initial evolved fields [B, ne, *shape] on the unfolded grid (see the module doc)."""
    spec = task.generator
    names = law.evolved
    ranges = dict(spec.ranges) if spec else {}

    mvec = mode_vectors(law.dim, modes)
    coeff = draw_coefficients(seed, n, len(names), len(mvec), first=first, redraws=redraws) * (
        np.linalg.norm(mvec, axis=1) ** -(spec.decay if spec else 2.0))[:, None]

    def draw(grid: SpectralGrid, P):
        u = np.stack([box.symmetrise(_evaluate_modes(coeff[:, i], mvec, grid.points, box.lo,
                                                     grid.lengths), law.parity[i])
                      for i in range(len(names))], axis=1)
        if P is not None:
            wh = np.einsum("...ij,bj...->bi...", P, np.stack(
                [grid.fft(u[:, i]) for i in range(len(names))], axis=1))
            u = np.stack([grid.ifft(wh[:, i]) for i in range(len(names))], axis=1)
        return u

    u = draw(box.grid, ops.P if law.n_pressure else None)
    nref = (32 if law.dim < 3 else 8) * modes  # where the scale is measured (fixed per seed)
    ref_grid = SpectralGrid(tuple(lo + (np.arange(nref) + 0.5) * L / nref
                                  for lo, L in zip(box.lo, box.grid.lengths)), box.grid.lengths)
    ref = draw(ref_grid, _projector(law, ref_grid, ops.values) if law.n_pressure else None)
    axes = tuple(range(1, law.dim + 1))
    joint = {j for _, m in law.div for d in range(m.rows) for j in range(m.cols) if m[d, j] != 0}
    top = max((float(np.abs(ref[:, j]).max()) for j in joint), default=1.0)
    for j, name in enumerate(names):
        r = ref[:, j]
        if name in ranges and j not in joint and "sin" not in law.parity[j]:
            low, high = ranges[name]  # an affine map keeps a cosine's zero slope at a wall
            mn, mx = r.min(axis=axes, keepdims=True), r.max(axis=axes, keepdims=True)
            u[:, j] = low + (high - low) * (u[:, j] - mn) / np.where(mx > mn, mx - mn, 1.0)
            continue
        size = max(abs(v) for v in ranges[name]) if name in ranges else 1.0
        scale = top if j in joint else np.abs(r).max(axis=axes, keepdims=True)
        u[:, j] = size * u[:, j] / np.maximum(scale, 1e-300)
    return u


def _projector(law, grid: SpectralGrid, values: dict) -> np.ndarray:
    """P = I - G (D G)^+ D per mode of ``grid``, and (D G)^+ D."""
    return _operators(law, grid, values)[2]


def _operators(law, grid: SpectralGrid, values: dict):
    """L, A^+, P and (D G)^+ D per mode [*k, rows, cols] (None where the law has none)."""
    kshape = grid.mask.shape
    sub = lambda m: np.array(m.subs(values).evalf(), dtype=float)  # noqa: E731

    def stack(pairs, rows, cols):
        out = np.zeros(kshape + (rows, cols), dtype=complex)
        for orders, m in pairs:
            out += grid.symbol(tuple(orders))[..., None, None] * sub(m)
        return out

    ne, nc, npr = law.n_evolved, law.n_elliptic, law.n_pressure
    L = stack(law.lin, ne, ne)
    Ainv = np.linalg.pinv(stack(law.elliptic, nc, nc), rcond=1e-12) if nc else None
    P = DGD = None
    if npr:
        G, D = stack(law.grad, ne, npr), stack(law.div, npr, ne)
        DGD = np.linalg.pinv(D @ G, rcond=1e-12) @ D
        P = np.eye(ne) - G @ DGD
    return L, Ainv, P, DGD


def _parities_kept(law, task: Task) -> bool:
    """Do the remainder and F map the odd/even extension into itself? (random points)"""
    if all(k == "fourier" for k in law.kinds):
        return True
    from types import SimpleNamespace

    from pdesharp.builtin.families.bases import AxisBasis, _compatible

    n_all = len(law.names)
    prims = [law.jets.symbol(j, (0,) * law.dim) for j in range(n_all)]
    dom = [tuple(float(v) for v in task.domain[str(c)]) for c in law.coords]
    view = SimpleNamespace(prims=prims, coords=law.coords, t=law.t, params=law.params,
                           jets=law.jets)
    bases = [AxisBasis(k, tuple(p[a] for p in law.parity[:n_all])) for a, k in
             enumerate(law.kinds)]
    exprs = list(law.rest) + [sp.Integer(0)] * (n_all - law.n_evolved)
    ok = _compatible(view, bases, exprs, dom)
    for k, f in enumerate(law.elliptic_rhs):  # F has the parity of its row of A
        row = law.parity[n_all + k]
        view.prims = prims + [sp.Symbol("_row_", real=True)]
        b2 = [AxisBasis(kd, tuple(p[a] for p in law.parity[:n_all]) + (row[a],))
              for a, kd in enumerate(law.kinds)]
        ok = ok and _compatible(view, b2, [sp.Integer(0)] * n_all + [f], dom)
    return ok
