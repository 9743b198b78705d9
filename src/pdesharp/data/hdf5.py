"""Reading HDF5 files pdesharp did not write (reference data, user data, audit caches).

HDF5 follows a dataset's external links, virtual-dataset mappings and external raw storage into
other files silently, so a dev file could be scored against a file it only points to (or make
pdesharp open a FIFO, a device, any path). And a small gzip-compressed file can declare a
dataset of terabytes. Every read of a file's datasets goes through :func:`dataset` and
:func:`read` here: only data stored in the file itself (hard links, and soft links, which stay
inside the file, resolved by hand), and only when its declared size fits in memory, checked
before anything is decompressed.
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np

MAX_LINK_HOPS = 16  # soft links followed to reach one dataset
MEMORY_FRACTION = 0.8  # a read may take at most this share of the memory available now


class DataError(ValueError):
    """A data file cannot be used: wrong layout, unreadable, or refused (links, size)."""


def open_file(path: str | Path) -> h5py.File:
    """``path`` opened read-only, as a context manager; DataError when it is not HDF5."""
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise DataError(f"cannot open {path} as HDF5: {exc}") from None


def has(h5: h5py.Group, key: str) -> bool:
    """Whether ``key`` names a link in the file, without following it anywhere."""
    try:
        group = h5
        parts = [p for p in key.split("/") if p]
        for i, part in enumerate(parts):
            link = group.get(part, getlink=True)
            if link is None:
                return False
            if i < len(parts) - 1:
                if not isinstance(link, h5py.HardLink):
                    return True  # refused with its reason by dataset()
                group = group[part]
                if not isinstance(group, h5py.Group):
                    return False
        return bool(parts)
    except (KeyError, ValueError, OSError):
        return False


def keys(h5: h5py.Group) -> list[str]:
    """The names of the file's top-level links (never followed)."""
    return sorted(h5.keys())


def dataset(h5: h5py.File, key: str, path: str | Path) -> h5py.Dataset:
    """The dataset ``key`` of the open file at ``path`` if its data are stored in that file."""
    obj = _resolve(h5, key, path, hops=0)
    if not isinstance(obj, h5py.Dataset):
        raise DataError(f"{path}: {key!r} is a {type(obj).__name__.lower()}, not a dataset")
    if obj.is_virtual:
        raise DataError(f"refusing {path}: dataset {key!r} is a virtual dataset (its data live in"
                        " other files); store the data in the file itself")
    if obj.external:
        raise DataError(f"refusing {path}: dataset {key!r} keeps its data in external raw files"
                        f" ({obj.external[0][0]!r}...); store the data in the file itself")
    if obj.dtype.kind not in "biufc":
        raise DataError(f"refusing {path}: dataset {key!r} stores {obj.dtype} values, not numbers")
    return obj


def _resolve(group: h5py.Group, key: str, path, hops: int):
    parts = [p for p in key.split("/") if p]
    if not parts:
        return group
    obj = group
    for i, part in enumerate(parts):
        link = obj.get(part, getlink=True)
        if link is None:
            raise DataError(f"{path} has no {key!r}")
        if isinstance(link, h5py.ExternalLink):
            raise DataError(f"refusing {path}: {key!r} is an external link to"
                            f" {link.filename!r}:{link.path!r}; pdesharp reads only data stored in"
                            " the file itself")
        if isinstance(link, h5py.SoftLink):
            if hops >= MAX_LINK_HOPS:
                raise DataError(f"refusing {path}: {key!r} goes through more than"
                                f" {MAX_LINK_HOPS} soft links")
            start = obj.file["/"] if link.path.startswith("/") else obj
            obj = _resolve(start, link.path, path, hops + 1)
        elif isinstance(link, h5py.HardLink):
            obj = obj[part]
        else:
            raise DataError(f"refusing {path}: {key!r} is a {type(link).__name__}")
        if i < len(parts) - 1 and not isinstance(obj, h5py.Group):
            raise DataError(f"{path} has no {key!r}")
    return obj


def available_memory() -> int:
    """Bytes of memory available now: the kernel's MemAvailable, or the cgroup's headroom if
    that is smaller (a container or a batch job's limit)."""
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = 1 << 62  # unknown: do not refuse on this ground
    try:
        cg = Path("/sys/fs/cgroup")
        limit = (cg / "memory.max").read_text().strip()
        if limit != "max":
            avail = min(avail, int(limit) - int((cg / "memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return max(avail, 0)


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def nbytes(ds: h5py.Dataset, rows: slice = slice(None), *, converted: bool = False) -> int:
    """Declared size of ``ds[rows]`` (rows of the first axis): shape x item size, known before
    any chunk is read or decompressed. ``converted``: the size once the values are numbers the
    evaluation computes with (float64, complex128), whatever the file stores: an int8 file
    that declares 1.2 GB becomes 9.6 GB of float64 (and a prediction of the same size)."""
    shape = list(ds.shape)
    if shape:
        shape[0] = len(range(*rows.indices(shape[0])))
    item = ds.dtype.itemsize
    if converted:
        item = max(item, 16 if ds.dtype.kind == "c" else 8)
    return int(np.prod(shape, dtype=np.float64)) * item


def check_fits(need: int, path: str | Path, what: str) -> None:
    """DataError unless ``need`` bytes fit in the memory available now."""
    have = available_memory()
    if need > MEMORY_FRACTION * have:
        raise DataError(
            f"refusing to read {what} of {path}: it declares {human_bytes(need)} and"
            f" {human_bytes(have)} of memory is available; select fewer samples (--max-samples)")


def read(ds: h5py.Dataset, rows: slice = slice(None), *, path: str | Path,
         key: str) -> np.ndarray:
    """``ds[rows]`` once its declared size is known to fit in memory."""
    check_fits(nbytes(ds, rows), path, f"{key!r} ({list(ds.shape)} {ds.dtype})")
    return np.asarray(ds[rows] if ds.shape else ds[()])
