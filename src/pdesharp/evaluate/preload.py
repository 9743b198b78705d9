"""The libraries a solver file imports, imported before its clock starts (in the sealed child's
runner, before "ready"). Standalone like ``child.py`` (standard library only): inside the
sandbox this file is a read-only copy beside it, and the rest of ``pdesharp`` is not reachable.
"""

from __future__ import annotations

import sys

LIBRARIES = ("numpy", "scipy", "numba")  # the libraries a standalone solver file imports


def library_imports(code: str, limit: int = 64) -> list[str]:
    """Modules of NumPy, SciPy and Numba named by the solver file's unindented import lines:
    ``import a.b as c`` names ``a.b``; ``from a.b import c, d`` names ``a.b``, ``a.b.c`` and
    ``a.b.d`` (the last two may be functions, not modules). Reading stops at the first line
    that touches the environment (``os.environ``, ``putenv``): a library reads it when it is
    imported, so a file that sets NUMBA_NUM_THREADS before ``import numba`` keeps that order.
    A line that only looks like an import (in a docstring) names library modules at most."""
    import re

    names: list[str] = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        if "environ" in line or "putenv" in line or len(names) >= limit:
            break
        m = re.match(r"(import|from)\s+([\w.]+)(.*)", line)
        if not m:
            continue
        if m.group(1) == "import":
            items = (m.group(2) + m.group(3)).split("#")[0].split(",")
            names += [item.split(" as ")[0].strip() for item in items]
            continue
        base, rest = m.group(2), m.group(3).split("#")[0]
        if not rest.lstrip().startswith("import"):
            continue
        rest = rest.lstrip()[len("import"):]
        for more in lines[i + 1:i + 20]:  # from a import (b,\n c)
            if "(" not in rest or ")" in rest:
                break
            rest += " " + more.split("#")[0]
        items = rest.replace("(", " ").replace(")", " ").replace("\\", " ").split(",")
        names += [base] + [f"{base}.{item.split(' as ')[0].strip()}" for item in items]
    return [n for n in names if n.split(".")[0] in LIBRARIES
            and all(p.isidentifier() for p in n.split("."))][:limit]


def preload_libraries(code: str) -> list[str]:
    """Import the library modules of :func:`library_imports` before the solver's clock starts,
    and return those imported. A library's import is a one-off that a user's script pays once
    per process and every solver alike (scipy.sparse.linalg ~0.15 s, numba ~0.3 s); timed, it
    outweighed a 4 ms solve. No code of the solver runs here, only installed modules of these
    packages, by name; the solver's folder is not on the path yet. A name that is not such a
    module is skipped, and the solver's own import then counts as before. (The watchdog's
    deadline runs from the fork, so this time is bounded too.)"""
    import importlib

    done = []
    for name in dict.fromkeys(library_imports(code)):
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
            done.append(name)
        except Exception:  # not a module (from numpy.fft import rfft), or not installed here
            pass
    return done
