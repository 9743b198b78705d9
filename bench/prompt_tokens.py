"""Prompt size per role, measured on the bridge replay fixtures (no model, nothing executes).

Each fixture in tests/fixtures/bridge_* is replayed through the real pipeline with the replay
helpers of the test suite (recorded replies by tag, judge and call order; recorded results by
code sha256), exactly as its regression test does; the prompts the current code sends are
counted per role: calls, characters sent (every message of every call, as the endpoint receives
them) and estimated tokens (4 characters per token, the ScriptedModel's estimate). Run it before
and after a prompt change on the same fixtures; the numbers are deterministic (no timings).

    python bench/prompt_tokens.py [--fixture burgers cubic floor objective]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pipeline"))
sys.path.insert(0, str(ROOT / "tests"))

ROLES = ("analysis", "genesis", "judge.nominate", "judge.propose", "judge.repair",
         "judge.debug", "reporter")


def _role(tag: str) -> str:
    for r in ROLES:
        if tag.startswith(r):
            return r
    return tag


def _burgers(tmp):
    from test_bridge_replay import replay

    return replay(tmp)[0]


def _cubic(tmp):
    from test_bridge_replay_cubic import replay

    return replay(tmp)[0]


def _floor(tmp):
    import test_bridge_replay_floor as t
    from pytest import MonkeyPatch

    from pdesharp.audit import runs
    from pdesharp.audit.records import AuditReport

    report = AuditReport(task="advection", task_fingerprint="replay", data_file="dev.h5",
                         data_sha256="0", samples=[0, 1, 2, 3],
                         reference_error=t.REFERENCE_ERROR, float32_floor=3e-8,
                         method="the bridge run's audit, restated")
    audit = runs.RunAudit(report=report, path="dev.h5.audit/replay.json", indices=[0, 1, 2, 3],
                          reference_error=t.REFERENCE_ERROR, converged=None)
    with MonkeyPatch.context() as mp:
        mp.setattr(runs, "find", lambda task, evaluator, mode, progress=None: (audit, ""))
        return t.replay_fixture(t.FIXTURE, tmp, candidates=3, max_rounds=2, rejudge_cycles=0,
                                max_evals=8, max_samples=4, floor_saturation=True)[0]


FIXTURES = {"burgers": _burgers, "cubic": _cubic, "floor": _floor}


def measure(name: str) -> dict[str, dict[str, int]]:
    with tempfile.TemporaryDirectory() as tmp:
        store = FIXTURES[name](Path(tmp))
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "chars": 0})
        for tag, messages in store.db.execute("SELECT tag, messages FROM model_calls"):
            row = out[_role(tag)]
            row["calls"] += 1
            row["chars"] += sum(len(m["content"]) for m in json.loads(messages))
        store.close()
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", nargs="*", default=list(FIXTURES), choices=list(FIXTURES))
    args = ap.parse_args()
    for name in args.fixture:
        rows = measure(name)
        total = sum(r["chars"] for r in rows.values())
        print(f"\n{name}: {sum(r['calls'] for r in rows.values())} calls, "
              f"{total:,} characters sent, ~{total // 4:,} tokens")
        print(f"  {'role':16s} {'calls':>5s} {'chars':>9s} {'~tokens':>8s} {'share':>6s}")
        for role, r in sorted(rows.items(), key=lambda kv: -kv[1]["chars"]):
            print(f"  {role:16s} {r['calls']:5d} {r['chars']:9,d} {r['chars'] // 4:8,d} "
                  f"{r['chars'] / total:6.1%}")


if __name__ == "__main__":
    main()
