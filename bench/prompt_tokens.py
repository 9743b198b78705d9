"""Prompt size per role, measured on the bridge replay fixtures (no model, nothing executes).

Each fixture in tests/fixtures/bridge_* is replayed through the real pipeline with the replay
helpers of the test suite (recorded replies by tag, judge and call order; recorded results by
code sha256), exactly as its regression test does; the prompts the current code sends are
counted per role: calls, characters sent (every message of every call, as the endpoint receives
them), estimated tokens (4 characters per token, the ScriptedModel's estimate) and the tokens
no provider prefix cache can serve (those past the longest common prefix with any earlier
request: tests/pipeline/test_prompt_economy.py's measure). Run it before and after a prompt
change on the same fixtures; the numbers are deterministic (no timings).

    python bench/prompt_tokens.py [--fixture burgers burgers_codepde cubic floor]
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


def _burgers_codepde(tmp):
    """The real-reply Burgers run of issue 24 in the paper's set-up (no floor)."""
    from test_bridge_replay import BridgeReplies, RecordedEvaluator
    from test_prompt_economy import FIXTURE, paper_setup, run

    from pdesharp.llm.scripted import ScriptedModel

    config, store = paper_setup(tmp)
    replies = BridgeReplies(FIXTURE)
    run(config, store, ScriptedModel(replies.answer, name="replay:bridge"),
        RecordedEvaluator(FIXTURE))
    return store


FIXTURES = {"burgers": _burgers, "burgers_codepde": _burgers_codepde, "cubic": _cubic,
            "floor": _floor}


def measure(name: str) -> tuple[dict[str, dict[str, int]], int]:
    """Per role: calls, characters and tokens no prefix cache serves; and the run's counted
    evaluations."""
    from test_prompt_economy import requests, uncacheable

    with tempfile.TemporaryDirectory() as tmp:
        store = FIXTURES[name](Path(tmp))
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "chars": 0, "new": 0})
        chars = [sum(len(m["content"]) for m in json.loads(messages)) for (messages,) in
                 store.db.execute("SELECT messages FROM model_calls WHERE error = '' "
                                  "ORDER BY seq")]
        for (tag, new), n in zip(uncacheable(requests(store)), chars):
            row = out[_role(tag)]
            row["calls"] += 1
            row["chars"] += n
            row["new"] += new
        evaluations = store.n_feedback_evaluations
        store.close()
    return dict(out), evaluations


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", nargs="*", default=list(FIXTURES), choices=list(FIXTURES))
    args = ap.parse_args()
    for name in args.fixture:
        rows, evaluations = measure(name)
        total = sum(r["chars"] for r in rows.values())
        judges = sum(r["new"] for role, r in rows.items() if role.startswith("judge"))
        print(f"\n{name}: {sum(r['calls'] for r in rows.values())} calls, "
              f"{total:,} characters sent, ~{total // 4:,} tokens; {evaluations} evaluations; "
              f"judge tokens no prefix cache serves: {judges:,} "
              f"({judges / max(evaluations, 1):,.0f} per evaluation)")
        print(f"  {'role':16s} {'calls':>5s} {'chars':>9s} {'~tokens':>8s} {'share':>6s} "
              f"{'uncached':>8s}")
        for role, r in sorted(rows.items(), key=lambda kv: -kv[1]["chars"]):
            print(f"  {role:16s} {r['calls']:5d} {r['chars']:9,d} {r['chars'] // 4:8,d} "
                  f"{r['chars'] / total:6.1%} {r['new']:8,d}")


if __name__ == "__main__":
    main()
