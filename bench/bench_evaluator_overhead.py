"""Evaluator overhead: one solver scored through the sandboxed Evaluator vs called in-process.

Runs the exact-shift advection solver (tests/evaluate/solvers/advection_exact.py) on the shared
dev data both ways, in one run, and prints absolute seconds and the ratio
    wall time through the Evaluator / bare solver call on the same inputs.
The Evaluator's time includes the child's start-up (Python, NumPy, SciPy, SymPy imports), reading
the reference file and computing nRMSE (and, in the second line, the PDE residual); the
convergence test is off for both lines.

Usage: python bench/bench_evaluator_overhead.py [--data-dir DIR] [--samples N] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "pdebench"))
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from pdesharp.data import load_reference, resolve_split
    from pdesharp.evaluate import Evaluator
    from pdesharp.task import load_task

    task = load_task("advection")
    code = (REPO / "tests" / "evaluate" / "solvers" / "advection_exact.py").read_text()
    ref = load_reference(task, resolve_split(task, "dev", data_dir_override=args.data_dir),
                         limit=args.samples)
    namespace: dict = {}
    exec(compile(code, "advection_exact.py", "exec"), namespace)
    solver = namespace["solver"]

    bare = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        solver(ref.initial("u"), ref.t, task.parameters["beta"])
        bare.append(time.perf_counter() - t0)

    rows = []
    for residual in (False, True):
        ev = Evaluator(task, data_dir=args.data_dir, max_samples=args.samples,
                       convergence=False, residual=residual)
        walls, inside = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = ev.evaluate_sync(code, split="dev", feedback="nrmse")
            walls.append(time.perf_counter() - t0)
            assert r.status == "ok", r.message
            inside.append(r.solver_seconds)
        rows.append((residual, statistics.median(walls), statistics.median(inside)))

    import subprocess
    import sys

    starts = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)
        starts.append(time.perf_counter() - t0)

    b = statistics.median(bare)
    print(f"advection exact shift, {ref.n_samples} samples x {ref.fields['u'].shape[1]} frames x "
          f"{ref.fields['u'].shape[2]} cells, median of {args.repeat}")
    print(f"  bare in-process solver call        : {b:8.3f} s")
    print(f"  floor: new python + import numpy   : {statistics.median(starts):8.3f} s")
    for residual, wall, inside in rows:
        label = "evaluator (nRMSE + residual)" if residual else "evaluator (nRMSE only)"
        print(f"  {label:35s}: {wall:8.3f} s   (solver inside the sandbox {inside:.3f} s)"
              f"   ratio {wall / b:7.1f}x   overhead {wall - b:6.2f} s")


if __name__ == "__main__":
    main()
