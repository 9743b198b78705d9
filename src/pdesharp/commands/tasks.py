"""``pdesharp tasks`` and ``pdesharp tasks show NAME``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from pdesharp.commands._common import task_or_exit
from pdesharp.task import builtin_task_names, load_task


def register(sub) -> None:
    p = sub.add_parser("tasks", help="list the built-in tasks, or show one spec")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("name", nargs="?", help="task name or YAML path (with 'show')")
    p.set_defaults(func=run)


def run(args) -> int:
    console = Console()
    if args.action == "show":
        if not args.name:
            console.print("usage: pdesharp tasks show NAME")
            return 2
        print(task_or_exit(args.name).to_yaml())
        return 0
    table = Table(title="built-in tasks")
    for col in ("name", "title", "solver signature", "parameters"):
        table.add_column(col)
    for name in builtin_task_names():
        t = load_task(name)
        params = ", ".join(f"{k}={v:g}" for k, v in t.parameters.items())
        table.add_row(name, t.title, t.solver.signature, params)
    console.print(table)
    return 0
