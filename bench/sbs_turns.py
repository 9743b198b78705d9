"""The side-by-side bench's warm ratio in turns (bench/side_by_side.py, step 4): pdesharp's winner
and a library point timed warm one after the other, round by round, in one worker process
(bench/sbs_worker.py's ``duel``), one process per library point."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from sbs_pairing import turn_ratios

HERE = Path(__file__).resolve().parent


def duel(case, d, solver, call, bracket: list[dict], goal: float, rounds: int,
         inputs, log) -> dict | None:
    """pdesharp's winner timed warm in turns with each library point of ``bracket`` (one, or
    the two that bracket ``goal`` on the warm front), one process per point (sbs_worker.duel;
    one per point because a library's settings may not share a process: JAX's float64 switch
    is global): per round the winner's time over the point's, then the library's time at
    ``goal`` relative to the winner's, log-log between the two points by their sweep nRMSE.
    The median and quartiles of the rounds' ratios; None if a worker failed. ``inputs`` and
    ``log``: side_by_side's (a point's worker inputs at its grid; a progress line)."""
    mine = {"solver_kind": "pdesharp", "solver": solver, "call": call, "config": {},
            "inputs": str(inputs(case, d, 1)[0]), "stride": 1, "offset": 0}
    per_point = []
    for p in bracket:
        npz, stride, offset = inputs(case, d, p["refine"])
        item = {"solver_kind": case.library, "config": p["config"], "inputs": str(npz),
                "stride": stride, "offset": offset}
        path = d / f"duel_{os.getpid()}.json"
        path.write_text(json.dumps({"case": case.name, "duel": [mine, item], "rounds": rounds}))
        run = subprocess.run([sys.executable, str(HERE / "sbs_worker.py"), str(path)],
                             capture_output=True, text=True, timeout=3600,
                             env=dict(os.environ, JAX_PLATFORMS="cpu"))
        lines = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
        if run.returncode != 0 or not lines:
            log(f"  duel failed: {run.stderr.strip()[-300:]}")
            return None
        per_point.append(lines[0]["duel"])
    out = {"nrmse": per_point[0][0]["nrmse"], "rounds": min(len(w[0]["warm"]) for w in per_point)}
    for key in ("warm", "warm_cpu"):
        ratios = turn_ratios([(me[key], lib[key]) for me, lib in per_point], bracket, goal)
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        out[key] = {"ratio": statistics.median(ratios), "quartiles": [q[0], q[2]],
                    "mine": statistics.median(t for w in per_point for t in w[0][key])}
    return out
