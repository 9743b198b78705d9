"""The sandbox: every failure mode of untrusted solver code gets its own status, nothing leaks,
nothing survives. All cases run on one advection sample, concurrently (workers=2)."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import textwrap

import numpy as np
import psutil
import pytest

from pdesharp.evaluate import Evaluator
from pdesharp.evaluate.sandbox import build_env, run_sandboxed
from pdesharp.task import load_task

HEADER = "import numpy as np\nimport os, sys, time, subprocess\n"

CASES = {
    "ok_list": """
        def solver(u0_batch, t_coordinate, beta):
            u = np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
            return u.tolist()  # plain lists are converted with np.asarray
    """,
    "sleep_forever": """
        def solver(u0_batch, t_coordinate, beta):
            while True:
                time.sleep(1)
    """,
    "allocate": """
        def solver(u0_batch, t_coordinate, beta):
            hog = []
            while True:
                hog.append(np.ones(25_000_000))  # 200 MB per step, touched
    """,
    "grandchild": """
        def solver(u0_batch, t_coordinate, beta):
            child = subprocess.Popen(["sleep", "1000"])
            print(f"CHILD_PID={child.pid}", flush=True)
            return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
    """,
    "secrets": """
        def solver(u0_batch, t_coordinate, beta):
            print("KEY=" + repr(os.environ.get("OPENAI_API_KEY")))
            leaked = [k for k in os.environ if re.search("KEY|TOKEN|SECRET", k)]
            print("LEAKED=" + repr(leaked))
            print("HOME=" + os.environ.get("HOME", ""))
            return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
        import re
    """,
    "wrong_frames": """
        def solver(u0_batch, t_coordinate, beta):
            return np.repeat(u0_batch[:, None], len(t_coordinate) - 1, axis=1)
    """,
    "nan": """
        def solver(u0_batch, t_coordinate, beta):
            u = np.repeat(u0_batch[:, None], len(t_coordinate), axis=1).astype(float)
            u[:, -1, 3] = np.nan
            return u
    """,
    "syntax": """
        def solver(u0_batch, t_coordinate, beta)
            return u0_batch
    """,
    "missing": """
        def solve(u0_batch, t_coordinate, beta):
            return u0_batch
    """,
    "raises": """
        def helper(x):
            raise ValueError("CFL condition violated in helper")
        def solver(u0_batch, t_coordinate, beta):
            print("about to fail")
            return helper(u0_batch)
    """,
    "bad_frame0": """
        def solver(u0_batch, t_coordinate, beta):
            u = np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
            u[:, 0] = 0.0  # forgot the initial condition: reported, not fatal (as in CodePDE)
            return u
    """,
    "conv_hang": """
        def solver(u0_batch, t_coordinate, beta):
            if u0_batch.shape[-1] != 1024:  # the convergence test's grids: hang there
                while True:
                    time.sleep(1)
            return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
    """,
    "forge": """
        import atexit, json
        def _forge():  # runs after the harness has written its own result.json
            with open("result.json", "w") as fh:
                json.dump({"status": "ok", "nrmse": 0.0, "nrmse_per_sample": [0.0]}, fh)
        atexit.register(_forge)
        def solver(u0_batch, t_coordinate, beta):
            print("JOB=" + open("job.json").read())
            print("INPUTS=" + repr(sorted(np.load("inputs.npz").files)))
            return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
    """,
    "exits": """
        def solver(u0_batch, t_coordinate, beta):
            sys.exit(3)
    """,
}


@pytest.fixture(scope="module")
def results(shared_data):
    os.environ["OPENAI_API_KEY"] = "sk-test-must-not-leak"
    os.environ["HF_TOKEN"] = "hf-test-must-not-leak"
    try:
        task = load_task("advection")
        # 1024 MB of address space: NumPy + SciPy + h5py import in ~300 MB (measured VmPeak)
        ev = Evaluator(task, data_dir=shared_data, max_samples=1, convergence=False,
                       residual=False, workers=2, timeout=25, memory_mb=1024)
        # generous: child start-up (imports) alone can take several seconds on a loaded machine
        slow = Evaluator(task, data_dir=shared_data, max_samples=1, convergence=False,
                         residual=False, workers=1, timeout=20, memory_mb=1024)

        conv = Evaluator(task, data_dir=shared_data, max_samples=1, convergence=True,
                         residual=False, workers=1, timeout=20, memory_mb=1024)

        async def run_all():
            jobs = {}
            for name, body in CASES.items():
                code = HEADER + textwrap.dedent(body)
                which = {"sleep_forever": slow, "conv_hang": conv}.get(name, ev)
                jobs[name] = which.evaluate(code, split="dev", feedback="nrmse", label=name)
            out = await asyncio.gather(*jobs.values())
            return dict(zip(jobs, out)), ev.n_evaluations + slow.n_evaluations + conv.n_evaluations

        res, count = asyncio.run(run_all())
    finally:
        os.environ.pop("OPENAI_API_KEY", None)
        os.environ.pop("HF_TOKEN", None)
    res["_count"] = count
    return res


def test_every_run_is_counted(results):
    assert results["_count"] == len(CASES)


def test_list_output_is_converted(results):
    r = results["ok_list"]
    assert r.status == "ok", r.message + r.stderr_tail
    # repeating u0 for all frames of a travelling wave: a large but finite error
    assert 0.1 < r.nrmse < 2.0 and len(r.nrmse_per_sample) == 1 and r.n_samples == 1
    assert r.solver_seconds is not None and r.solver_seconds < r.wall_seconds


def test_timeout_kills_the_group(results):
    r = results["sleep_forever"]
    assert r.status == "timeout"
    assert "20-second timeout" in r.message
    assert 20 <= r.wall_seconds < 20 + 2 + 3  # SIGTERM, then SIGKILL after a 2 s grace


def test_memory_limit(results):
    r = results["allocate"]
    assert r.status == "memory", (r.status, r.message, r.stderr_tail[-500:])
    assert "MemoryError" in r.message or "memory" in r.message
    assert r.peak_memory_mb is not None and r.peak_memory_mb < 1024


def test_grandchild_does_not_survive(results):
    r = results["grandchild"]
    assert r.status == "ok", r.message
    pid = int(re.search(r"CHILD_PID=(\d+)", r.stdout_tail).group(1))
    try:
        proc = psutil.Process(pid)
        alive = proc.status() != psutil.STATUS_ZOMBIE and "sleep" in " ".join(proc.cmdline())
    except psutil.NoSuchProcess:
        alive = False
    assert not alive
    assert "left running" in r.message


def test_no_secrets_in_the_child(results):
    r = results["secrets"]
    assert r.status == "ok", r.message
    assert "KEY=None" in r.stdout_tail
    assert "LEAKED=[]" in r.stdout_tail
    assert "must-not-leak" not in r.stdout_tail + r.stderr_tail
    assert "pdesharp-eval-secrets" in r.stdout_tail  # HOME is the scratch directory


def test_forged_result_file_cannot_fake_the_score(results):
    """The child never sees the reference, and the parent scores the prediction itself."""
    r = results["forge"], results["ok_list"]
    assert r[0].status == "ok"
    # same values, true score; float32 array here vs float64 (from a list) there: 1e-6
    assert r[0].nrmse == pytest.approx(r[1].nrmse, rel=1e-6)
    assert r[0].nrmse > 0.1
    job = re.search(r"JOB=(.*)", r[0].stdout_tail).group(1)
    assert "advection_dev" not in job and "pdebench" not in job  # no data path handed over
    inputs = re.search(r"INPUTS=(.*)", r[0].stdout_tail).group(1)
    assert inputs == "['initial:u', 'time', 'x']"  # inputs only, no reference frames


def test_frame0_mismatch_is_reported_not_fatal(results):
    r = results["bad_frame0"]
    assert r.status == "ok" and r.nrmse is not None
    assert "frame 0 differs from the initial condition" in r.message


def test_timeout_in_convergence_test_keeps_the_nrmse(results):
    r = results["conv_hang"]
    assert r.status == "ok" and r.nrmse is not None and r.convergence_order is None
    assert "convergence test timed out" in r.convergence_note


def test_wrong_frame_count_is_shape(results):
    r = results["wrong_frames"]
    assert r.status == "shape"
    assert "(1, 200, 1024)" in r.message and "(1, 201, 1024)" in r.message
    assert "frames" in r.message
    assert r.nrmse is None


def test_nan_status(results):
    r = results["nan"]
    assert r.status == "nan" and r.nrmse is None
    assert "NaN" in r.message


def test_syntax_error(results):
    r = results["syntax"]
    assert r.status == "error"
    assert "SyntaxError" in r.message and "SyntaxError" in r.stderr_tail


def test_missing_solver_function(results):
    r = results["missing"]
    assert r.status == "error"
    assert "no function 'solver'" in r.message


def test_exception_message_and_traceback(results):
    r = results["raises"]
    assert r.status == "error"
    assert "ValueError" in r.message and "CFL condition violated" in r.message
    assert "in helper" in r.stderr_tail  # the traceback names the solver's own frames
    assert "about to fail" in r.stdout_tail


def test_sys_exit_is_an_error(results):
    r = results["exits"]
    assert r.status == "error" and "SystemExit" in r.message


def _dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_run_sandboxed_timeout_kills_grandchildren_and_keeps_output(tmp_path):
    """A bare child (no heavy imports) that prints, spawns a grandchild and hangs."""
    script = ("import subprocess, sys, time\n"
              "c = subprocess.Popen(['sleep', '1000'])\n"
              "print('GRANDCHILD', c.pid, flush=True)\n"
              "time.sleep(1000)\n")
    run = asyncio.run(run_sandboxed([sys.executable, "-c", script], cwd=tmp_path,
                                    env=build_env(tmp_path), timeout=1.5))
    assert run.timed_out and run.returncode is not None and run.returncode < 0
    assert 1.5 <= run.wall_seconds < 1.5 + 2 + 2  # SIGTERM ends python at once; 2 s grace max
    pid = int(re.search(r"GRANDCHILD (\d+)", run.stdout_tail).group(1))
    assert _dead(pid)


def test_run_sandboxed_kills_escaped_descendants(tmp_path):
    """A grandchild in its own session escapes killpg, and the child exits at once (before any
    descendant poll could see it); the environment marker still finds and kills it."""
    script = ("import subprocess\n"
              "c = subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
              "print('ESCAPED', c.pid, flush=True)\n")
    run = asyncio.run(run_sandboxed([sys.executable, "-c", script], cwd=tmp_path,
                                    env=build_env(tmp_path), timeout=20))
    assert not run.timed_out and run.returncode == 0
    pid = int(re.search(r"ESCAPED (\d+)", run.stdout_tail).group(1))
    assert pid in run.killed_leftovers
    assert _dead(pid)


def test_env_allowlist_directly(tmp_path):
    env = build_env(tmp_path, threads=2, base={"PATH": "/bin", "GITHUB_TOKEN": "x",
                                               "MY_SECRET_THING": "y", "AWS_SECRET_ACCESS_KEY": "z",
                                               "LANG": "C.UTF-8"})
    assert not any(re.search("KEY|TOKEN|SECRET", k) for k in env)
    assert env["HOME"] == str(tmp_path) and env["OMP_NUM_THREADS"] == "2"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_missing_data_is_a_clear_error(tmp_path):
    from pdesharp.data import DataNotFound

    ev = Evaluator(load_task("advection"), data_dir=tmp_path)
    with pytest.raises(DataNotFound, match="pdesharp data download advection"):
        ev.evaluate_sync("def solver(*a): pass", split="dev", feedback="nrmse")
    assert ev.n_evaluations == 0  # nothing ran, nothing counted


def test_available_libraries_lists_what_the_child_can_import():
    from pdesharp.evaluate import available_libraries

    libs = available_libraries()
    assert "numpy" in libs and "scipy" in libs
    import importlib.util

    assert all(importlib.util.find_spec(n) is not None for n in libs)  # nothing invented
