"""Initial data from each library's own generator, the converged reference, and the task file.

Run as a script in its own process (JAX is configured for float64 there and nowhere else):
``python bench/sbs_data.py CASE OUT_DIR --samples B --seed S``. Writes ``OUT_DIR/dev.hdf5``
(float64; fields as the task names them, ``t-coordinate``, ``x-coordinate``(, ``y-coordinate``)),
``OUT_DIR/task.yaml`` and ``OUT_DIR/reference.json`` (the reference's error and cost).

The file states the reference's own error as pdesharp's generators do (the
``reference_error_*`` attributes, :mod:`pdesharp.data.stated_error`): per sample the time part
(the half-step distance over 15, fourth order) plus the spatial one (sbs_reference.py), their
mean and max; reference.json keeps the half-step distance itself as the time bound. A run
without an audit takes that as its floor. ``--check-only`` measures the spatial part of a
reference made before it was measured (from the file's own frame 0, without making the
reference again).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sbs_cases import BY_NAME, Case  # noqa: E402
from sbs_reference import converged, spatial  # noqa: E402

# what a reference's arrays are: a reference.json without it (the fine run's Fourier series cut
# to the data's modes, before 2026-11-29) is stale, and side_by_side.py makes it again
OUTPUT = "fine-grid values at the data points"
RICHARDSON = 2**4 - 1  # ETDRK4: the distance to the half-step run over this is the run's error


def exponax_ics(case: Case, samples: int, seed: int) -> np.ndarray:
    """[var, B, N...] from exponax's generators, configured as APEBench configures them."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import exponax as ex

    d = case.dim
    if case.params["kind"] == "gs":
        gen = ex.ic.RandomMultiChannelICGenerator(
            [ex.ic.RandomGaussianBlobs(d, one_complement=True), ex.ic.RandomGaussianBlobs(d)])
    elif case.params["kind"] == "fisher":  # "clamp;0.0;1.0;fourier;5;false;false"
        gen = ex.ic.ClampingICGenerator(
            ex.ic.RandomTruncatedFourierSeries(d, cutoff=5, offset_range=(-0.5, 0.5),
                                               max_one=False), limits=(0.0, 1.0))
        gen = ex.ic.RandomMultiChannelICGenerator([gen])
    else:  # "fourier;5;true;true"
        gen = ex.ic.RandomMultiChannelICGenerator(
            [ex.ic.RandomTruncatedFourierSeries(d, cutoff=5, offset_range=(0.0, 0.0),
                                                max_one=True)])
    ics = ex.build_ic_set(gen, num_points=case.n, num_samples=samples,
                          key=jax.random.PRNGKey(seed))  # [B, C, N...]
    return np.moveaxis(np.asarray(ics, dtype=np.float64), 1, 0)


def pypde_ics(case: Case, samples: int, seed: int) -> np.ndarray:
    """[var, B, N...] from py-pde's ScalarField.random_harmonic (cosines: the walls' parity)."""
    import pde

    grid = pde.CartesianGrid([(0.0, L) for L in case.lengths], case.n, periodic=False)
    rng = np.random.default_rng(seed)
    kind = case.params["kind"]
    out = np.empty((len(case.fields), samples) + (case.n,) * case.dim)
    for b in range(samples):
        for i in range(len(case.fields)):
            f = pde.ScalarField.random_harmonic(grid, modes=3, rng=rng).data
            f = f / np.max(np.abs(f))
            if kind == "heat":  # the example's 0.2 .. 0.3
                f = 0.25 + 0.05 * f
            elif kind == "allen_cahn":
                f = 0.8 * f
            elif kind == "brusselator":  # the example: u = a, v = b / a + 0.1 noise
                f = (1.0 + 0.1 * f) if i == 0 else (3.0 + 0.1 * f)
            elif kind == "fhn":  # the example's random_uniform(0, 1)
                f = 0.5 + 0.5 * f
            elif kind == "ks":
                f = 0.5 * f
            out[i, b] = f
    return out


