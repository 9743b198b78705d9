"""Bench: evaluations per task on the default path, the paper's headline cost (issue 21.10).

Each built-in task runs through `pdesharp solve TASK` with no model (the built-in analyst, the
real pipeline and sandbox) with the README's settings, starting from an **empty audit cache**
(a fresh XDG_CACHE_HOME per task, as on a newcomer's machine), and the table is read back from
each run's store: feedback evaluations (what `--max-evals` limits and the paper counts; the
final test run is outside it), the winner's dev nRMSE and its nRMSE against the audit's
converged solution, the closest any evaluated solver came to it, and why each evaluation was
spent (the run's `evaluation` events).

With `--before PYTHON` (e.g. a Python whose pdesharp is the code before a change), every task
runs twice more with that interpreter: once from the same empty cache (what a newcomer got) and
once with the audit the new code's run left in the cache (the old code at its best), so that
before and after are measured in one run of this script on the same machine state.

    python bench/bench_evaluations.py                                # all five tasks
    python bench/bench_evaluations.py --tasks burgers --before /usr/bin/python3

The paper reports 13.2 evaluations per task on average (PDE-SHARP, its Table of costs).
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

REPO = Path(__file__).resolve().parents[1]
TASKS = ["advection", "burgers", "reacdiff1d", "darcy", "cns1d"]
PAPER_EVALUATIONS = 13.2


def solve(python: str, task: str, out: Path, cache: Path, args) -> dict:
    run_id = f"{task}-{out.name}"
    spec = [task]
    if task not in TASKS:  # an example task: its YAML and the reference the tests use
        spec = [str(REPO / "examples" / "tasks" / f"{task}.yaml"), "--dev-data",
                str(Path(args.example_data) / task / "dev.hdf5")]
    argv = [python, "-m", "pdesharp.cli", "solve", *spec, "--candidates", str(args.candidates),
            "--max-samples", str(args.samples), "--max-evals", str(args.max_evals),
            "--out", str(out), "--run-id", run_id, "--quiet", "--no-cache"]
    env = {**os.environ, "PDESHARP_DATA": args.data_dir, "XDG_CACHE_HOME": str(cache),
           "HOME": str(cache.parent)}
    env.pop("PDESHARP_AUDIT_DIR", None)  # the empty cache above, as on a newcomer's machine
    if python != sys.executable:  # the other interpreter's own pdesharp, not ours
        env.pop("PYTHONPATH", None)
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.time() - t0
    run = out / run_id
    summary = json.loads((run / "summary.json").read_text()) \
        if (run / "summary.json").is_file() else {}
    audit = summary.get("reference_audit") or {}
    near = audit.get("closest_to_converged") or {}
    reasons = []
    try:
        import sqlite3

        db = sqlite3.connect(run / "run.sqlite")
        for (data,) in db.execute("SELECT data FROM events WHERE kind='evaluation' ORDER BY seq"):
            e = json.loads(data)
            if e.get("split", "dev") == "dev":
                title = db.execute("SELECT title FROM candidates WHERE id=?",
                                   (e.get("candidate"),)).fetchone()
                reasons.append(f"{e.get('candidate')}: {e.get('reason')}"
                               + (f" [{title[0]}]" if title and title[0] else "")
                               + (f" -> {e['score']:.2e}" if e.get("score") is not None else ""))
    except Exception:  # noqa: BLE001 - an older pdesharp records no evaluation events
        pass
    return {"task": task, "exit": proc.returncode, "wall": wall,
            "evals": summary.get("feedback_evaluations"), "best": summary.get("best_dev_score"),
            "winner": summary.get("best_id"),
            "vs_converged": audit.get("best_nrmse_vs_converged"),
            "closest": near.get("nrmse_vs_converged", audit.get("best_nrmse_vs_converged")),
            "audit": audit.get("status"), "stop": summary.get("stop_reason", ""),
            "per_sample": summary.get("best_seconds_per_sample"), "reasons": reasons,
            "stderr": proc.stderr[-600:]}


def fmt(v, spec=".2e") -> str:
    return "–" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="*", default=TASKS,
                    help="built-in tasks, or example task names (examples/tasks/NAME.yaml, with "
                         "the dev file --example-data/NAME/dev.hdf5)")
    ap.add_argument("--example-data", default=str(REPO / "tests" / "builtin" / "data"))
    ap.add_argument("--before", default=None, metavar="PYTHON",
                    help="also run each task with this interpreter's pdesharp (the old code)")
    ap.add_argument("--candidates", type=int, default=6)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--max-evals", type=int, default=13)
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "pdebench"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="bench-evals-"))
    load = os.getloadavg()[0]
    rows = []
    for task in args.tasks:
        cache = root / f"home-{task}" / ".cache"
        cache.mkdir(parents=True, exist_ok=True)
        row = {"task": task}
        if args.before:  # the old code from the same empty cache: what a newcomer got
            row["before_fresh"] = solve(args.before, task, root / "before-fresh", cache, args)
        row["after"] = solve(sys.executable, task, root / "after", cache, args)
        if args.before:  # the old code with the audit the new run cached
            row["before_audit"] = solve(args.before, task, root / "before-audit", cache, args)
        rows.append(row)
        print(json.dumps(row, default=str)[:3000], flush=True)
    print(f"\nload average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"runs in {root}; {args.samples} dev samples, {args.candidates} candidates, "
          f"--max-evals {args.max_evals}, empty audit cache per task\n")
    head = "| task | paper |"
    if args.before:
        head += " before, no cache: evaluations (dev nRMSE) | before, audit cached: evaluations" \
                " (dev nRMSE, vs converged) |"
    head += (" after, no cache: evaluations (dev nRMSE, vs converged; closest in the run) | "
             "audit | why each evaluation (after) |")
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    totals = {"before_fresh": [], "before_audit": [], "after": []}
    for row in rows:
        a = row["after"]
        line = f"| {row['task']} | {PAPER_EVALUATIONS} |"
        if args.before:
            b, c = row["before_fresh"], row["before_audit"]
            line += (f" {b['evals']} ({fmt(b['best'])}) | {c['evals']} ({fmt(c['best'])}, "
                     f"{fmt(c['vs_converged'])}) |")
            totals["before_fresh"].append(b["evals"])
            totals["before_audit"].append(c["evals"])
        line += (f" {a['evals']} ({fmt(a['best'])}, {fmt(a['vs_converged'])}; "
                 f"{fmt(a['closest'])}) | {a['audit']} | {'; '.join(a['reasons'])} |")
        totals["after"].append(a["evals"])
        print(line)
    mean = {k: sum(v) / len(v) for k, v in totals.items() if v and None not in v}
    print("\nmean evaluations per task: " + ", ".join(f"{k} {v:.1f}" for k, v in mean.items())
          + f" (paper {PAPER_EVALUATIONS})")


if __name__ == "__main__":
    main()
