"""The example tasks that ship with pdesharp's source (``examples/tasks/*.yaml``).

They live beside the package in a source checkout (the README installs with ``pip install -e``),
not inside it, so a wheel-only install has none: :func:`examples_dir` is then None and
``pdesharp tasks`` says where they come from. ``$PDESHARP_EXAMPLES`` names another folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def examples_dir() -> Path | None:
    """The folder of example task files, or None if this installation has none."""
    env = os.environ.get("PDESHARP_EXAMPLES")
    if env:
        path = Path(env).expanduser()
        return path if path.is_dir() else None
    path = Path(__file__).resolve().parents[2] / "examples" / "tasks"
    return path if path.is_dir() else None


def example_names() -> list[str]:
    folder = examples_dir()
    if folder is None:
        return []
    return sorted(p.stem for p in folder.glob("*.yaml") if _NAME.fullmatch(p.stem))


def example_path(name: str) -> Path | None:
    """The file of the example task ``name`` (a plain name, never a path), or None."""
    if not _NAME.fullmatch(name) or name not in example_names():
        return None
    return examples_dir() / f"{name}.yaml"  # type: ignore[operator]
