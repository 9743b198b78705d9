"""One real Ray instance for the tests of this package (one xdist worker runs them all, see
tests/conftest.py): 2 CPUs, node address 127.0.0.1, its own temp folder and auth token (not
~/.ray), shut down after the package's last test with nothing left running.

Tests that need it skip with the reason if Ray is not installed (pip install 'pdesharp[ray]').
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

SOLVERS = Path(__file__).resolve().parents[1] / "evaluate" / "solvers"


@pytest.fixture(scope="package")  # torn down after the package's last test (one worker's)
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'pdesharp[ray]'")
    import psutil
    from ray._private import ray_constants

    tmp = Path(tempfile.mkdtemp(prefix="pdesharp-ray-"))
    token = tmp / "auth_token"
    token.write_text(secrets.token_hex(32))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_TOKEN_PATH", str(token))  # token auth on, with a token of our own
        mp.delenv("RAY_ADDRESS", raising=False)  # never join a cluster someone else started
        # Ray swaps 127.0.0.1 for the machine's outward address unless told it runs alone;
        # this keeps every address the cluster uses on loopback
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        mp.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(tmp / "r"),
                 object_store_memory=256 * 2**20, logging_level="WARNING")
        assert ray.nodes()[0]["NodeManagerAddress"] == "127.0.0.1"
        try:
            yield ray
        finally:
            ours = [p for p in psutil.Process().children(recursive=True) if _is_ray(p)]
            ray.shutdown()
            _no_leftovers(psutil, ours)
            shutil.rmtree(tmp, ignore_errors=True)


def _is_ray(p) -> bool:
    """Ray's own processes: workers are titled ``ray::...``, the rest run from Ray's package."""
    try:
        cmd = " ".join(p.cmdline() or [p.name()])
    except Exception:  # noqa: BLE001 - gone already
        return False
    return cmd.startswith("ray::") or "/ray/" in cmd or " -m ray." in cmd


def _no_leftovers(psutil, ours: list, wait: float = 30.0) -> None:
    """Every process Ray started for this session (GCS, raylet, workers and whatever they
    started) has ended after shutdown, except one kind, killed here with a warning: a worker
    running no task (titled ``ray::IDLE``). Under heavy load (three suites at once on two
    cores) one such worker, started minutes before, was still there 15 s after shutdown, in
    two runs of three; running nothing, it says nothing about a job outliving its run. A
    worker running a task or one of Ray's daemons left behind is a failure."""
    import warnings

    gone, alive = psutil.wait_procs(ours, timeout=wait)
    idle, left = [], []
    for p in alive:  # started by this session: ours to end
        try:
            name = (p.name(), " ".join(p.cmdline()).strip())
            p.kill()
        except psutil.Error:  # ended between the wait and now
            continue
        (idle if "ray::IDLE" in name else left).append(p.pid)
    if idle:
        warnings.warn(f"idle Ray worker(s) still running {wait:.0f} s after shutdown, killed:"
                      f" {idle}", stacklevel=1)
    assert not left, f"Ray processes still running after shutdown: {left}"


@pytest.fixture(scope="session")
def solver_source():
    def read(name: str) -> str:
        return (SOLVERS / f"{name}.py").read_text()

    return read
