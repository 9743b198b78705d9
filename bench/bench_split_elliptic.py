"""Bench: the splitting and elliptic families' fast designs beside the designs they replace.

Renders catalogue designs for reaction-diffusion (split family) and Darcy (elliptic family) and
runs each through the sandboxed evaluator (`pdesharp eval --json`, CodePDE's nRMSE, solver wall
time per sample from the parent's clock), all in one run, so the ratios compare like with like
on a shared machine:

* reacdiff1d: Strang at the old winner's step (0.01/256) against Richardson-extrapolated Strang
  (order 4) at 0.01/32, both with the FD2 symbol; and the spectral symbol at 0.01/32;
* darcy: the node-grid design with the sparse LU against the same design with conjugate
  gradients (fast-transform preconditioner, tolerance 1e-10).

    python bench/bench_split_elliptic.py                       # 20 samples each
    python bench/bench_split_elliptic.py --samples 5 --repeat 2

Data: $PDESHARP_DATA or ../shared/data/pdebench.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pdesharp.builtin.author import problem, render
from pdesharp.builtin.families import family
from pdesharp.task import load_task

REPO = Path(__file__).resolve().parents[1]
DESIGNS = {  # (task, label, family, axes); the first row of a task is the ratio's reference
    "reacdiff1d": [("Strang, fd2, dt <= 0.01/256 (old winner)", "split",
                    {"SYMBOL": "fd2", "SPLIT_DT": 0.01 / 256}),
                   ("Richardson-Strang, fd2, dt <= 0.01/32", "split",
                    {"SYMBOL": "fd2", "SPLIT_DT": 0.01 / 32, "SPLITTING": "richardson"}),
                   ("Richardson-Strang, spectral, dt <= 0.01/32", "split",
                    {"SYMBOL": "spectral", "SPLIT_DT": 0.01 / 32, "SPLITTING": "richardson"})],
    "darcy": [("nodes + splines, sparse LU", "elliptic", {"GRID": "nodes", "SOLVER": "direct"}),
              ("nodes + splines, preconditioned CG 1e-10", "elliptic",
               {"GRID": "nodes", "SOLVER": "cg"})],
}


def evaluate(task: str, path: Path, samples: int, data: str) -> dict:
    out = path.with_suffix(".json")
    argv = [sys.executable, "-m", "pdesharp.cli", "eval", "--task", task, str(path),
            "--max-samples", str(samples), "--no-convergence", "--json", str(out),
            "--data-dir", data]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if not out.is_file():
        raise SystemExit(f"pdesharp eval failed on {path}:\n{proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--tasks", nargs="+", default=list(DESIGNS))
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=1, help="runs per design (the best time counts)")
    args = ap.parse_args()
    data = os.environ.get("PDESHARP_DATA", str(REPO.parent / "shared" / "data" / "pdebench"))
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| task | design | nRMSE | s / sample | time vs first row |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            t = load_task(task)
            p = problem(t)
            rows = []
            for i, (label, fam, axes) in enumerate(DESIGNS[task]):
                path = Path(tmp) / f"{task}_{i}.py"
                path.write_text(render(t, family(fam).design(**axes), p))
                runs = [evaluate(task, path, args.samples, data) for _ in range(args.repeat)]
                r = min(runs, key=lambda r: r["seconds_per_sample"])
                rows.append((label, r["nrmse"], r["seconds_per_sample"]))
            for label, err, sec in rows:
                print(f"| {task} | {label} | {err:.3e} | {sec:.3f} s | {sec / rows[0][2]:.2f}x |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
