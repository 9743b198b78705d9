"""``pdesharp sandbox``: which isolation seals generated solvers on this machine, and why.

Also the shared ``--device`` / ``--unsafe-no-isolation`` options of the commands that run
generated code (``eval``, ``solve``), the ``--executor`` / ``--ray-address`` group (``eval``,
``solve``, ``bench``, ``sandbox``), and the one place their refusal and warning are worded.
"""

from __future__ import annotations

import json
import sys

from pdesharp.commands._common import fail

UNSAFE_WARNING = (
    "WARNING: --unsafe-no-isolation: generated solvers run WITHOUT a sandbox. A solver can read "
    "your files, environment and API keys, the reference and test data, reach the network, and "
    "forge its score. Recorded in every result, the run, its summary and its report.")


def add_sandbox_arguments(parser) -> None:
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="device solvers may use: cuda exposes the NVIDIA GPU device nodes "
                             "and driver libraries inside the sandbox (default cpu)")
    parser.add_argument("--unsafe-no-isolation", action="store_true",
                        help="run generated code without any sandbox (not recommended; "
                             "recorded in the results, summary and report)")


def add_executor_arguments(parser) -> None:
    g = parser.add_argument_group("where solvers run (docs/cluster.md)")
    g.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: sandboxed children of this process (default); ray: on the "
                        "workers of a Ray cluster (pip install 'pdesharp[ray]'), as many at "
                        "once as the cluster has CPUs (--workers does not apply)")
    g.add_argument("--ray-address", default=None, metavar="ADDRESS",
                   help="with --executor ray: 'auto' (a cluster started on this machine), "
                        "'ray://HOST:10001' (a remote head), or none for a local Ray instance")


def sandbox_or_exit(make):
    """``make()`` (an Evaluator), or a clear error if no isolation works or the executor cannot
    start; warns when unsafe."""
    from pdesharp.evaluate.executors import ExecutorUnavailable
    from pdesharp.evaluate.sandbox import SandboxUnavailable

    try:
        ev = make()
    except (SandboxUnavailable, ExecutorUnavailable) as exc:
        fail(str(exc))
    if ev.isolation["unsafe"]:
        print(UNSAFE_WARNING, file=sys.stderr)
    policy = ev.policy
    failed = [r for r in getattr(policy, "reasons", []) if "cannot create the sandbox" in r]
    if policy is not None and policy.mechanism != "bwrap" and failed:
        # said at once, on stderr: a weaker sandbox than the machine has is no silent choice,
        # and a run killed before its result table would not say it otherwise
        print(f"pdesharp: note: bubblewrap could not run here ({failed[-1]}); solvers are "
              f"sealed by {policy.mechanism} (`pdesharp sandbox` says what it does not cover)",
              file=sys.stderr)
    return ev


def register(sub) -> None:
    p = sub.add_parser("sandbox", help="show which isolation mechanism seals generated solvers")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    add_executor_arguments(p)
    p.set_defaults(func=run)


def run_cluster(args) -> int:
    """The sandbox of every node of a Ray cluster (each worker resolves its own)."""
    from pdesharp.evaluate.executors import ExecutorUnavailable, make_executor
    from pdesharp.evaluate.sandbox import SandboxUnavailable

    try:
        make_executor("ray", address=args.ray_address, device=args.device)
        sealed = True
    except SandboxUnavailable:
        sealed = False  # shown per node below
    except ExecutorUnavailable as exc:
        fail(str(exc))
    from pdesharp.evaluate.ray_executor import SandboxRequest, build_id, probe_nodes

    nodes = probe_nodes(SandboxRequest(device=args.device, build=build_id()))  # cached
    if args.json:
        print(json.dumps({"executor": "ray", "sealed": sealed, "nodes": nodes}, indent=2))
        return 0 if sealed else 1
    print(f"Ray cluster ({args.ray_address or 'local instance'}): {len(nodes)} node(s)")
    for p in nodes:
        mech = p["summary"]["mechanism"] if "summary" in p else "NOT SEALED"
        print(f"{p['host']}: isolation {mech} (pdesharp {p['build']}, Python {p['python']})")
        for line in p.get("reasons", []) or p.get("refusal", "").splitlines():
            print(f"  - {line}")
    return 0 if sealed else 1


def run(args) -> int:
    if args.executor == "ray":
        return run_cluster(args)
    from pdesharp.evaluate import cgroups
    from pdesharp.evaluate.sandbox import SandboxUnavailable, probe, resolve

    policy = probe()
    gpu_error = ""
    if args.device == "cuda":
        try:
            policy = resolve(device="cuda")
        except SandboxUnavailable as exc:
            gpu_error = str(exc)
    cg, cg_note = cgroups.create(cgroups.Limits(memory_bytes=2**30, pids=64))
    if cg:
        cg.remove()
    info = {**policy.summary(), "sealed": policy.sealed, "reasons": policy.reasons,
            "scratch": policy.scratch() if policy.sealed else None,
            "not_covered": policy.limitations(),
            "cgroup": cg_note if cg else f"unavailable: {cg_note}", "gpu_error": gpu_error}
    if policy.gpu:
        info["gpu"] = {"nodes": policy.gpu.nodes, "lib_dirs": policy.gpu.lib_dirs}
    if args.json:
        print(json.dumps(info, indent=2))
        return 0 if policy.sealed else 1
    print(f"isolation: {policy.mechanism}" + ("" if policy.sealed else
          " (NOT SEALED: generated code is refused unless --unsafe-no-isolation)"))
    for line in policy.reasons:
        print(f"  - {line}")
    abi = policy.landlock_abi
    print(f"landlock: {'ABI ' + str(abi) if abi else 'not available'}; seccomp: "
          f"{'yes' if policy.seccomp else 'no'}"
          + ("  (defence in depth inside bubblewrap)" if policy.mechanism == "bwrap" else ""))
    print(f"limits on the whole sandbox: {info['cgroup']}")
    if policy.sealed:
        print(f"scratch folder: {info['scratch']}")
    if info["not_covered"]:
        print(f"not covered by {policy.mechanism} (docs/security.md):")
        for line in info["not_covered"]:
            print(f"  - {line}")
    if gpu_error:
        print(f"gpu: {gpu_error}")
    elif policy.gpu:
        print(f"gpu: {len(policy.gpu.nodes)} device node(s); driver libraries from "
              f"{', '.join(policy.gpu.lib_dirs) or 'the system folders'}")
    return 0 if policy.sealed else 1
