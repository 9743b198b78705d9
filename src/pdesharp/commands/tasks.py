"""``pdesharp tasks``, ``pdesharp tasks show NAME`` and ``pdesharp tasks check FILE``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from pdesharp.commands._common import add_data_arguments, task_or_exit
from pdesharp.task import builtin_task_names, load_task


def register(sub) -> None:
    p = sub.add_parser("tasks", help="list the built-in tasks, show one spec, or check whether the"
                                     " built-in analyst (no model) supports a task")
    p.add_argument("action", nargs="?", choices=["list", "show", "check"], default="list")
    p.add_argument("name", nargs="?", help="task name or YAML path (with 'show' and 'check')")
    add_data_arguments(p)  # check: the data's field ranges make the stability bounds concrete
    p.set_defaults(func=run)


def run(args) -> int:
    console = Console()
    if args.action == "check":
        if not args.name:
            console.print("usage: pdesharp tasks check NAME_OR_FILE")
            return 2
        return check(task_or_exit(args.name), args.data_dir, args.dev_data)
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


def check(task, data_dir=None, dev_data=None) -> int:
    """Say before a run whether the built-in analyst supports ``task``, and why not."""
    from pdesharp.builtin.support import support
    from pdesharp.data.paths import data_dir as default_data_dir

    got = support(task, data_dir=data_dir or default_data_dir(), dev_data=dev_data)
    if not got.supported:
        print(f"{task.name}: not supported by the built-in analyst.\n  {got.reason}")
        return 1
    print(f"{task.name}: supported by the built-in analyst ({got.kind}, route {got.route}).")
    print(f"  scheme families: {', '.join(got.families)}")
    print("  first designs Genesis would write:")
    for d in got.designs:
        print(f"    - {d}")
    for n in got.notes:
        print(f"  note: {n}")
    return 0
