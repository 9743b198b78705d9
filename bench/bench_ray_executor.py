"""Ray executor: per-evaluation overhead against the local executor, and the speed-up of a batch
of evaluations with 1 vs 2 Ray worker CPUs, measured in one run on this machine.

1. Overhead. The same evaluations through ``--executor local`` and ``--executor ray`` (a local
   Ray instance, warm workers), interleaved: the exact-shift advection solver on the shared dev
   data (tests/evaluate/solvers/advection_exact.py; no convergence test, no residual), and a
   no-op solver (zeros of the right shape: the fixed cost alone). Prints the median wall time
   per evaluation, the difference (what Ray adds) and the ratio.
2. Speed-up. A batch of evaluations of a CPU-bound solver (the spectral Burgers solver of
   tests/evaluate/solvers/, on a few dev samples; ~2.5 s of solver time each here), all
   submitted at once, through a Ray instance started with 1 CPU, then with 2 CPUs. Prints each
   batch's wall time and the ratio.

Each Ray instance is started by this script on loopback, with its own temp folder and token,
and shut down at the end. The machine's load average is printed: on a shared 2-core machine the
second CPU is only partly ours, which caps the speed-up.

Usage: python bench/bench_ray_executor.py [--data-dir DIR] [--repeat R] [--batch B]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOLVERS = REPO / "tests" / "evaluate" / "solvers"
NOOP = ("import numpy as np\n"
        "def solver(u0_batch, t_coordinate, beta):\n"
        "    return np.zeros((u0_batch.shape[0], len(t_coordinate), u0_batch.shape[1]))\n")


def start_ray(num_cpus: int, tmp: Path):
    """A local Ray instance on loopback only, with its own token (not ~/.ray/auth_token)."""
    import ray
    from ray._private import ray_constants

    token = tmp / "auth_token"
    if not token.exists():
        token.write_text(secrets.token_hex(32))
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # node address 127.0.0.1
    ray_constants.ENABLE_RAY_CLUSTER = False
    os.environ.pop("RAY_ADDRESS", None)
    ray.init(num_cpus=num_cpus, include_dashboard=False, _temp_dir=str(tmp / f"r{num_cpus}"),
             object_store_memory=512 * 2**20, logging_level="WARNING")
    return ray


def overhead(args, task) -> None:
    from pdesharp.evaluate import Evaluator

    kw = dict(data_dir=args.data_dir, max_samples=args.samples, convergence=False,
              residual=False)
    evs = {"local": Evaluator(task, **kw), "ray": Evaluator(task, executor="ray", **kw)}
    solvers = {"advection exact": (SOLVERS / "advection_exact.py").read_text(),
               "no-op": NOOP}
    walls = {(s, e): [] for s in solvers for e in evs}
    for rep in range(args.repeat + 2):  # two warm-up rounds: data loaded, Ray workers started
        for s, code in solvers.items():
            for e, ev in evs.items():
                t0 = time.perf_counter()
                r = ev.evaluate_sync(code, split="dev", feedback="nrmse")
                dt = time.perf_counter() - t0
                assert r.status == "ok", (s, e, r.message)
                if rep >= 2:
                    walls[(s, e)].append(dt)
    print(f"\n1. Per-evaluation overhead (median of {args.repeat}, advection, {args.samples} "
          "dev samples, interleaved)")
    print(f"{'solver':<18}{'local s':>10}{'ray s':>10}{'ray - local ms':>16}"
          f"{'(paired IQR ms)':>18}{'ray / local':>13}")
    for s in solvers:
        lo, ra = (statistics.median(walls[(s, e)]) for e in ("local", "ray"))
        diffs = [1000 * (r - q) for q, r in zip(walls[(s, "local")], walls[(s, "ray")])]
        q1, _, q3 = statistics.quantiles(diffs, n=4)
        print(f"{s:<18}{lo:>10.3f}{ra:>10.3f}{statistics.median(diffs):>16.0f}"
              f"{f'{q1:.0f} .. {q3:.0f}':>18}{ra / lo:>13.2f}")


def batch(args, task, code: str) -> float:
    from pdesharp.evaluate import Evaluator

    ev = Evaluator(task, data_dir=args.data_dir, max_samples=args.burgers_samples,
                   convergence=False, residual=False, executor="ray")
    ev.evaluate_sync(code, split="dev", feedback="nrmse")  # warm: data, workers, object store

    async def all_at_once():
        return await asyncio.gather(*(ev.evaluate(code + f"\n# variant {i}\n", split="dev",
                                                  feedback="nrmse", label=f"b{i}")
                                      for i in range(args.batch)))

    t0 = time.perf_counter()
    results = asyncio.run(all_at_once())
    wall = time.perf_counter() - t0
    assert all(r.status == "ok" for r in results), [r.message for r in results]
    solver = statistics.median(r.solver_seconds for r in results)
    print(f"  {ev.isolation['nodes'][0]['host']}: batch of {args.batch} in {wall:.1f} s "
          f"(median solver time {solver:.2f} s each)")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "pdebench"))
    ap.add_argument("--samples", type=int, default=20, help="advection samples (overhead)")
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--batch", type=int, default=6, help="evaluations in the speed-up batch")
    ap.add_argument("--burgers-samples", type=int, default=4)
    args = ap.parse_args()

    from pdesharp.task import load_task

    tmp = Path(tempfile.mkdtemp(prefix="pdesharp-bench-ray-"))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    try:
        ray = start_ray(2, tmp)
        t0 = time.perf_counter()
        overhead(args, load_task("advection"))
        print(f"  (overhead measured in {time.perf_counter() - t0:.0f} s)")
        ray.shutdown()

        burgers = load_task("burgers")
        code = (SOLVERS / "burgers_spectral.py").read_text()
        print(f"\n2. Batch speed-up: {args.batch} Burgers evaluations ({args.burgers_samples} "
              "samples each) submitted at once")
        walls = {}
        for cpus in (1, 2):
            ray = start_ray(cpus, tmp)
            print(f" Ray with {cpus} worker CPU(s):")
            walls[cpus] = batch(args, burgers, code)
            ray.shutdown()
        print(f"  speed-up 2 vs 1 CPUs: {walls[1] / walls[2]:.2f}x (ideal 2.00x)")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
