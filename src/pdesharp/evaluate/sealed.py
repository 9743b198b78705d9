"""The executor seam: run untrusted solver code in a sealed child, get checked arrays back.

``await run_sealed(job, policy)`` takes a :class:`SealedJob` (solver source, the solver's input
arrays for one or more cases, the output shapes the parent expects, limits) and returns a
:class:`SealedRun`: the prediction arrays (shapes fixed by the parent, dtypes checked against an
allowlist), the solver time measured from outside, scrubbed output tails and a status. It knows
nothing about tasks, reference data or scores, so a remote executor (Ray) can run this same
function on a worker and ship the arrays back; scoring stays in :mod:`.evaluator`. Jobs and runs
are plain picklable dataclasses; a worker builds its own policy with
:func:`~pdesharp.evaluate.sandbox.resolve` (the mechanism is a property of the machine).

Data paths: the job (JSON + source) and the inputs (an uncompressed ``.npz``) go in through
sealed memory files, the outputs come back through a fixed-size memory file whose slots the
parent laid out (no file the child names is ever opened, nothing is decompressed), events
(``start``/``ready``/``end`` with timestamps) come from the watchdog through a pipe the solver
never holds. Nothing is written to the host's disk under bubblewrap, so a killed parent leaves
no scratch folder behind. With ``keep_scratch`` the watchdog copies the (bounded) scratch folder
into a host folder it alone holds open, after the solver's processes are gone.

Solver time is the larger of two measurements of the same interval, from "ready" (before the
solver module is imported) to the runner's exit: the parent's clock on receipt of the events,
and the watchdog's. A solver cannot make either shorter; the timeout verdict uses the same
number, so a stopped parent never lets a long solve pass.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import mmap
import os
import secrets
import shutil
import signal
import struct
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pdesharp.evaluate import cgroups
from pdesharp.evaluate.child import ALLOWED_DTYPES, HEADER_SIZE, STATUS_OFFSET, STATUS_SIZE
from pdesharp.evaluate.record import apply_record
from pdesharp.evaluate.sandbox import (SCRATCH_INODES, TAIL_CHARS, SandboxPolicy, host_scratch,
                                       scrub)

STARTUP_GRACE = 60.0  # seconds the parent allows for the sandbox to start before "ready"
KILL_GRACE = 5.0  # beyond the timeout, before the parent kills a sandbox whose watchdog failed
KEEP_GRACE = 120.0  # after the solver ended, for the watchdog to copy a kept scratch folder out
SCRATCH_PREFIX = "pdesharp-eval-"
MARKER = "PDESHARP_SANDBOX_ID"


@dataclass
class Case:
    """One solver call: its input arrays (by key) and the outputs expected, ``(name, shape)``."""

    inputs: dict[str, np.ndarray]
    outputs: list[tuple[str, tuple[int, ...]]]


@dataclass
class Limits:
    timeout: float  # seconds, for all cases together, enforced inside the sandbox
    memory_mb: int  # address space per process, and (plus the outputs) the whole sandbox
    max_processes: int = 256  # tasks (processes and threads) in the sandbox at once
    fsize_mb: int = 1024  # largest file the child may write
    threads: int = 1  # BLAS/OpenMP threads


@dataclass
class SealedJob:
    code: str
    function: str
    args: list[tuple[str, object]]  # ("array", input key) or ("scalar", value), in order
    cases: list[Case]
    limits: Limits
    steady: bool = False  # only for the wording of shape errors
    label: str = "run"
    # hold back the last case's inputs until the runner asks for them (child.py's gate): the
    # solver's time from that request on is the last call's alone (SealedRun.warm_seconds)
    gate: bool = False


@dataclass
class SealedRun:
    status: str  # ok | error | memory | shape | timeout
    message: str = ""
    outputs: list[dict[str, np.ndarray]] = field(default_factory=list)  # per case, when ok
    solver_seconds: float | None = None
    # with a gate: from the runner's request for the last case's inputs to its end (that call,
    # which no work on its inputs can precede; the earlier calls and one-off work are not in it)
    warm_seconds: float | None = None
    startup_seconds: float | None = None
    wall_seconds: float = 0.0
    peak_memory_mb: float | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    traceback: str = ""
    notes: list[str] = field(default_factory=list)  # the parent's own observations
    # What the solver's process said about itself (its status record's message and notes, the
    # last stderr line of a sandbox that ended without a record): untrusted text, never part of
    # ``message``; shown to a model only inside a prompt block (pdesharp.untrusted)
    detail: str = ""
    error_type: str = ""  # the exception's class name from the record, a checked identifier
    mechanism: str = "none"
    timed_out: bool = False
    failed_case: int | None = None
    scratch: str | None = None  # the kept host scratch folder (keep_scratch)
    host: str = ""  # the machine that ran it, when not this one (a Ray worker's host name)
    retries: int = 0  # times it was submitted again because the machine running it was lost


# -- the output memory file ------------------------------------------------------------------------
def _align(n: int, a: int = 64) -> int:
    return (n + a - 1) // a * a


def layout(cases: list[Case]) -> tuple[list[list[dict]], int]:
    """Slot offsets per case and output: a dtype header, then room for float64 values."""
    pos = STATUS_OFFSET + STATUS_SIZE
    out = []
    for case in cases:
        slots = []
        for name, shape in case.outputs:
            n = int(np.prod(shape, dtype=np.int64))
            header, data = _align(pos), _align(pos) + _align(HEADER_SIZE)
            slots.append({"name": name, "shape": list(map(int, shape)), "header": header,
                          "data": data, "count": n})
            pos = data + 8 * n
        out.append(slots)
    return out, _align(pos, 4096)


def _memfd(name: str, size: int | None = None, content: bytes | None = None,
           write=None, sealed: bool = True) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    if content is not None:
        os.write(fd, content)
    if write is not None:
        with os.fdopen(os.dup(fd), "wb") as fh:
            write(fh)
    if size is not None:
        os.ftruncate(fd, size)
    seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals | (fcntl.F_SEAL_WRITE if sealed else 0))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _read_outputs(fd: int, size: int, slots: list[list[dict]]
                  ) -> tuple[dict | None, list[dict[str, np.ndarray]], str]:
    """(status record, arrays per case, problem). Arrays are copies; nothing is decompressed."""
    with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mm:
        (n,) = struct.unpack("<I", mm[STATUS_OFFSET:STATUS_OFFSET + 4])
        record = None
        if 0 < n <= STATUS_SIZE - 4:
            try:
                record = json.loads(mm[STATUS_OFFSET + 4:STATUS_OFFSET + 4 + n])
            except ValueError:
                record = None
        if not isinstance(record, dict):
            return None, [], ""
        if record.get("status") != "ok":
            return record, [], ""
        cases = []
        for case in slots:
            arrays = {}
            for s in case:
                declared = mm[s["header"]:s["header"] + HEADER_SIZE].rstrip(b"\0").decode(
                    "ascii", errors="replace")
                if declared not in ALLOWED_DTYPES:
                    return record, [], (f"output {s['name']!r} was not written or declares dtype "
                                        f"{declared!r} (allowed: real numbers)")
                dt = np.dtype(declared)
                arrays[s["name"]] = np.frombuffer(mm, dtype=dt, count=s["count"],
                                                  offset=s["data"]).reshape(s["shape"]).copy()
            cases.append(arrays)
        return record, cases, ""


# -- reading the child -----------------------------------------------------------------------------
async def _tail(stream: asyncio.StreamReader, buf: bytearray, keep: int = 4 * TAIL_CHARS) -> None:
    """Drain ``stream`` into ``buf``, keeping only its last ``keep`` bytes (bounded memory)."""
    while True:
        chunk = await stream.read(1 << 16)
        if not chunk:
            return
        buf += chunk
        if len(buf) > 4 * keep:
            del buf[:-keep]


async def _events(fd: int, state: dict) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 16)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0))
    try:
        while True:
            try:
                line = await reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                break
            if not line:
                break
            now = time.monotonic()
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            kind = ev.get("ev") if isinstance(ev, dict) else None
            if kind in ("start", "ready", "gate", "end", "kept") and kind not in state:
                state[kind] = (now, ev)
    finally:
        transport.close()


def _stale_scratch(root: Path) -> None:
    """Remove scratch folders of pdesharp processes that died without cleaning up."""
    for d in root.glob(f"{SCRATCH_PREFIX}*"):
        try:
            owner = int(d.name[len(SCRATCH_PREFIX):].split("-")[0])
        except ValueError:
            continue
        if owner != os.getpid() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(d, ignore_errors=True)


def _host_scratch(policy: SandboxPolicy, label: str, root: Path | None) -> Path:
    """The fallback's host scratch folder (:func:`~.sandbox.host_scratch`)."""
    root = Path(root or tempfile.gettempdir())
    _stale_scratch(root)
    return host_scratch(policy, root, f"{SCRATCH_PREFIX}{os.getpid()}-{label}-")


