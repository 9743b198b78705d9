"""The sealed child: ``python -I child.py JOB_FD INPUTS_FD OUTPUT_FD EVENTS_FD``.

Standalone on purpose (standard library, NumPy in the runner, and the siblings ``confine.py``,
``preload.py`` and ``held.py``):
inside the sandbox this file is a read-only copy and the rest of ``pdesharp`` is not reachable.

Two processes, so that the one that measures is not the one being measured:

- the **watchdog** (this process; PID 1 of the sandbox's PID namespace under bubblewrap, where
  no process inside can signal or trace it) forks the runner, relays its "ready" to the parent,
  enforces the timeout itself (a stopped or killed parent cannot outwit it), and when the runner
  exits kills everything else in the sandbox. Only the watchdog holds the events pipe to the
  parent; it reports monotonic timestamps (the parent keeps the larger of its own and these).
- the **runner** confines itself (limits, Landlock, seccomp), loads NumPy and the inputs, says
  "ready" *before* the solver module is imported (so import-time work counts as solver time),
  runs the solver on every case, writes each output array into its fixed slot of the output
  memory file, writes a short status record, and leaves with ``os._exit`` (no ``atexit``).

A job may hold back its last case's inputs until the runner asks for them (``job["gate"]``, the
runner's warm timing): ``held.py``.

Nothing the runner writes is trusted by the parent beyond "these bytes are the prediction":
the parent fixed the shapes and slot sizes, checks the declared dtypes, and scores the arrays
itself. The runner never sees reference solutions, data paths, or the events pipe.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import sys
import time
import traceback

STATUS_OFFSET, STATUS_SIZE = 64, 65536 - 64  # status record: u32 length + JSON
HEADER_SIZE = 16  # per output slot: the dtype string (e.g. b"<f8"), NUL padded
ALLOWED_DTYPES = ("<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8")
MAX_TEXT = 4000


class OutputError(ValueError):
    """The solver returned something of the wrong kind or shape (status ``shape``)."""


# -- shared with the parent (pure functions) -------------------------------------------------
def solver_args(args: list, inputs: dict) -> list:
    """Positional arguments: ``["array", key]`` from ``inputs``, ``["arrays", [key, ...]]`` a
    tuple of them (a 2D grid's ``(x, y)``) or ``["scalar", value]``."""
    return [inputs[v] if kind == "array" else tuple(inputs[k] for k in v) if kind == "arrays"
            else v for kind, v in args]


def as_outputs(names: list[str], out) -> list:
    """The solver's return value as one real array per name (lists are converted)."""
    import numpy as np

    if len(names) == 1:
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        items = [out]
    else:
        if not isinstance(out, (tuple, list)) or len(out) != len(names):
            got = f"a {type(out).__name__}" + (f" of length {len(out)}"
                                               if isinstance(out, (tuple, list)) else "")
            raise OutputError(f"expected a tuple of {len(names)} arrays ({', '.join(names)}), "
                              f"got {got}")
        items = list(out)
    arrays = []
    for name, item in zip(names, items):
        try:
            arr = np.asarray(item)
        except Exception as exc:  # ragged lists, device arrays without __array__, ...
            raise OutputError(f"output {name!r} cannot be converted to a NumPy array: {exc}") \
                from exc
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise OutputError(f"output {name!r} has non-numeric dtype {arr.dtype}")
        if np.iscomplexobj(arr):
            raise OutputError(f"output {name!r} is complex; return the real solution")
        arrays.append(arr)
    return arrays


def check_shape(name: str, arr, expected: tuple, steady: bool) -> None:
    if tuple(arr.shape) != tuple(expected):
        hint = ""
        if not steady and arr.ndim == len(expected) and len(expected) > 1 \
                and arr.shape[1] != expected[1]:
            hint = f" (wrong number of frames: expected len(t_coordinate) = {expected[1]})"
        raise OutputError(f"output {name!r} has shape {tuple(arr.shape)}, expected "
                          f"{tuple(expected)}{hint}")


# -- the runner --------------------------------------------------------------------------------
def _confine(job: dict, notes: list) -> None:
    import confine  # the sibling file (sys.path[0] is this folder)

    c = job["confine"]
    lim = job["limits"]
    confine.set_limits(memory_mb=lim.get("rlimit_as_mb"), fsize_mb=lim.get("fsize_mb"),
                       nproc=lim.get("nproc"))
    strict = c["mode"] == "landlock"  # the fallback: these steps are the seal, not extras
    if c["mode"] == "none":
        return
    try:
        confine.landlock(read=c["read"], write=c["write"], restrict_reads=strict,
                         deny_tcp=strict)
    except OSError as exc:
        if strict:
            raise
        notes.append(f"landlock: {exc}")
    try:  # under bubblewrap too: AF_VSOCK & co. reach past the network namespace
        confine.seccomp(sockets="unix-pair" if strict else "namespaced")
    except OSError as exc:
        if strict or c.get("seccomp_required"):
            raise
        notes.append(f"seccomp: {exc}")


def _write_status(mm, status: dict) -> None:
    data = json.dumps(status, default=str).encode()[: STATUS_SIZE - 4]
    mm[STATUS_OFFSET:STATUS_OFFSET + 4 + len(data)] = struct.pack("<I", len(data)) + data


def _text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-MAX_TEXT:]


