"""CodePDE's empirical convergence test, reproduced number for number.

Three kinds (``task.evaluation.convergence.kind``):

- ``time_1d`` (advection, Burgers, reaction-diffusion): five analytic initial conditions on
  nx in {256, 512, 1024, 2048} cell centres of [x_first, x_last] (the dataset's first and last
  x values), output every 0.01 up to t_last/10; the fine solution is linearly interpolated onto
  the coarse grid (space, then time), error_i = mean_b ||u_c - I(u_f)||_F / sqrt(u_c.size) against
  the finest grid (Burgers: the next grid, ``compare: adjacent``), rate = mean over the first two
  pairs of log(e_i/e_{i+1}) / log(nx_{i+1}/nx_i).
- ``cns_1d``: the same with CodePDE's ``init_multi_HD`` draws (seed 2022, 8 samples, the same
  random field for velocity, density and pressure), built at the finest grid and interpolated down.
- ``downsample_2d`` (Darcy): the first 8 coefficient fields downsampled by [6, 4, 3, 2], each
  solved again and compared with the solver's *own* full-resolution prediction, downsampled. A
  ``grid`` argument gets the same points (``x[::r]``), so it always says where the values are.

Scalars keep the dataset's float32 type where CodePDE's do (t_last/10 decides the frame count).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from pdesharp.evaluate.child import as_outputs, solver_args
from pdesharp.evaluate.metrics import stack_fields
from pdesharp.evaluate.spec import ChildSpec
from pdesharp.grid import GRID_KEY

OUTPUT_DT = 0.01


def cell_centres(x_min, x_max, nx: int) -> np.ndarray:
    dx = (x_max - x_min) / nx
    edges = np.linspace(x_min, x_max, nx + 1)
    return edges[:-1] + 0.5 * dx


def output_times(t_min, t_max, dt: float = OUTPUT_DT) -> np.ndarray:
    """CodePDE's ``get_t_coordinate``: ceil((t_max - t_min)/dt) + 2 frames from 0."""
    n_steps = np.ceil((t_max - t_min) / dt) + 1
    return np.arange(n_steps + 1) * dt


def analytic_ics(xc: np.ndarray) -> np.ndarray:
    """The five CodePDE test profiles, [5, nx]: sin, sinsin, Gaussian, react, possin."""
    s = np.sin((xc + 1.0) * np.pi)
    return np.stack([
        s,
        s + 0.1 * np.sin((xc + 1.0) * np.pi * 8.0),
        np.exp(-(xc**2) * np.pi / 4.0) / np.sqrt(2.0),
        np.exp(-0.5 * (xc - np.pi) ** 2 / (0.25 * np.pi) ** 2),
        np.abs(s),
    ])


def random_hd_ics(xc: np.ndarray, bsz: int = 8, k_tot: int = 10, seed: int = 2022,
                  n_modes: int = 2) -> np.ndarray:
    """CodePDE's ``init_multi_HD`` without renormalisation: [bsz, nx], same draw order."""
    rng = np.random.default_rng(seed)
    chosen = rng.integers(0, k_tot, size=(bsz, n_modes))
    mask = np.zeros((bsz, k_tot), dtype=int)
    np.put_along_axis(mask, chosen, 1, axis=1)
    # CodePDE sums the one-hot rows, so every sample uses the same count for all its modes
    count = mask.sum(axis=1)
    k = np.pi * 2.0 * np.arange(1, k_tot + 1) * count[:, None] / (xc[-1] - xc[0])
    amp = rng.uniform(size=(bsz, k_tot, 1))
    phase = 2.0 * np.pi * rng.uniform(size=(bsz, k_tot, 1))
    u = (amp * np.sin(k[:, :, None] * xc[None, None, :] + phase)).sum(axis=1)
    absval = rng.choice([0, 1], size=bsz, p=[0.9, 0.1])
    u[absval == 1] = np.abs(u[absval == 1])
    u *= rng.choice([1, -1], size=(bsz, 1))
    window = rng.choice([0, 1], size=bsz, p=[0.5, 0.5])
    xx = np.repeat(xc[None, :], bsz, axis=0)
    w = np.ones_like(xx)
    x_left = rng.uniform(0.1, 0.45, size=bsz)
    x_right = rng.uniform(0.55, 0.9, size=bsz)
    width = 0.01
    sel = window == 1
    w[sel] *= 0.5 * (np.tanh((xx[sel] - x_left[sel, None]) / width)
                     - np.tanh((xx[sel] - x_right[sel, None]) / width))
    return u * w


def grid_error(coarse: np.ndarray, fine_on_coarse: np.ndarray) -> float:
    diff = coarse - fine_on_coarse
    axes = tuple(range(1, diff.ndim))
    return float(np.mean(np.sqrt(np.sum(diff**2, axis=axes))) / np.sqrt(coarse.size))


