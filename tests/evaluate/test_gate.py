"""The held-back case (``SealedJob.gate``, child.py's gate): the runner's warm timing. The last
case's inputs reach the sandbox only when the runner asks for them after the earlier calls, and
the watchdog's clock at that request starts ``warm_seconds``. Hostile solvers try to see those
inputs early, to ask early, to stop the request, and to flood the request pipe."""

from __future__ import annotations

import asyncio

import numpy as np

from pdesharp.evaluate.sandbox import resolve
from pdesharp.evaluate.sealed import Case, Limits, SealedJob, run_sealed

MARK = 12345.678125  # exactly representable: its 8 bytes are what a search looks for
HELD = np.full((3, 4), MARK)


def _run(code: str, timeout: float = 30.0, gate: bool = True):
    job = SealedJob(code=code, function="f", args=[("array", "a")],
                    cases=[Case({"a": np.ones((1, 4))}, [("x", (1, 4))]),
                           Case({"a": HELD}, [("x", (3, 4))])],
                    limits=Limits(timeout=timeout, memory_mb=1024), gate=gate)
    return asyncio.run(run_sealed(job, resolve()))


def test_the_held_call_is_timed_alone():
    # 0.4 s at import and 0.1 s a sample: the first call (1 sample) and the import are not in
    # the warm time; the held call (3 samples) is. Sleeps only lengthen a time, so the lower
    # bounds hold on any machine, loaded or not; the import and the first call (0.5 s of
    # sleep) lie before the request, inside the whole time and outside the warm one (0.1 s of
    # that kept as slack: the parent's own clock reads the events late by a few ms, by more
    # on a loaded machine, and each time keeps the larger of its two measurements)
    code = ("import time\ntime.sleep(0.4)\n"
            "def f(a):\n    time.sleep(0.1 * a.shape[0])\n    return a * 2.0\n")
    run = _run(code)
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert np.array_equal(run.outputs[1]["x"], 2.0 * HELD)
    assert run.solver_seconds >= 0.8 and run.warm_seconds >= 0.3
    assert run.warm_seconds <= run.solver_seconds - 0.4
    plain = _run(code, gate=False)  # no gate: no warm time, the same outputs
    assert plain.status == "ok" and plain.warm_seconds is None
    assert np.array_equal(plain.outputs[1]["x"], run.outputs[1]["x"])


SNOOP = '''
import os, stat
import numpy as np
MARK = np.float64(%r).tobytes()
seen = []
def f(a):
    if a.shape[0] == 1:  # the first call: look everywhere the held inputs could be
        for fd in range(3, 256):
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            data = b""
            try:
                if stat.S_ISFIFO(st.st_mode):
                    os.set_blocking(fd, False)
                    data = os.read(fd, 1 << 20)
                elif stat.S_ISREG(st.st_mode):
                    data = os.pread(fd, 1 << 24, 0)
            except OSError:
                pass
            seen.append(MARK in data)
        return np.full(a.shape, float(any(seen)))
    return a
''' % MARK


def test_the_held_inputs_cannot_be_read_before_the_request():
    # every descriptor the solver holds during its first call, read as far as it gives: the
    # held values are in none of them (the watchdog alone holds their memory file)
    run = _run(SNOOP)
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert run.outputs[0]["x"].tolist() == [[0.0] * 4]  # not found
    assert np.array_equal(run.outputs[1]["x"], HELD)


ASK_EARLY = '''
import os, stat, time
def f(a):
    if a.shape[0] == 1:  # ask for the held inputs now, then work 0.5 s more on this call
        for fd in range(3, 256):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, b"G")
            except OSError:
                pass
        time.sleep(0.5)
    return a
'''


def test_asking_early_only_lengthens_the_warm_time():
    run = _run(ASK_EARLY)
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert np.array_equal(run.outputs[1]["x"], HELD)
    assert run.warm_seconds >= 0.5  # the sleep after its own request counts


BLOCK = '''
import os
def f(a):
    if a.shape[0] == 1:  # close every descriptor beyond the standard three: no request
        os.closerange(3, 256)
    return a
'''


def test_stopping_the_request_fails_the_run_without_a_warm_time():
    run = _run(BLOCK, timeout=10)
    assert run.status in ("error", "timeout") and run.warm_seconds is None
    assert not run.outputs


FLOOD = '''
import os, stat, threading
def flood(fd):
    try:
        while True:
            os.write(fd, b"G" * 65536)
    except OSError:
        pass
def f(a):
    if a.shape[0] == 1:  # flood the request pipe from a thread, and go on
        for fd in range(3, 256):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    threading.Thread(target=flood, args=(fd,), daemon=True).start()
            except OSError:
                pass
    return a * 3.0
'''


def test_a_flooded_request_pipe_does_not_stall_the_watchdog():
    run = _run(FLOOD, timeout=20)
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert np.array_equal(run.outputs[1]["x"], 3.0 * HELD) and run.warm_seconds is not None


def test_the_evaluator_times_the_samples_after_the_first_warm(shared_data, solver_code):
    # the exact advection solver with 0.5 s of one-off work at import: the warm timing scores
    # the same prediction (the solver is per sample: bit for bit the same nRMSE) and its warm
    # call, samples 2-4, leaves the import and the first call out
    from pdesharp.evaluate import Evaluator
    from pdesharp.task import load_task

    code = "import time\ntime.sleep(0.5)\n" + solver_code("advection_exact")
    ev = Evaluator(load_task("advection"), data_dir=shared_data, max_samples=4,
                   convergence=True, residual=False, timeout=300)
    plain = ev.evaluate_sync(code, split="dev", feedback="nrmse")
    warm = ev.evaluate_sync(code, split="dev", feedback="nrmse", warm=True)
    assert plain.status == warm.status == "ok", (plain.message, warm.message)
    assert warm.nrmse == plain.nrmse and warm.nrmse_per_sample == plain.nrmse_per_sample
    assert (plain.warm_seconds, plain.warm_samples) == (None, 0)
    assert warm.warm_samples == 3 and warm.n_samples == 4
    # (0.5 s of import before the request; 0.1 s of it kept as slack for the parent's clock)
    assert warm.solver_seconds >= 0.5 and warm.warm_seconds <= warm.solver_seconds - 0.4
    # no convergence test in a warm timing (it is a timing, not a verdict)
    assert plain.convergence_order is not None or plain.convergence_note
    assert warm.convergence_order is None and not warm.convergence_note
