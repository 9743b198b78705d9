"""Bench: the built-in winners with compiled kernels against the same designs in pure NumPy.

Per task: one real `pdesharp solve TASK --model builtin` run (built-in Analysis, Genesis, the
judges' tournament, the sandboxed evaluator) gives the winner; then the winner's code is
evaluated twice more in one go through the real sandboxed evaluator, with its design constant
KERNEL set to "numba" and to "numpy" (when its scheme family has a KERNEL axis: read from the
family's axes, nothing here knows which families have one). When the winner's family has no
KERNEL axis, the most accurate evaluated candidate that has one is timed instead (else the
first Genesis candidate that has one), and the row says so. Printed: the winner's nRMSE and
time per sample against the first Genesis design's (g0) from the run store, and for the timed
design its nRMSE and solver time per sample with each kernel and their ratio. Solver time per sample is the evaluator's: wall
time of the solver from before its module's import (so Numba's import and JIT compilation are
counted), divided by the samples. The last column is the floor under every such time: the
evaluator's time per sample for a solver that does no work (returns its initial fields repeated
over the frames), measured the same way.

    python bench/bench_compiled.py --tasks advection cns1d
    python bench/bench_compiled.py --tasks burgers --samples 4 --no-floor-saturation
    python bench/bench_compiled.py --tasks cns1d --out DIR --reuse    # re-time a finished run
    python bench/bench_compiled.py --tasks cns1d --out DIR --reuse --rerender  # with new kernels
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
_KERNEL_LINE = re.compile(r'^KERNEL = "(\w+)"', re.MULTILINE)


def solve(task: str, args, out: Path) -> tuple[RunStore, dict, float]:
    summary_path = out / task / "summary.json"
    if args.reuse and summary_path.is_file():  # a finished run of this task in --out
        return RunStore.open(out / task), json.loads(summary_path.read_text()), 0.0
    argv = [sys.executable, "-m", "pdesharp.cli", "solve", task, "--model", "builtin",
            "--no-convergence", "--candidates", str(args.candidates), "--max-evals",
            str(args.budget), "--out", str(out), "--run-id", task, "--quiet",
            "--data-dir", args.data_dir]
    argv += ["--max-samples", str(args.samples)] if args.samples else []
    argv += ["--no-floor-saturation"] if args.no_floor_saturation else []
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.time() - t0
    if proc.returncode:
        print(f"{task}: pdesharp solve exited {proc.returncode}:\n{proc.stderr[-800:]}", flush=True)
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


def kernel_subject(store: RunStore, best_id: str | None) -> tuple[str | None, str | None]:
    """(candidate id, code) to time with both kernels: the winner if its family has a KERNEL
    axis; else the most accurate evaluated candidate that has one; else the first Genesis
    candidate that has one (the winner's family may have no compiled path)."""
    cands = {c.id: c.code for c in store.candidates()}
    if best_id in cands and with_kernel(cands[best_id], "numba"):
        return best_id, cands[best_id]
    scored = []
    for cid, code in cands.items():
        r = dev_result(store, cid)
        if with_kernel(code, "numba") and r and r.get("status") == "ok" and r.get("nrmse"):
            scored.append((r["nrmse"], cid))
    if scored:
        cid = min(scored)[1]
        return cid, cands[cid]
    cid = next((c for c in cands if c.startswith("g") and with_kernel(cands[c], "numba")), None)
    return cid, cands.get(cid)


def rerender(task: str, code: str) -> str:
    from pdesharp.builtin.author import problem, render
    from pdesharp.task import load_task

    t = load_task(task)
    return render(t, read_design(code), problem(t))


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
        r = ev.evaluate_sync(variant, split="dev", feedback="nrmse", label=f"{task}-{kernel}")
        out[kernel] = {"status": r.status, "nrmse": r.nrmse, "per_sample": r.seconds_per_sample}
    return out


def idle_solver(task) -> str:
    """A solver that does no work: every returned field is its initial field repeated over the
    frames (or zeros shaped like the first input, for a stationary task). Its evaluator time is
    the floor under any solver's: passing the inputs in, the call, writing and checking the
    output, which no scheme can undercut."""
    args = task.solver.args
    names = [a.name for a in args]
    initial = {a.field: a.name for a in args if a.kind == "initial"}
    time = next((a.name for a in args if a.kind == "time"), None)
    body = []
    for field in task.solver.returns:
        if time and field in initial:
            body.append(f"np.repeat(np.asarray({initial[field]})[:, None], len({time}), axis=1)")
        else:
            body.append(f"np.zeros_like(np.asarray({names[0]}), dtype=float)")
    ret = body[0] if len(body) == 1 else "(" + ", ".join(body) + ")"
    return (f"import numpy as np\n\n\ndef {task.solver.name}({', '.join(names)}):\n"
            f"    return {ret}\n")


def time_idle(task: str, args) -> float | None:
    """The evaluator's time per sample for :func:`idle_solver` (median of three)."""
    from pdesharp.evaluate import Evaluator
    from pdesharp.task import load_task

    t = load_task(task)
    ev = Evaluator(t, data_dir=args.data_dir, convergence=False, max_samples=args.samples,
                   residual=False)
    times = []
    for _ in range(3):
        r = ev.evaluate_sync(idle_solver(t), split="dev", feedback="nrmse", label=f"{task}-idle")
        if r.status == "ok" and r.seconds_per_sample is not None:
            times.append(r.seconds_per_sample)
    return sorted(times)[len(times) // 2] if times else None


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
    ap.add_argument("--reuse", action="store_true", help="reuse finished runs found in --out")
    ap.add_argument("--rerender", action="store_true",
                    help="time the timed design as the current catalogue renders it (not the"
                         " run's stored code: after a change to the kernels)")
    ap.add_argument("--no-floor-saturation", action="store_true",
                    help="passed to pdesharp solve: do not stop at the reference's floor")
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
        timed_id, timed = kernel_subject(store, best_id)
        if timed and args.rerender:  # the same design as the current catalogue renders it
            timed = rerender(task, timed)
        kernels = time_kernels(task, timed, args) if timed else {}
        d = read_design(timed) if timed else None
        nb, npy = kernels.get("numba", {}), kernels.get("numpy", {})
        row = {
            "task": task, "samples": best.get("n_samples") if best else None,
            "winner_nrmse": best.get("nrmse") if best else None,
            "timed": None if timed_id is None else ("winner" if timed_id == best_id else
                                                     f"{timed_id} (not the winner)"),
            "timed_kernel": d.get("KERNEL") if d else None,
            "timed_design": (timed or "").split("\n", 1)[0].split(": ", 1)[-1].rstrip("."),
            "winner_per_sample": per_sample(best),
            "numba_nrmse": nb.get("nrmse"), "numba_per_sample": nb.get("per_sample"),
            "numpy_nrmse": npy.get("nrmse"), "numpy_per_sample": npy.get("per_sample"),
            "first_per_sample": per_sample(first), "solve_wall": wall,
            "idle_per_sample": time_idle(task, args),
            "design": (code or "").split("\n", 1)[0].split(": ", 1)[-1].rstrip("."),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\nload average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end;"
          f" runs in {out}\n")
    print("| task | samples | winner nRMSE | winner s/sample (in the run) | first design"
          " s/sample | winner / first | winning design | timed with both kernels (its KERNEL) |"
          " nRMSE numba / numpy | numba s/sample | numpy s/sample | numpy / numba |"
          " idle solver s/sample |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        nb, npy = r["numba_per_sample"], r["numpy_per_sample"]
        ratio = npy / nb if nb and npy else None
        w, f = r["winner_per_sample"], r["first_per_sample"]
        timed = "–" if r["timed"] is None else \
            f"{r['timed']}: {r['timed_design']} ({r['timed_kernel']})"
        print(f"| {r['task']} | {r['samples']} | {fmt(r['winner_nrmse'])} | {fmt(w, '.3g')} |"
              f" {fmt(f, '.3g')} | {fmt(w / f if w and f else None, '.2f')} | {r['design']} |"
              f" {timed} | {fmt(r['numba_nrmse'])} / {fmt(r['numpy_nrmse'])} |"
              f" {fmt(nb, '.3g')} | {fmt(npy, '.3g')} | {fmt(ratio, '.2f')} |"
              f" {fmt(r['idle_per_sample'], '.2g')} |")


if __name__ == "__main__":
    main()
