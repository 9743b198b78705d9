"""One cgroup per evaluation: memory and process limits on the whole sandbox, all descendants.

Both cgroup versions are supported:

- **v2** (a ``cgroup2`` mount offering ``memory`` and ``pids``): evaluations live under
  ``<mount>/pdesharp/``, a child of the hierarchy's root, because v2 forbids enabling
  controllers below a cgroup that itself holds processes (ours does). Needs write access to the
  root's ``cgroup.subtree_control`` (root, or a delegated hierarchy mounted for us).
- **v1** (separate ``memory`` and ``pids`` hierarchies): evaluations are children of this
  process's own cgroup in each, so the limits the machine already puts on us still apply.

Where neither is writable, :func:`create` returns ``None`` with the reason, and the sandbox
falls back to its PID namespace plus per-process limits (``RLIMIT_AS``, ``RLIMIT_NPROC``).
All file access goes through ``root`` paths, so tests can point the code at a fake tree.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "pdesharp-eval-"


@dataclass
class Hierarchy:
    version: int
    mount: Path
    own: str  # this process's cgroup path inside the hierarchy ("/..." )
    controllers: set[str]


def _mounts(mountinfo: str) -> list[tuple[Path, str, set[str]]]:
    out = []
    for line in mountinfo.splitlines():
        pre, _, post = line.partition(" - ")
        parts, tail = pre.split(), post.split()
        if len(parts) < 5 or len(tail) < 3:
            continue
        fstype, opts = tail[0], set(tail[2].split(","))
        if fstype in ("cgroup", "cgroup2"):
            out.append((Path(parts[4]), fstype, opts))
    return out


def hierarchies(mountinfo: str | None = None, self_cgroup: str | None = None) -> list[Hierarchy]:
    """The cgroup hierarchies this process sees, with the controllers each offers."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    if self_cgroup is None:
        self_cgroup = Path("/proc/self/cgroup").read_text()
    own: dict[str, str] = {}
    for line in self_cgroup.splitlines():
        hid, ctrls, path = (line.split(":", 2) + ["", ""])[:3]
        own["" if hid == "0" else ctrls] = path
    found = []
    for mount, fstype, opts in _mounts(mountinfo):
        if fstype == "cgroup2":
            try:
                ctrls = set((mount / "cgroup.controllers").read_text().split())
            except OSError:
                ctrls = set()
            found.append(Hierarchy(2, mount, own.get("", "/"), ctrls))
        else:
            ctrls = opts & {"memory", "pids", "cpu", "cpuacct", "cpuset", "devices", "freezer",
                            "blkio", "perf_event", "hugetlb", "net_cls", "net_prio", "rdma"}
            key = next((k for k in own if k and set(k.split(",")) == ctrls), None)
            found.append(Hierarchy(1, mount, own.get(key, "/") if key else "/", ctrls))
    return found


@dataclass
class Limits:
    memory_bytes: int | None
    pids: int | None


@dataclass
class SandboxCgroup:
    """The cgroup directories of one evaluation (one for v2; one per controller for v1)."""

    version: int
    dirs: dict[str, Path]  # controller ("memory", "pids", or "unified") -> directory
    notes: list[str] = field(default_factory=list)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in dict.fromkeys(self.dirs.values())]

    def _read(self, ctrl: str, name: str) -> str | None:
        d = self.dirs.get(ctrl) or self.dirs.get("unified")
        try:
            return (d / name).read_text() if d else None
        except OSError:
            return None

    def peak_memory_bytes(self) -> int | None:
        raw = self._read("memory", "memory.peak" if self.version == 2
                         else "memory.max_usage_in_bytes")
        try:
            return int(raw) if raw else None
        except ValueError:
            return None

    def oom_kills(self) -> int:
        """OOM kills inside the sandbox (v2 memory.events, v1 memory.oom_control)."""
        raw = self._read("memory", "memory.events" if self.version == 2 else "memory.oom_control")
        for line in (raw or "").splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v or 0)
        if self.version == 1:  # kernels before 4.13 have no oom_kill counter: use failcnt
            fail = self._read("memory", "memory.failcnt")
            return 1 if fail and fail.strip() not in ("", "0") else 0
        return 0

    def pids_limit_hit(self) -> bool:
        raw = self._read("pids", "pids.events") or ""
        return any(line.split()[-1] != "0" for line in raw.splitlines()
                   if line.startswith("max "))

    def pids(self) -> list[int]:
        out: set[int] = set()
        for f in self.procs_files:
            try:
                out |= {int(x) for x in Path(f).read_text().split()}
            except (OSError, ValueError):
                pass
        return sorted(out)

    def kill(self) -> int:
        """SIGKILL everything in the cgroup (v2 ``cgroup.kill`` where the kernel has it)."""
        before = self.pids()
        if self.version == 2:
            kill = next(iter(self.dirs.values())) / "cgroup.kill"
            if kill.exists():
                try:
                    kill.write_text("1")
                except OSError:
                    pass
        for _ in range(100):
            alive = self.pids()
            if not alive:
                break
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)
        return len(before)

    def remove(self) -> None:
        for d in dict.fromkeys(self.dirs.values()):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last killed task is still exiting
                    time.sleep(0.02)


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _v2_base(h: Hierarchy) -> Path:
    """``<mount>/pdesharp`` with memory and pids enabled for its children."""
    need = {"memory", "pids"}
    if not need <= h.controllers:
        raise OSError(f"the cgroup2 hierarchy at {h.mount} offers no "
                      f"{' or '.join(sorted(need - h.controllers))} controller (they are bound "
                      "to cgroup v1 hierarchies)")
    root_ctl = h.mount / "cgroup.subtree_control"
    enabled = set(root_ctl.read_text().split())
    if not need <= enabled:
        _write(root_ctl, " ".join(f"+{c}" for c in sorted(need - enabled)))
    base = h.mount / "pdesharp"
    base.mkdir(exist_ok=True)
    ctl = base / "cgroup.subtree_control"
    if not need <= set(ctl.read_text().split()):
        _write(ctl, "+memory +pids")
    return base


