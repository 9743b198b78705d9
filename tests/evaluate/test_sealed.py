"""The sealed evaluation's parts: honest results unchanged, the GPU sandbox as assembled, both
cgroup versions, the refusal without isolation and the unsafe opt-out recorded everywhere."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from pdesharp.cli import main
from pdesharp.evaluate import Evaluator, cgroups
from pdesharp.evaluate.gpu import gpu_plan
from pdesharp.evaluate.sandbox import SandboxUnavailable, probe, resolve, scrub
from pdesharp.evaluate.scoring import score_prediction
from pdesharp.evaluate.sealed import Case, Limits, SealedJob, child_limits, run_sealed
from pdesharp.task import load_task


@pytest.mark.parametrize("task_name,solver,n", [("advection", "advection_exact", 20),
                                                ("burgers", "burgers_spectral", 1),
                                                ("reacdiff1d", "reacdiff_strang", 2)])
def test_honest_solver_scores_exactly_as_in_process(task_name, solver, n, shared_data,
                                                    solver_code):
    """The sandbox changes nothing for an honest solver: the same arrays, bit for bit, and
    the same nRMSE as calling it in this process (|difference| <= 1e-12; in fact 0)."""
    task = load_task(task_name)
    ev = Evaluator(task, data_dir=shared_data, max_samples=n, convergence=False, residual=False,
                   timeout=300)
    pred_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"pred-{os.getpid()}-{task_name}.npz"
    r = ev.evaluate_sync(solver_code(solver), split="dev", feedback="nrmse",
                         prediction_path=pred_path)
    assert r.status == "ok", r.message
    ref = ev.reference("dev")
    namespace: dict = {}
    exec(compile(solver_code(solver), f"{solver}.py", "exec"), namespace)
    args = [ev.inputs(ref)[k] if kind == "array" else k for kind, k in ev.spec.arg_refs()]
    direct = np.asarray(namespace["solver"](*args))
    with np.load(pred_path) as saved:
        assert np.array_equal(saved["u"], direct) and saved["u"].dtype == direct.dtype
    pred_path.unlink()
    s = score_prediction(task, ref, {"u": direct}, residual=False, plot_path=None)
    assert abs(r.nrmse - s.nrmse) <= 1e-12
    assert np.max(np.abs(np.array(r.nrmse_per_sample) - s.nrmse_per_sample)) <= 1e-12
    assert r.nrmse_per_field == {"u": r.nrmse}


def test_per_field_nrmse_in_eval_json(cns_small, solver_code, tmp_path):
    (tmp_path / "cns.py").write_text(solver_code("cns_fv"))
    out = tmp_path / "r.json"
    assert main(["eval", str(tmp_path / "cns.py"), "--task", "cns1d", "--dev-data", str(cns_small),
                 "--no-convergence", "--no-residual", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    per = data["nrmse_per_field"]
    assert set(per) == {"v", "rho", "p"} and all(0 < v < 1 for v in per.values())
    # the joint score is CodePDE's stacked norm, not the mean of the fields
    assert data["nrmse"] != pytest.approx(np.mean(list(per.values())), rel=1e-9)
    assert data["seconds_per_sample"] == pytest.approx(data["solver_seconds"] / 2)
    assert data["isolation"] == probe().mechanism and data["sandbox"]["unsafe"] is False


def test_gpu_sandbox_is_assembled_with_nodes_libraries_and_no_address_limit(tmp_path,
                                                                             monkeypatch):
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    for node in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1"):
        (dev / node).write_text("")
    (dev / "null").write_text("")  # not a GPU node
    libdir = tmp_path / "nvidia" / "lib64"
    libdir.mkdir(parents=True)
    ldconfig = (f"\tlibcuda.so.1 (libc6,x86-64) => {libdir}/libcuda.so.1\n"
                f"\tlibnvidia-ml.so.1 (libc6,x86-64) => {libdir}/libnvidia-ml.so.1\n"
                "\tlibm.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libm.so.6\n")
    plan = gpu_plan(dev_root=dev, ldconfig=ldconfig,
                    environ={"CUDA_VISIBLE_DEVICES": "1", "PATH": "/bin"})
    assert plan.nodes == sorted(str(dev / n) for n in ("nvidia0", "nvidia1", "nvidiactl",
                                                       "nvidia-uvm", "nvidia-caps/nvidia-cap1"))
    assert str(libdir) in plan.lib_dirs and "/lib/x86_64-linux-gnu" not in plan.lib_dirs
    assert plan.env == {"CUDA_VISIBLE_DEVICES": "1"}

    from pdesharp.evaluate import sandbox

    monkeypatch.setattr(sandbox, "gpu_plan", lambda: plan)
    cpu = resolve()
    if cpu.mechanism != "bwrap":
        pytest.skip("bubblewrap is not the mechanism here")
    policy = resolve(device="cuda")
    env = policy.env(home="/scratch", tmp="/tmp", threads=1)
    argv = policy.bwrap_argv(env=env)
    pairs = list(zip(argv, argv[1:], argv[2:]))
    for node in plan.nodes:
        assert ("--dev-bind", node, node) in pairs
    assert ("--ro-bind", str(libdir), str(libdir)) in pairs and ("--ro-bind", "/sys", "/sys") \
        in pairs
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "JAX_PLATFORMS" not in env
    lim = Limits(timeout=10, memory_mb=4096)
    assert child_limits(policy, lim, None)["rlimit_as_mb"] is None  # CUDA maps huge VA ranges
    assert child_limits(cpu, lim, None)["rlimit_as_mb"] == 4096
    cpu_argv = cpu.bwrap_argv(env=cpu.env(home="/scratch", tmp="/tmp", threads=1))
    assert "--dev-bind" not in cpu_argv and cpu.env(home="/s", tmp="/t", threads=1)[
        "CUDA_VISIBLE_DEVICES"] == ""
    policy.mechanism = "landlock"
    conf = policy.confinement(tmp_path)
    assert set(plan.nodes) <= set(conf["write"]) and str(libdir) in conf["read"]
    # and the model is told
    from pdesharp.facts import TaskFacts
    from pdesharp.prompting import _env, task_context

    task = load_task("advection")
    gpu = TaskFacts.from_spec(task).model_copy(update={"gpu": True})
    text = _env().get_template("_task.j2").render(**task_context(task, facts=gpu))
    assert "a CUDA GPU is available" in text
    assert "CUDA GPU" not in _env().get_template("_task.j2").render(**task_context(task))


def test_cgroup_v2_and_v1_on_fake_trees(tmp_path):
    v2 = tmp_path / "unified"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu memory pids io\n")
    (v2 / "cgroup.subtree_control").write_text("cpu\n")
    mountinfo = (f"30 25 0:26 / {v2} rw - cgroup2 cgroup2 rw\n"
                 f"31 25 0:27 / {tmp_path}/memory rw - cgroup cgroup rw,memory\n")
    found = cgroups.hierarchies(mountinfo, "0::/user.slice/x.scope\n4:memory:/a/b\n")
    assert [(h.version, h.own) for h in found] == [(2, "/user.slice/x.scope"), (1, "/a/b")]

    real_write = cgroups._write

    def fake_write(path: Path, value: str):
        if path.name == "cgroup.subtree_control":  # the kernel adds controllers
            old = set(path.read_text().split()) if path.exists() else set()
            value = " ".join(sorted(old | {v.lstrip("+") for v in value.split()}))
        real_write(path, value)

    cgroups._write = fake_write
    try:
        (v2 / "pdesharp").mkdir()
        (v2 / "pdesharp" / "cgroup.subtree_control").write_text("")
        cg, note = cgroups.create(cgroups.Limits(memory_bytes=2**30, pids=64), found=found[:1],
                                  name="e1")
    finally:
        cgroups._write = real_write
    assert cg is not None and cg.version == 2 and "cgroup v2" in note
    d = v2 / "pdesharp" / "e1"
    assert (d / "memory.max").read_text() == str(2**30) and (d / "pids.max").read_text() == "64"
    assert {"memory", "pids"} <= set((v2 / "cgroup.subtree_control").read_text().split())
    assert cg.procs_files == [str(d / "cgroup.procs")]
    (d / "memory.peak").write_text("123456789\n")
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n")
    assert cg.peak_memory_bytes() == 123456789 and cg.oom_kills() == 2

    # v1: under this process's own cgroup, one directory per controller
    (tmp_path / "memory" / "a" / "b").mkdir(parents=True)
    cg1, note1 = cgroups.create(cgroups.Limits(memory_bytes=2**29, pids=None), found=found[1:],
                                name="e2")
    d1 = tmp_path / "memory" / "a" / "b" / "e2"
    assert cg1.version == 1 and (d1 / "memory.limit_in_bytes").read_text() == str(2**29)
    (d1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert cg1.oom_kills() == 1 and "no pids hierarchy" in " ".join(cg1.notes)

    # neither: a reason, no cgroup
    none, why = cgroups.create(cgroups.Limits(2**30, 8), found=[])
    assert none is None and why


def test_no_isolation_is_refused_without_the_flag(shared_data, tmp_path, capsys, monkeypatch):
    with pytest.raises(SandboxUnavailable, match="--unsafe-no-isolation"):
        resolve(force="none")
    monkeypatch.setenv("PDESHARP_SANDBOX", "none")
    solver = tmp_path / "s.py"
    solver.write_text("import numpy as np\ndef solver(u0_batch, t_coordinate, beta):\n"
                      "    return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)\n")
    with pytest.raises(SystemExit) as exc:
        main(["eval", str(solver), "--task", "advection", "--data-dir", str(shared_data)])
    assert exc.value.code == 2 and "--unsafe-no-isolation" in capsys.readouterr().err


def test_unsafe_run_is_warned_and_recorded_in_run_summary_and_report(shared_data, tmp_path,
                                                                     capsys):
    code = main(["solve", "advection", "--unsafe-no-isolation", "--data-dir", str(shared_data),
                 "--max-samples", "1", "--candidates", "1", "--max-rounds", "1",
                 "--rejudge-cycles", "0", "--no-convergence", "--quiet", "--out", str(tmp_path),
                 "--run-id", "u"])
    assert code == 0
    assert "--unsafe-no-isolation" in capsys.readouterr().err
    run = tmp_path / "u"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["isolation"]["unsafe"] is True and summary["isolation"]["mechanism"] == "none"
    assert "WARNING: solvers ran without isolation" in (run / "report.md").read_text()
    from pdesharp.store import RunStore

    store = RunStore.open(run)
    assert store.events("isolation")[0]["unsafe"] is True
    assert all(r.isolation == "none" for c in store.candidates() for r in store.results_for(c.id))


def test_sandbox_command_says_what_is_active(capsys):
    assert main(["sandbox", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sealed"] and info["mechanism"] in ("bwrap", "landlock")
    assert info["mechanism"] in " ".join(info["reasons"])
    if os.geteuid() == 0:
        assert info["uid"] == 65534 and "root" in info["reasons"][0]


def test_seam_runs_several_cases_and_checks_declared_dtypes():
    """The executor seam alone (what a remote executor will call): two cases, a float32 and
    an int output kept as declared, a complex output refused as a shape error."""
    code = ("import numpy as np\n"
            "def f(a, s):\n"
            "    return (a * s).astype(np.float32), np.arange(a.shape[0])\n")
    job = SealedJob(code=code, function="f", args=[("array", "a"), ("scalar", 2)],
                    cases=[Case({"a": np.ones((3, 4))}, [("x", (3, 4)), ("n", (3,))]),
                           Case({"a": np.ones((5, 2))}, [("x", (5, 2)), ("n", (5,))])],
                    limits=Limits(timeout=30, memory_mb=1024))
    run = asyncio.run(run_sealed(job, resolve()))
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert [o["x"].dtype for o in run.outputs] == [np.float32, np.float32]
    assert np.array_equal(run.outputs[1]["x"], np.full((5, 2), 2, np.float32))
    assert run.outputs[0]["n"].dtype.kind == "i" and list(run.outputs[1]["n"]) == [0, 1, 2, 3, 4]
    assert run.solver_seconds is not None and 0 <= run.solver_seconds < run.wall_seconds
    job.code = "import numpy as np\ndef f(a, s):\n    return a * 1j, a[:, 0]\n"
    bad = asyncio.run(run_sealed(job, resolve()))
    assert bad.status == "shape" and "complex" in bad.detail  # the child's words: detail
    assert bad.message == "the solver's output is not one real array of the expected shape per output"


def test_scrub_removes_secret_values_and_token_shapes():
    env = {"MY_API_KEY": "abcdef123456", "PATH": "/usr/bin", "SHORT_TOKEN": "1"}
    text = "key abcdef123456 and sk-" + "a" * 30 + " path /usr/bin token 1"
    out = scrub(text, env)
    assert "abcdef123456" not in out and "sk-aaa" not in out and "/usr/bin" in out
    assert out.endswith("token 1")  # short values are not secrets worth mangling text for
    assert len(scrub("x" * 10_000, env)) == 5000


def _venv_like_this_environment(venv: Path) -> None:
    """A venv at ``venv`` that imports what this test run imports: the interpreter's own
    packages when the tests run from a system-wide install (CI), the outer venv's packages
    (pdesharp from this checkout included) when they run from a venv. Its site-packages is then
    a link to the outer one, which the sandbox resolves and binds like any site-packages."""
    import subprocess
    import sys
    import sysconfig

    in_venv = sys.prefix != sys.base_prefix
    cfg = Path(sys.prefix, "pyvenv.cfg")
    system_site = not in_venv or "include-system-site-packages = true" in (
        cfg.read_text() if cfg.exists() else "")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv),
                    *(["--system-site-packages"] if system_site else [])], check=True)
    if in_venv:
        outer = Path(sysconfig.get_path("purelib"))
        inner = venv / outer.relative_to(sys.prefix)
        shutil.rmtree(inner)
        inner.symlink_to(outer, target_is_directory=True)


def test_sandbox_works_from_a_virtual_environment(tmp_path):
    """A venv (here under /tmp, where the sandbox mounts its own /tmp) is bound in read-only,
    so `pip install` into a venv gives the same isolation as the system interpreter. The venv
    is built from the environment running the tests, and the pdesharp it imports is this one."""
    import subprocess
    import sys

    import pdesharp

    venv = tmp_path / "venv"
    _venv_like_this_environment(venv)
    code = ("import asyncio, numpy as np, pdesharp\n"
            "from pdesharp.evaluate.sandbox import probe\n"
            "from pdesharp.evaluate.sealed import Case, Limits, SealedJob, run_sealed\n"
            "job = SealedJob(code='import sys\\ndef f(a):\\n    print(sys.prefix)\\n"
            "    return a + 1\\n', function='f', args=[('array', 'a')],\n"
            "                cases=[Case({'a': np.zeros(3)}, [('y', (3,))])],\n"
            "                limits=Limits(timeout=30, memory_mb=1024))\n"
            "r = asyncio.run(run_sealed(job, probe()))\n"
            "print(pdesharp.__file__)\n"
            "print(r.mechanism, r.status, r.outputs[0]['y'].tolist(), r.stdout_tail.strip())\n")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True,
                         text=True, timeout=600, env={**os.environ})
    assert out.returncode == 0, out.stderr
    imported, line = out.stdout.splitlines()[:2]
    assert imported == pdesharp.__file__  # this checkout, not another install
    mech, status, rest = line.split(" ", 2)
    assert mech == probe().mechanism and status == "ok"
    assert rest.startswith("[1.0, 1.0, 1.0]") and rest.strip().endswith(str(venv))
