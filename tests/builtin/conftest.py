"""Fixtures of the built-in analyst's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def example_data() -> Path:
    """Reference files of the example tasks, made by examples/tasks/make_reference.py."""
    return HERE / "data"