def fine_to_coarse(u_fine, x_fine, t_fine, x_coarse, t_coarse) -> np.ndarray:
    from scipy.interpolate import interp1d  # here: 1 s of imports a run without the test skips

    in_space = interp1d(x_fine, u_fine, axis=2, kind="linear", fill_value="extrapolate")(x_coarse)
    return interp1d(t_fine, in_space, axis=1, kind="linear", fill_value="extrapolate")(t_coarse)


def _log_ratio(a: float, b: float) -> float:
    """log(a/b) with NumPy semantics (nan/inf rather than ZeroDivisionError), as CodePDE gets."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.log(np.float64(a) / np.float64(b)))


def _mean_rate(errors: list[float], sizes: list[float]) -> float:
    rates = [_log_ratio(errors[i], errors[i + 1]) / np.log(sizes[i + 1] / sizes[i])
             for i in range(len(sizes) - 2)]
    return float(np.mean(rates))


def _stack(spec: ChildSpec, arrays: dict[str, np.ndarray]) -> np.ndarray:
    return stack_fields([arrays[n] for n in spec.returns])


def _x_range(spec: ChildSpec, inputs: dict):
    """First and last x of the data (CodePDE uses the stored cell centres), else of the grid."""
    if "x" in inputs:
        return inputs["x"][0], inputs["x"][-1]
    lo, hi = spec.domain[spec.space[0]]
    n = next(v for k, v in inputs.items() if k.startswith("initial:")).shape[-1]
    from pdesharp.grid import axis_points

    xc = axis_points(lo, hi, n, spec.grid)
    return xc[0], xc[-1]


@dataclass
class Plan:
    """The solver calls a convergence test needs, and how to turn their outputs into a rate.

    ``cases[i]`` is ``(inputs, shape)``: the solver's input arrays by key and the shape every
    output must have. ``finish(outputs)`` takes, per case, ``{name: array}`` and returns
    ``(rate, errors)``. The solver runs in the sandbox; the rate is computed here, by the
    parent, so a solver cannot report its own order.
    """

    cases: list[tuple[dict[str, np.ndarray], tuple[int, ...]]]
    finish: Callable[[list[dict[str, np.ndarray]]], tuple[float, list[float]]]


IC_TOL = 1e-3  # relative rms of frame 0 against the given initial data


class NotMeasured(ValueError):
    """The refinement study's outputs cannot give a rate that means anything (the message says
    why); the rate is withheld rather than shown."""


def _starts_from_given(spec: ChildSpec, run_inputs: dict, out: dict, nx: int) -> None:
    """The errors of the study are differences between the solver's own outputs, which a
    solver can shape at will (``1 + C/N**4`` has "order 4" and solves nothing). What it cannot
    choose is the initial data it was given: every run's frame 0 must be it, else the rate is
    not a rate of this problem's solutions."""
    for a in spec.args:
        if a.kind != "initial" or a.field not in out:
            continue
        given = np.asarray(run_inputs[f"initial:{a.field}"], dtype=float)
        got = np.asarray(out[a.field], dtype=float)[:, 0]
        scale = float(np.sqrt(np.mean(given**2))) or 1.0
        miss = float(np.sqrt(np.mean((got - given) ** 2))) / scale
        if not miss <= IC_TOL:
            raise NotMeasured(
                f"rate withheld: on {nx} cells the solver's frame 0 of {a.field!r} is not the "
                f"initial data it was given (relative rms mismatch {miss:.1e}), so the "
                f"differences between its outputs do not measure its error on this problem")


def time_1d(spec: ChildSpec, inputs: dict) -> Plan:
    conv = spec.convergence
    grids = conv["grids"]
    x_min, x_max = _x_range(spec, inputs)
    t = inputs["time"]
    t_min, t_max = t[0], t[-1] / 10  # CodePDE shortens the window "to save time"
    tc = output_times(t_min, t_max)
    initial = [a.field for a in spec.args if a.kind == "initial"]
    if conv["kind"] == "cns_1d":
        xf = cell_centres(x_min, x_max, grids[-1])
        base = random_hd_ics(xf, bsz=conv["batch"])
        # CodePDE draws all three fields with the same seed: identical ICs, interpolated down
        stacked = np.stack([base] * len(initial), axis=-1)
        from scipy.interpolate import interp1d

        down = interp1d(xf, stacked, axis=1, kind="linear", fill_value="extrapolate")
    cases, xcs = [], []
    for nx in grids:
        xc = cell_centres(x_min, x_max, nx)
        if conv["kind"] == "cns_1d":
            ics = down(xc)
            run_inputs = {f"initial:{f}": ics[..., j] for j, f in enumerate(initial)}
        else:
            u0 = analytic_ics(xc)
            run_inputs = {f"initial:{f}": u0 for f in initial}
        run_inputs["time"] = tc
        run_inputs.update(_grid(spec, [xc]))
        batch = run_inputs[f"initial:{initial[0]}"].shape[0]
        cases.append((run_inputs, (batch, len(tc), nx)))
        xcs.append(xc)

    def finish(outputs):
        for (run_inputs, _), out, nx in zip(cases, outputs, grids):
            _starts_from_given(spec, run_inputs, out, nx)
        sols = [_stack(spec, o) for o in outputs]
        errors = []
        for i in range(len(grids) - 1):
            j = i + 1 if conv["compare"] == "adjacent" else len(grids) - 1
            errors.append(grid_error(sols[i], fine_to_coarse(sols[j], xcs[j], tc, xcs[i], tc)))
        return _mean_rate(errors, [float(g) for g in grids]), errors

    return Plan(cases, finish)


