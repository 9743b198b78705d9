"""Run untrusted solver code in a child Python process with hard limits.

The child gets its own session (so the whole process group can be killed, grandchildren
included), a scratch working directory, an environment built from an allowlist (no API keys or
tokens can leak into generated code), and a wall-clock timeout. Resource limits (address space,
file size, no core dumps) are set by the child itself, first thing, before NumPy or the solver is
imported (see :mod:`pdesharp.evaluate.harness`): ``preexec_fn`` is unsafe in a threaded parent.

stdout and stderr go to files in the scratch directory rather than pipes: a grandchild that
inherits a pipe and outlives the solver would otherwise keep the reader waiting.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

import pdesharp

TAIL_CHARS = 5000  # CodePDE feeds the last 5,000 characters of stdout/stderr back to the model
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "XLA_FLAGS")
_PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
_KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
MARKER = "PDESHARP_SANDBOX_ID"


NUMERICAL_LIBRARIES = ("numpy", "scipy", "numba", "torch", "jax", "cupy", "sympy", "pyfftw",
                       "h5py", "matplotlib", "numexpr", "petsc4py", "fenics", "dolfinx")


def available_libraries() -> list[str]:
    """Numerical libraries a solver can import inside the sandbox.

    The child runs this interpreter with ``PYTHONNOUSERSITE=1``, so packages that exist only in
    the user site directory are not importable there and are left out.
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


def package_root() -> Path:
    """The folder that contains the ``pdesharp`` package (for the child's PYTHONPATH)."""
    return Path(pdesharp.__file__).resolve().parent.parent


def build_env(scratch: Path, *, threads: int = 1, base: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: an allowlist, never the parent's environment wholesale.

    Only locale/PATH variables pass through; HOME and TMPDIR point into the scratch directory;
    BLAS/OpenMP thread pools are capped so that ``workers`` parallel evaluations do not
    oversubscribe the cores (and so that per-thread BLAS buffers stay inside the memory limit).
    """
    base = os.environ if base is None else base
    env = {k: base[k] for k in _PASS_THROUGH if k in base}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = str(scratch)
    env["TMPDIR"] = str(scratch)
    env["PYTHONPATH"] = str(package_root())
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"  # a killed child still leaves its last prints behind
    env["MPLBACKEND"] = "Agg"
    env["MPLCONFIGDIR"] = str(scratch / ".mpl")
    env["CUDA_VISIBLE_DEVICES"] = ""  # deliberate: CodePDE's default silently hid the GPU too
    env["JAX_PLATFORMS"] = "cpu"
    # a marker every descendant inherits unless it clears its environment: lets the parent find
    # processes that left the session (setsid) after the child exited
    env[MARKER] = uuid.uuid4().hex
    for var in THREAD_VARS[:-1]:
        env[var] = str(threads)
    return env


@dataclass
class SandboxRun:
    """What happened to the child process."""

    returncode: int | None
    timed_out: bool
    wall_seconds: float
    peak_rss_mb: float | None
    stdout_tail: str
    stderr_tail: str
    killed_leftovers: list[int] = field(default_factory=list)  # pids killed after the child exited

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


def read_tail(path: Path, n: int = TAIL_CHARS) -> str:
    """The last ``n`` characters of a text file (reading only the end of a huge log)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 4 * n))
            data = fh.read()
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")[-n:]


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return []


def _rss_mb(procs: list[psutil.Process]) -> float:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def _killpg(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def run_sandboxed(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
                        poll_seconds: float = 0.1) -> SandboxRun:
    """Run ``argv`` in a new session under ``timeout``; kill its whole process group afterwards."""
    out_path, err_path = cwd / "stdout.txt", cwd / "stderr.txt"
    t0 = time.perf_counter()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=out, stderr=err, start_new_session=True,
        )
    pgid = proc.pid  # start_new_session makes the child a session and group leader
    try:
        ps_root = psutil.Process(proc.pid)
    except psutil.Error:
        ps_root = None
    seen: dict[int, psutil.Process] = {}  # every descendant observed, to catch setsid escapees
    peak = 0.0
    timed_out = False
    deadline = t0 + timeout
    wait_task = asyncio.ensure_future(proc.wait())
    try:
        while not wait_task.done():
            if ps_root is not None:
                procs = _tree(ps_root)
                for p in procs[1:]:
                    seen.setdefault(p.pid, p)
                peak = max(peak, _rss_mb(procs))
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                timed_out = True
                break
            await asyncio.wait({wait_task}, timeout=min(poll_seconds, remaining))
        if timed_out:
            _killpg(pgid, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(wait_task), _KILL_GRACE)
            except asyncio.TimeoutError:
                pass
            _killpg(pgid, signal.SIGKILL)
            await wait_task
    except asyncio.CancelledError:
        _killpg(pgid, signal.SIGKILL)
        raise
    finally:
        killed = _kill_leftovers(pgid, seen, env.get(MARKER))
    wall = time.perf_counter() - t0
    return SandboxRun(
        returncode=proc.returncode, timed_out=timed_out, wall_seconds=wall,
        peak_rss_mb=peak or None, stdout_tail=read_tail(out_path), stderr_tail=read_tail(err_path),
        killed_leftovers=killed,
    )


def _marked(marker: str | None) -> list[psutil.Process]:
    """Processes of this user whose environment carries the sandbox marker."""
    if not marker:
        return []
    me = os.getuid()
    found = []
    for p in psutil.process_iter(["uids"]):
        try:
            if p.info["uids"] and p.info["uids"].real == me and p.pid != os.getpid() \
                    and p.environ().get(MARKER) == marker:
                found.append(p)
        except (psutil.Error, OSError):
            pass
    return found


def _kill_leftovers(pgid: int, seen: dict[int, psutil.Process], marker: str | None = None) -> list[int]:
    """Kill whatever the solver left running: its process group, any descendant we saw, and
    any process carrying this sandbox's environment marker.

    Waits (briefly) until they are gone, so that callers can rely on it on return.
    """
    victims: list[psutil.Process] = []
    if _group_alive(pgid):
        for p in psutil.process_iter():
            try:
                if os.getpgid(p.pid) == pgid:
                    victims.append(p)
            except (psutil.Error, OSError):
                pass
        _killpg(pgid, signal.SIGKILL)
    for p in _marked(marker):
        seen.setdefault(p.pid, p)
    for p in seen.values():
        try:
            if p.is_running():  # is_running compares creation times, so a reused pid is safe
                p.kill()
                victims.append(p)
        except psutil.Error:
            pass
    if victims:
        psutil.wait_procs(victims, timeout=2.0)
    return sorted({p.pid for p in victims})
