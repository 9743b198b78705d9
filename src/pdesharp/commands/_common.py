"""Helpers shared by subcommands: loading tasks and reporting errors the same way."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdesharp.task import Task


def comma_list(text: str) -> list[str]:
    """An argparse type: "a, b,,c" -> ["a", "b", "c"]."""
    return [t.strip() for t in text.split(",") if t.strip()]


def add_task_argument(parser, *, positional: bool = False) -> None:
    help_ = "built-in task name or path to a task YAML file"
    if positional:
        parser.add_argument("task", help=help_)
    else:
        parser.add_argument("--task", required=True, help=help_)


def add_data_arguments(parser) -> None:
    parser.add_argument("--data-dir", default=None,
                        help="reference data folder (default: $PDESHARP_DATA or the user cache)")
    parser.add_argument("--dev-data", default=None, help="explicit dev-split HDF5 file")
    parser.add_argument("--test-data", default=None, help="explicit test-split HDF5 file")


def task_or_exit(name: str) -> Task:
    from pdesharp.task import TaskError, load_task  # SymPy: only for commands that read a task

    try:
        return load_task(name)
    except TaskError as exc:
        fail(str(exc))


def settings_error(exc: ValueError) -> str:
    """A refused setting in the command line's words: pydantic's errors as "--option: why", one
    per line, without its type codes and links (other errors as they are)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    lines = []
    for e in errors():
        where = "--" + "-".join(str(x) for x in e.get("loc", ())).replace("_", "-")
        msg = str(e.get("msg", "")).removeprefix("Value error, ")
        lines.append(msg if where == "--" else f"{where}: {msg}")
    return "\n  ".join(lines) or str(exc)


def fail(message: str, code: int = 2):
    """Print the error and exit. The message may quote input (a path, a name, a formula): it is
    printed without escape sequences or controls (:func:`pdesharp.untrusted.terminal`)."""
    from pdesharp.untrusted import terminal

    print(f"pdesharp: error: {terminal(message)}", file=sys.stderr)
    raise SystemExit(code)