def create(limits: Limits, *, found: list[Hierarchy] | None = None,
           name: str | None = None) -> tuple[SandboxCgroup | None, str]:
    """A fresh cgroup with ``limits`` for one evaluation, or ``(None, why not)``."""
    found = hierarchies() if found is None else found
    if not _swept:
        _swept.append(remove_stale(found))  # once per process: leftovers of a killed parent
    name = name or f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    reasons = []
    for h in found:
        if h.version != 2:
            continue
        try:
            d = _v2_base(h) / name
            d.mkdir()
            cg = SandboxCgroup(2, {"unified": d})
            if limits.memory_bytes:
                _write(d / "memory.max", str(limits.memory_bytes))
                if (d / "memory.swap.max").exists():
                    _write(d / "memory.swap.max", "0")
            if limits.pids:
                _write(d / "pids.max", str(limits.pids))
            return cg, f"cgroup v2 at {d.parent}"
        except OSError as exc:
            reasons.append(f"cgroup v2: {exc}")
    dirs: dict[str, Path] = {}
    try:
        for ctrl in ("memory", "pids"):
            h = next((h for h in found if h.version == 1 and ctrl in h.controllers), None)
            if h is None:
                reasons.append(f"cgroup v1: no {ctrl} hierarchy")
                continue
            d = h.mount / h.own.lstrip("/") / name
            d.mkdir()
            dirs[ctrl] = d
            if ctrl == "memory" and limits.memory_bytes:
                _write(d / "memory.limit_in_bytes", str(limits.memory_bytes))
                sw = d / "memory.memsw.limit_in_bytes"
                if sw.exists():  # no swapping past the limit
                    try:
                        _write(sw, str(limits.memory_bytes))
                    except OSError:
                        pass
            if ctrl == "pids" and limits.pids:
                _write(d / "pids.max", str(limits.pids))
    except OSError as exc:
        reasons.append(f"cgroup v1: {exc}")
        SandboxCgroup(1, dirs).remove()
        dirs = {}
    if dirs:
        cg = SandboxCgroup(1, dirs, notes=[r for r in reasons if "no pids" in r or "no memory" in r])
        return cg, "cgroup v1 (" + ", ".join(f"{k} at {v.parent}" for k, v in dirs.items()) + ")"
    return None, "; ".join(reasons) or "no cgroup hierarchy is mounted"


_swept: list[int] = []


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a killed process its parent has not reaped yet is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


STALE_WAIT = 60.0  # seconds a dead parent's sandbox may take to finish dying (a loaded machine)


def remove_stale(found: list[Hierarchy] | None = None) -> int:
    """Remove evaluation cgroups left by a pdesharp process that died (kill -9).

    Its sandbox dies with it, but not at once: the kernel tears the processes down while
    this runs, and a cgroup that still holds one cannot be removed. So whatever is left in
    such a cgroup is killed, and its removal waits until the cgroup is empty (at most
    :data:`STALE_WAIT` seconds), instead of trying once and leaving the folder behind."""
    found = hierarchies() if found is None else found
    stale: dict[str, dict[str, Path]] = {}  # cgroup name -> controller directory per hierarchy
    for i, h in enumerate(found):
        bases = [h.mount / "pdesharp"] if h.version == 2 else [h.mount / h.own.lstrip("/")]
        for base in bases:
            try:
                entries = list(base.glob(f"{PREFIX}*"))
            except OSError:
                continue
            for d in entries:
                try:
                    owner = int(d.name[len(PREFIX):].split("-")[0])
                except ValueError:
                    continue
                if owner != os.getpid() and not _alive(owner) and d.is_dir():
                    stale.setdefault(d.name, {})[f"{h.version}:{i}"] = d
    removed = 0
    for dirs in stale.values():
        cg = SandboxCgroup(2 if all(k.startswith("2:") for k in dirs) else 1, dirs)
        end = time.monotonic() + STALE_WAIT
        cg.kill()
        while cg.pids() and time.monotonic() < end:
            cg.kill()
            time.sleep(0.05)
        for d in dirs.values():
            while True:
                try:
                    os.rmdir(d)
                    removed += 1
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY: a task is still on its way out
                    if time.monotonic() >= end:
                        break
                    time.sleep(0.05)
    return removed
