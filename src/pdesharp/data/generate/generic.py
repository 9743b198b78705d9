"""Reference data for *any* periodic, time-dependent task, made from its symbolic equation.

Public API::

    simulate_task(task, initial, t_out, nx=None, *, method="auto", rtol=1e-12, tol=1e-9)
        -> {unknown: [B, T, N...]}
    generate_task(task, n_samples, seed, nx=None, n_frames=None, *, method="auto", ...)
        -> {hdf5 key: array}             (the task's data.fields keys, t/x(/y) coordinates)
    generate(n_samples, seed, params=None, nx=None, *, task, **options)
        the registry entry point used by ``pdesharp data generate my_task.yaml``.

Method of lines: the equations ``Σ c·dt(q) + rest = 0`` are compiled by
:mod:`.generic_symbolic` into u_t = −M(u)⁻¹ rest(u) (conserved variables allowed), with every
space derivative taken spectrally on a periodic grid ``oversample`` (4) times finer than the
output grid and the 2/3 rule applied to every derivative and to u_t. The fine grid is the output
grid refined *in place* (its points include the output cell centres), so frames are stored by
plain subsampling, without interpolation. Time integration (:mod:`.generic_time`) is DOP853 with
rtol 1e-12, or, when the task has a stiff constant-coefficient linear part (diffusion on the fine
grid would force more than ~200 explicit steps), ETDRK4 with step doubling to a 1e-9 relative
Richardson error estimate. ``method="dop853"|"etdrk4"`` forces one.

Supported: 1D and 2D, periodic boundaries, scalar equations or systems in which every equation
has a time derivative (second time derivatives are rewritten as first-order systems, the
velocity starting at zero unless the task declares it). Tasks with Dirichlet, Neumann or Robin
walls (an interval or a rectangle, walls on every axis) go to the Chebyshev collocation
generator :mod:`.generic_bounded`. Not supported (a clear :class:`UnsupportedTask` error):
steady problems not given by formulas (Darcy has its own generator), a mixture of periodic
axes and walls, coefficient fields, constraints, node grids on periodic axes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pdesharp.data.generate.generic_ic import random_fields
from pdesharp.data.generate.generic_symbolic import (
    CompiledSystem,
    SpectralGrid,
    UnsupportedTask,
    check_supported,
    compile_system,
)
from pdesharp.data.generate.generic_time import IntegrationFailed, dop853, etdrk4
import pdesharp.grid as conventions
from pdesharp.task import Task, task_from_dict

DEFAULT_NX = {1: 256, 2: 64}
DEFAULT_FRAMES = 101
STIFF_STEPS = 200  # explicit steps max|L|·T/3 above which "auto" picks ETDRK4

ATTRS = {"name": "Fourier pseudo-spectral method of lines (generic)", "dealiasing": "2/3 rule"}
BOUNDED_ATTRS = {"name": "Chebyshev collocation method of lines (generic, walls)"}

__all__ = ["IntegrationFailed", "UnsupportedTask", "check_supported", "generate",
           "generate_task", "output_grid", "simulate_task"]


def output_grid(task: Task, nx: int) -> list[np.ndarray]:
    """The output grid (:mod:`pdesharp.grid`), one array per space axis, nx points per axis."""
    return conventions.output_grid(task, (nx,) * len(task.equation.space))


def _fine_grid(task: Task, n_out: tuple[int, ...], factor: int) -> SpectralGrid:
    """The output grid refined ``factor`` times in place: fine point factor·i is output point i.
    On ``nodes`` the last node of each axis is the first one again (x = hi is x = lo on a
    periodic axis): the grid holds the N - 1 distinct nodes, :func:`_wrap` appends the last."""
    points, lengths = [], []
    for axis, n in zip(task.equation.space, n_out):
        lo, hi = (float(v) for v in task.domain[axis])
        if task.grid == "nodes":
            distinct = factor * (n - 1)
            points.append(lo + np.arange(distinct) * (hi - lo) / distinct)
        else:
            points.append(conventions.refined_points(lo, hi, n, factor, task.grid))
        lengths.append(hi - lo)
    return SpectralGrid(tuple(points), tuple(lengths))


def _wrap(task: Task, arr: np.ndarray, dim: int) -> np.ndarray:
    """On ``nodes``: the values at the distinct nodes [..., N - 1 per axis] with the end node
    x = hi appended as a copy of x = lo on each axis (so the two are equal exactly)."""
    if task.grid != "nodes":
        return arr
    for a in range(arr.ndim - dim, arr.ndim):
        arr = np.concatenate([arr, np.take(arr, [0], axis=a)], axis=a)
    return arr


def _distinct(task: Task, arr: np.ndarray, dim: int) -> np.ndarray:
    """The inverse of :func:`_wrap`: drop the end node x = hi of each axis (it repeats x = lo)."""
    if task.grid != "nodes":
        return arr
    index = (Ellipsis,) + (slice(0, -1),) * dim
    return arr[index]


def _fourier_resample(arr: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Trigonometric interpolation of ``arr`` [B, *n] onto ``shape`` (same origin and length).

    Modes |m| < n/2 are kept (the Nyquist mode of an even grid is ambiguous and dropped; the 2/3
    filter removes it anyway).
    """
    out = np.asarray(arr, dtype=float)
    for axis, n_new in enumerate(shape, start=1):
        n_old = out.shape[axis]
        spec = np.fft.fft(out, axis=axis)
        m = np.fft.fftfreq(n_old, 1.0 / n_old).astype(int)
        keep = np.nonzero(2 * np.abs(m) < min(n_old, n_new))[0]
        new = np.zeros(out.shape[:axis] + (n_new,) + out.shape[axis + 1:], dtype=complex)
        src = [slice(None)] * out.ndim
        dst = [slice(None)] * out.ndim
        src[axis], dst[axis] = keep, m[keep] % n_new
        new[tuple(dst)] = spec[tuple(src)]
        out = np.real(np.fft.ifft(new, axis=axis)) * (n_new / n_old)
    return out


