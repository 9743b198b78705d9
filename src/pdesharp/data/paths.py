"""Where reference data lives: the data directory and how a split's file is found."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from pdesharp.records import Split
from pdesharp.task import Task


class DataNotFound(FileNotFoundError):
    """No file for a task's split; the message lists what was tried and how to get the data."""


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """``--data-dir`` if given, else ``$PDESHARP_DATA``, else the user cache directory."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("PDESHARP_DATA")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("pdesharp")) / "data"


def resolve_split(
    task: Task,
    split: Split,
    *,
    data_dir_override: str | os.PathLike | None = None,
    explicit: str | os.PathLike | None = None,
) -> Path:
    """The HDF5 file for ``split``: an explicit file wins, else the task's candidates in order."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise DataNotFound(f"{split} data file {path} does not exist")
        return path
    spec = getattr(task.data, split)
    root = data_dir(data_dir_override)
    tried: list[str] = []
    if spec is not None:
        for rel in spec.files:
            path = root / rel
            if path.is_file():
                return path
            tried.append(str(path))
    hint = (
        f"get it with `pdesharp data download {task.name}` or `pdesharp data generate {task.name}`,"
        f" point --data-dir/$PDESHARP_DATA at a folder that has it, or pass --{split}-data FILE"
    )
    if not tried:
        raise DataNotFound(f"task {task.name!r} declares no {split} split; pass --{split}-data FILE")
    raise DataNotFound(
        f"no {split} data for task {task.name!r}; tried:\n  " + "\n  ".join(tried) + f"\n{hint}"
    )
