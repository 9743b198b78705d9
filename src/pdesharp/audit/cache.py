"""Where audits are kept: beside the data when its folder is writable, else in the user cache.

An audit is two files, ``<key>.json`` (the :class:`~pdesharp.audit.records.AuditReport`) and
``<key>.h5`` (the converged solution, float64, for the audited samples), where the key names the
task, a fingerprint of the parts of the task spec the numbers depend on, and the sample/frame
selection. Locations, tried in this order:

* beside the data file: ``<folder>/<file name>.audit/<key>.*``, used when that folder is writable
  (mode bits as well as access rights: a read-only shared folder stays untouched even for root);
* the user cache: ``<user cache>/pdesharp/audit/<sha256 of the data file>/<key>.*``.

``PDESHARP_AUDIT_DIR`` replaces both: audits are then read from and written to
``$PDESHARP_AUDIT_DIR/<sha256 of the data file>/`` only (a test suite, a CI job or a shared
machine keeps them out of the data folders and the user's cache).

Every audit records the SHA-256 of the data file it was computed from; a cached audit whose hash
differs from the file's current content is stale and ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import h5py
import numpy as np
import platformdirs

from pdesharp.audit.records import AUDIT_VERSION, AuditReport
from pdesharp.data import hdf5
from pdesharp.task import Task

_HASHES: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """SHA-256 of the file's bytes (remembered per path, size and modification time)."""
    st = path.stat()
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _HASHES:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _HASHES[memo] = digest.hexdigest()
    return _HASHES[memo]


def task_fingerprint(task: Task) -> str:
    """Hash of what an audit's numbers depend on: equation, parameters, domain, grid, boundary,
    time span and data layout (not prose, file lists or evaluation settings)."""
    relevant = {"name": task.name, "equation": task.equation.model_dump(mode="json"),
                "parameters": task.parameters, "domain": task.domain, "grid": task.grid,
                "boundary": task.boundary, "time_span": task.time_span,
                "fields": task.data.fields, "coefficients": task.data.coefficients,
                "returns": task.solver.returns, "version": AUDIT_VERSION}
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def selection_key(indices: list[int], n_file: int, frames: int | None) -> str:
    if indices == list(range(n_file)):
        picked = "all"
    elif indices == list(range(indices[0], indices[0] + len(indices))):
        picked = f"{indices[0]}-{indices[-1]}"
    else:
        picked = hashlib.sha256(str(indices).encode()).hexdigest()[:12]
    return picked + (f"-f{frames}" if frames else "")


def _writable(folder: Path) -> bool:
    try:
        return folder.is_dir() and os.access(folder, os.W_OK) and \
            bool(folder.stat().st_mode & 0o222)
    except OSError:
        return False


AUDIT_DIR_ENV = "PDESHARP_AUDIT_DIR"


def user_cache_root() -> Path:
    return Path(platformdirs.user_cache_dir("pdesharp")) / "audit"


def override_root() -> Path | None:
    """The one audit folder ``$PDESHARP_AUDIT_DIR`` names, None when it is unset or empty."""
    value = os.environ.get(AUDIT_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else None


def locations(data_file: Path, sha256: str) -> list[Path]:
    """Folders an audit of ``data_file`` may live in, in lookup order."""
    root = override_root()
    if root is not None:
        return [root / sha256[:24]]
    beside = data_file.parent / f"{data_file.name}.audit"
    return [beside, user_cache_root() / sha256[:24]]


def write_folder(data_file: Path, sha256: str) -> Path:
    """``$PDESHARP_AUDIT_DIR``'s folder when it is set; else beside the data if its folder is
    writable, else the user cache folder."""
    found = locations(data_file, sha256)
    if len(found) == 1:
        return found[0]
    beside, user = found
    return beside if _writable(data_file.parent) else user


def base_name(task: Task, selection: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in task.name)
    return f"{safe}-{task_fingerprint(task)}-{selection}"


def save(folder: Path, name: str, report: AuditReport,
         converged: dict[str, np.ndarray] | None) -> Path:
    """Write ``<name>.h5`` then ``<name>.json`` atomically; the JSON's presence marks the pair
    complete. Returns the JSON path. The partial files carry the writer's process id: two
    processes that audit the same file at once (a shared cache) each rename a whole file of
    their own into place, never one the other is still writing."""
    folder.mkdir(parents=True, exist_ok=True)
    part = f"{os.getpid()}.part"
    if converged is not None:
        h5_part = folder / f"{name}.h5.{part}"
        with h5py.File(h5_part, "w") as h5:
            h5.create_dataset("samples", data=np.asarray(report.samples, dtype=np.int64))
            for key, arr in converged.items():
                h5.create_dataset(f"converged/{key}", data=np.asarray(arr, dtype=np.float64))
        os.replace(h5_part, folder / f"{name}.h5")
    json_part = folder / f"{name}.json.{part}"
    json_part.write_text(report.model_dump_json(indent=2))
    os.replace(json_part, folder / f"{name}.json")
    return folder / f"{name}.json"


def load_report(path: Path) -> AuditReport | None:
    try:
        return AuditReport.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def load_converged(json_path: Path) -> dict[str, np.ndarray] | None:
    h5_path = json_path.with_suffix(".h5")
    try:
        with hdf5.open_file(h5_path) as h5:  # a cache folder is writable by others too
            return {k: hdf5.read(hdf5.dataset(h5, f"converged/{k}", h5_path), path=h5_path,
                                 key=k) for k in h5["converged"].keys()}
    except (OSError, KeyError, ValueError):  # ValueError: DataError (refused or unreadable)
        return None


def find(task: Task, data_file: Path, sha256: str) -> list[Path]:
    """Cached audit reports of ``data_file`` for ``task`` (current content, current version)."""
    prefix = f"{base_name(task, '')}"
    found = []
    for folder in locations(data_file, sha256):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob(f"{prefix}*.json")):
            report = load_report(path)
            if report is not None and report.data_sha256 == sha256 and \
                    report.version == AUDIT_VERSION:
                found.append(path)
    return found
