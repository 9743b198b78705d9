"""The ``pdesharp`` command: one entry point, one module per subcommand.

Each module in ``pdesharp.commands`` exposes ``register(subparsers)``, which adds its
subcommand(s) and sets ``func(args) -> int`` on the parser.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = [
    "tasks", "eval", "data", "solve", "translate", "runs", "bench", "report", "models",
    "sandbox", "suite",
]


def build_parser() -> argparse.ArgumentParser:
    from pdesharp import __version__

    parser = argparse.ArgumentParser(
        prog="pdesharp",
        description="PDE-SHARP: from a PDE description to an accurate, fast numerical solver.",
    )
    parser.add_argument("--version", action="version", version=f"pdesharp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"pdesharp.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"pdesharp.commands.{name}":
                continue  # a subcommand not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _broken_pipe()


def _broken_pipe() -> int:
    """``pdesharp tasks show X | head``: the reader left; exit quietly, as `cat` does. Python
    would otherwise print a traceback, and another when it flushes stdout at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


if __name__ == "__main__":
    raise SystemExit(main())
