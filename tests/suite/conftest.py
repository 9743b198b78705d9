"""Suites: fixtures shared by the suite tests (helpers in suite_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite_helpers import import_one_d  # noqa: E402


@pytest.fixture(scope="session")
def one_d_suite(tmp_path_factory) -> Path:
    """A suite folder of the two cheap 1D cases (imported once per session; read-only after)."""
    return import_one_d(tmp_path_factory.mktemp("suite1d"))