def _kept_folder(policy: SandboxPolicy, label: str, root: Path | None) -> Path:
    """The host folder ``--keep-scratch`` fills, named so that no later sweep takes it for a
    dead run's leftover; owned by the sandbox user, who alone writes it (the watchdog)."""
    d = Path(tempfile.mkdtemp(prefix=f"pdesharp-kept-{label}-", dir=root or
                              tempfile.gettempdir()))
    if policy.uid is not None:
        os.chown(d, policy.uid, policy.gid)
    d.chmod(0o755)
    return d


def _scratch_spec(policy: SandboxPolicy, keep_fd: int | None) -> dict:
    """The watchdog's part in bounding the scratch folder (see ``child.main``)."""
    limit = policy.disk_mb * 2**20
    spec: dict = {"keep_fd": keep_fd, "keep_bytes": limit, "keep_entries": SCRATCH_INODES}
    if policy.mechanism == "landlock" and not policy.scratch_tmpfs:  # a plain host folder
        spec["poll"] = {"max_bytes": limit, "max_entries": SCRATCH_INODES}
    return spec


# -- the seam --------------------------------------------------------------------------------------
async def run_sealed(job: SealedJob, policy: SandboxPolicy, *, keep_scratch: bool = False,
                     scratch_root: Path | None = None) -> SealedRun:
    """Run ``job`` in the sandbox ``policy`` describes; see the module docstring."""
    t0 = time.monotonic()
    lim = job.limits
    slots, out_size = layout(job.cases)
    held = len(job.cases) - 1 if job.gate and len(job.cases) > 1 else None
    arrays = {f"c{i}/{k}": np.ascontiguousarray(v)
              for i, c in enumerate(job.cases) for k, v in c.inputs.items() if i != held}
    late = {f"c{held}/{k}": np.ascontiguousarray(v)
            for k, v in job.cases[held].inputs.items()} if held is not None else {}
    scratch = _host_scratch(policy, job.label, scratch_root) \
        if policy.mechanism != "bwrap" else None
    kept = _kept_folder(policy, job.label, scratch_root) if keep_scratch else None
    out_bytes = sum(8 * s["count"] for case in slots for s in case)
    cg, cg_note = cgroups.create(cgroups.Limits(
        memory_bytes=(lim.memory_mb + 256) * 2**20 + out_bytes, pids=lim.max_processes))
    spec = {
        "function": job.function, "args": [list(a) for a in job.args], "steady": job.steady,
        "cases": [{"inputs": {k: f"c{i}/{k}" for k in c.inputs}, "outputs": s}
                  for i, (c, s) in enumerate(zip(job.cases, slots))],
        "output_size": out_size, "confine": policy.confinement(scratch),
        "parent_pid": os.getpid(), "limits": child_limits(policy, lim, cg),
    }
    run = SealedRun(status="error", mechanism=policy.mechanism)
    fds: list[int] = []
    proc = None
    state: dict = {}
    try:
        keep_fd = os.open(kept, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC) if kept else None
        if keep_fd is not None:
            fds.append(keep_fd)
        spec["scratch"] = _scratch_spec(policy, keep_fd)
        gate_fd = -1
        if held is not None:  # read by the watchdog alone, when the runner asks (child._Gate)
            gate_fd = _memfd("pdesharp-held", write=lambda fh: np.savez(fh, **late))
            fds.append(gate_fd)
            spec["gate"] = {"case": held, "size": os.fstat(gate_fd).st_size}
        blob = json.dumps(spec).encode()
        job_fd = _memfd("pdesharp-job", content=struct.pack("<I", len(blob)) + blob
                        + job.code.encode())
        fds.append(job_fd)
        in_fd = _memfd("pdesharp-inputs", write=lambda fh: np.savez(fh, **arrays))
        fds.append(in_fd)
        out_fd = _memfd("pdesharp-outputs", size=out_size, sealed=False)
        fds.append(out_fd)
        ev_r, ev_w = os.pipe()
        fds += [ev_r, ev_w]
        marker = secrets.token_hex(8)  # finds strays when there is no sandbox to end them
        argv = policy.command(fds=[job_fd, in_fd, out_fd, ev_w, gate_fd], threads=lim.threads,
                              scratch=scratch, parent_pid=os.getpid(),
                              cgroup_procs=cg.procs_files if cg else [],
                              extra_env={MARKER: marker} if policy.mechanism == "none" else None)
        t_spawn = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=[job_fd, in_fd, out_fd, ev_w, *([keep_fd] if kept else []),
                      *([gate_fd] if gate_fd >= 0 else [])],
            start_new_session=True)
        for fd in (job_fd, in_fd, ev_w, ev_r, *([gate_fd] if gate_fd >= 0 else [])):
            fds.remove(fd)
            if fd != ev_r:
                os.close(fd)
        ev_task = asyncio.ensure_future(_events(ev_r, state))  # owns ev_r from here
        out_buf, err_buf = bytearray(), bytearray()
        out_task = asyncio.ensure_future(_tail(proc.stdout, out_buf))
        err_task = asyncio.ensure_future(_tail(proc.stderr, err_buf))
        wait_task = asyncio.ensure_future(proc.wait())
        killed = False
        try:
            while not wait_task.done():
                base = state["ready"][0] if "ready" in state else t_spawn + STARTUP_GRACE
                deadline = base + lim.timeout + KILL_GRACE
                if "end" in state and kept:  # the solver is over; the watchdog copies
                    deadline = max(deadline, state["end"][0] + KEEP_GRACE)
                remaining = deadline - time.monotonic()
                if remaining <= 0:  # the watchdog should have ended it: ours is the backstop
                    killed = "end" not in state  # (past "end", only the kept copy was cut)
                    break
                await asyncio.wait({wait_task}, timeout=min(remaining, 1.0))
        finally:
            if not wait_task.done():  # our deadline, or we were cancelled: end it all now
                _kill(proc.pid, cg)
                await asyncio.shield(wait_task)
        t_exit = time.monotonic()
        if cg:
            cg.kill()
        if policy.mechanism == "none":
            _sweep(marker)
        # the sandbox is gone, so its pipes close; a stray holding one (only possible without
        # isolation) costs at most a few seconds, then we stop listening
        _, pending = await asyncio.wait({out_task, err_task, ev_task}, timeout=5)
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        run.stdout_tail, run.stderr_tail = (scrub(b.decode("utf-8", errors="replace"))
                                            for b in (out_buf, err_buf))
        _judge(run, state, lim, t_spawn, t_exit, killed, proc.returncode)
        if run.status == "pending":
            record, outputs, problem = _read_outputs(out_fd, out_size, slots)
            apply_record(run, record, state.get("end", (0, {}))[1], outputs, problem, slots,
                          job.steady)
        if cg:
            peak = cg.peak_memory_bytes()
            if peak:
                run.peak_memory_mb = peak / 2**20
            if cg.oom_kills() and run.status != "timeout":
                run.status, run.outputs = "memory", []
                run.message = (f"the sandbox exceeded its memory limit of {lim.memory_mb} MB "
                               "(all its processes together) and the kernel killed the solver")
            if cg.pids_limit_hit():
                run.notes.append(f"the solver hit the sandbox's limit of {lim.max_processes} "
                                 "processes/threads")
        else:
            run.notes.append(f"no cgroup ({cg_note}): memory and process limits are per "
                             "process")
    finally:
        for fd in fds:
            os.close(fd)
        if proc is not None and proc.returncode is None:
            _kill(proc.pid, cg)
        if cg:
            cg.kill()
            cg.remove()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if kept is not None:
            run.scratch = str(kept)
            _note_kept(run, state.get("kept", (0, {}))[1], policy.disk_mb)
    run.wall_seconds = time.monotonic() - t0
    run.message, run.traceback = scrub(run.message, limit=2000), scrub(run.traceback)
    run.notes = [scrub(n, limit=500) for n in run.notes]
    run.detail = scrub(run.detail, limit=3000)
    return run


