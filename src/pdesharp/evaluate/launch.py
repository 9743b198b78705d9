"""The launcher: ``python -I -S launch.py CONFIG_JSON``, between the parent and the sandbox.

Standalone (standard library only). It runs with the parent's identity and does, in order, what
must happen before any sandboxed code exists, without ``preexec_fn`` in a threaded parent:

1. joins the evaluation's cgroups (so every later process is limited and counted together);
2. when running as root and the Python runtime sits under a folder the sandbox user cannot
   enter (``/root/.pyenv``, mode 700), builds a private mount namespace in which that folder
   is an empty tmpfs with only the runtime folders bound back in (nothing else of it visible);
   In the Landlock fallback, as root, it also mounts a size-limited tmpfs over the scratch
   folder in that private view, so the solver's files are bounded in total and vanish with
   the sandbox (the host folder underneath stays empty);
3. drops to the unprivileged sandbox user (no supplementary groups, no capabilities, no new
   privileges), so that even a namespace escape lands as ``nobody``, never as root;
4. asks for SIGKILL if the parent dies, and execs the sandbox command (bubblewrap, or the
   child directly in the Landlock fallback).

Failures are printed on stderr as ``pdesharp-launch: ...`` with exit status 125.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_SLAVE = 2, 4, 4096, 0x4000, 1 << 19
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38


def _fail(msg: str) -> None:
    sys.stderr.write(f"pdesharp-launch: {msg}\n")
    sys.stderr.flush()
    os._exit(125)


def _check(ret: int, what: str, libc) -> None:
    if ret != 0:
        e = ctypes.get_errno()
        _fail(f"{what}: {os.strerror(e)}")


def private_mounts(libc) -> None:
    """A mount namespace of our own, which no mount we make propagates out of."""
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)", libc)
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_SLAVE, None), "mount --make-rslave /", libc)


def private_view(libc, hide: list[str], roots: list[str]) -> None:
    """Mount tmpfs over each folder in ``hide`` and bind each of ``roots`` back inside it."""
    fds = {r: os.open(r, os.O_PATH | os.O_DIRECTORY) for r in roots}  # opened in the new ns
    for top in hide:
        _check(libc.mount(b"tmpfs", top.encode(), b"tmpfs", 0, b"mode=0755,size=1m"),
               f"tmpfs on {top}", libc)
    for root, fd in fds.items():
        os.makedirs(root, exist_ok=True)
        _check(libc.mount(f"/proc/self/fd/{fd}".encode(), root.encode(), None,
                          MS_BIND | MS_REC, None), f"bind {root}", libc)
        os.close(fd)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    # dlopen(NULL): the C library the interpreter already links. ctypes.util.find_library
    # would spawn ldconfig (~40 ms of start-up per evaluation, twice)
    libc = ctypes.CDLL(None, use_errno=True)
    for procs in cfg.get("cgroup_procs", []):
        try:
            with open(procs, "w") as fh:
                fh.write(str(os.getpid()))
        except OSError as exc:
            _fail(f"cannot join cgroup {procs}: {exc.strerror}")
    view, tmpfs = cfg.get("view"), cfg.get("scratch_tmpfs")
    if view or tmpfs:
        private_mounts(libc)
    if view:
        private_view(libc, view["hide"], view["roots"])
    if tmpfs:  # {"path", "bytes", "inodes", "uid", "gid"}: the scratch folder, bounded
        opts = (f"size={tmpfs['bytes']},nr_inodes={tmpfs['inodes']},mode=0755,"
                f"uid={tmpfs['uid']},gid={tmpfs['gid']}")
        _check(libc.mount(b"tmpfs", tmpfs["path"].encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                          opts.encode()), f"tmpfs on {tmpfs['path']}", libc)
        tmp = os.path.join(tmpfs["path"], "tmp")
        os.mkdir(tmp, 0o755)
        os.chown(tmp, tmpfs["uid"], tmpfs["gid"])
    uid, gid = cfg.get("uid"), cfg.get("gid")
    if uid is not None and os.getuid() != uid:
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)  # drops every capability (no SECBIT_KEEP_CAPS)
        except OSError as exc:
            _fail(f"cannot drop to uid {uid}: {exc.strerror}")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs", libc)
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig", libc)
    if os.getppid() != cfg["parent_pid"]:
        os._exit(137)  # the parent died before we could ask to die with it
    if cfg.get("cwd"):
        os.chdir(cfg["cwd"])
    argv = cfg["argv"]
    try:
        os.execve(argv[0], argv, cfg["env"])
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc.strerror}")


if __name__ == "__main__":
    main()
