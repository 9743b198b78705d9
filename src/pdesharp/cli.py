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
# Subcommands registered by a module of another name.
COMMAND_HOMES = {"resume": "solve", "show": "runs"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` (the subcommand a user typed, registered by the
    module of that name or the one :data:`COMMAND_HOMES` names) only that module is imported: a
    command that needs no task starts in a fraction of a second instead of importing SymPy,
    SciPy and h5py."""
    if command == "--version":
        return _parser([])
    home = COMMAND_HOMES.get(command, command)
    if home in COMMAND_MODULES:
        parser = _parser([home])
        if command in _subparsers(parser).choices:
            return parser
    return _parser(COMMAND_MODULES)


def _subparsers(parser: argparse.ArgumentParser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _parser(modules: list[str]) -> argparse.ArgumentParser:
    from pdesharp import __version__

    parser = argparse.ArgumentParser(
        prog="pdesharp",
        description="PDE-SHARP: from a PDE description to an accurate, fast numerical solver.",
    )
    parser.add_argument("--version", action="version", version=f"pdesharp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        try:
            module = importlib.import_module(f"pdesharp.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"pdesharp.commands.{name}":
                continue  # a subcommand not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words and (words[0] == "--version"
                                                 or not words[0].startswith("-")) else None)
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
