"""The child side of an evaluation: ``python -m pdesharp.evaluate.harness JOB.json``.

Runs inside the sandbox's scratch directory. Order matters: resource limits first (before NumPy
and long before the solver is imported), then the solver's inputs, the solver call (timed alone:
CodePDE's "Time"), output checks, the saved prediction and the optional convergence test (see
:mod:`.run_child`). Bookkeeping goes to ``result.json``; an interim copy is written once the
prediction is saved, so a convergence test that hangs or blows the memory limit does not lose
the result. Scores are computed by the parent, never here.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback


def set_limits(memory_mb: int | None, fsize_mb: int | None) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_mb:
        limit = int(memory_mb) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if fsize_mb:
        limit = int(fsize_mb) * 2**20
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _peak_mb() -> float:
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(self_kb, child_kb) / 1024.0  # Linux reports kilobytes


def _write(path: str, result: dict) -> None:
    result["peak_memory_mb"] = _peak_mb()
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh, allow_nan=True)
    os.replace(tmp, path)


def _error_text(exc: BaseException, limit: int = 3000) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text[-limit:]


def _classify(exc: BaseException) -> str:
    return "memory" if isinstance(exc, MemoryError) else "error"


def main(argv: list[str]) -> int:
    job_path = argv[0]
    with open(job_path) as fh:
        job = json.load(fh)
    set_limits(job.get("memory_mb"), job.get("fsize_mb"))
    job["t0"] = T0
    result_path = job["result_path"]
    result: dict = {"status": "error", "message": "", "stage": "setup"}
    try:
        from pdesharp.evaluate import run_child  # heavy imports happen under the limits
        run_child.run(job, result, lambda: _write(result_path, result))
    except BaseException as exc:  # the solver can raise anything, SystemExit included
        result["status"] = _classify(exc)
        stage = result.get("stage", "")
        where = f" during {stage}" if stage else ""
        result["message"] = f"{type(exc).__name__}{where}: {exc}"[:1000]
        result["traceback"] = _error_text(exc)
        traceback.print_exc()
    result["harness_seconds"] = time.perf_counter() - T0
    _write(result_path, result)
    return 0


T0 = time.perf_counter()

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
