"""One process per run folder: ``run.lock`` holds the pid of the process working on it.

``claim`` creates the lock exclusively (two commands started together cannot both win) and
takes over a stale one (its process is gone); ``lock_owner`` says who holds it, if anyone alive.
A command that is refused raises :class:`RunBusy` before it touches anything else.
"""

from __future__ import annotations

import os
from pathlib import Path


class RunBusy(RuntimeError):
    """Another live process works on the run folder."""

    def __init__(self, run_dir: Path, pid: int):
        super().__init__(f"{run_dir} is being worked on by process {pid}")
        self.pid = pid


LOCK_NAME = "run.lock"  # the pid of the one process working on a run folder


def lock_owner(run_dir: str | Path) -> int | None:
    """The live process holding ``run_dir``'s lock, or None (no lock, or a stale one)."""
    import psutil

    try:
        pid = int((Path(run_dir) / LOCK_NAME).read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    return pid if pid and psutil.pid_exists(pid) else None


def claim(run_dir: str | Path) -> Path:
    """Make this process the one working on ``run_dir`` (an exclusive create, so two commands
    started together cannot both win); a stale lock (its process is gone) is taken over.
    Raises :class:`RunBusy` before anything else in the folder is touched."""
    lock = Path(run_dir) / LOCK_NAME
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = lock_owner(run_dir)
            if owner is not None and owner != os.getpid():
                raise RunBusy(Path(run_dir), owner) from None
            lock.unlink(missing_ok=True)  # stale (or ours): take it over
            continue
        try:
            os.write(fd, str(os.getpid()).encode())
        except OSError:  # a full disk: no half-written lock left behind
            os.close(fd)
            lock.unlink(missing_ok=True)
            raise
        os.close(fd)
        return lock
    owner = lock_owner(run_dir)
    raise RunBusy(Path(run_dir), owner or 0)
