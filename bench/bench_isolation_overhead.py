"""Isolation overhead: one evaluation through each sandbox mechanism vs the unisolated child.

Runs the same evaluation (the exact-shift advection solver, tests/evaluate/solvers/
advection_exact.py, on the shared dev data; no convergence test, no residual) through
``bwrap`` (bubblewrap), ``landlock`` (the fallback) and ``none`` (``--unsafe-no-isolation``:
the same child program, no namespaces, no Landlock/seccomp, no uid drop), interleaved, in one
run, and prints the median per-evaluation wall time, the child's start-up (spawn to "ready"),
the measured solver time, and the ratio of each mechanism's wall time to the unisolated one.
A second table isolates the sandbox itself: a no-op solver through the executor seam
(``run_sealed``: spawn, start-up, run, teardown), and its ratio to the unisolated child.

Usage: python bench/bench_isolation_overhead.py [--data-dir DIR] [--samples N] [--repeat R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "pdebench"))
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()

    from pdesharp.evaluate import Evaluator
    from pdesharp.evaluate.sandbox import SandboxUnavailable
    from pdesharp.task import load_task

    task = load_task("advection")
    code = (REPO / "tests" / "evaluate" / "solvers" / "advection_exact.py").read_text()
    evs = {}
    for mech in ("none", "landlock", "bwrap"):
        try:
            evs[mech] = Evaluator(task, data_dir=args.data_dir, max_samples=args.samples,
                                  convergence=False, residual=False,
                                  sandbox=None if mech == "none" else mech,
                                  unsafe_no_isolation=mech == "none")
        except SandboxUnavailable as exc:
            print(f"{mech}: unavailable ({str(exc).splitlines()[0]})")
    for ev in evs.values():  # warm: reference data loaded, caches filled
        ev.evaluate_sync(code, split="dev", feedback="nrmse")
    walls = {m: [] for m in evs}
    solver = {m: [] for m in evs}
    from pdesharp.evaluate.sealed import run_sealed

    starts = {m: [] for m in evs}
    for _ in range(args.repeat):
        for mech, ev in evs.items():
            t0 = time.perf_counter()
            r = ev.evaluate_sync(code, split="dev", feedback="nrmse")
            walls[mech].append(time.perf_counter() - t0)
            assert r.status == "ok", (mech, r.message)
            solver[mech].append(r.solver_seconds)
            # the sandbox alone: a no-op solver through the seam (spawn to teardown)
            job = ev._job(NOOP, [_case(ev)], "bench")
            run = asyncio.run(run_sealed(job, ev.policy))
            assert run.status == "ok", run.message
            starts[mech].append((run.startup_seconds, run.wall_seconds))
    base = statistics.median(walls["none"]) if "none" in walls else None
    print(f"advection exact shift, {args.samples} samples, median of {args.repeat} "
          f"(interleaved), one evaluation = child start-up + solve + scoring")
    print(f"  {'mechanism':10s} {'wall / eval':>12s} {'solver':>9s} {'ratio vs none':>14s}")
    for mech in evs:
        w = statistics.median(walls[mech])
        ratio = f"{w / base:13.2f}x" if base else "-"
        print(f"  {mech:10s} {w:10.3f} s {statistics.median(solver[mech]):7.3f} s {ratio}")
    seam = {m: statistics.median(w for _, w in v) for m, v in starts.items()}
    print("the sandbox alone (no-op solver through run_sealed):")
    print(f"  {'mechanism':10s} {'spawn..exit':>12s} {'start-up':>10s} {'ratio vs none':>14s}")
    for mech in evs:
        r = f"{seam[mech] / seam['none']:13.2f}x" if "none" in seam else "-"
        print(f"  {mech:10s} {seam[mech]:10.3f} s "
              f"{statistics.median(s for s, _ in starts[mech]):8.3f} s {r}")
    if base and "bwrap" in walls:
        extra = statistics.median(walls["bwrap"]) - base
        print(f"isolation overhead (bwrap vs none): {extra * 1000:+.0f} ms per evaluation, ratio "
              f"{statistics.median(walls['bwrap']) / base:.2f}; sandbox alone "
              f"{(seam['bwrap'] - seam['none']) * 1000:+.0f} ms, ratio "
              f"{seam['bwrap'] / seam['none']:.2f}")


NOOP = ("import numpy as np\n"
        "def solver(u0_batch, t_coordinate, beta):\n"
        "    return np.zeros((u0_batch.shape[0], len(t_coordinate), u0_batch.shape[1]))\n")


def _case(ev):
    from pdesharp.evaluate.sealed import Case

    ref = ev.reference("dev")
    inputs = ev.inputs(ref)
    shape = tuple(next(iter(ref.fields.values())).shape)
    return Case({k: v for k, v in inputs.items() if k != "x"},
                [(n, shape) for n in ev.task.solver.returns])


if __name__ == "__main__":
    main()
