"""How closely and how fast our 1D generators reproduce the shared PDEBench dev data.

Starts each generator from the stored frame 0 and compares every stored frame. Prints, per task:
max |Δu|, CodePDE nRMSE, the fraction of bit-identical values, wall time and CPU time (the
figure to compare on a shared machine; NumPy runs single-threaded here).

    python bench/gen1d_reproduce.py            # advection + Burgers, 20 samples, all frames
    python bench/gen1d_reproduce.py --task reacdiff1d --samples 1 --frames 101
    python bench/gen1d_reproduce.py --task reacdiff1d_f32 --samples 2 --frames 11

Long: Burgers ~53k steps and reaction–diffusion ~4.2M steps for the full time span.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import h5py
import numpy as np

from pdesharp.data.generate import advection, burgers, reacdiff

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PDESHARP_SHARED_DATA", REPO.parent / "shared" / "data" / "pdebench"))

# task -> (module, file, working precision, end time of the stored run)
TASKS = {
    "advection": (advection, "advection_dev.hdf5", np.float32, 2.0),
    "burgers": (burgers, "burgers_dev.hdf5", np.float32, 2.0),
    "reacdiff1d": (reacdiff, "reacdiff1d_dev.hdf5", np.float64, 1.0),
    "reacdiff1d_f32": (reacdiff, "reacdiff1d_dev_f32stall.hdf5", np.float32, 1.0),
}


def nrmse(pred: np.ndarray, ref: np.ndarray) -> float:
    err = np.sqrt(np.mean((pred - ref) ** 2, axis=(1, 2)))
    return float(np.mean(err / np.sqrt(np.mean(ref**2, axis=(1, 2)))))


def run(task: str, samples: int, frames: int | None) -> None:
    module, name, dtype, horizon = TASKS[task]
    with h5py.File(DATA / name, "r") as h5:
        n_frames = h5["tensor"].shape[1] if frames is None else frames
        ref = np.asarray(h5["tensor"][:samples, :n_frames])
        t = np.asarray(h5["t-coordinate"][:n_frames])
    start, cpu_start = time.perf_counter(), time.process_time()
    pred = module.simulate({"u": ref[:, 0]}, t, {}, dtype=dtype, horizon=horizon)["u"]
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    pred = pred.astype(np.float32)
    print(f"{task:15s} samples={samples:2d} frames={n_frames:3d}"
          f"  max|du|={np.abs(pred - ref).max():.3e}"
          f"  nRMSE={nrmse(pred, ref):.3e}  bit-identical={np.mean(pred == ref):.4f}"
          f"  wall={wall:.1f}s cpu={cpu:.1f}s ({cpu / samples:.1f} cpu-s/sample)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", choices=sorted(TASKS), action="append")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--frames", type=int, default=None,
                    help="leading frames to compare (default all)")
    args = ap.parse_args()
    for task in args.task or ["advection", "burgers"]:
        run(task, args.samples, args.frames)


if __name__ == "__main__":
    main()
