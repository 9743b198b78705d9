"""Shared fixtures. The real PDEBench dev data sits in ../shared/data/pdebench beside the repo."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PDESHARP_SHARED_DATA", REPO.parent / "shared" / "data" / "pdebench"))


@pytest.fixture(scope="session", autouse=True)
def audit_dir(tmp_path_factory) -> Path:
    """Every audit the suite computes (``--audit auto`` computes cheap ones) goes to one temporary
    folder, shared by the session, never beside the data in the checkout (tests/builtin/data) or
    into the user's cache (pdesharp.audit.cache: PDESHARP_AUDIT_DIR). Subprocesses inherit it."""
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