def runner(job: dict, code: str, inputs_fd: int, out_fd: int, ready_w: int,
           gate: tuple[int, int] | None = None) -> None:
    """Never returns. ``gate``: the pipes to ask for and receive the held-back inputs."""
    status = {"status": "error", "message": "", "stage": "setup", "notes": []}
    mm = None
    try:
        os.setsid()
    except OSError:
        pass
    try:
        import held  # the sibling files, read before the confinement like confine.py
        import preload

        _confine(job, status["notes"])
        import mmap

        import numpy as np

        mm = mmap.mmap(out_fd, job["output_size"])
        with os.fdopen(inputs_fd, "rb") as fh, np.load(fh, allow_pickle=False) as npz:
            inputs = {k: npz[k] for k in npz.files}
        with open("solver.py", "w") as fh:
            fh.write(code)
        status["stage"] = "importing the solver's libraries"
        preload.preload_libraries(code)
        sys.path.insert(0, os.getcwd())  # solvers may import helper modules they write beside
        # the solver's clock starts here, read before any of its code runs (so it is ours): the
        # watchdog, woken later on a loaded machine, would start it late and undercount it
        os.write(ready_w, b"R" + struct.pack("d", time.monotonic()))
        os.close(ready_w)

        status["stage"] = "loading the solver"
        import importlib.util

        spec = importlib.util.spec_from_file_location("solver", os.path.abspath("solver.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["solver"] = module
        spec.loader.exec_module(module)
        fn = getattr(module, job["function"], None)
        if fn is None or not callable(fn):
            raise AttributeError(f"the solver file defines no function {job['function']!r}")
        back = job.get("gate")  # the case whose inputs the watchdog holds back
        for i, case in enumerate(job["cases"]):
            if back is not None and gate is not None and i == back["case"]:
                status["stage"] = "setup"
                inputs.update(held.inputs(gate, int(back["size"])))
            status["stage"] = "the solver call" if i == 0 else f"the solver call (case {i + 1})"
            args = solver_args(job["args"], {k: inputs[v] for k, v in case["inputs"].items()})
            out = fn(*args)
            status["stage"] = "checking the outputs"
            got = None  # (output, shape) under check: the parent words the shape error itself
            try:
                arrays = as_outputs([o["name"] for o in case["outputs"]], out)
                for o, arr in zip(case["outputs"], arrays):
                    got = (o["name"], [int(n) for n in arr.shape])
                    check_shape(o["name"], arr, tuple(o["shape"]), job["steady"])
            except OutputError as exc:
                status.update(status="shape", message=str(exc), stage="", case=i)
                if got is not None:
                    status.update(output=got[0], got_shape=got[1])
                return
            for o, arr in zip(case["outputs"], arrays):
                if arr.dtype.str not in ALLOWED_DTYPES:  # e.g. float128, big-endian
                    status["notes"].append(f"output {o['name']!r} converted from {arr.dtype} "
                                           "to float64")
                    arr = arr.astype(np.float64)
                dt = arr.dtype.str.encode()
                mm[o["header"]:o["header"] + HEADER_SIZE] = dt.ljust(HEADER_SIZE, b"\0")
                view = np.frombuffer(mm, dtype=arr.dtype, count=arr.size, offset=o["data"])
                view[...] = arr.reshape(-1)
                del view
        status.update(status="ok", stage="")
    except BaseException as exc:  # the solver can raise anything, SystemExit included
        status["status"] = "memory" if isinstance(exc, MemoryError) else "error"
        where = f" during {status['stage']}" if status.get("stage") else ""
        status["error_type"] = type(exc).__name__
        status["message"] = f"{type(exc).__name__}{where}: {exc}"[:1000]
        status["traceback"] = _text(exc)
        try:
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        if mm is not None:
            try:
                _write_status(mm, status)
                mm.flush()
            except BaseException:
                pass
        os._exit(0)


# -- the watchdog ------------------------------------------------------------------------------
def _descendants(me: int) -> list[int]:
    """Every process below ``me`` (from /proc; a subreaper inherits orphans, so none hide)."""
    parent: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
            parent[int(name)] = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = [], {me}
    while frontier:
        nxt = {p for p, pp in parent.items() if pp in frontier and p not in found}
        found.extend(nxt)
        frontier = nxt
    return found


def _kill_all(pid1: bool, runner_pid: int) -> int:
    """Kill every process of the sandbox but this one; returns how many were left running."""
    me = os.getpid()
    left = [p for p in _descendants(me) if p != runner_pid] if not pid1 else \
        [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (me, runner_pid)]
    for _ in range(50):
        if pid1:
            try:
                os.kill(-1, signal.SIGKILL)  # from PID 1: every other process of the namespace
            except ProcessLookupError:
                pass
        else:
            try:
                os.killpg(runner_pid, signal.SIGKILL)
            except OSError:
                pass
            for p in _descendants(me):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        while True:  # reap
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break
        if not _descendants(me):
            break
        time.sleep(0.01)
    return len(left)


def _reap_others(keep: int) -> None:
    """Reap exited children other than ``keep`` (whose status the caller still wants)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == keep:
            return
        try:
            os.waitpid(info.si_pid, 0)
        except ChildProcessError:
            return


def _emit(fd: int, **event) -> None:
    try:
        os.write(fd, (json.dumps(event) + "\n").encode())
    except OSError:
        pass  # the parent is gone: carry on, the deadline still holds


def _read_job(fd: int) -> tuple[dict, str]:
    with os.fdopen(fd, "rb") as fh:
        blob = fh.read()
    n = struct.unpack("<I", blob[:4])[0]
    return json.loads(blob[4:4 + n]), blob[4 + n:].decode("utf-8", errors="replace")


# -- the scratch folder: its total size where it is a host folder, and --keep-scratch ---------
SCRATCH_POLL = 0.25  # seconds between two measurements of a host scratch folder


def scratch_usage(root: str, max_entries: int) -> tuple[int, int]:
    """(bytes allocated, entries) below ``root``, links not followed; counting stops past
    ``max_entries`` (a million empty files must not make the measurement itself slow)."""
    total, entries, stack = 0, 0, [root]
    while stack and entries <= max_entries:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    entries += 1
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512  # allocated, so sparse files count as written
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return total, entries


def keep_scratch(dst_fd: int, max_bytes: int, max_entries: int) -> dict:
    """Copy the scratch folder (this process's working folder) into the host folder ``dst_fd``
    (``--keep-scratch``), after every other process of the sandbox is gone: folders and regular
    files only (no links, FIFOs or sockets), at most ``max_bytes`` (sizes as read, so a sparse
    file cannot inflate on the host) and ``max_entries``; folder by folder, smallest files
    first, so a huge file cannot crowd out the solver's source."""
    import stat as st_

    out = {"bytes": 0, "files": 0, "skipped": 0, "truncated": False}
    queue = [("", 0)]
    while queue:
        rel, depth = queue.pop(0)
        files, dirs = [], []
        try:
            with os.scandir(rel or ".") as it:
                for e in it:
                    st = e.stat(follow_symlinks=False)
                    name = f"{rel}/{e.name}" if rel else e.name
                    if st_.S_ISREG(st.st_mode):
                        files.append((st.st_size, name))
                    elif st_.S_ISDIR(st.st_mode) and depth < 32:
                        dirs.append(name)
                    else:
                        out["skipped"] += 1
        except OSError:
            out["skipped"] += 1
            continue
        for _, name in sorted(files):
            if out["files"] >= max_entries or out["bytes"] >= max_bytes:
                out["truncated"] = True
                return out
            try:
                _copy_capped(name, dst_fd, out, max_bytes)
            except OSError:
                out["skipped"] += 1
        for name in sorted(dirs):
            try:
                os.mkdir(name, 0o755, dir_fd=dst_fd)
                queue.append((name, depth + 1))
            except OSError:
                out["skipped"] += 1
    return out


def _copy_capped(name: str, dst_fd: int, out: dict, max_bytes: int) -> None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                      dir_fd=dst_fd)
        out["files"] += 1
        try:
            while out["bytes"] < max_bytes:
                chunk = os.read(src, min(1 << 20, max_bytes - out["bytes"]))
                if not chunk:
                    return
                os.write(dst, chunk)
                out["bytes"] += len(chunk)
            out["truncated"] = out["truncated"] or bool(os.read(src, 1))
        finally:
            os.close(dst)
    finally:
        os.close(src)


def main(argv: list[str]) -> int:
    job_fd, inputs_fd, out_fd, events_fd = (int(a) for a in argv[:4])
    gated_fd = int(argv[4]) if len(argv) > 4 and int(argv[4]) >= 0 else None
    sys.dont_write_bytecode = True
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(write_through=True)  # a killed child still leaves its prints behind
    from confine import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, die_with_parent, prctl
    from held import Gate  # the sibling file: both sides of a held-back case

    job, code = _read_job(job_fd)
    scratch = job.get("scratch") or {}
    keep_fd = scratch.get("keep_fd")  # the host folder --keep-scratch copies into (not the solver's)
    poll = scratch.get("poll")  # {"max_bytes", "max_entries"} where the scratch is a host folder
    pid1 = os.getpid() == 1
    prctl(PR_SET_DUMPABLE, 0)  # no /proc/<pid>/mem, environ or ptrace for the solver
    if not pid1:
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of the solver become ours, so we find them
        die_with_parent(job.get("parent_pid"))
    timeout = float(job["limits"]["timeout"])
    gate = None if gated_fd is None else Gate(gated_fd, int((job.get("gate") or {}).get(
        "size", 0)), lambda t: _emit(events_fd, ev="gate", t=t))
    ready_r, ready_w = os.pipe()
    t_fork = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(events_fd)
        if keep_fd is not None:
            os.close(keep_fd)
        if not pid1:
            die_with_parent(None)
        runner(job, code, inputs_fd, out_fd, ready_w, gate.in_runner() if gate else None)
    os.close(ready_w)
    os.close(inputs_fd)
    if gate is not None:
        gate.after_fork()
    pidfd = os.pidfd_open(pid)
    _emit(events_fd, ev="start", t=t_fork)
    deadline = t_fork + timeout
    t_ready = None
    watch = [ready_r, pidfd]
    timed_out = scratch_full = False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        asks, sends = gate.waits() if gate is not None else ([], [])
        readable, writable, _ = select.select(watch + asks, sends, [],
                                              min(remaining, SCRATCH_POLL if poll else 1.0))
        if gate is not None:
            gate.serve(readable, writable)
        if ready_r in readable:
            sent = os.read(ready_r, 9) if t_ready is None else b""  # one write < PIPE_BUF
            if sent[:1] == b"R":
                # the runner's time (before the solver's code exists), never after our own
                t_ready = struct.unpack("d", sent[1:])[0] if len(sent) == 9 else time.monotonic()
                t_ready = min(max(t_ready, t_fork), time.monotonic())
                _emit(events_fd, ev="ready", t=t_ready)
            watch.remove(ready_r)
            os.close(ready_r)
        if pidfd in readable:
            break
        _reap_others(pid)  # orphans re-parented to us (PID 1's or a subreaper's duty)
        if poll:
            used, entries = scratch_usage(".", poll["max_entries"])
            if used > poll["max_bytes"] or entries > poll["max_entries"]:
                scratch_full = True
                break
    t_end = time.monotonic()
    if poll and not (timed_out or scratch_full):
        # a solver that wrote past the limit and ended between two polls is over it all the same
        used, entries = scratch_usage(".", poll["max_entries"])
        scratch_full = used > poll["max_bytes"] or entries > poll["max_entries"]
    if timed_out or scratch_full:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _, wstatus = os.waitpid(pid, 0)
    code_, sig = os.waitstatus_to_exitcode(wstatus), None
    if code_ < 0:
        sig, code_ = -code_, None
    left = _kill_all(pid1, pid)
    import resource

    maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    _emit(events_fd, ev="end", t=t_end, t_ready=t_ready, timed_out=timed_out, exit_code=code_,
          signal=sig, leftovers=left, maxrss_kb=maxrss, scratch_full=scratch_full)
    if keep_fd is not None:  # nothing of the solver runs any more: copy what it left
        _emit(events_fd, ev="kept", **keep_scratch(keep_fd, scratch["keep_bytes"],
                                                   scratch["keep_entries"]))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main(sys.argv[1:]))