def _note_kept(run: SealedRun, kept: dict, disk_mb: int) -> None:
    if not kept:
        run.notes.append(f"the scratch folder was not copied to {run.scratch} (the sandbox "
                         "ended before its watchdog could)")
    elif kept.get("truncated") is True:
        run.notes.append(f"kept scratch folder {run.scratch} is cut at {disk_mb} MB or "
                         f"{SCRATCH_INODES} files")


def child_limits(policy: SandboxPolicy, lim: Limits, cg) -> dict:
    """The per-process limits the runner sets on itself."""
    return {"timeout": lim.timeout, "fsize_mb": lim.fsize_mb,
            # CUDA reserves huge virtual address ranges: there the cgroup limits memory alone
            "rlimit_as_mb": None if policy.device == "cuda" else lim.memory_mb,
            # without a pids cgroup, a per-user process limit is the fallback
            "nproc": None if cg and ("pids" in cg.dirs or cg.version == 2)
            else lim.max_processes}


def _kill(pid: int, cg) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the launcher/bubblewrap; --die-with-parent does the rest
    except (ProcessLookupError, PermissionError):
        pass
    if cg:
        cg.kill()


def _sweep(marker: str) -> None:
    """Without isolation, kill stray processes that carry this run's environment marker."""
    import psutil

    me = os.getuid()
    for p in psutil.process_iter(["uids"]):
        try:
            if p.info["uids"] and p.info["uids"].real == me and p.pid != os.getpid() \
                    and p.environ().get(MARKER) == marker:
                p.kill()
        except (psutil.Error, OSError):
            pass