def _stiffness_steps(lhat: np.ndarray, span: float) -> float:
    return float(np.max(np.abs(lhat), initial=0.0)) * span / 3.0


def _integrate(system: CompiledSystem, grid: SpectralGrid, u0: np.ndarray, t_out: np.ndarray, *,
               method: str, rtol: float, tol: float) -> tuple[np.ndarray, dict]:
    """Frames [B, T, n_u, *fine grid] from the fine-grid initial data u0 [B, n_u, *fine grid]."""
    if method not in ("auto", "dop853", "etdrk4"):
        raise ValueError(f"method must be 'auto', 'dop853' or 'etdrk4', got {method!r}")
    t_out = np.asarray(t_out, dtype=float)
    if t_out.ndim != 1 or t_out.size < 2 or np.any(np.diff(t_out) <= 0):
        raise ValueError("t_out must be an increasing 1D array of at least two times")
    lhat = system.linear_symbols(grid)
    if method == "auto":
        stiff = _stiffness_steps(lhat, float(t_out[-1] - t_out[0])) > STIFF_STEPS
        method = "etdrk4" if stiff else "dop853"

    def rhs(fields: list[np.ndarray], t: float, dealias: bool) -> list[np.ndarray]:
        return system.rhs(fields, t, grid, dealias)

    # start from the band-limited (2/3-filtered) data, as the dynamics keep it there
    u0 = grid.dealias(u0.reshape((-1,) + grid.shape)).reshape(u0.shape)
    if method == "dop853":
        return dop853(rhs, u0, t_out, rtol=rtol)
    return etdrk4(rhs, grid, lhat, u0, t_out, tol=tol)


def _subsample(frames: np.ndarray, factor: int, dim: int) -> np.ndarray:
    index = (Ellipsis,) + (slice(None, None, factor),) * dim
    return frames[index]


