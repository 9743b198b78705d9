"""Reading reference data (PDEBench / CodePDE HDF5 layouts) into one typed record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pdesharp.data import hdf5
from pdesharp.data.hdf5 import DataError
from pdesharp.task import Task

__all__ = ["DataError", "ReferenceData", "load_reference", "sample_indices"]


@dataclass
class ReferenceData:
    """One split of reference data.

    ``fields[name]`` is [B, T, N...] for time-dependent tasks (frame 0 is the initial condition)
    and [B, N...] for steady ones; ``coefficients[name]`` is [B, N...]. Arrays keep the stored
    dtype (float32 for PDEBench/CodePDE files), as CodePDE's evaluators do.
    """

    path: Path
    fields: dict[str, np.ndarray]
    coefficients: dict[str, np.ndarray] = field(default_factory=dict)
    t: np.ndarray | None = None
    x: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        first = next(iter(self.fields.values()))
        return int(first.shape[0])

    def initial(self, name: str) -> np.ndarray:
        return self.fields[name][:, 0]

    def stacked(self, names: list[str]) -> np.ndarray:
        """Fields stacked on a last axis (CodePDE's CNS layout) or the single field as is."""
        if len(names) == 1:
            return self.fields[names[0]]
        return np.stack([self.fields[n] for n in names], axis=-1)


def _select(n: int, samples: str | None) -> slice:
    if samples is None:
        return slice(None)
    head, _, k = samples.partition(":")
    k = int(k)
    return slice(0, min(k, n)) if head == "first" else slice(max(n - k, 0), n)


def sample_indices(n: int, samples: str | None = None, limit: int | None = None) -> range:
    """Indices into a file of ``n`` samples that :func:`load_reference` reads for the same
    ``samples`` selection and ``limit``."""
    start, stop, _ = _select(n, samples).indices(n)
    if limit is not None:
        stop = min(stop, start + limit)
    return range(start, stop)


def _check_dimensions(task: Task, path: Path, fields: dict, coeffs: dict) -> None:
    """Data made for another task (1D arrays for a 2D task) refused in one line, before any
    solver sees it."""
    axes = task.equation.space
    lead = ["batch"] if task.steady else ["batch", "frames"]
    for kind, table, keys, extra in (("field", fields, task.data.fields, len(lead)),
                                     ("coefficient", coeffs, task.data.coefficients, 1)):
        for name, arr in table.items():
            if arr.ndim != extra + len(axes):
                want = ", ".join((lead if kind == "field" else ["batch"]) + ["N"] * len(axes))
                raise DataError(
                    f"{path}: the {kind} {name!r} ({keys[name]!r}) has shape"
                    f" {list(arr.shape)}, {arr.ndim - extra} space axis{'es' if arr.ndim - extra != 1 else ''}; task {task.name!r} is"
                    f" {len(axes)}D ({', '.join(axes)}) and needs [{want}]: data made for"
                    " another task? (`pdesharp data generate TASK.yaml` makes the task's own)")


def load_reference(task: Task, path: str | Path, samples: str | None = None,
                   limit: int | None = None) -> ReferenceData:
    """Load ``path`` with the task's HDF5 keys; ``samples`` like "last:50", ``limit`` caps B."""
    path = Path(path)
    spec = task.data
    with hdf5.open_file(path) as h5:
        wanted = list(spec.fields.values()) + list(spec.coefficients.values())
        missing = [k for k in wanted if not hdf5.has(h5, k)]
        if missing:
            raise DataError(f"{path} lacks keys {missing} that task {task.name!r} needs; it has"
                            f" {hdf5.keys(h5)}")
        # every dataset is checked (links, virtual, external storage) before any is read
        sets = {k: hdf5.dataset(h5, k, path) for k in wanted}
        n = sets[wanted[0]].shape[0]
        picked = sample_indices(n, samples, limit)
        sel = slice(picked.start, picked.stop)
        # every field at the size evaluation makes of it (float64), before any is read
        hdf5.check_fits(sum(hdf5.nbytes(d, sel, converted=True) for d in sets.values()), path,
                        f"the {len(sets)} dataset(s) {wanted} as float64")
        fields = {name: hdf5.read(sets[key], sel, path=path, key=key)
                  for name, key in spec.fields.items()}
        coeffs = {name: hdf5.read(sets[key], sel, path=path, key=key)
                  for name, key in spec.coefficients.items()}
        t = x = None
        if spec.t_key and hdf5.has(h5, spec.t_key):
            t = hdf5.read(hdf5.dataset(h5, spec.t_key, path), path=path, key=spec.t_key)
        if spec.x_key and hdf5.has(h5, spec.x_key):
            x = hdf5.read(hdf5.dataset(h5, spec.x_key, path), path=path, key=spec.x_key)
    _check_dimensions(task, path, fields, coeffs)
    shapes = {k: v.shape for k, v in fields.items()}
    if len({s for s in shapes.values()}) != 1:
        raise DataError(f"{path}: fields have different shapes {shapes}")
    if not task.steady and t is not None:
        nt = next(iter(shapes.values()))[1]
        if len(t) == nt + 1:  # a raw PDEBench file stores one extra time value; CodePDE drops it
            t = t[:-1]
        elif len(t) != nt:
            raise DataError(f"{path}: {len(t)} time values for {nt} frames")
    return ReferenceData(path=path, fields=fields, coefficients=coeffs, t=t, x=x)
