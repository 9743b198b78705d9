"""What reference data is on disk: per task and split, the file found or how to get it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pdesharp.data import hdf5
from pdesharp.data.paths import data_dir
from pdesharp.task import Task


@dataclass
class SplitStatus:
    """One split of one task: the first candidate present, with its content, or what is missing."""

    task: str
    split: str
    candidates: list[Path]
    path: Path | None = None
    n_samples: int | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # HDF5 key -> shape
    dtype: str | None = None
    size_bytes: int | None = None
    samples: str | None = None  # the split's sample selection ("last:50"), if any
    error: str | None = None  # present but unreadable / wrong layout
    own_error: float | None = None  # the error the file states about itself (generated files)
    hint: str = ""  # how to get it when missing

    @property
    def present(self) -> bool:
        return self.path is not None and self.error is None


# What a suggested `data generate` asks for: CodePDE's dev split has 50 samples; the test split
# gets another seed, so that it never repeats a dev sample.
GENERATE_SAMPLES = {"dev": 50, "test": 100}
GENERATE_SEED = {"dev": 0, "test": 1}


def _hint(task: Task, split: str, ref: str, root: Path, root_flag: str) -> str:
    """A complete command that gets the split's file (``ref``: the task as the user named it,
    a built-in name or a YAML path; ``root_flag``: `` --data-dir DIR`` or empty)."""
    import shlex

    name = shlex.quote(ref)
    spec = task.data.download
    if getattr(spec, f"codepde_{split}"):
        return f"pdesharp data download {name} --split {split}{root_flag}"
    if spec.pdebench_file:
        return f"pdesharp data download {name} --source pdebench --split {split}{root_flag}"
    n, seed = GENERATE_SAMPLES[split], GENERATE_SEED[split]
    from pdesharp.data.generate import generated_path

    out = generated_path(root, task.name, seed, n)
    return (f"pdesharp data generate {name} --samples {n} --seed {seed}{root_flag}, then pass "
            f"--{split}-data {shlex.quote(str(out))} (or pass --{split}-data FILE of your own)")


def split_status(task: Task, split: str, root: Path, *, ref: str | None = None,
                 explicit: str | os.PathLike | None = None, root_flag: str = "") -> SplitStatus:
    """The split's file: ``explicit`` (``--dev-data FILE``) if given, else the first of the
    task's candidate paths under ``root`` that exists."""
    spec = getattr(task.data, split)
    if explicit is not None:
        candidates = [Path(explicit).expanduser()]
    else:
        candidates = [root / rel for rel in spec.files] if spec is not None else []
    status = SplitStatus(task=task.name, split=split, candidates=candidates,
                         samples=spec.samples if spec and explicit is None else None,
                         hint=_hint(task, split, ref or task.name, root, root_flag))
    for path in candidates:
        if not path.is_file():
            continue
        status.path = path
        status.size_bytes = path.stat().st_size
        keys = list(task.data.fields.values()) + list(task.data.coefficients.values())
        try:
            with hdf5.open_file(path) as h5:
                missing = [k for k in keys if not hdf5.has(h5, k)]
                if missing:
                    status.error = f"lacks keys {missing} (has {hdf5.keys(h5)})"
                else:
                    sets = [hdf5.dataset(h5, k, path) for k in keys]
                    status.shapes = {k: tuple(d.shape) for k, d in zip(keys, sets)}
                    status.n_samples = int(sets[0].shape[0])
                    status.dtype = str(sets[0].dtype)
            from pdesharp.data.stated_error import read_file_estimate

            stated = read_file_estimate(path)
            status.own_error = stated.estimate if stated is not None else None
        except hdf5.DataError as exc:  # not HDF5, or a dataset refused (external link...)
            status.error = str(exc)
        except OSError as exc:
            status.error = f"not readable as HDF5 ({exc})"
        break
    return status


def task_status(task: Task, data_dir_override: str | os.PathLike | None = None, *,
                ref: str | None = None, explicit: dict | None = None) -> list[SplitStatus]:
    """Both splits of ``task``; ``explicit``: split -> file given on the command line."""
    import shlex

    root = data_dir(data_dir_override)
    flag = f" --data-dir {shlex.quote(str(data_dir_override))}" if data_dir_override else ""
    return [split_status(task, s, root, ref=ref, explicit=(explicit or {}).get(s),
                         root_flag=flag) for s in ("dev", "test")]


def generated_files(task: Task, data_dir_override: str | os.PathLike | None = None) -> list[Path]:
    """Files ``pdesharp data generate`` wrote for this task (use them with --dev-data FILE)."""
    folder = data_dir(data_dir_override) / "generated"
    return sorted(folder.glob(f"{task.name}_seed*_n*.hdf5")) if folder.is_dir() else []


def human_size(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"
