"""Bench: the built-in winners with compiled kernels against the same designs in pure NumPy.

Per task: one real `pdesharp solve TASK --model builtin` run (built-in Analysis, Genesis, the
judges' tournament, the sandboxed evaluator) gives the winner; then the winner's code is
evaluated twice more in one go through the real sandboxed evaluator, with its design constant
KERNEL set to "numba" and to "numpy" (when its scheme family has a KERNEL axis: read from the
family's axes, nothing here knows which families have one). Printed: the winner's nRMSE, solver
time per sample of both kernels and their ratio, and the winner's time per sample against the
first Genesis design's (g0) from the run store. Solver time per sample is the evaluator's: wall
time of the solver from before its module's import (so Numba's import and JIT compilation are
counted), divided by the samples.

    python bench/bench_compiled.py --tasks advection cns1d
    python bench/bench_compiled.py --tasks burgers --samples 4
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pdesharp.builtin.families import family
from pdesharp.builtin.judge import read_design
from pdesharp.store import RunStore

REPO = Path(__file__).resolve().parents[1]
TASKS = ("advection", "burgers", "reacdiff1d", "darcy", "cns1d")
_KERNEL_LINE = re.compile(r'^KERNEL = "(\w+)"', re.M)


def solve(task: str, args, out: Path) -> tuple[RunStore, dict, float]:
    argv = [sys.executable, "-m", "pdesharp.cli", "solve", task, "--model", "builtin",
            "--no-convergence", "--candidates", str(args.candidates), "--max-evals",
            str(args.budget), "--out", str(out), "--run-id", task, "--quiet",
            "--data-dir", args.data_dir]
    argv += ["--max-samples", str(args.samples)] if args.samples else []
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.time() - t0
    if proc.returncode:
        print(f"{task}: pdesharp solve exited {proc.returncode}:\n{proc.stderr[-800:]}", flush=True)
    summary_path = out / task / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return RunStore.open(out / task), summary, wall


def dev_result(store: RunStore, cid: str) -> dict | None:
    row = store.db.execute("SELECT result FROM evaluations WHERE split='dev' AND candidate_id=?"
                           " ORDER BY seq LIMIT 1", (cid,)).fetchone()
    return json.loads(row[0]) if row else None


def per_sample(r: dict | None) -> float | None:
    if not r or r.get("solver_seconds") is None:
        return None
    return r["solver_seconds"] / max(r.get("n_samples") or 1, 1)


def with_kernel(code: str, kernel: str) -> str | None:
    """The same solver with its KERNEL design constant set (None: it has no such line)."""
    d = read_design(code)
    if d is None or "KERNEL" not in {a.name for a in family(d.family).axes}:
        return None
    if not _KERNEL_LINE.search(code):
        return None
    return _KERNEL_LINE.sub(f'KERNEL = "{kernel}"', code, count=1)


def time_kernels(task: str, code: str, args) -> dict:
    """Evaluate the winner as rendered with each kernel, one after the other, sandboxed."""
    from pdesharp.evaluate import Evaluator
    from pdesharp.task import load_task

    ev = Evaluator(load_task(task), data_dir=args.data_dir, convergence=False,
                   max_samples=args.samples, residual=False)
    out = {}
    for kernel in ("numba", "numpy"):
        variant = with_kernel(code, kernel)
        if variant is None:
            continue
        r = ev.evaluate_sync(variant, split="dev", label=f"{task}-{kernel}")
        out[kernel] = {"status": r.status, "nrmse": r.nrmse, "per_sample": r.seconds_per_sample}
    return out


def fmt(v, spec=".2e"):
    return "–" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="*", default=list(TASKS))
    ap.add_argument("--samples", type=int, default=None, help="dev samples per evaluation")
    ap.add_argument("--budget", type=int, default=13, help="--max-evals of each solve")
    ap.add_argument("--candidates", type=int, default=8)
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "pdebench"))
    ap.add_argument("--out", default=None, help="runs folder (default: a temporary one)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-compiled-"))
    load = os.getloadavg()
    rows = []
    for task in args.tasks:
        store, summary, wall = solve(task, args, out)
        best_id = summary.get("best_id")
        best = dev_result(store, best_id) if best_id else None
        first = dev_result(store, "g0")
        code = next((c.code for c in store.candidates() if c.id == best_id), None)
        kernels = time_kernels(task, code, args) if code else {}
        d = read_design(code) if code else None
        nb, npy = kernels.get("numba", {}), kernels.get("numpy", {})
        row = {
            "task": task, "samples": best.get("n_samples") if best else None,
            "winner_nrmse": best.get("nrmse") if best else None,
            "winner_kernel": d.get("KERNEL") if d else None,
            "winner_per_sample": per_sample(best),
            "numba_nrmse": nb.get("nrmse"), "numba_per_sample": nb.get("per_sample"),
            "numpy_nrmse": npy.get("nrmse"), "numpy_per_sample": npy.get("per_sample"),
            "first_per_sample": per_sample(first), "solve_wall": wall,
            "design": (code or "").split("\n", 1)[0].split(": ", 1)[-1].rstrip("."),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\nload average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end;"
          f" runs in {out}\n")
    print("| task | samples | winner nRMSE | winner's KERNEL | numba s/sample | numpy s/sample |"
          " numpy / numba | winner s/sample (in the run) | first design s/sample | winner /"
          " first | winning design |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        nb, npy = r["numba_per_sample"], r["numpy_per_sample"]
        ratio = npy / nb if nb and npy else None
        w, f = r["winner_per_sample"], r["first_per_sample"]
        print(f"| {r['task']} | {r['samples']} | {fmt(r['winner_nrmse'])} |"
              f" {r['winner_kernel'] or '–'} | {fmt(nb, '.3g')} | {fmt(npy, '.3g')} |"
              f" {fmt(ratio, '.2f')} | {fmt(w, '.3g')} | {fmt(f, '.3g')} |"
              f" {fmt(w / f if w and f else None, '.2f')} | {r['design']} |")


if __name__ == "__main__":
    main()
