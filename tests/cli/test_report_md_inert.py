"""Issue 18.4: report.md escapes HTML. Model- and solver-written strings (a candidate's title
and justification, a failed solver's message, analysis facts, a stability expression, the stop
reason and test note) carry <script> and <img onerror>; rendered by a Markdown renderer with raw
HTML on (CommonMark's default, as many viewers do), no tag survives."""

from __future__ import annotations

import asyncio

from markdown_it import MarkdownIt

from pdesharp.pipeline import SolveConfig, dump_config
from pdesharp.records import Analysis, Candidate, Classification, EvalResult, StabilityBound
from pdesharp.reporter import write_report
from pdesharp.store import RunStore
from pdesharp.task import load_task

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)> ``` | x"


def test_report_md_from_hostile_strings_renders_no_html(tmp_path):
    task = load_task("advection")
    config = SolveConfig(task="advection", model="builtin")
    store = RunStore.create(tmp_path, task=task, config=dump_config(config), run_id="x")
    good = Candidate(id="g0", code="def solver(): pass\n", origin="genesis", title=EVIL,
                     justification=EVIL)
    bad = Candidate(id="g1", code="def solver(): 1\n", origin="genesis", title=EVIL)
    store.add_candidate(good)
    store.add_candidate(bad)
    ok = EvalResult(status="ok", split="dev", feedback="nrmse", n_samples=1, nrmse=1e-3,
                    solver_seconds=0.1)
    failed = EvalResult(status="error", split="dev", feedback="nrmse", message=EVIL)

    class Fixed:  # an evaluator that returns fixed results: the report is what is tested
        async def evaluate(self, code, *, split, feedback, label="", warm=False):
            return ok if label == "g0" else failed

    asyncio.run(store.evaluate(Fixed(), good, split="dev", feedback="nrmse"))
    asyncio.run(store.evaluate(Fixed(), bad, split="dev", feedback="nrmse"))
    analysis = Analysis(classification=Classification(space_order=1, linear=True,
                                                      pde_type="hyperbolic", boundary=EVIL),
                        key_facts=[EVIL], source="llm",
                        stability=[StabilityBound(scheme=EVIL, expression=EVIL)])
    final = {"best_id": "g0", "best_dev_score": 1e-3, "test_nrmse": None, "test_note": EVIL,
             "stop_reason": EVIL, "budget_stop": False}
    text = asyncio.run(write_report(task, store, analysis, config, None, final))
    store.close()
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert "<script" not in html and "<img src=x" not in html  # (pareto.svg is ours)
    assert "&lt;script&gt;" in html  # shown as text, not dropped
