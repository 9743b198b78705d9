"""One timed solve in a fresh process: ``python bench/sbs_worker.py JOB.json`` prints one JSON line.

The job names a case, a solver (``pdesharp``: a best_solver.py file; ``exponax``; ``py-pde``) and
its settings, and an inputs file (``.npz``: ``w0`` [var, B, N...] at the solve's resolution,
``t`` the output times, ``ref`` [var, B, T, N...] the converged reference at the data points).

What is timed, from the moment the inputs are in memory (NumPy is imported by then, for every
solver alike):
- ``cold``: importing the solver's library (JAX and exponax, py-pde, or the generated module),
  building its stepper, and solving the whole batch once: compilation included, as a user's
  script pays it. Split into ``import`` and ``first`` (set-up + first batch).
- ``warm``: the same batch solved again, ``repeat`` times (at least ``min_seconds`` in all); the
  median, divided by the batch size, is the warm time per sample.
The accuracy is the nRMSE (CodePDE's: per sample over all frames and fields, mean over
samples) of the first solve's output against the reference, computed after all timing.

A job with ``duel`` items times several solvers' warm calls in turns in one process (:func:`duel`):
the warm ratio between them, round by round.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def nrmse(pred: np.ndarray, ref: np.ndarray) -> float:
    """pred, ref [var, B, T, N...]: fields stacked, one norm per sample."""
    axes = (0,) + tuple(range(2, ref.ndim))
    err = np.sqrt(np.mean((pred - ref) ** 2, axis=axes))
    return float(np.mean(err / np.sqrt(np.mean(ref**2, axis=axes))))


# -- pdesharp: the generated module, called as a user calls it --------------------------------
def run_pdesharp(job, w0, t):
    t0 = time.perf_counter()
    import importlib.util

    spec = importlib.util.spec_from_file_location("best_solver", job["solver"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, job.get("entry", "solver"))
    t_import = time.perf_counter() - t0
    args = []
    for kind, value in job["call"]:  # the task's signature: initial fields, times, parameters
        args.append(w0[value] if kind == "initial" else t if kind == "time" else value)

    def solve():
        out = fn(*args)
        out = out if isinstance(out, (tuple, list)) else (out,)
        return np.array([np.asarray(o, dtype=np.float64) for o in out])

    return t0, t_import, solve


# -- exponax, set up as APEBench sets up each scenario -----------------------------------------
def exponax_stepper(ex, case, n, dt, order):
    kind, d, L = case.params["kind"], case.dim, case.lengths[0]
    g = ex.stepper.generic
    if kind == "linear":
        a = tuple(case.params["a"]) + (0.0,) * (5 - len(case.params["a"]))
        return g.GeneralLinearStepper(d, L, n, dt, linear_coefficients=a)
    if kind == "kdv":
        return g.GeneralNonlinearStepper(d, L, n, dt, linear_coefficients=(0, 0, 0, -1.0, -0.125),
                                         nonlinear_coefficients=(0, -6.0, 0), order=order)
    if kind == "convection":  # APEBench's Burgers (single channel) and conservative KS
        a = tuple(case.params["a"]) + (0.0,) * (5 - len(case.params["a"]))
        return g.GeneralNonlinearStepper(d, L, n, dt, linear_coefficients=a,
                                         nonlinear_coefficients=(0, case.params["b1"], 0),
                                         order=order)
    if kind == "fisher":
        return g.GeneralPolynomialStepper(d, L, n, dt, linear_coefficients=(20.0, 0, 0.004, 0, 0),
                                          polynomial_coefficients=(0, 0, -20.0), order=order)
    if kind == "sh":
        return ex.stepper.reaction.SwiftHohenberg(d, L, n, dt, reactivity=0.7,
                                                  critical_number=1.0,
                                                  polynomial_coefficients=(0, 0, 1.0, -1.0),
                                                  order=order)
    if kind == "gs":
        return ex.stepper.reaction.GrayScott(d, L, n, dt, feed_rate=0.04, kill_rate=0.06,
                                             diffusivity_1=2e-5, diffusivity_2=1e-5, order=order)
    raise KeyError(kind)


def run_exponax(job, case, w0, t):
    cfg = job["config"]
    t0 = time.perf_counter()
    import jax

    if cfg.get("x64"):
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import exponax as ex

    t_import = time.perf_counter() - t0
    sub, order = int(cfg["substeps"]), int(cfg.get("order", 2))
    n = w0.shape[-1]
    stepper = exponax_stepper(ex, case, n, case.dt_frame / sub, order)
    if sub > 1:
        stepper = ex.RepeatedStepper(stepper, sub)
    roll = jax.jit(jax.vmap(ex.rollout(stepper, len(t) - 1, include_init=True)))
    dtype = jnp.float64 if cfg.get("x64") else jnp.float32
    u0 = jnp.asarray(np.moveaxis(w0, 0, 1), dtype=dtype)  # [B, C, N...]

    def solve():
        out = roll(u0).block_until_ready()  # [B, T, C, N...]
        return np.moveaxis(np.asarray(out, dtype=np.float64), 2, 0)

    return t0, t_import, solve


# -- py-pde: expressions, Neumann walls or periodic, one sample at a time ----------------------
PYPDE_RHS = {
    "heat": {"u": "0.1 * laplace(u)"},
    "allen_cahn": {"u": "0.0025 * laplace(u) + u - u**3"},
    "brusselator": {"u": "laplace(u) + 1 - 4 * u + u**2 * v",
                    "v": "0.1 * laplace(v) + 3 * u - u**2 * v"},
    "fhn": {"u": "laplace(u) + u - u**3 / 3 - w + 0.5", "w": "u / 10"},
    "ks": {"u": "-gradient_squared(u) / 2 - laplace(u + laplace(u))"},
}


def run_pypde(job, case, w0, t):
    cfg = job["config"]
    t0 = time.perf_counter()
    import pde

    t_import = time.perf_counter() - t0
    n = w0.shape[-1]
    grid = pde.CartesianGrid([(0.0, L) for L in case.lengths], n, periodic=not case.walls)
    eq = pde.PDE(PYPDE_RHS[case.params["kind"]])
    # a py-pde user solving a batch compiles the right-hand side once: without this, every
    # eq.solve recompiles it (~14 s per sample on 48^2 Allen-Cahn, all of it compilation)
    eq.cache_rhs = True
    names = case.fields
    T, every = float(t[-1]), float(t[1] - t[0])
    kw = {"solver": cfg["solver"], "backend": cfg.get("backend", "auto")}
    if cfg["solver"] == "scipy":
        kw.update(rtol=cfg["tol"], atol=cfg["tol"] * 1e-2)
        dt = None
    elif cfg.get("adaptive"):
        kw.update(adaptive=True, tolerance=cfg["tol"])
        dt = cfg.get("dt0", every / 100)
    else:
        dt = cfg["dt"]

    def solve():
        out = np.empty(w0.shape[:2] + (len(t),) + w0.shape[2:])
        for b in range(out.shape[1]):
            fs = [pde.ScalarField(grid, w0[i, b].copy(), label=f) for i, f in enumerate(names)]
            state = fs[0] if len(fs) == 1 else pde.FieldCollection(fs)
            store = pde.MemoryStorage()
            eq.solve(state, t_range=T, dt=dt, tracker=[store.tracker(every)], **kw)
            frames = np.array(store.data)  # [T, (var,) N...]
            if len(fs) == 1:
                frames = frames[:, None]
            frames = frames.reshape((frames.shape[0], len(fs)) + w0.shape[2:])
            out[:, b] = np.moveaxis(frames[:len(t)], 1, 0)
        return out

    return t0, t_import, solve


def _load(job):
    """(w0, t, ref) of the job's inputs file; a slow library timed on the first samples only
    (``max_samples``: times and accuracy per sample)."""
    data = np.load(job["inputs"])
    w0, t, ref = data["w0"], data["t"], data["ref"]
    few = (job.get("config") or {}).get("max_samples")
    return (w0[:, :few], t, ref[:, :few]) if few else (w0, t, ref)


def _set_up(job, case, w0, t):
    """The job's solver set up as its library's user sets it up: (t0, t_import, solve)."""
    if job["solver_kind"] == "pdesharp":
        return run_pdesharp(job, w0, t)
    return {"exponax": run_exponax, "py-pde": run_pypde}[job["solver_kind"]](job, case, w0, t)


def _accuracy(job, case, first, ref) -> tuple[float, bool]:
    """(nRMSE of the first solve at the data points, its shape right): a finer solve grid's
    data points are every stride-th, from offset."""
    stride, offset = job.get("stride", 1), job.get("offset", 0)
    pred = first[(Ellipsis,) + (slice(offset, None, stride),) * case.dim]
    ok = pred.shape == ref.shape and bool(np.all(np.isfinite(pred)))
    return (nrmse(pred, ref) if ok else float("inf")), pred.shape == ref.shape


def one(job, case, base_import: float | None) -> dict:
    w0, t, ref = _load(job)
    t0, t_import, solve = _set_up(job, case, w0, t)
    t1 = time.perf_counter()
    first = solve()
    t2 = time.perf_counter()
    warm, cpu = [], []
    repeat, least = job.get("repeat", 3), job.get("min_seconds", 0.5)
    most = job.get("max_seconds", 20)
    while not warm or (len(warm) < repeat and sum(warm) < most) or (sum(warm) < least
                                                                    and len(warm) < 200):
        s, c = time.perf_counter(), time.process_time()
        solve()
        warm.append(time.perf_counter() - s)
        cpu.append(time.process_time() - c)  # every thread's CPU: robust to a loaded machine
    batch = w0.shape[1]
    err, shape_ok = _accuracy(job, case, first, ref)
    # a later setting of the same process found the library imported: its cold time is the
    # process's import time plus its own set-up and first batch (compilation included)
    imp = t_import if base_import is None else base_import
    return {"cold": imp + (t2 - t1) + (t1 - t0 - t_import), "import": imp, "first": t2 - t1,
            "warm": float(np.median(warm)) / batch, "warm_runs": len(warm), "batch": batch,
            "warm_cpu": float(np.median(cpu)) / batch,
            "nrmse": err, "shape_ok": shape_ok,
            "fresh_process": base_import is None}


def duel(job, case) -> dict:
    """Warm times of several solvers in turns, in this one process (``job["duel"]``: items with
    their own ``solver_kind``). Each is set up and solves the batch once (compiling, planning,
    and the nRMSE of that output); then ``rounds`` rounds call each once in turn. This VM's
    speed drifts by up to 2x over seconds (one NumPy product on [4, 107]: 0.85 against 1.6 us,
    minutes apart, in one process), and separate processes timed back to back catch different
    phases of it: adjacent calls in one process share one, so their ratio, round by round,
    carries what the drift leaves out. Prints per item its per-sample time of every round."""
    runs = []
    for item in job["duel"]:
        it = dict(job, **item)
        w0, t, ref = _load(it)
        solve = _set_up(it, case, w0, t)[2]
        runs.append({"solve": solve, "batch": w0.shape[1], "warm": [], "warm_cpu": [],
                     "nrmse": _accuracy(it, case, solve(), ref)[0]})
    rounds, most = int(job.get("rounds", 15)), float(job.get("max_seconds", 60))
    start = time.perf_counter()
    for r in range(rounds):
        for run in runs:
            s, c = time.perf_counter(), time.process_time()
            run["solve"]()
            run["warm"].append((time.perf_counter() - s) / run["batch"])
            run["warm_cpu"].append((time.process_time() - c) / run["batch"])
        if r >= 2 and time.perf_counter() - start > most:  # slow solvers: fewer rounds, 3 at least
            break
    return {"duel": [{k: v for k, v in run.items() if k != "solve"} for run in runs]}


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    sys.path.insert(0, str(HERE))
    from sbs_cases import BY_NAME

    case = BY_NAME[job["case"]]
    if job.get("duel"):
        print(json.dumps(duel(job, case)), flush=True)
        return
    base = None
    for item in job.get("items") or [job]:
        out = one(dict(job, **item), case, base)
        base = out["import"] if base is None else base
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
