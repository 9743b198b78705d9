"""Running the real ``pdesharp`` command in a subprocess, as a user does."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path


def pdesharp(*argv: str, cwd: Path | None = None, env: dict | None = None,
             timeout: float = 600, drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``pdesharp ARGV`` in a fresh process (the venv's interpreter), text output captured.
    ``drop``: environment variables to remove (e.g. PDESHARP_DATA: "from any shell")."""
    full = {k: v for k, v in os.environ.items() if k not in drop}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "pdesharp.cli", *argv], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout)


def rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file in ``folder`` (relative path -> bytes): a command that must change nothing
    leaves this equal."""
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}
