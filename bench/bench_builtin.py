"""Bench: what the default path reaches - real `pdesharp solve TASK --model builtin` runs.

Each task runs through the real pipeline (built-in Analysis -> Genesis -> the tournament with the
three built-in judges -> report) and the sandboxed evaluator, exactly as a user runs it; the
table is read back from each run's store: the best dev nRMSE, the evaluation at which it was
first reached, the evaluations used, the winner's solver time per sample, and the first Genesis
design's nRMSE and time per sample beside it (the ratio shows what the search bought).

    python bench/bench_builtin.py --tasks burgers advection --budget 13 --samples 4
    python bench/bench_builtin.py --examples wave1d heat2d --example-data DIR   # examples/tasks

Example tasks read their dev/test files from DIR/<name>/{dev,test}.hdf5 (make them with
examples/tasks/make_reference.py NAME --out DIR).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pdesharp.store import RunStore

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = {"advection": 5.2e-4, "burgers": 1.05e-4, "reacdiff1d": 2.3e-3, "cns1d": 1.4e-2,
             "darcy": 3.9e-3}


def run(task: str, args, out: Path, extra: list[str]) -> dict:
    run_id = Path(task).stem
    argv = [sys.executable, "-m", "pdesharp.cli", "solve", task, "--model", "builtin",
            "--no-convergence", "--candidates", str(args.candidates), "--max-evals",
            str(args.budget), "--out", str(out), "--run-id", run_id, "--quiet", *extra]
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.time() - t0
    store = RunStore.open(out / run_id)
    rows = store.db.execute(
        "SELECT candidate_id, result, counted FROM evaluations WHERE split='dev' ORDER BY seq"
    ).fetchall()
    results, ok, n = [], [], 0
    for cid, result, counted in rows:  # uncounted rows: identical code, looked up not re-run
        n += bool(counted)
        r = json.loads(result)
        results += [(cid, r)] if counted else []
        if r["status"] == "ok":
            ok.append((n, cid, r))
    summary = json.loads((out / run_id / "summary.json").read_text()) \
        if (out / run_id / "summary.json").is_file() else {}
    best_id = summary.get("best_id")
    best = next((x for x in ok if x[1] == best_id), None)
    first = next((x for x in ok if x[1] == "g0"), None)
    per = lambda r: r["solver_seconds"] / max(r["n_samples"], 1)  # noqa: E731
    # the design a solver implements is its docstring's title (patches retitle it)
    titles = {c.id: c.code.split("\n", 1)[0].split(": ", 1)[-1].rstrip(".") for c in store.candidates()}
    test = summary.get("test_nrmse")
    return {
        "task": Path(task).stem, "exit": proc.returncode, "wall": wall,
        "samples": best[2]["n_samples"] if best else None, "evals": len(results),
        "best": best[2]["nrmse"] if best else None, "at": best[0] if best else None,
        "best_time": per(best[2]) if best else None, "test": test,
        "first": first[2]["nrmse"] if first else None,
        "first_time": per(first[2]) if first else None,
        "design": titles.get(best_id, "-"), "stderr": proc.stderr[-400:],
    }


def fmt(v, spec=".2e"):
    return "–" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="*", default=[])
    ap.add_argument("--examples", nargs="*", default=[])
    ap.add_argument("--budget", type=int, default=13)
    ap.add_argument("--candidates", type=int, default=8)
    ap.add_argument("--samples", type=int, default=None, help="dev samples per evaluation")
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "pdebench"))
    ap.add_argument("--example-data", default=None)
    ap.add_argument("--out", default=None, help="runs folder (default: a temporary one)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-builtin-"))
    load = os.getloadavg()
    rows = []
    for task in args.tasks + [str(REPO / "examples" / "tasks" / f"{e}.yaml") for e in args.examples]:
        extra = ["--max-samples", str(args.samples)] if args.samples else []
        name = Path(task).stem
        if name in PUBLISHED:
            extra += ["--data-dir", args.data_dir]
        else:
            data = Path(args.example_data or REPO / "tests" / "builtin" / "data") / name
            extra += ["--dev-data", str(data / "dev.hdf5")]
            if (data / "test.hdf5").is_file():
                extra += ["--test-data", str(data / "test.hdf5")]
        row = run(task, args, out, extra)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "stderr"}), flush=True)
        if row["exit"]:
            print(row["stderr"], flush=True)
    print(f"\nload average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end;"
          f" runs in {out}\n")
    print("| task | dev samples | best dev nRMSE | reached at evaluation | evaluations | solver time"
          " / sample (winner) | first design: nRMSE, time / sample | test nRMSE | published best"
          " | winning design |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']} | {r['samples']} | {fmt(r['best'])} | {r['at']} | {r['evals']} |"
              f" {fmt(r['best_time'], '.3g')} s | {fmt(r['first'])}, {fmt(r['first_time'], '.3g')} s |"
              f" {fmt(r['test'])} | {fmt(PUBLISHED.get(r['task']))} | {r['design']} |")


if __name__ == "__main__":
    main()
