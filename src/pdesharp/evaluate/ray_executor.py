"""The Ray executor: sealed runs on the workers of a Ray cluster.

What crosses the network, and what does not:

* to a worker: the :class:`~.sealed.SealedJob` (solver source, limits, output shapes) and its
  input arrays (initial conditions, coefficients, times: copies, put once per split into Ray's
  object store) and a :class:`SandboxRequest` (``--unsafe-no-isolation``, ``--device``, a forced
  mechanism, paths to mask). Never the reference solution, the test split, a data path's
  content, the run store or an API key: model calls stay on the machine that runs pdesharp.
* back: the :class:`~.sealed.SealedRun` (arrays checked on the worker, solver time measured by
  the worker's parent process, scrubbed tails), scored by the evaluator where the reference is.

The worker runs the same :func:`~.sealed.run_sealed` as the local executor, under a policy it
resolves itself (:func:`~.sandbox.resolve`: the mechanism is a property of the worker's
machine). A worker without working isolation refuses with the sandbox's own message unless the
request says ``unsafe``. When the executor starts, a probe task on every alive node checks
that and records each node's mechanism (``isolation["nodes"]``), so a run fails before its
first model call rather than at its first evaluation.

Resources: each run requests ``threads`` CPUs (and one GPU with ``--device cuda``) as Ray
resources, so the cluster schedules and queues evaluations; ``--workers`` does not apply.

Faults: a run whose worker process or node is lost (Ray's ``WorkerCrashedError``,
``NodeDiedError``, ``LocalRayletDiedError``, ``ObjectLostError``, or ``OutOfMemoryError`` when
Ray's memory monitor killed the worker) is submitted once more, to a fresh worker (Ray places
it on a live node); the evaluation is still one evaluation. A solver that crashes or times out
is not retried: its sealed run *returned* that verdict. A second loss raises
:class:`~.executor.WorkerLost` (infrastructure, not a verdict), except that a second node-OOM
kill is the solver's ``memory`` verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import os
import socket
import sys
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import pdesharp
from pdesharp.evaluate import cgroups
from pdesharp.evaluate.executor import ExecutorUnavailable, WorkerLost, unlimited
from pdesharp.evaluate.sandbox import HERE, SandboxUnavailable, resolve, scrub
from pdesharp.evaluate.sealed import Case, SealedJob, SealedRun, run_sealed

# the files a worker runs for a sealed evaluation: a worker must run the same ones as we do
SEALED_PATH = ("sealed.py", "sandbox.py", "record.py", "child.py", "confine.py", "preload.py",
               "held.py", "launch.py", "cgroups.py", "gpu.py")
IN_FLIGHT = 1024  # evaluations a caller may keep pending; the cluster decides what runs
PROBE_TIMEOUT = 180.0  # seconds for every node to start a worker and probe its sandbox
INPUT_CACHE = 4  # input sets kept in the object store (a split's inputs, convergence grids)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SandboxRequest:
    """How a worker builds its sandbox policy; travels with every job."""

    unsafe: bool = False
    device: str = "cpu"
    force: str | None = None  # a mechanism to insist on ("bwrap", "landlock")
    hidden: tuple[str, ...] = ()  # more paths the child must not see (masked if bound)
    build: str = ""  # the driver's pdesharp build; a worker with another one refuses


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """pdesharp's version and a fingerprint of the sealed-evaluation code."""
    digest = hashlib.sha256()
    for name in SEALED_PATH:
        digest.update((HERE / name).read_bytes())
    return f"{pdesharp.__version__}+{digest.hexdigest()[:12]}"


def resources(device: str, threads: int) -> dict:
    """The Ray resources one evaluation asks for: its BLAS/OpenMP threads as CPUs, and the GPU
    the sandbox exposes with ``--device cuda``."""
    return {"num_cpus": max(1, int(threads)), "num_gpus": 1 if device == "cuda" else 0}


def _check_build(request: SandboxRequest) -> None:
    if request.build and request.build != build_id():
        raise ExecutorUnavailable(
            f"Ray node {socket.gethostname()} runs pdesharp {build_id()} but this machine runs "
            f"{request.build}: install the same pdesharp on every node (docs/cluster.md)")


def _policy(request: SandboxRequest):
    return resolve(unsafe=request.unsafe, device=request.device, force=request.force,
                   hidden=[Path(h) for h in request.hidden])


# -- what runs on a worker (module-level functions: Ray ships them by reference) ---------------
def pdesharp_sealed_run(job: SealedJob, inputs: list[dict], request: SandboxRequest,
                        keep_scratch: bool, scratch_root: str | None) -> SealedRun:
    """One sealed run on this worker: the job's arrays put back in, a local policy, run_sealed."""
    _check_build(request)
    policy = _policy(request)  # per task: Ray sets CUDA_VISIBLE_DEVICES for this task's GPU
    job = replace(job, cases=[Case(arrays, case.outputs) for arrays, case in zip(inputs,
                                                                                 job.cases)])
    root = Path(scratch_root) if scratch_root and Path(scratch_root).is_dir() else None
    try:
        run = asyncio.run(run_sealed(job, policy, keep_scratch=keep_scratch, scratch_root=root))
    finally:
        # a worker killed mid-run (the case we retry) leaves its evaluation's cgroup behind;
        # by the end of this run its sandbox has long died with it, so the cgroup can go
        cgroups.remove_stale()
    run.host = socket.gethostname()
    return run