def write(case: Case, out: Path, samples: int, seed: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    w0 = exponax_ics(case, samples, seed) if case.library == "exponax" else \
        pypde_ics(case, samples, seed)
    t0 = time.perf_counter()
    sol, in_time, in_space = converged(w0, case.times, case.lengths, case.symbol,
                                       case.nonlinear, refine=case.ref_refine,
                                       substeps=case.ref_substeps, walls=case.walls)
    meta = {"case": case.name, "samples": samples, "seed": seed, "substeps": case.ref_substeps,
            "refine": case.ref_refine, "output": OUTPUT,
            "seconds": time.perf_counter() - t0, "finite": bool(np.all(np.isfinite(sol)))}
    import h5py
    import yaml

    with h5py.File(out / "dev.hdf5", "w") as h5:
        for i, f in enumerate(case.fields):
            h5[f if len(case.fields) > 1 else "tensor"] = sol[i]
        h5["t-coordinate"] = case.times
        for a, L in zip("xyz", case.lengths):
            h5[f"{a}-coordinate"] = (np.arange(case.n) + 0.5) * L / case.n
    (out / "task.yaml").write_text(yaml.safe_dump(case.task_yaml(), sort_keys=False))
    return state(case, out, meta, in_time, in_space)


def state(case: Case, out: Path, meta: dict, in_time, in_space) -> dict:
    """The reference's error into reference.json and the file's attributes."""
    import h5py

    # per sample: in time the bound over ETDRK4's 15 (the half-step run's error is 16x this
    # run's, so their distance is 15x it: Richardson), in space the distance itself
    own = np.asarray(in_time) / RICHARDSON + np.asarray(in_space)
    meta.update(error_bound=float(np.max(in_time)),
                error_bound_covers="time (the run with half the steps)",
                spatial=float(np.max(in_space)),
                spatial_covers=f"space (the run on the {case.ref_refine + 1}x grid)",
                own_error=float(np.mean(own)), own_error_max=float(np.max(own)))
    with h5py.File(out / "dev.hdf5", "a") as h5:
        h5.attrs.update({
            "reference_error_estimate": float(np.mean(own)),
            "reference_error_estimate_max": float(np.max(own)),
            "reference_error_tolerance": float(case.tol),
            "reference_error_met": bool(np.mean(own) <= case.tol),
            "reference_error_method": (
                f"pseudo-spectral ETDRK4 on a {case.ref_refine}x grid, {case.ref_substeps} "
                "steps per frame: per sample, the distance to the run with half the steps over "
                f"{RICHARDSON:g} (fourth order) plus the distance to the run on a "
                f"{case.ref_refine + 1}x grid (bench/sbs_data.py)"),
            "reference_error_samples": json.dumps(list(range(len(own))))})
    (out / "reference.json").write_text(json.dumps(meta, indent=1))
    return meta


def check_only(case: Case, out: Path) -> dict:
    """The spatial estimate of an existing reference (its reference.json from before it was
    measured): the time bound is kept, as a per-sample bound its maximum."""
    import h5py

    meta = json.loads((out / "reference.json").read_text())
    with h5py.File(out / "dev.hdf5", "r") as h5:
        keys = ["tensor"] if len(case.fields) == 1 else list(case.fields)
        ref = np.array([h5[k][()] for k in keys])
    t0 = time.perf_counter()
    in_space = spatial(ref, case.times, case.lengths, case.symbol, case.nonlinear,
                       case.ref_refine, case.ref_substeps, case.walls)
    meta.pop("spatial_tail", None)
    meta["spatial_seconds"] = time.perf_counter() - t0
    import yaml

    (out / "task.yaml").write_text(yaml.safe_dump(case.task_yaml(), sort_keys=False))
    return state(case, out, meta, np.full(ref.shape[1], meta["error_bound"]), in_space)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("out")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check-only", action="store_true",
                    help="measure the spatial error of the reference already in OUT_DIR")
    a = ap.parse_args()
    if a.check_only:
        print(json.dumps(check_only(BY_NAME[a.case], Path(a.out))))
        return
    print(json.dumps(write(BY_NAME[a.case], Path(a.out), a.samples, a.seed)))


if __name__ == "__main__":
    main()