def downsample_2d(spec: ChildSpec, inputs: dict, pred_full: list[np.ndarray]) -> Plan:
    conv = spec.convergence
    rates = sorted(conv["rates"], reverse=True)
    batch = conv["batch"]
    coeff = {a.field: inputs[f"coefficient:{a.field}"][:batch]
             for a in spec.args if a.kind == "coefficient"}
    fine = stack_fields([p[:batch] for p in pred_full])
    keys = [GRID_KEY.format(axis=a) for a in spec.space]
    grid = [inputs[k] for k in keys] if all(k in inputs for k in keys) else []
    cases = []
    for r in rates:
        run_inputs = {f"coefficient:{k}": v[:, ::r, ::r] for k, v in coeff.items()}
        run_inputs.update(_grid(spec, [g[::r] for g in grid]))  # the same points as the fields
        shape = tuple(len(g[::r]) for g in grid) if not spec.batched else \
            next(iter(run_inputs.values())).shape
        cases.append((run_inputs, shape))

    def finish(outputs):
        if not spec.batched:  # one problem: its fields carry no batch axis
            outputs = [{k: v[None] for k, v in o.items()} for o in outputs]
        errors = [grid_error(_stack(spec, o), fine[:, ::r, ::r]) for o, r in zip(outputs, rates)]
        per = [_log_ratio(errors[i], errors[i + 1]) / np.log(rates[i] / rates[i + 1])
               for i in range(len(errors) - 1)]
        return float(sum(per) / len(per)), errors

    return Plan(cases, finish)


def _grid(spec: ChildSpec, points: list[np.ndarray]) -> dict[str, np.ndarray]:
    """A ``grid`` argument's arrays for a test grid (none if the solver takes no grid)."""
    if not points or not any(a.kind == "grid" for a in spec.args):
        return {}
    return {GRID_KEY.format(axis=a): np.asarray(p, dtype=np.float64)
            for a, p in zip(spec.space, points)}


def plan(spec: ChildSpec, inputs: dict, pred_full: list[np.ndarray]) -> Plan | None:
    """The test for ``spec``'s kind (None for ``none``). ``inputs`` are the split's solver
    inputs (``initial:<f>``, ``coefficient:<f>``, ``time``, ``x``); ``pred_full`` the solver's
    prediction on them, one array per output (Darcy compares against it)."""
    kind = spec.convergence.get("kind", "none")
    if kind in ("time_1d", "cns_1d"):
        return time_1d(spec, inputs)
    if kind == "downsample_2d":
        return downsample_2d(spec, inputs, pred_full)
    return None


def rate_note(rate: float, errors: list[float]) -> tuple[float | None, str]:
    """(rate or None, note): a non-finite rate is reported as None with the errors."""
    errs = ", ".join(f"{e:.3e}" for e in errors)
    if not np.isfinite(rate):
        return None, f"the convergence rate is not finite (errors {errs}); CodePDE would print nan"
    return rate, ""


def convergence_order(spec: ChildSpec, fn: Callable, inputs: dict,
                      pred_full: list[np.ndarray]) -> tuple[float | None, str]:
    """The whole test in this process, calling ``fn`` directly (trusted solvers, tests)."""
    p = plan(spec, inputs, pred_full)
    if p is None:
        return None, f"no convergence test for kind {spec.convergence.get('kind')!r}"
    outputs = []
    for run_inputs, shape in p.cases:
        arrays = as_outputs(spec.returns, fn(*solver_args(spec.arg_refs(), run_inputs)))
        for name, arr in zip(spec.returns, arrays):
            if arr.shape != shape:
                raise ValueError(f"output {name!r} has shape {arr.shape}, expected {shape}")
        outputs.append(dict(zip(spec.returns, arrays)))
    try:
        return rate_note(*p.finish(outputs))
    except NotMeasured as exc:
        return None, str(exc)