def simulate_task(task: Task, initial: Mapping[str, np.ndarray], t_out: np.ndarray,
                  nx: int | None = None, *, method: str = "auto", rtol: float = 1e-12,
                  tol: float = 1e-9, info: dict | None = None) -> dict[str, np.ndarray]:
    """Evolve ``initial`` ({unknown: [B, N...]} on the output cell centres) to ``t_out``.

    ``nx`` is the internal grid size per axis (default ``oversample`` × N, oversample from the
    task's ``generator`` section, else 4); it must be a multiple of N. Returns
    ``{unknown: [B, len(t_out), N...]}`` (float64) with frame 0 equal to the input. ``info``, if
    given, receives what the integrator did (method, steps, error estimate).
    """
    if _bounded(task):
        from pdesharp.data.generate.generic_bounded import simulate_bounded

        return simulate_bounded(task, initial, t_out, rtol=rtol, info=info)
    system = compile_system(task)
    dim = system.dim
    missing = [u for u in system.unknowns if u not in initial and u not in system.introduced]
    if missing:
        raise ValueError(f"initial data lacks unknowns {missing} of task {task.name!r}")
    first = np.asarray(next(iter(initial.values())), dtype=float)
    arrays = [_distinct(task, np.asarray(initial[u], dtype=float), dim) if u in initial
              else _distinct(task, np.zeros_like(first), dim) for u in system.unknowns]
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays) or len(shape) != dim + 1:
        raise ValueError(f"initial fields must all be [B, N{', N' if dim == 2 else ''}], got "
                         f"{[a.shape for a in arrays]}")
    n_out = shape[1:]
    if len(set(n_out)) != 1 or n_out[0] < 4:
        raise ValueError(f"need the same number (>= 4) of points on every axis, got {n_out}")
    given = first.shape[1]  # points per axis as given (nodes: one more than n_out)
    factor = (task.generator.oversample if task.generator else 4) if nx is None else nx // given
    if nx is not None and (nx % given or factor < 1):
        raise ValueError(f"nx={nx} must be a positive multiple of the input size {given}")
    grid = _fine_grid(task, tuple(n + (task.grid == "nodes") for n in n_out), factor)
    u0 = np.stack([_fourier_resample(a, grid.shape) if factor > 1 else a for a in arrays], axis=1)
    frames, what = _integrate(system, grid, u0, t_out, method=method, rtol=rtol, tol=tol)
    if info is not None:
        info.update(what, oversample=factor, internal_grid=list(grid.shape))
    out = {}
    for j, name in enumerate(system.unknowns):
        f = _wrap(task, _subsample(frames[:, :, j], factor, dim), dim)
        if name in initial:
            f[:, 0] = initial[name]  # frame 0 is the input exactly
        out[name] = np.ascontiguousarray(f)
    return out


def generate_task(task: Task, n_samples: int, seed: int, nx: int | None = None,
                  n_frames: int | None = None, *, method: str = "auto", rtol: float = 1e-12,
                  tol: float = 1e-9, info: dict | None = None, first: int = 0,
                  redraws=None, collocation: int | None = None,
                  level: int = 0) -> dict[str, np.ndarray]:
    """Draw ``n_samples`` random initial conditions (seeded) and simulate them.

    The samples are ``first .. first + n_samples - 1`` of the seed (``redraws``: which redraw of
    each, see :func:`.generic_ic.draw_coefficients`); a batch is integrated together, so a
    sample's last digits depend on its batch: :mod:`.chunked` always uses the same batches.

    Returns arrays keyed as the task's HDF5 layout: each ``data.fields`` key [B, T, N(, N)],
    ``t_key`` [T] (``n_frames`` times spanning ``time_span``; default the task's ``n_frames``,
    else 101), ``x_key`` [N] and, in 2D, ``y-coordinate`` [N] (cell centres). Initial data are
    drawn analytically on the internal grid (:mod:`.generic_ic`), so no interpolation enters.
    A steady task (one problem given by formulas) is solved by :mod:`.steady` instead; a task
    with walls by :mod:`.generic_bounded` (``collocation``: its points per axis minus one).
    ``level``: the resolution level (:func:`resolution_levels`; 0 the default, each level finer
    in space and tighter in time), the knob :mod:`.accuracy` turns to reach a tolerance.
    """
    level = _check_level(task, level)
    if task.steady:
        from pdesharp.data.generate.steady import generate_steady

        return generate_steady(task, n_samples, seed, nx, info=info,
                               **({"tol": STEADY_TOL[level]} if level else {}))
    if _bounded(task):
        from pdesharp.data.generate.generic_bounded import generate_bounded

        return generate_bounded(task, n_samples, seed, nx, n_frames, rtol=rtol, info=info,
                                first=first, redraws=redraws, collocation=collocation,
                                level=level)
    if collocation is not None:
        raise ValueError("collocation (points per axis) applies to tasks with walls only")
    system = compile_system(task)
    dim = system.dim
    nx = int(nx or DEFAULT_NX[dim])
    spec = task.generator
    modes = spec.modes if spec else 4
    factor, tol, rtol = _periodic_level(task, level, tol, rtol)
    if 3 * modes >= nx - (task.grid == "nodes"):
        raise ValueError(
            f"nx={nx} is too coarse for initial data with {modes} modes (need nx > 3·modes"
            f"{' distinct nodes' if task.grid == 'nodes' else ''})")
    n_frames = int(n_frames or task.n_frames or DEFAULT_FRAMES)
    if n_frames < 2:
        raise ValueError(f"n_frames must be >= 2, got {n_frames}")
    t0, t1 = task.time_span  # type: ignore[misc]  # checked: the task is time-dependent
    t_out = np.linspace(float(t0), float(t1), n_frames)
    grid = _fine_grid(task, (nx,) * dim, factor)
    lo = [float(task.domain[a][0]) for a in task.equation.space]
    drawn = [u for u in system.unknowns if u not in system.introduced]
    init = random_fields(grid.points, lo, grid.lengths, drawn, n_samples, seed,
                         modes=modes, decay=spec.decay if spec else 2.0,
                         ranges=spec.ranges if spec else None, first=first, redraws=redraws)
    zero = np.zeros_like(init[drawn[0]])
    u0 = np.stack([init.get(u, zero) for u in system.unknowns], axis=1)
    frames, what = _integrate(system, grid, u0, t_out, method=method, rtol=rtol, tol=tol)
    if info is not None:
        info.update(what, oversample=factor, internal_grid=list(grid.shape), nx=nx,
                    ic_modes=modes, level=level)
    out: dict[str, np.ndarray] = {}
    for j, name in enumerate(system.unknowns):
        if name in task.data.fields:
            field = _wrap(task, _subsample(frames[:, :, j], factor, dim), dim)
            out[task.data.fields[name]] = np.ascontiguousarray(field)
    coords = output_grid(task, nx)
    if task.data.t_key:
        out[task.data.t_key] = t_out
    if task.data.x_key:
        out[task.data.x_key] = coords[0]
    if dim == 2:
        out["y-coordinate"] = coords[1]
    return out


