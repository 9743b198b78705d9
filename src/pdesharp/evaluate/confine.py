"""Kernel confinement a process applies to itself: rlimits, Landlock, seccomp, prctl.

Standalone on purpose (standard library only, no ``pdesharp`` imports): the sealed child runs
this file from a read-only copy of the package's ``evaluate`` folder inside the sandbox, where
the rest of the package is not reachable. The parent imports it too, to probe what the kernel
offers (:func:`landlock_abi`, :func:`seccomp_available`).

Inside bubblewrap these are defence in depth (except the socket families: AF_VSOCK and other
families the network namespace does not isolate are refused only here); in the ``landlock``
fallback (no user namespaces) they are the seal: Landlock limits which files can be read and
written, forbids TCP and scopes signals and abstract Unix sockets to the sandbox; seccomp forbids
ptrace-like access to other processes, kernel-facing system calls and, there, every socket but a
connected AF_UNIX stream pair (see :func:`seccomp_program`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct

# dlopen(NULL): the C library the interpreter already links (find_library spawns ldconfig)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2


class ConfineError(OSError):
    """The kernel refused a confinement step the caller asked for."""


def prctl(option: int, arg: int = 0) -> None:
    if _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise ConfineError(e, f"prctl({option}): {os.strerror(e)}")


def die_with_parent(expected_ppid: int | None = None) -> None:
    """SIGKILL this process when its parent dies (and at once if it already has)."""
    import signal

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if expected_ppid is not None and os.getppid() != expected_ppid:
        os._exit(137)


def set_limits(*, memory_mb: int | None, fsize_mb: int | None, nproc: int | None = None,
               nofile: int | None = 1024) -> None:
    """Per-process limits (the cgroup, where available, limits the sandbox as a whole)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for res, mb in ((resource.RLIMIT_AS, memory_mb), (resource.RLIMIT_FSIZE, fsize_mb)):
        if mb:
            resource.setrlimit(res, (int(mb) * 2**20, int(mb) * 2**20))
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if nofile:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        cap = nofile if hard == resource.RLIM_INFINITY else min(nofile, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, cap), cap))


# -- Landlock -------------------------------------------------------------------------------
_NR = {  # system call numbers, from the kernel's unistd headers
    "x86_64": dict(landlock_create_ruleset=444, landlock_add_rule=445, landlock_restrict_self=446),
    "aarch64": dict(landlock_create_ruleset=444, landlock_add_rule=445, landlock_restrict_self=446),
}
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 16, 32, 64, 128
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 256, 512, 1024, 2048, 4096
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
WRITE_ONLY = (FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR
              | FS_MAKE_REG | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM)


