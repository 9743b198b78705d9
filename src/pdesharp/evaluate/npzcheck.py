"""Reading an untrusted ``.npz`` with bounded work: check first, then decompress exactly.

An ``.npz`` is a zip of ``.npy`` members. Before any array data is decompressed, each wanted
member's ``.npy`` header (read by decompressing at most a few kilobytes) must declare exactly the
expected shape and a real numeric dtype without pickles, and the zip's declared uncompressed size
must equal header plus ``prod(shape) * itemsize``. Decompression then stops at that size, so a
deflate bomb that declares (2048, 201, 1024) float64 costs nothing: it is refused on its header.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

import numpy as np

HEADER_MAX = 65536
ALLOWED_KINDS = "fiu"


class PredictionFileError(ValueError):
    """The file is not an acceptable prediction (wrong members, shapes, dtypes or sizes)."""


def _header(raw: bytes) -> tuple[int, dict]:
    if raw[:6] != b"\x93NUMPY":
        raise PredictionFileError("not a .npy member")
    major = raw[6]
    if major == 1:
        hlen, start = int.from_bytes(raw[8:10], "little"), 10
    elif major in (2, 3):
        hlen, start = int.from_bytes(raw[8:12], "little"), 12
    else:
        raise PredictionFileError(f"unknown .npy version {major}")
    if start + hlen > len(raw):
        raise PredictionFileError("truncated .npy header")
    try:
        meta = ast.literal_eval(raw[start:start + hlen].decode("latin1"))
    except (ValueError, SyntaxError) as exc:
        raise PredictionFileError(f"unreadable .npy header: {exc}") from exc
    if not isinstance(meta, dict) or set(meta) != {"descr", "fortran_order", "shape"}:
        raise PredictionFileError("malformed .npy header")
    return start + hlen, meta


def load_checked(path: str | Path, expected: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """``{name: array}`` for each expected member, or PredictionFileError."""
    out = {}
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise PredictionFileError(f"not a readable .npz file: {exc}") from exc
    with zf:
        infos = {i.filename: i for i in zf.infolist()}
        for name, shape in expected.items():
            info = infos.get(f"{name}.npy")
            if info is None:
                raise PredictionFileError(f"the prediction lacks {name!r}")
            with zf.open(info) as fh:
                raw = fh.read(min(HEADER_MAX, info.file_size))
                offset, meta = _header(raw)
                try:
                    dtype = np.dtype(meta["descr"])
                except TypeError as exc:
                    raise PredictionFileError(f"{name}: bad dtype {meta['descr']!r}") from exc
                if dtype.hasobject or dtype.kind not in ALLOWED_KINDS or dtype.itemsize > 8:
                    raise PredictionFileError(f"{name}: dtype {dtype} is not a real number type")
                if tuple(meta["shape"]) != tuple(shape):
                    raise PredictionFileError(f"{name}: declared shape {tuple(meta['shape'])}, "
                                              f"expected {tuple(shape)}")
                nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                if info.file_size != offset + nbytes:
                    raise PredictionFileError(f"{name}: declared size {info.file_size} bytes, "
                                              f"expected {offset + nbytes}")
                buf = bytearray(raw[offset:])
                while len(buf) < nbytes:  # never more than the declared, checked size
                    chunk = fh.read(min(1 << 22, nbytes - len(buf)))
                    if not chunk:
                        raise PredictionFileError(f"{name}: truncated data")
                    buf += chunk
            arr = np.frombuffer(bytes(buf[:nbytes]), dtype=dtype)
            order = "F" if meta["fortran_order"] else "C"
            out[name] = arr.reshape(shape, order=order).copy()
    return out