STEADY_TOL = (1e-10, 1e-12)  # the steady generator's Newton/degree tolerance per level
PERIODIC_LEVELS = 3  # oversampling +2 and time tolerance /10 per level


def _periodic_level(task: Task, level: int, tol: float, rtol: float) -> tuple[int, float, float]:
    """(oversampling factor, ETDRK4 tolerance, DOP853 rtol) of a resolution level: each level
    refines the internal grid by 2 more points per output point and tightens the time
    tolerances tenfold (DOP853 not below 1e-13, where scipy's step control stops gaining)."""
    factor = task.generator.oversample if task.generator else 4
    return factor + 2 * level, tol * 10.0 ** -level, max(rtol * 10.0 ** -level, 1e-13)


def resolution_levels(task: Task, nx: int | None = None, **options: Any) -> list[str]:
    """The generic generator's resolution levels for ``task`` (level k: ``result[k]``), as
    :class:`.accuracy.Knob` takes them. A generator added to :func:`generate_task` adds its
    branch here."""
    if task.steady:
        return [f"steady solve to a change of {t:g}" for t in STEADY_TOL]
    if _bounded(task):
        from pdesharp.data.generate.generic_bounded import resolution_levels as walls

        return walls(task, nx, rtol=options.get("rtol", 1e-12))
    dim = len(task.equation.space)
    n = int(nx or DEFAULT_NX[dim])
    out = []
    for k in range(PERIODIC_LEVELS):
        factor, tol, rtol = _periodic_level(task, k, options.get("tol", 1e-9),
                                            options.get("rtol", 1e-12))
        out.append(f"Fourier grid {factor * n} per axis ({factor}x), ETDRK4 tolerance {tol:g} / "
                   f"DOP853 rtol {rtol:g}")
    return out


def _check_level(task: Task, level: Any) -> int:
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
        raise ValueError(f"level must be a non-negative integer, got {level!r}")
    top = len(resolution_levels(task)) - 1
    if level > top:
        raise ValueError(f"level {level} is beyond the finest resolution level ({top}) of the "
                         f"generator for task {task.name!r}")
    return int(level)


def scheme_attrs(task: Task) -> dict[str, str]:
    """What the file's ``scheme_*`` attributes say the method is (walls or periodic)."""
    return dict(BOUNDED_ATTRS if _bounded(task) else ATTRS)


def batch_size(task: Task) -> int:
    """Samples integrated together by :func:`make_batch`: one between walls (Radau runs sample
    by sample anyway) and in 2D (the FFTs dominate); 8 in 1D periodic, where one batch costs
    little more than one sample."""
    return 1 if _bounded(task) or len(task.equation.space) > 1 else 8