def pdesharp_probe(request: SandboxRequest) -> dict:
    """This node's sandbox (or its refusal) and pdesharp build."""
    info = {"host": socket.gethostname(), "build": build_id(), "python": sys.version.split()[0],
            "pid": os.getpid()}
    try:
        policy = _policy(request)
    except SandboxUnavailable as exc:
        info["refusal"] = str(exc)
        return info
    info["summary"], info["reasons"] = policy.summary(), policy.reasons
    return info


# -- the driver's side -----------------------------------------------------------------------
def _lost_errors() -> tuple[type, ...]:
    from ray import exceptions as rex

    return (rex.WorkerCrashedError, rex.NodeDiedError, rex.LocalRayletDiedError,
            rex.OutOfMemoryError, rex.ObjectLostError)


def connect(address: str | None) -> None:
    """Join the cluster at ``address`` (``auto``, ``host:port``, ``ray://host:port``), or start
    a local Ray instance with no address. A process already connected stays connected."""
    import ray

    if ray.is_initialized():
        return
    kwargs: dict = {"logging_level": logging.WARNING}
    if address is None and not os.environ.get("RAY_ADDRESS"):
        kwargs["include_dashboard"] = False  # a new local instance: no web UI to expose
    try:
        ray.init(address=address, **kwargs)
    except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError, ...
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise ExecutorUnavailable(
            f"cannot reach {where}: {type(exc).__name__}: {exc}\n  Start a cluster with `ray "
            "start --head` (then --ray-address auto, or ray://HEAD:10001 from another machine),"
            " or leave out --ray-address to start a local instance; see docs/cluster.md"
        ) from None


_PROBES: dict[tuple, list[dict]] = {}


