"""Shared fixtures. The real PDEBench dev data sits in ../shared/data/pdebench beside the repo."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PDESHARP_SHARED_DATA", REPO.parent / "shared" / "data" / "pdebench"))

# One BLAS/OpenMP thread per test process: the two xdist workers already fill both cores, and
# library threads on top only contend (OpenBLAS's spinning threads made the walled generator's
# LU 3x slower under load). Subprocesses (the CLI, Ray workers) inherit the variables; the
# sandboxed evaluations set their own (--threads, default 1).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
try:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # for a library loaded before the variables were read
except ImportError:
    pass


def pytest_configure(config):
    """Byte-code for pdesharp's own modules, once, before the workers start. The suite starts
    hundreds of fresh `pdesharp` processes; with PYTHONDONTWRITEBYTECODE set (as on our CI
    machines) an editable install never gets a __pycache__, so each of them compiled ~150
    modules from source again (measured 0.3-0.5 s of CPU per process). Python still reads
    existing .pyc files under that variable, and checks each against its source's mtime."""
    if not sys.flags.dont_write_bytecode or hasattr(config, "workerinput"):
        return  # Python writes its own byte-code; or an xdist worker (the controller did it)
    import compileall

    import pdesharp

    compileall.compile_dir(Path(pdesharp.__file__).parent, quiet=2, workers=1)


# Long files without module-scoped fixtures whose tests are handed out one by one instead of as
# a whole file: each is a third of the suite's time or more on one worker (measured: the default
# path ~2100 s of ~6150 s of test time under load), longer than everything else one worker runs
SPLIT_FILES = {"tests/builtin/test_default_path.py",
               "tests/data_generate_generic/test_examples_any_seed.py"}
# The tests of one Ray instance: one worker runs them all, so that one instance is started
# (~8 s) and torn down after the last of them (tests/cluster/conftest.py: package scope); an
# idle Ray instance costs ~3.3 s of CPU a minute (measured), which two workers' instances alive
# to the end of the session used to take from the rest of the suite
RAY_PACKAGE = "tests/cluster/"


def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, except that the tests of SPLIT_FILES are units of their own."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path.startswith(RAY_PACKAGE):
                return RAY_PACKAGE
            return nodeid if path in SPLIT_FILES else path

    return Scheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """Longest files first: files holding tests marked slow, most slow tests first, then the
    others in collection order (each file's tests keep theirs). pytest-xdist hands whole files
    to the two workers in this order (pyproject: --dist loadfile --no-loadscope-reorder), so
    the long ones overlap with the many short ones instead of running alone at the end."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    first_seen = {path: i for i, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (-slow[item.path], first_seen[item.path]))


@pytest.fixture(scope="session", autouse=True)
def audit_dir(tmp_path_factory) -> Path:
    """Every audit the suite computes (``--audit auto`` computes cheap ones) goes to one temporary
    folder, shared by the session, never beside the data in the checkout (tests/builtin/data) or
    into the user's cache (pdesharp.audit.cache: PDESHARP_AUDIT_DIR). Subprocesses inherit it.
    With pytest-xdist the folder is shared by the workers too (the session's base folder, one up
    from each worker's): an audit of the shared dev data is computed once per suite, not once
    per worker (audits are written atomically, so two workers may compute one at once)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / "audits"
        folder.mkdir(exist_ok=True)
    else:
        folder = tmp_path_factory.mktemp("audits")
    old = os.environ.get("PDESHARP_AUDIT_DIR")
    os.environ["PDESHARP_AUDIT_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("PDESHARP_AUDIT_DIR", None)
    else:
        os.environ["PDESHARP_AUDIT_DIR"] = old


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Folder with the shared dev files (advection_dev.hdf5, ...). Missing data is a failure
    in CI, where ../shared is always present, and a skip on a developer machine without it."""
    if not (SHARED_DATA / "advection_dev.hdf5").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"shared dev data not found at {SHARED_DATA}")
        pytest.skip(f"shared dev data not found at {SHARED_DATA}")
    return SHARED_DATA
