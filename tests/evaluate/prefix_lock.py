"""The Python prefix held against other pytest workers (see :func:`prefix_to_myself`)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import sys
import tempfile
from pathlib import Path


@contextlib.contextmanager
def prefix_to_myself():
    """Hold the Python prefix (the sandbox's readable runtime) against other pytest workers.

    test_hostile_fallback plants a copy of the dev data inside the prefix to check that the
    evaluator refuses or masks data in a readable tree; test_hostile's solvers search every
    readable tree for reference data and must find none. Run at once on two xdist workers (one
    venv), the searcher found the other test's copy (L26: OPENED=[<venv>/pdesharp-test-data-.../
    advection_dev.hdf5], under bubblewrap and Landlock): a copy the evaluation under test never
    knew of, not a way to its own data. Both hold this lock, so they never overlap."""
    key = hashlib.sha256(sys.prefix.encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"pdesharp-tests-prefix-{key}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