def make_batch(task: Task, seed: int, first: int, last: int, nx: int | None = None, *,
               sink=None, total: int = 0, **options: Any):
    """Samples ``first .. last - 1`` as a :class:`.chunked.Batch`. If their integration fails,
    each is redone alone and a failing sample is replaced by its next redraw (reported to
    ``sink`` as a ``rejected`` event), up to :data:`.chunked.MAX_DRAWS` draws."""
    from pdesharp.data.generate.chunked import MAX_DRAWS, Batch, GenerationProgress

    info: dict[str, Any] = {}
    try:
        return Batch(generate_task(task, last - first, seed, nx, first=first, info=info,
                                   **options), info)
    except IntegrationFailed as exc:
        if last - first == 1:
            failure: IntegrationFailed | None = exc
        else:
            failure = None
    parts, infos, rejected = [], [], []
    for k in range(first, last):
        draw = 0
        if failure is not None and k == first:  # a batch of one: its draw 0 just failed
            rejected.append({"sample": k, "draw": 0, "reason": str(failure)})
            if sink:
                sink(GenerationProgress("rejected", k, total, k, k + 1, draw=0,
                                        message=str(failure)))
            draw = 1
        while True:
            if draw >= MAX_DRAWS:
                raise IntegrationFailed(
                    f"sample {k}: {MAX_DRAWS} random draws in a row failed to integrate (last: "
                    f"{rejected[-1]['reason']}); the task's initial data may need "
                    "generator.ranges, or the PDE may blow up from most data")
            one: dict[str, Any] = {}
            try:
                parts.append(generate_task(task, 1, seed, nx, first=k, redraws=[draw],
                                           info=one, **options))
                infos.append(one)
                break
            except IntegrationFailed as exc:
                rejected.append({"sample": k, "draw": draw, "reason": str(exc)})
                if sink:
                    sink(GenerationProgress("rejected", k, total, k, k + 1, draw=draw,
                                            message=str(exc)))
                draw += 1
    from pdesharp.data.generate.chunked import merge_info

    per_sample = set(task.data.fields.values())
    arrays = {key: (np.concatenate([p[key] for p in parts]) if key in per_sample else value)
              for key, value in parts[0].items()}
    return Batch(arrays, merge_info(infos), rejected)


def check_task(task: Task) -> None:
    """Raise :class:`UnsupportedTask` if no generic generator can make ``task``."""
    if task.steady:
        try:  # steady problems given by formulas have their own generator where it exists
            from pdesharp.data.generate.steady import check_steady
        except ImportError:
            pass
        else:
            check_steady(task)
            return
    check_supported(task, bounded=_bounded(task))


def verdict(task: Task) -> str | None:
    """Why the generic generators cannot make ``task``'s reference data, or None if they can
    (what ``pdesharp tasks check`` says before anyone runs ``data generate``)."""
    try:
        check_task(task)
        if not task.steady:
            compile_system(task, bounded=_bounded(task))
    except (UnsupportedTask, ValueError) as exc:
        return str(exc)
    return None


def _bounded(task: Task) -> bool:
    """A time-dependent task whose boundary is not periodic: the Chebyshev generator's."""
    from pdesharp.data.generate.generic_symbolic import _has_walls

    return not task.steady and (not task.boundary.strip().lower().startswith("periodic")
                                or _has_walls(task))


def generate(n_samples: int, seed: int, params: Mapping[str, float] | None = None,
             nx: int | None = None, *, task: Task, **options: Any) -> dict[str, np.ndarray]:
    """Registry entry point: :func:`generate_task` with ``params`` overriding task.parameters.

    Options: ``n_frames``, ``method``, ``rtol``, ``tol``, ``info`` (see :func:`generate_task`).
    """
    known = {"n_frames", "method", "rtol", "tol", "info", "level"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown generator options {unknown}; known: {', '.join(sorted(known))}")
    return generate_task(with_parameters(task, params), n_samples, seed, nx, **options)


def with_parameters(task: Task, params: Mapping[str, float] | None) -> Task:
    """``task`` with ``params`` overriding some of its parameters (checked to exist)."""
    if not params:
        return task
    bad = sorted(set(params) - set(task.parameters))
    if bad:
        raise ValueError(
            f"task {task.name!r} has no parameters {bad}; it has {list(task.parameters)}")
    data = task.model_dump(mode="json")
    data["parameters"] = {**task.parameters, **{k: float(v) for k, v in params.items()}}
    return task_from_dict(data, f"task {task.name!r} with parameters {dict(params)}")
