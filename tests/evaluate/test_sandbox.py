"""The sandbox: every failure mode of untrusted solver code gets its own status, nothing leaks,
nothing survives. All cases run on one advection sample, concurrently (workers=2). The attacks
of the sealed-evaluation issue have their own suite (test_hostile.py)."""

from __future__ import annotations

import asyncio
import os
import re
import textwrap

import psutil
import pytest

from pdesharp.evaluate import Evaluator
from pdesharp.evaluate.sandbox import probe
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
            subprocess.Popen(["sleep", "1000.4242"])  # a marker argument to find it by
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
        def _forge():  # would run at exit: the child leaves with os._exit, and reads no file
            with open("result.json", "w") as fh:
                json.dump({"status": "ok", "nrmse": 0.0, "nrmse_per_sample": [0.0]}, fh)
        atexit.register(_forge)
        _forge()
        def solver(u0_batch, t_coordinate, beta):
            print("FILES=" + repr(sorted(os.listdir("."))))
            return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
    """,
    "exits": """
        def solver(u0_batch, t_coordinate, beta):
            sys.exit(3)
    """,
    # the libraries the file imports are imported before its clock starts (child.py
    # preload_libraries; the runner itself imports NumPy only) ...
    "preloaded": """
        LOADED = "scipy.sparse.linalg" in sys.modules
        import scipy.sparse.linalg
        def solver(u0_batch, t_coordinate, beta):
            if not LOADED:
                raise RuntimeError("scipy.sparse.linalg was not imported before the solver")
            return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
    """,
    # ... except after a line that sets the environment, which a library reads at its import
    "environment_first": """
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        LOADED = "scipy.sparse.linalg" in sys.modules
        import scipy.sparse.linalg
        def solver(u0_batch, t_coordinate, beta):
            if LOADED:
                raise RuntimeError("scipy.sparse.linalg was imported before the file set it up")
            return np.repeat(u0_batch[:, None], len(t_coordinate), axis=1)
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
                         residual=False, workers=1, timeout=4, memory_mb=1024)

        conv = Evaluator(task, data_dir=shared_data, max_samples=1, convergence=True,
                         residual=False, workers=1, timeout=4, memory_mb=1024)

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
    assert "4-second timeout" in r.message
    # the watchdog inside the sandbox kills at 4 s from its start; start-up adds well under 5 s
    assert 4 <= r.wall_seconds < 4 + 5


def test_memory_limit(results):
    r = results["allocate"]
    assert r.status == "memory", (r.status, r.message, r.stderr_tail[-500:])
    assert "MemoryError" in r.message or "memory" in r.message
    assert r.peak_memory_mb is not None and r.peak_memory_mb < 1024


def test_grandchild_does_not_survive(results):
    r = results["grandchild"]
    assert r.status == "ok", r.message
    alive = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.info["cmdline"] == ["sleep", "1000.4242"] and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.pid)
        except psutil.Error:
            pass
    assert alive == []
    assert "left running" in r.message


def test_no_secrets_in_the_child(results):
    r = results["secrets"]
    assert r.status == "ok", r.message
    assert "KEY=None" in r.stdout_tail
    assert "LEAKED=[]" in r.stdout_tail
    assert "must-not-leak" not in r.stdout_tail + r.stderr_tail
    assert re.search(r"HOME=(/scratch|\S*pdesharp-eval-)", r.stdout_tail)  # the scratch folder


def test_forged_result_file_cannot_fake_the_score(results):
    """The child never sees the reference, and the parent scores the prediction itself."""
    r = results["forge"], results["ok_list"]
    assert r[0].status == "ok"
    # same values, true score; float32 array here vs float64 (from a list) there: 1e-6
    assert r[0].nrmse == pytest.approx(r[1].nrmse, rel=1e-6)
    assert r[0].nrmse > 0.1
    files = eval(re.search(r"FILES=(.*)", r[0].stdout_tail).group(1))
    # its own source and what it wrote: no inputs file, job file, data path or reference
    assert set(files) <= {"solver.py", "result.json", "tmp"}, files


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
    # the message is pdesharp's own (the class name, checked); the runner's words are detail
    assert r.message == "the solver raised AttributeError during loading the solver"
    assert "no function 'solver'" in r.detail


def test_exception_message_and_traceback(results):
    r = results["raises"]
    assert r.status == "error"
    # the exception's text is the solver's own words: kept as untrusted detail, not message
    assert r.message == "the solver raised ValueError during the solver call"
    assert r.error_type == "ValueError"
    assert "CFL condition violated" in r.detail and "CFL" not in r.message
    assert "in helper" in r.stderr_tail  # the traceback names the solver's own frames
    assert "about to fail" in r.stdout_tail


def test_sys_exit_is_an_error(results):
    r = results["exits"]
    assert r.status == "error" and "SystemExit" in r.message


def test_the_files_libraries_are_imported_before_its_clock_and_in_its_order(results):
    assert results["preloaded"].status == "ok", results["preloaded"].message
    assert results["environment_first"].status == "ok", results["environment_first"].message


def test_library_imports_reads_the_import_lines_and_names_library_modules_only():
    from pdesharp.evaluate.preload import library_imports, preload_libraries

    code = textwrap.dedent('''\
        """A docstring: import scipy.linalg"""
        from __future__ import annotations
        import numpy as np, scipy.sparse.linalg as spla  # two
        from scipy.fft import rfft, next_fast_len
        from scipy import (integrate,
                           optimize as opt)
        import json, solver_helper
        from . import sibling
        def solver():
            import scipy.special  # indented: read when it runs
        import numba
        os.environ["NUMBA_NUM_THREADS"] = "1"
        import scipy.signal
    ''')
    assert library_imports(code) == [
        "numpy", "scipy.sparse.linalg", "scipy.fft", "scipy.fft.rfft",
        "scipy.fft.next_fast_len", "scipy", "scipy.integrate", "scipy.optimize", "numba"]
    assert len(library_imports("import scipy.fft\n" * 500)) == 64  # bounded
    # names that are not modules are skipped, and nothing outside the three libraries loads
    assert preload_libraries("from numpy import pi\nimport json\n") == []
    assert preload_libraries("import os\nimport os.path\n") == []


def test_env_allowlist_directly(monkeypatch):
    for k, v in {"GITHUB_TOKEN": "x", "MY_SECRET_THING": "y", "AWS_SECRET_ACCESS_KEY": "z"}.items():
        monkeypatch.setenv(k, v)
    env = probe().env(home="/scratch", tmp="/tmp", threads=2)
    assert not any(re.search("KEY|TOKEN|SECRET", k) for k in env)
    assert env["HOME"] == "/scratch" and env["OMP_NUM_THREADS"] == "2"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["CUDA_VISIBLE_DEVICES"] == ""


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
