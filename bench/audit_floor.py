"""Bench: evaluations the reference floor saves, and what it costs on held-out data.

For each task, two real `pdesharp solve TASK --model builtin` runs on the same dev data and
budget, with floor saturation on and off (everything else equal), then the held-out numbers of
both winners:

* held-out data: fresh samples made with the project's own generator (`pdesharp data
  generate TASK --samples K --seed S`, the same PDEBench scheme and float32 arithmetic as the dev
  file), used as the run's test split;
* held-out nRMSE against that reference (the run's test number), and against the converged
  solution of the held-out samples (`pdesharp data audit` of the held-out file; the winner's
  saved solver is evaluated once more, sandboxed, with the converged solution attached).

Prints one table and the ratios measured in this run (evaluations saved, held-out ratio).

    python bench/audit_floor.py --data-dir ../shared/data/pdebench --tasks burgers advection \
        --budget 13 --samples 4 --heldout 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pdesharp.audit import audit_with_cache
from pdesharp.audit.solutions import stacked
from pdesharp.evaluate import Evaluator
from pdesharp.task import load_task


def sh(*args: str) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "pdesharp.cli", *args], capture_output=True,
                         text=True)
    if run.returncode != 0:
        raise SystemExit(f"failed: pdesharp {' '.join(args)}\n{run.stderr[-2000:]}")
    return run


def heldout_vs_converged(task, best_solver: Path, dev: Path, heldout: Path, samples: int) -> float:
    """The winner's nRMSE against the converged solution of the held-out samples."""
    audit = audit_with_cache(task, heldout, limit=samples)
    ev = Evaluator(task, dev_data=dev, test_data=heldout, max_samples=samples, convergence=False)
    ev.converged["test"] = stacked(task, audit.converged_for(list(range(samples))))
    result = asyncio.run(ev.evaluate(best_solver.read_text(), split="test", feedback="nrmse"))
    if not result.ok:
        raise SystemExit(f"re-running {best_solver} failed: {result.summary_line()}")
    return float(result.nrmse_converged)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data/pdebench")
    ap.add_argument("--tasks", nargs="+", default=["burgers", "advection"])
    ap.add_argument("--budget", type=int, default=13, help="--max-evals of each run")
    ap.add_argument("--candidates", type=int, default=8)
    ap.add_argument("--samples", type=int, default=4,
                    help="dev and held-out samples per evaluation")
    ap.add_argument("--heldout", type=int, default=8, help="held-out samples generated")
    ap.add_argument("--seed", type=int, default=9101, help="seed of the held-out samples")
    ap.add_argument("--work", default=None,
                    help="folder for runs and held-out data (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="pdesharp-audit-floor-"))
    work.mkdir(parents=True, exist_ok=True)
    data = Path(args.data_dir).resolve()
    rows = []
    for name in args.tasks:
        task = load_task(name)
        dev = data / f"{name}_dev.hdf5"
        t0 = time.time()
        audit = audit_with_cache(task, dev).report  # the dev audit every run looks up
        print(f"{name}: dev audit {audit.reference_error:.3e} ({time.time() - t0:.0f} s, cached "
              "after the first time)", flush=True)
        heldout = work / f"{name}_heldout.hdf5"
        if not heldout.exists():
            t0 = time.time()
            sh("data", "generate", name, "--samples", str(args.heldout), "--seed", str(args.seed),
               "--out", str(heldout))
            print(f"{name}: generated {args.heldout} held-out samples ({time.time() - t0:.0f} s)",
                  flush=True)
        for floor in ("on", "off"):
            run_id = f"{name}-floor-{floor}"
            t0 = time.time()
            if not (work / "runs" / run_id / "summary.json").exists():
                sh("solve", name, "--model", "builtin", "--data-dir", str(data), "--dev-data",
                   str(dev), "--test-data", str(heldout), "--candidates", str(args.candidates),
                   "--max-evals", str(args.budget), "--max-samples", str(args.samples),
                   "--no-convergence", "--quiet", "--out", str(work / "runs"), "--run-id", run_id,
                   "--floor-saturation" if floor == "on" else "--no-floor-saturation")
            s = json.loads((work / "runs" / run_id / "summary.json").read_text())
            block = s["reference_audit"]
            vs_conv = heldout_vs_converged(task, Path(s["best_solver"]), dev, heldout,
                                           args.samples)
            rows.append(dict(task=name, floor=floor, evals=s["feedback_evaluations"],
                             best=s["best_dev_score"], dev_vs_conv=block["best_nrmse_vs_converged"],
                             ref_err=block["reference_error"], heldout=s["test_nrmse"],
                             heldout_conv=vs_conv, winner=s["best_id"],
                             seconds=time.time() - t0))
            print(f"{name} floor {floor}: {rows[-1]}", flush=True)

    print("\n| task | floor | evaluations | best dev nRMSE | dev ref. error | winner vs converged "
          "(dev) | held-out nRMSE | held-out vs converged | winner |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']} | {r['floor']} | {r['evals']} | {r['best']:.3e} | {r['ref_err']:.3e} "
              f"| {r['dev_vs_conv']:.3e} | {r['heldout']:.3e} | {r['heldout_conv']:.3e} "
              f"| {r['winner']} |")
    print()
    for name in args.tasks:
        on, off = (next(r for r in rows if r["task"] == name and r["floor"] == f)
                   for f in ("on", "off"))
        print(f"{name}: evaluations saved {off['evals'] - on['evals']} of {off['evals']} "
              f"({1 - on['evals'] / off['evals']:.0%}); held-out nRMSE on/off "
              f"{on['heldout'] / off['heldout']:.2f}x against the reference, "
              f"{on['heldout_conv'] / off['heldout_conv']:.2f}x against the converged solution")
    print(f"\n(work folder: {work})")


if __name__ == "__main__":
    main()
