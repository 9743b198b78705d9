"""Cut dev/test subsets from a full PDEBench file, the way CodePDE made its released data.

CodePDE's ``data/extract_data_subsets.py`` takes one PDEBench Train file and writes

* the **test** subset: the first 100 samples, under the original file name;
* the **dev** subset: the last 50 samples, as ``<stem>_development.hdf5``;

copying only the keys the evaluator reads, and dropping the last ``t-coordinate`` entry because
PDEBench stores T+1 time values for T frames. We do the same for every layout the tasks declare
(``tensor`` for the 1D scalar tasks; ``Vx``/``density``/``pressure`` for CNS; coefficient keys
too), reading the source one key at a time so a multi-GB file never has to fit in memory twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from pdesharp.data import hdf5
from pdesharp.data.reference import DataError
from pdesharp.task import Task

N_TEST = 100
N_DEV = 50


@dataclass
class SubsetResult:
    paths: dict[str, Path]  # split -> written file
    n_source: int
    indices: dict[str, tuple[int, int]]  # split -> [start, stop) in the source
    t_dropped: bool
    warnings: list[str] = field(default_factory=list)


def subset_targets(task: Task, root: Path, source: Path, out_dir: Path | None = None) -> dict[str, Path]:
    """Where the subsets go.

    With no ``out_dir`` and a task that names CodePDE's files, the outputs take exactly those
    names under ``<root>/codepde/`` (the first candidates of ``data.dev/test.files``), so they are
    found without further flags. Otherwise they follow CodePDE's naming rule in ``out_dir``
    (default: beside the source).
    """
    spec = task.data.download
    if out_dir is None and spec.codepde_dev and spec.codepde_test:
        return {"dev": root / "codepde" / spec.codepde_dev, "test": root / "codepde" / spec.codepde_test}
    folder = Path(out_dir) if out_dir is not None else source.parent
    return {
        "dev": folder / f"{source.stem}_development{source.suffix}",
        "test": folder / source.name,
    }


def _keys_for(task: Task, h5: h5py.File, source: Path) -> tuple[list[str], list[str]]:
    """(per-sample keys, shared coordinate keys) to copy; raises if a needed key is missing."""
    spec = task.data
    per_sample = list(spec.fields.values()) + list(spec.coefficients.values())
    missing = [k for k in per_sample if not hdf5.has(h5, k)]
    if missing:
        raise DataError(
            f"{source} lacks keys {missing} that task {task.name!r} needs; it has {hdf5.keys(h5)}"
        )
    coords = [k for k in (spec.t_key, spec.x_key) if k and hdf5.has(h5, k)]
    return per_sample, coords


def make_subsets(
    task: Task,
    source: str | os.PathLike,
    targets: dict[str, Path],
    *,
    n_test: int = N_TEST,
    n_dev: int = N_DEV,
    overwrite: bool = False,
) -> SubsetResult:
    """Write the subsets named in ``targets`` ({"dev": path, "test": path}, either may be absent).

    Each output is written to ``<name>.part`` and renamed when complete; root attributes record
    the source file and the sample range taken.
    """
    source = Path(source)
    for split, path in targets.items():
        if split not in ("dev", "test"):
            raise ValueError(f"unknown split {split!r}")
        if path.resolve() == source.resolve():
            raise DataError(f"the {split} subset would overwrite its source {source}; choose --out-dir")
        if path.exists() and not overwrite:
            raise DataError(f"{path} exists; pass --overwrite to replace it")
    with hdf5.open_file(source) as h5:
        per_sample, coords = _keys_for(task, h5, source)
        # every dataset checked (links, virtual, external storage) before any is read
        sets = {k: hdf5.dataset(h5, k, source) for k in per_sample + coords}
        n = int(sets[per_sample[0]].shape[0])
        for k in per_sample[1:]:
            if sets[k].shape[0] != n:
                raise DataError(f"{source}: key {k!r} has {sets[k].shape[0]} samples, {per_sample[0]!r} has {n}")
        ranges = {"test": (0, min(n_test, n)), "dev": (max(n - n_dev, 0), n)}
        warnings = []
        if n < n_test + n_dev and "dev" in targets and "test" in targets:
            warnings.append(
                f"{source.name} has only {n} samples, fewer than {n_test} + {n_dev}: dev and test"
                " overlap (CodePDE's rule applied as is)"
            )
        # PDEBench stores one more time value than frames (t runs to fin_time + dt_save).
        t_dropped = False
        n_frames = None
        if not task.steady and sets[per_sample[0]].ndim >= 2:
            n_frames = int(sets[per_sample[0]].shape[1])
        written: dict[str, Path] = {}
        for split, path in targets.items():
            lo, hi = ranges[split]
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + ".part")
            try:
                with h5py.File(part, "w") as out:
                    for key in per_sample:
                        # Copy the stored dtype unchanged (float32 in PDEBench), as CodePDE does.
                        out.create_dataset(key, data=hdf5.read(sets[key], slice(lo, hi),
                                                               path=source, key=key))
                    for key in coords:
                        values = hdf5.read(sets[key], path=source, key=key)
                        if key == task.data.t_key and n_frames is not None and len(values) == n_frames + 1:
                            values = values[:-1]
                            t_dropped = True
                        out.create_dataset(key, data=values)
                    out.attrs["source_file"] = source.name
                    out.attrs["source_samples"] = n
                    out.attrs["sample_range"] = np.array([lo, hi], dtype=np.int64)
                    out.attrs["split"] = split
                    out.attrs["made_by"] = (
                        "pdesharp data subset (CodePDE rule: test = first 100, dev = last 50)"
                    )
                os.replace(part, path)
            except BaseException:
                part.unlink(missing_ok=True)
                raise
            written[split] = path
    return SubsetResult(paths=written, n_source=n, indices={s: ranges[s] for s in written},
                        t_dropped=t_dropped, warnings=warnings)