def probe_nodes(request: SandboxRequest, *, runtime_env: dict | None = None) -> list[dict]:
    """Run :func:`pdesharp_probe` once on every alive node (that has a GPU, for cuda)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if request.device == "cuda":
        nodes = [n for n in nodes if n.get("Resources", {}).get("GPU", 0) >= 1]
    # once per set of nodes (a node that joins later is checked by its first task anyway)
    key = (request.unsafe, request.device, request.force, request.build, repr(runtime_env),
           tuple(sorted(n["NodeID"] for n in nodes)))
    if key in _PROBES:
        return _PROBES[key]
    probe = ray.remote(pdesharp_probe)
    refs = [probe.options(num_cpus=0, max_retries=1, runtime_env=runtime_env,
                          scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"],
                                                                              soft=False)
                          ).remote(request) for n in nodes]
    try:
        found = ray.get(refs, timeout=PROBE_TIMEOUT)
    except ray.exceptions.GetTimeoutError:
        raise ExecutorUnavailable(f"the Ray cluster's nodes did not start a worker within "
                                  f"{PROBE_TIMEOUT:g} s (is the cluster overloaded?)") from None
    except ray.exceptions.RayTaskError as exc:
        raise ExecutorUnavailable(f"probing the Ray nodes failed: {exc}") from None
    _PROBES[key] = found
    return found


class RayExecutor:
    """Sealed runs as Ray tasks; see the module docstring."""

    name = "ray"

    def __init__(self, request: SandboxRequest, *, address: str | None = None, threads: int = 1,
                 runtime_env: dict | None = None):
        connect(address)
        import ray

        self.request = replace(request, build=build_id())
        self.address = address
        self.threads = max(1, int(threads))
        self.runtime_env = runtime_env  # for tests: e.g. a node configured without isolation
        self.retries = 0  # runs submitted again after a lost worker (each evaluation counts once)
        self._inputs: OrderedDict[tuple, tuple] = OrderedDict()
        self._check_resources(ray.cluster_resources(), [n.get("Resources", {})
                                                        for n in ray.nodes() if n.get("Alive")])
        self.nodes = probe_nodes(self.request, runtime_env=runtime_env)
        self._check_nodes()
        self._task = ray.remote(pdesharp_sealed_run)

    # -- start-up checks ---------------------------------------------------------------------
    def _check_resources(self, total: dict, per_node: list[dict]) -> None:
        if self.request.device == "cuda" and total.get("GPU", 0) < 1:
            raise ExecutorUnavailable(
                "--device cuda: the Ray cluster has no GPU (ray.cluster_resources() lists "
                "none); start the GPU nodes with `ray start ... --num-gpus N` (docs/cluster.md)")
        most = max((r.get("CPU", 0) for r in per_node), default=0)
        if most < self.threads:
            raise ExecutorUnavailable(
                f"each evaluation asks for {self.threads} CPUs (--threads) but the largest Ray "
                f"node has {most:g}: no node could ever run it")

    def _check_nodes(self) -> None:
        if not self.nodes:
            raise ExecutorUnavailable("the Ray cluster has no alive node"
                                      + (" with a GPU" if self.request.device == "cuda" else ""))
        other = [p for p in self.nodes if p["build"] != self.request.build]
        if other:
            raise ExecutorUnavailable(
                "install the same pdesharp on every Ray node (docs/cluster.md): this machine "
                f"runs {self.request.build}, " + ", ".join(f"{p['host']} runs {p['build']}"
                                                           for p in other))
        refused = [p for p in self.nodes if "refusal" in p]
        if refused:
            raise SandboxUnavailable("\n".join(f"on Ray node {p['host']}: {p['refusal']}"
                                               for p in refused))

    # -- what the evaluator asks -------------------------------------------------------------
    @property
    def isolation(self) -> dict:
        summaries = [p["summary"] for p in self.nodes]
        mechanisms = sorted({s["mechanism"] for s in summaries})
        return {**summaries[0], "mechanism": "+".join(mechanisms),
                "unsafe": any(s["unsafe"] for s in summaries), "executor": self.name,
                "ray_address": self.address or "local instance",
                "nodes": [{"host": p["host"], "mechanism": p["summary"]["mechanism"]}
                          for p in self.nodes]}

    @property
    def device(self) -> str:
        return self.request.device

    @property
    def max_in_flight(self) -> int:
        return IN_FLIGHT

    def slot(self):
        return unlimited()  # Ray queues runs until a node has the resources

    def task_options(self) -> dict:
        return {**resources(self.request.device, self.threads),
                "max_retries": 0,  # our own single retry, only for lost workers (run())
                "retry_exceptions": False, "runtime_env": self.runtime_env}

    def _inputs_ref(self, inputs: list[dict]):
        """The cases' input arrays in the object store (copies; cached by identity, so a
        split's inputs cross to each node once, not once per evaluation)."""
        import ray

        key = tuple((i, k, id(v)) for i, d in enumerate(inputs) for k, v in sorted(d.items()))
        if key in self._inputs:
            self._inputs.move_to_end(key)
            return self._inputs[key][0]
        copies = [{k: np.array(v, order="C", copy=True) for k, v in d.items()} for d in inputs]
        ref = ray.put(copies)
        self._inputs[key] = (ref, inputs)  # keeps the originals alive: ids stay unique
        while len(self._inputs) > INPUT_CACHE:
            self._inputs.popitem(last=False)
        return ref

    def submit(self, job: SealedJob, inputs_ref, keep_scratch: bool, scratch_root: str | None):
        """One Ray task for ``job`` (its cases without arrays; those come from ``inputs_ref``)."""
        return self._task.options(**self.task_options()).remote(
            job, inputs_ref, self.request, keep_scratch, scratch_root)

    async def run(self, job: SealedJob, *, keep_scratch: bool = False,
                  scratch_root: Path | None = None) -> SealedRun:
        import ray

        inputs = self._inputs_ref([c.inputs for c in job.cases])
        skeleton = replace(job, cases=[Case({}, c.outputs) for c in job.cases])
        lost: list[BaseException] = []
        for attempt in range(2):
            ref = self.submit(skeleton, inputs, keep_scratch,
                              str(scratch_root) if scratch_root else None)
            try:
                run = await _result(ref)
            except _lost_errors() as exc:
                lost.append(exc)
                if attempt == 0:
                    self.retries += 1
                    log.warning("Ray worker lost while running %s (%s); running it once more",
                                job.label, type(exc).__name__)
                continue
            except ray.exceptions.RayTaskError as exc:
                raise _unwrap(exc) from None
            run.retries = attempt
            return _rescrub(run)
        oom = ray.exceptions.OutOfMemoryError
        if all(isinstance(e, oom) for e in lost):
            return SealedRun(status="memory", retries=1, message=(
                "Ray's memory monitor killed the worker running this solver twice (the node "
                f"ran out of memory): {str(lost[-1]).splitlines()[0][:300]}"))
        raise WorkerLost(f"the Ray worker running {job.label} was lost twice ("
                         + "; ".join(f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                                     for e in lost) + "); the evaluation was not recorded")


async def _result(ref):
    """Await a Ray object (core or client mode); cancelling us cancels the task."""
    import ray

    try:
        return await asyncio.wrap_future(ref.future())
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True)  # the worker dies, and the sandbox with it
        raise


def _unwrap(exc) -> BaseException:
    """The worker's own exception: the sandbox's refusal, a build mismatch, or a bug."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, (SandboxUnavailable, ExecutorUnavailable)):
        return type(cause)(str(cause))
    return RuntimeError(f"the Ray task failed: {exc}")


def _rescrub(run: SealedRun) -> SealedRun:
    """The worker scrubbed the text with its environment; scrub again with ours (the API keys
    live here). Defence in depth: the sandbox gave the child neither environment."""
    run.stdout_tail, run.stderr_tail = scrub(run.stdout_tail), scrub(run.stderr_tail)
    run.message, run.traceback = scrub(run.message, limit=2000), scrub(run.traceback)
    run.notes = [scrub(n, limit=500) for n in run.notes]
    run.detail = scrub(run.detail, limit=3000)
    if run.scratch:
        run.scratch = f"{run.scratch} on Ray node {run.host}"
    return run
