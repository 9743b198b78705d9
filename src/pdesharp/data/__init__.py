"""Reference data: locating, reading, downloading, subsetting and generating it."""

from pdesharp.data.paths import DataNotFound, data_dir, resolve_split
from pdesharp.data.reference import DataError, ReferenceData, load_reference

__all__ = ["DataError", "DataNotFound", "ReferenceData", "data_dir", "load_reference", "resolve_split"]