def _judge(run: SealedRun, state: dict, lim: Limits, t_spawn: float, t_exit: float,
           killed: bool, returncode: int | None) -> None:
    """Times, timeout and notes from the watchdog's events and the parent's own clock."""
    end = state.get("end", (None, {}))[1]
    r_end = state["end"][0] if "end" in state else t_exit
    if "ready" in state:
        r_ready = state["ready"][0]
        run.startup_seconds = r_ready - t_spawn
        watchdog = 0.0
        if isinstance(end.get("t"), (int, float)) and isinstance(end.get("t_ready"), (int, float)):
            watchdog = min(float(end["t"]) - float(end["t_ready"]), t_exit - t_spawn)
        run.solver_seconds = max(r_end - r_ready, watchdog)
        if "gate" in state:  # the same two measurements of the held-back call's interval
            gate = state["gate"][1]
            mine = min(r_end - state["gate"][0], run.solver_seconds)
            if isinstance(end.get("t"), (int, float)) and isinstance(gate.get("t"), (int, float)):
                mine = max(mine, min(float(end["t"]) - float(gate["t"]), run.solver_seconds))
            run.warm_seconds = max(mine, 0.0)
    run.timed_out = bool(killed or end.get("timed_out") or
                         (run.solver_seconds is not None and run.solver_seconds > lim.timeout))
    if end.get("leftovers"):
        run.notes.append(f"killed {end['leftovers']} process(es) the solver left running")
    if isinstance(end.get("maxrss_kb"), (int, float)) and end["maxrss_kb"] > 0:
        run.peak_memory_mb = end["maxrss_kb"] / 1024.0
    if run.timed_out:
        run.status = "timeout"
        run.message = f"Process exceeded the {lim.timeout:g}-second timeout limit."
    elif end.get("scratch_full") is True:
        run.status = "error"
        run.message = ("the solver filled its scratch folder past its limit (the sandbox's disk "
                       "size, or too many files) and was stopped")
    elif not end:
        # the last stderr line says why, but the solver's process may have written it: detail
        why = run.stderr_tail.strip().splitlines()[-1:]
        run.status = "error"
        run.message = (f"the sandbox failed to run the solver (exit status {returncode}, no "
                       "result record)")
        run.detail = why[0] if why else ""
    else:
        run.status = "pending"  # decided by the runner's status record
