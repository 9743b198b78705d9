"""How closely and how fast the CNS and Darcy generators reproduce the shared dev data.

CNS: starts ``cns.simulate`` from the stored frame 0 of ``cns1d_dev.hdf5`` and compares the first
``--frames`` frames (101 = the full t in [0, 1]; about 4-8 min per sample on 2 shared cores).
Prints max |diff| per field, CodePDE's nRMSE on the stacked (Vx, density, pressure) array, the
fraction of bit-identical values and the wall time per sample. ``--plain`` runs the same scheme
without PDEBench's float32 rounding pattern (no fused multiply-adds, no y/z sweeps), to show
what that pattern buys.

Darcy: re-solves the first ``--darcy-samples`` stored coefficients of ``darcy_dev.hdf5``.

    python bench/cns_darcy_reproduce.py --frames 11
    python bench/cns_darcy_reproduce.py --frames 101 --plain
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import h5py
import numpy as np

from pdesharp.data.generate import cns, darcy

DATA = Path(os.environ.get("PDESHARP_SHARED_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pdebench"))


def nrmse(pred: np.ndarray, ref: np.ndarray) -> np.ndarray:
    axes = tuple(range(1, ref.ndim))
    return np.sqrt(np.mean((pred - ref) ** 2, axis=axes) / np.mean(ref**2, axis=axes))


def bench_cns(frames: int, plain: bool) -> None:
    with h5py.File(DATA / "cns1d_dev.hdf5") as h5:
        ref = {k: h5[k][:, :frames] for k in ("Vx", "density", "pressure")}
        t = h5["t-coordinate"][:frames]
    b = ref["Vx"].shape[0]
    initial = {"v": ref["Vx"][:, 0], "rho": ref["density"][:, 0], "p": ref["pressure"][:, 0]}
    start = time.perf_counter()
    out = cns.simulate(initial, t, {"eta": 0.1, "zeta": 0.1}, pdebench_rounding=not plain)
    wall = time.perf_counter() - start
    ours = np.stack([out["v"], out["rho"], out["p"]], axis=-1).astype(np.float64)
    theirs = np.stack([ref["Vx"], ref["density"], ref["pressure"]], axis=-1).astype(np.float64)
    print(f"CNS ({'plain float32' if plain else 'PDEBench rounding'}), {b} samples, "
          f"t in [0, {float(t[-1]):.2f}] ({frames} frames): {wall / b:.1f} s per sample")
    for j, name in enumerate(("Vx", "density", "pressure")):
        print(f"  max |diff| {name:9s} {np.abs(ours[..., j] - theirs[..., j]).max():.3e}")
    print(f"  nRMSE (stacked, all frames) per sample {np.array2string(nrmse(ours, theirs), precision=3)}")
    print(f"  nRMSE at the last frame            {np.array2string(nrmse(ours[:, -1], theirs[:, -1]), precision=3)}")
    print(f"  bit-identical values {np.mean(ours[:, 1:] == theirs[:, 1:]):.3f}")


def bench_darcy(samples: int) -> None:
    with h5py.File(DATA / "darcy_dev.hdf5") as h5:
        coeff, sol = h5["coeff"][:samples], h5["sol"][:samples]
    start = time.perf_counter()
    u = darcy.solve(coeff)
    wall = time.perf_counter() - start
    print(f"Darcy, {samples} samples: {wall / samples:.2f} s per sample; nRMSE "
          f"{np.array2string(nrmse(u, sol), precision=3)}; bit-identical after rounding to float32: "
          f"{np.mean(u.astype(np.float32) == sol):.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=11, help="CNS frames to compare (max 101)")
    ap.add_argument("--plain", action="store_true", help="CNS without PDEBench's rounding pattern")
    ap.add_argument("--darcy-samples", type=int, default=2)
    args = ap.parse_args()
    if args.darcy_samples:
        bench_darcy(args.darcy_samples)
    if args.frames > 1:
        bench_cns(args.frames, args.plain)


if __name__ == "__main__":
    main()
