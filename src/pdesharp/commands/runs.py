"""``pdesharp runs`` (list the runs in the runs folder) and ``pdesharp show RUN``."""

from __future__ import annotations

import json
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pdesharp.commands.solve import find_run, runs_root
from pdesharp.report.runview import summary_from_store
from pdesharp.store import RunStore, RunStoreError
from pdesharp.untrusted import one_line


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
    # Run folders are untrusted text (a copied folder, a hand-edited database): every cell is
    # one clean line, shown as Text (no markup). At 80 columns the run id folds onto a second
    # line and the numbers keep their full width.
    table = Table(title=Text(f"runs in {one_line(root, 200)}"), box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    table.add_column("run", overflow="fold", min_width=10)
    table.add_column("task", overflow="fold", min_width=8, max_width=18)
    table.add_column("status", no_wrap=True)
    for col in ("best dev", "test nRMSE"):
        table.add_column(col, no_wrap=True, min_width=9)
    for col in ("evals", "calls", "cost $"):
        table.add_column(col, no_wrap=True, justify="right")
    for folder in folders:
        try:
            store = RunStore.open(folder, readonly=True)
        except RunStoreError as exc:
            table.add_row(Text(one_line(folder.name, 80)), "", Text("unreadable"),
                          "", "", "", "", Text(one_line(exc, 60)))
            continue
        s = store.summary() or summary_from_store(folder)  # read-only: no wall time added
        cells = (store.run_id, store.task_name, store.shown_status, _fmt(s.get("best_dev_score")),
                 _fmt(s.get("test_nrmse")), str(s["evaluations"]), str(s["model_calls"]),
                 f"{s['cost_usd']:.4f}")
        table.add_row(*(Text(one_line(c, 120)) for c in cells))
        store.close()
    Console().print(table)
    return 0


def cmd_show(args) -> int:
    store = find_run(args.run, args.out, readonly=True)
    # Never write summary.json here: a stub would hide that the run's final steps are missing
    # (resume redoes them only while it is absent).
    s = store.summary() or summary_from_store(store.dir)
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    status = store.shown_status
    # a run folder's strings are untrusted: one clean line each, printed without markup
    print(f"run {one_line(store.run_id, 120)} ({one_line(store.task_name, 120)}), status "
          f"{status}" + (" (its process is gone; `pdesharp resume` continues it)"
                         if status != store.status else ""))
    cfg = store.config
    print(f"model {one_line(cfg.get('model') or 'builtin', 120)}, feedback "
          f"{one_line(cfg.get('feedback'), 20)}, {one_line(cfg.get('candidates'), 20)} candidates")
    for key in ("best_id", "best_dev_score", "test_nrmse", "test_note", "stop_reason",
                "evaluations", "debug_iterations", "model_calls", "cached_model_calls",
                "tokens_in", "tokens_out", "cost_usd", "wall_seconds", "best_solver"):
        if s.get(key) not in (None, ""):
            value = s[key]
            text = (f"${value:.4f}" if key == "cost_usd" else f"{value:.1f} s"
                    if key == "wall_seconds" else _fmt(value))
            if key == "wall_seconds" and status == "running":
                text += " (still running: up to its last recorded step)"
            print(f"  {key:<20} {one_line(text, 500)}")
    report = Path(store.dir) / "report.md"
    if report.is_file():
        print(f"  {'report':<20} {report}")
    store.close()
    return 0
