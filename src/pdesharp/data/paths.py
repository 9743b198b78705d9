"""Where reference data lives: the data directory and how a split's file is found."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from pdesharp.records import Split
from pdesharp.task import Task, builtin_task_names


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
    hint = _how_to_get(task, split)
    if not tried:
        raise DataNotFound(f"task {task.name!r} declares no {split} split; pass --{split}-data FILE")
    raise DataNotFound(
        f"no {split} data for task {task.name!r}; tried:\n  " + "\n  ".join(tried) + f"\n{hint}"
    )


def _how_to_get(task: Task, split: Split) -> str:
    """How to make or fetch the data: a built-in task by name; a user task's data are generated
    from its YAML file (``data download`` knows only published files)."""
    elsewhere = "point --data-dir/$PDESHARP_DATA at a folder that has it"
    if task.name not in builtin_task_names():
        return (f"make it from the task's YAML file with `pdesharp data generate TASK.yaml"
                f" --samples N --seed S --out FILE` and pass --{split}-data FILE, or {elsewhere}")
    dl = task.data.download
    published = any((dl.codepde_dev, dl.codepde_test, dl.pdebench_file, dl.pdebench_url))
    get = (f"`pdesharp data download {task.name}` or " if published else "") + \
        f"`pdesharp data generate {task.name}`"
    return f"get it with {get}, {elsewhere}, or pass --{split}-data FILE"