def _syscall(name: str, *args) -> int:
    nr = _NR.get(platform.machine(), {}).get(name)
    if nr is None:
        raise ConfineError(errno.ENOSYS, f"{name}: unknown on {platform.machine()}")
    return _libc.syscall(ctypes.c_long(nr), *args)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: not available)."""
    try:
        v = _syscall("landlock_create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except ConfineError:
        return 0
    return max(int(v), 0)


def _fs_mask(abi: int) -> int:
    mask = READ | WRITE_ONLY
    if abi >= 2:
        mask |= FS_REFER
    if abi >= 3:
        mask |= FS_TRUNCATE
    return mask  # IOCTL_DEV (ABI 5) is left unhandled: device ioctls (GPU) stay allowed


def landlock(*, read: list[str], write: list[str], restrict_reads: bool, deny_tcp: bool,
             scope: bool = True) -> int:
    """Restrict this thread (and its future children) to the given trees; returns the ABI used.

    ``read`` trees get read/execute access, ``write`` trees full access. With
    ``restrict_reads=False`` only writing is restricted (reads stay as the mount namespace
    allows). ``deny_tcp`` forbids every TCP bind and connect (ABI 4), ``scope`` confines
    signals and abstract Unix sockets to the sandbox (ABI 6). Raises ConfineError when the
    kernel has no Landlock; paths that do not exist are skipped.
    """
    abi = landlock_abi()
    if abi < 1:
        raise ConfineError(errno.ENOSYS, "Landlock is not available in this kernel")
    handled = _fs_mask(abi) if restrict_reads else _fs_mask(abi) & ~READ
    net = (NET_BIND_TCP | NET_CONNECT_TCP) if (deny_tcp and abi >= 4) else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if (scope and abi >= 6) else 0
    attr = struct.pack("QQQ", handled, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    buf = ctypes.create_string_buffer(attr[:size], size)
    fd = _syscall("landlock_create_ruleset", buf, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        e = ctypes.get_errno()
        raise ConfineError(e, f"landlock_create_ruleset: {os.strerror(e)}")
    try:
        for paths, access in ((read, READ & handled), (write, handled)):
            for path in paths:
                try:
                    pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = access
                    if not os.path.isdir(path):  # file rules take file rights only
                        allowed &= FS_EXECUTE | FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE
                    rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, pfd), 12)
                    if _syscall("landlock_add_rule", ctypes.c_int(fd), ctypes.c_int(1), rule,
                                ctypes.c_uint32(0)) != 0:
                        e = ctypes.get_errno()
                        raise ConfineError(e, f"landlock_add_rule({path}): {os.strerror(e)}")
                finally:
                    os.close(pfd)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if _syscall("landlock_restrict_self", ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            e = ctypes.get_errno()
            raise ConfineError(e, f"landlock_restrict_self: {os.strerror(e)}")
    finally:
        os.close(fd)
    return abi


# -- seccomp --------------------------------------------------------------------------------
# Denied everywhere: access to other processes' memory, kernel-facing administration, new
# namespaces and mounts, io_uring (it bypasses seccomp), kernel keyrings, BPF, perf.
_DENY = ("ptrace process_vm_readv process_vm_writev kexec_load kexec_file_load init_module "
         "finit_module delete_module bpf perf_event_open keyctl add_key request_key userfaultfd "
         "mount umount2 pivot_root chroot unshare setns open_by_handle_at name_to_handle_at "
         "mount_setattr move_mount open_tree fsopen fsconfig fsmount fspick io_uring_setup "
         "io_uring_enter io_uring_register swapon swapoff reboot syslog quotactl acct "
         "settimeofday clock_settime lookup_dcookie iopl ioperm").split()
_SYSCALLS = {
    "x86_64": dict(
        socket=41, connect=42, bind=49, socketpair=53, ptrace=101, syslog=103, pivot_root=155, chroot=161, acct=163,
        settimeofday=164, mount=165, umount2=166, swapon=167, swapoff=168, reboot=169, iopl=172,
        ioperm=173, init_module=175, delete_module=176, quotactl=179, lookup_dcookie=212,
        clock_settime=227, kexec_load=246, add_key=248, request_key=249, keyctl=250,
        unshare=272, perf_event_open=298, name_to_handle_at=303, open_by_handle_at=304,
        setns=308, process_vm_readv=310, process_vm_writev=311, finit_module=313,
        kexec_file_load=320, bpf=321, userfaultfd=323, io_uring_setup=425, io_uring_enter=426,
        io_uring_register=427, open_tree=428, move_mount=429, fsopen=430, fsconfig=431,
        fsmount=432, fspick=433, clone3=435, mount_setattr=442),
    "aarch64": dict(
        socket=198, socketpair=199, bind=200, connect=203, ptrace=117, syslog=116, pivot_root=41, chroot=51, acct=89, settimeofday=170,
        mount=40, umount2=39, swapon=224, swapoff=225, reboot=142, init_module=105,
        delete_module=106, quotactl=60, lookup_dcookie=18, clock_settime=112, kexec_load=104,
        add_key=217, request_key=218, keyctl=219, unshare=97, perf_event_open=241,
        name_to_handle_at=264, open_by_handle_at=265, setns=268, process_vm_readv=270,
        process_vm_writev=271, finit_module=273, kexec_file_load=294, bpf=280, userfaultfd=282,
        io_uring_setup=425, io_uring_enter=426, io_uring_register=427, open_tree=428,
        move_mount=429, fsopen=430, fsconfig=431, fsmount=432, fspick=433, clone3=435,
        mount_setattr=442),
}
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_TYPE_MASK = 1, 0xF
# Socket families whose reach a network namespace confines: everything else (AF_VSOCK to the
# hypervisor, AF_ALG, AF_PACKET, Bluetooth, CAN, RDS, TIPC, ...) is refused even in bubblewrap.
NAMESPACED_FAMILIES = (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK)
SOCKET_RULES = ("namespaced", "unix-pair")


def seccomp_available() -> bool:
    try:
        with open("/proc/self/status") as fh:
            return any(line.startswith("Seccomp:") for line in fh)
    except OSError:
        return False


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


LD_W_ABS, JEQ_K, JGE_K, RET_K, AND_K = 0x20, 0x15, 0x35, 0x06, 0x54
_ARG0, _ARG1 = 16, 24  # offsets of args[0] and args[1] (low 32 bits) in struct seccomp_data


def _socket_rules(nrs: dict, sockets: str) -> list[bytes]:
    """The socket part of the filter (each block ends by reloading the call number).

    ``namespaced`` (inside bubblewrap): ``socket()`` only for :data:`NAMESPACED_FAMILIES`.
    ``unix-pair`` (the Landlock fallback, where the host's network and file system are the
    sandbox's): ``socket()`` only for AF_UNIX streams, ``socketpair()`` only for streams, and no
    ``connect()`` or ``bind()`` at all. A socket can then only talk to the peer it was created
    with: the sockaddr of ``connect``/``sendmsg`` is behind a pointer seccomp cannot read, so no
    rule could tell a host path (``/run/...``) from one inside the scratch folder; a stream
    socket refuses a destination address in ``sendto``/``sendmsg`` (EISCONN/EOPNOTSUPP), which
    closes the datagram route to host sockets such as ``/dev/log``.
    """
    eaf, eperm = _RET_ERRNO | errno.EAFNOSUPPORT, _RET_ERRNO | errno.EPERM
    if sockets == "namespaced":
        n = len(NAMESPACED_FAMILIES)
        out = [_insn(JEQ_K, 0, n + 2, nrs["socket"]), _insn(LD_W_ABS, 0, 0, _ARG0)]
        for i, fam in enumerate(NAMESPACED_FAMILIES):  # allowed: jump past the refusal
            out.append(_insn(JEQ_K, n - i, 0, fam))
        return out + [_insn(RET_K, 0, 0, eaf), _insn(LD_W_ABS, 0, 0, 0)]
    if sockets != "unix-pair":
        raise ValueError(f"unknown socket rule {sockets!r} (choose from {SOCKET_RULES})")
    out = []
    for name in ("connect", "bind"):
        out += [_insn(JEQ_K, 0, 1, nrs[name]), _insn(RET_K, 0, 0, eperm)]
    # socket(): family AF_UNIX and type SOCK_STREAM (flags such as SOCK_CLOEXEC masked off)
    out += [_insn(JEQ_K, 0, 6, nrs["socket"]),
            _insn(LD_W_ABS, 0, 0, _ARG0), _insn(JEQ_K, 0, 3, AF_UNIX),
            _insn(LD_W_ABS, 0, 0, _ARG1), _insn(AND_K, 0, 0, SOCK_TYPE_MASK),
            _insn(JEQ_K, 1, 0, SOCK_STREAM),
            _insn(RET_K, 0, 0, eaf)]
    out.append(_insn(LD_W_ABS, 0, 0, 0))
    # socketpair(): streams only (a datagram pair could still send to a named host socket)
    out += [_insn(JEQ_K, 0, 4, nrs["socketpair"]),
            _insn(LD_W_ABS, 0, 0, _ARG1), _insn(AND_K, 0, 0, SOCK_TYPE_MASK),
            _insn(JEQ_K, 1, 0, SOCK_STREAM),
            _insn(RET_K, 0, 0, eaf)]
    return out + [_insn(LD_W_ABS, 0, 0, 0)]


def seccomp_program(machine: str | None = None, *, sockets: str) -> bytes:
    """A classic-BPF filter: deny the calls in ``_DENY`` with EPERM (and ``clone3`` with ENOSYS,
    so that libc falls back to ``clone``), and restrict sockets as ``sockets`` says
    (:func:`_socket_rules`). Any other architecture's calls kill the process."""
    machine = machine or platform.machine()
    nrs, arch = _SYSCALLS[machine], _AUDIT_ARCH[machine]
    deny = sorted({nrs[n] for n in _DENY if n in nrs})
    body: list[bytes] = []
    # per denied call: "if nr == k: return EPERM" (two instructions each, no long jumps)
    for nr in deny:
        body += [_insn(JEQ_K, 0, 1, nr), _insn(RET_K, 0, 0, _RET_ERRNO | errno.EPERM)]
    body += [_insn(JEQ_K, 0, 1, nrs["clone3"]), _insn(RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    body += _socket_rules(nrs, sockets)
    head = [_insn(LD_W_ABS, 0, 0, 4), _insn(JEQ_K, 1, 0, arch),
            _insn(RET_K, 0, 0, _RET_KILL_PROCESS), _insn(LD_W_ABS, 0, 0, 0)]
    if machine == "x86_64":  # the x32 ABI reaches the same calls under other numbers
        head += [_insn(JGE_K, 0, 1, 0x40000000), _insn(RET_K, 0, 0, _RET_ERRNO | errno.EPERM)]
    return b"".join(head + body + [_insn(RET_K, 0, 0, _RET_ALLOW)])


def seccomp(*, sockets: str) -> None:
    """Install :func:`seccomp_program` on this thread (and its future children)."""
    if platform.machine() not in _SYSCALLS:
        raise ConfineError(errno.ENOSYS, f"no seccomp table for {platform.machine()}")
    prog = seccomp_program(sockets=sockets)
    n = len(prog) // 8
    buf = ctypes.create_string_buffer(prog, len(prog))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(n, ctypes.cast(buf, ctypes.c_void_p))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if _libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog),
                   0, 0) != 0:
        e = ctypes.get_errno()
        raise ConfineError(e, f"seccomp: {os.strerror(e)}")
