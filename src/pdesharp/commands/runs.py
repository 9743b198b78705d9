"""``pdesharp runs`` (list the runs in the runs folder) and ``pdesharp show RUN``."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pdesharp.commands.solve import find_run, runs_root
from pdesharp.report.runview import summary_from_store
from pdesharp.store import RunStore


def register(sub) -> None:
    p = sub.add_parser("runs", help="list runs (status, best score, evaluations, cost)")
    p.add_argument("--out", default=None, help="runs folder (default $PDESHARP_RUNS or ./runs)")
    p.set_defaults(func=cmd_runs)
    s = sub.add_parser("show", help="summary of one run")
    s.add_argument("run", help="run folder, or run id under the runs folder")
    s.add_argument("--out", default=None)
    s.add_argument("--json", action="store_true", help="print summary.json")
    s.set_defaults(func=cmd_show)


def _fmt(v) -> str:
    return "–" if v is None else (f"{v:.3e}" if isinstance(v, float) else str(v))


def cmd_runs(args) -> int:
    root = runs_root(args.out)
    folders = sorted(p.parent for p in root.glob(f"*/{RunStore.DB_NAME}")) if root.is_dir() else []
    if not folders:
        print(f"no runs in {root}")
        return 0
    table = Table(title=f"runs in {root}")
    for col in ("run", "task", "status", "best dev", "test nRMSE", "evals", "calls", "cost $"):
        table.add_column(col)
    for folder in folders:
        store = RunStore.open(folder)
        s = store.summary() or summary_from_store(folder)  # read-only: no wall time added
        table.add_row(store.run_id, store.task_name, store.status, _fmt(s.get("best_dev_score")),
                      _fmt(s.get("test_nrmse")), str(s["evaluations"]), str(s["model_calls"]),
                      f"{s['cost_usd']:.4f}")
        store.db.close()
    Console().print(table)
    return 0


def cmd_show(args) -> int:
    store = find_run(args.run, args.out)
    # Never write summary.json here: a stub would hide that the run's final steps are missing
    # (resume redoes them only while it is absent).
    s = store.summary() or summary_from_store(store.dir)
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    print(f"run {store.run_id} ({store.task_name}), status {store.status}")
    cfg = store.config
    print(f"model {cfg.get('model') or 'builtin'}, feedback {cfg.get('feedback')}, "
          f"{cfg.get('candidates')} candidates")
    for key in ("best_id", "best_dev_score", "test_nrmse", "test_note", "stop_reason",
                "evaluations", "debug_iterations", "model_calls", "cached_model_calls",
                "tokens_in", "tokens_out", "cost_usd", "wall_seconds", "best_solver"):
        if s.get(key) not in (None, ""):
            value = s[key]
            text = (f"${value:.4f}" if key == "cost_usd" else f"{value:.1f} s"
                    if key == "wall_seconds" else _fmt(value))
            if key == "wall_seconds" and store.status == "running":
                text += " (still running: up to its last recorded step)"
            print(f"  {key:<20} {text}")
    report = Path(store.dir) / "report.md"
    if report.is_file():
        print(f"  {'report':<20} {report}")
    return 0
