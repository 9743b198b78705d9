"""Whole scripted runs on any built-in task, for the tests that read every prompt of a run.

The replies are written by us for these tests (none is a model's): a numerical route, two
Genesis candidates with the task's own signature (g2 raises), judges that nominate, debug and
patch, a short narrative. Evaluations come from ``MarkerEvaluator`` (nothing executes) unless a
test passes its own evaluator.
"""

from __future__ import annotations

import asyncio
import json

from pipeline_scripts import MarkerEvaluator, fenced, js, judge_of, nominate, patch

from pdesharp.baselines.common import BaselineConfig
from pdesharp.baselines.runner import run_baseline
from pdesharp.llm.scripted import ScriptedModel
from pdesharp.pipeline import SolveConfig, solve
from pdesharp.rolesets import build_roles
from pdesharp.store import RunStore
from pdesharp.task import Task, load_task


def code_for(task: Task, scale: float, crash: bool = False) -> str:
    args = ", ".join(a.name for a in task.solver.args)
    body = ('    raise RuntimeError("scripted crash")' if crash else "    return None")
    return f"import numpy as np\n\ndef {task.solver.name}({args}):\n    scale = {scale}\n{body}\n"


def replies_for(task: Task, genesis: list[str] | None = None):
    """A reply function (messages, params, index) -> text for every role of a run."""
    genesis = genesis or [code_for(task, 0.9), code_for(task, 0.5, crash=True)]
    u = task.equation.unknowns[0]

    def answer(messages, params, index) -> str:
        tag = params.tag
        if tag == "analysis.classification":
            return "Scripted.\n" + js({"time_order": None if task.steady else 1,
                                       "space_order": 2, "linear": False, "pde_type": "other",
                                       "boundary": "as stated", "notes": "scripted"})
        if tag.startswith("analysis.") and tag != "analysis.stability":
            return "Scripted.\n" + js({"applies": False, "method": "", "summary": "scripted"})
        if tag == "analysis.stability":
            return "Scripted.\n" + js({"bounds": [{"scheme": "explicit", "note": "scripted",
                                                   "expression": f"0.5*dx/{u}max"}],
                                       "recommended_schemes": ["scripted"], "key_facts": []})
        if tag.startswith("genesis"):
            code = genesis[params.sample_index % len(genesis)]
            return f"Title: design {params.sample_index + 1}\nScripted.\n\n" + fenced("python",
                                                                                     code)
        if tag.startswith("judge.nominate"):
            return nominate("g2" if judge_of(messages) == "judge-3" else "g1")
        if tag == "judge.debug":
            return patch('    raise RuntimeError("scripted crash")', "    return None",
                         "no crash", ["g2"])
        if tag.startswith("judge.propose") or tag == "judge.repair":
            return patch("    scale = 0.9", "    scale = 1.0", "undamped", ["g1"])
        if tag == "reporter":
            return "Narrative written by the test."
        if tag.startswith("codepde"):  # the baseline: first sample crashes, then it is fixed
            crash = tag.endswith("generate") and params.sample_index == 0
            return "Plan: scripted.\n\n" + fenced("python", code_for(task, 0.8, crash=crash))
        raise AssertionError(f"no scripted reply for {tag}")

    return answer


def solve_run(tmp_path, name: str, *, evaluator=None, genesis=None, **cfg):
    """A whole PDE-SHARP run on task ``name`` with the scripted replies; returns the store."""
    task = load_task(name)
    settings = dict(candidates=2, max_rounds=1, rejudge_cycles=1, debug_attempts=1)
    settings.update(cfg)
    config = SolveConfig(task=name, model="scripted:test", out=str(tmp_path), **settings)
    store = RunStore.create(tmp_path, task=task, config=config.model_dump(), run_id=name)
    model = ScriptedModel(replies_for(task, genesis), name="scripted:test")
    roles = build_roles(config, store, models={"scripted:test": model})
    asyncio.run(solve(task, config, store, roles, evaluator or MarkerEvaluator(has_test=False)))
    return store


def baseline_runs(tmp_path, name: str, facts) -> list[RunStore]:
    """CodePDE (with a debugging round) and CodePDE-R seeded by it, at ``facts``."""
    task = load_task(name)
    cfg = BaselineConfig(samples=2, concurrency=1, refine_seeds=2, refine_samples=1,
                         task_facts=facts.level, test=False)
    model = ScriptedModel(replies_for(task), name="scripted:test")
    out = []
    for method in ("codepde", "codepde-r"):
        asyncio.run(run_baseline(method, task, model=model, evaluator=MarkerEvaluator(),
                                 out_root=tmp_path, cfg=cfg, facts=facts,
                                 seed_run=tmp_path / f"{name}-codepde"))
        out.append(RunStore.open(tmp_path / f"{name}-{method}"))
    return out


def every_message(*stores) -> list[str]:
    """Every message of every model call of the runs (what the endpoints received)."""
    return [m["content"] for store in stores
            for (raw,) in store.db.execute("SELECT messages FROM model_calls ORDER BY seq")
            for m in json.loads(raw)]


def calls(store, tag_prefix: str) -> list[list[dict]]:
    return [json.loads(raw) for tag, raw in store.db.execute(
        "SELECT tag, messages FROM model_calls ORDER BY seq") if tag.startswith(tag_prefix)]
