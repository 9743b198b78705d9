"""Reference data: locating, reading, downloading, subsetting and generating it.

The names below are re-exported lazily (PEP 562): ``import pdesharp.data.paths`` (where the data
are, needed to build a command line) must not import h5py and NumPy through this package."""

from __future__ import annotations

import importlib

_HOME = {"DataNotFound": "paths", "data_dir": "paths", "resolve_split": "paths",
         "DataError": "reference", "ReferenceData": "reference", "load_reference": "reference"}

__all__ = ["DataError", "DataNotFound", "ReferenceData", "data_dir", "load_reference", "resolve_split"]


def __getattr__(name: str):
    if name in _HOME:
        return getattr(importlib.import_module(f"pdesharp.data.{_HOME[name]}"), name)
    raise AttributeError(f"module 'pdesharp.data' has no attribute {name!r}")
