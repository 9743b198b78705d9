"""The self-contained HTML report: structure (html.parser, always) and rendering in headless
Chromium (when installed). Runs are made with scripted replies written by us."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pdesharp.baselines.common import BaselineConfig
from pdesharp.baselines.runner import run_baseline
from pdesharp.llm import ScriptedModel
from pdesharp.records import Analysis, Candidate, Classification, EvalResult, StabilityBound
from pdesharp.report.html import ReportError, write_report
from pdesharp.store import RunStore
from pdesharp.task import load_task

SHIFT = '''import numpy as np

# <script>alert("not escaped")</script> must show as text in the report
def solver(u0_batch, t_coordinate, beta):
    B, N = u0_batch.shape
    k = np.fft.rfftfreq(N, d=1.0 / N)
    U = np.fft.rfft(u0_batch, axis=1)
    out = np.empty((B, len(t_coordinate), N))
    for i, t in enumerate(t_coordinate):
        out[:, i] = np.fft.irfft(U * np.exp(-2j * np.pi * k * beta * t), n=N, axis=1)
    return out
'''


class MarkerEvaluator:
    """Reads ``# SCORE x`` / ``# RAISE`` markers instead of executing (the run's own
    evaluations; the report's winner figure uses the real evaluator)."""

    def has_split(self, split):
        return split == "dev"

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        if "# RAISE" in code:
            return EvalResult(status="error", split=split, feedback=feedback, message="boom")
        score = float(code.split("# SCORE ")[1].split()[0]) if "# SCORE " in code else 0.5
        return EvalResult(status="ok", split=split, feedback=feedback, nrmse=score,
                          solver_seconds=0.01)


class Structure(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.ids, self.srcs, self.hrefs, self.classes = [], set(), [], [], []
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.add(a["id"])
        if "src" in a:
            self.srcs.append(a["src"])
        if "href" in a:
            self.hrefs.append(a["href"])
        self.classes += (a.get("class") or "").split()

    def handle_data(self, data):
        self.text.append(data)


def scripted_run(tmp_path) -> Path:
    fence = lambda code: f"Plan: scripted.\n```python\n{code}```\n"  # noqa: E731
    model = ScriptedModel({
        "codepde.generate": [fence("def solver(*a):\n    raise RuntimeError('x')  # RAISE\n"),
                             fence(SHIFT + "# SCORE 3e-3\n")],
        "codepde.debug": [fence(SHIFT + "# SCORE 1e-3\n")],
    })
    asyncio.run(run_baseline("codepde", load_task("advection"), model=model,
                             evaluator=MarkerEvaluator(), out_root=tmp_path,
                             cfg=BaselineConfig(samples=2, concurrency=1)))
    return tmp_path / "advection-codepde"


def tournament_run(tmp_path) -> Path:
    """A hand-built run with genesis candidates, a patch and a hybrid, and an analysis."""
    task = load_task("advection")
    store = RunStore.create(tmp_path, task=task, config={"model": "scripted", "feedback": "nrmse"},
                            run_id="tour")
    code = {"g01": SHIFT + "# SCORE 4e-3\n", "g02": SHIFT.replace("rfft", "fft") + "# SCORE 6e-3\n"}
    code["p1"] = code["g01"].replace("# SCORE 4e-3", "# SCORE 2e-3  # tighter CFL")
    code["h1"] = code["p1"].replace("# SCORE 2e-3", "# SCORE 9e-4") + "# borrowed from g02\n"
    cands = [Candidate(id="g01", code=code["g01"], origin="genesis", title="spectral shift"),
             Candidate(id="g02", code=code["g02"], origin="genesis", title="complex FFT"),
             Candidate(id="p1", code=code["p1"], origin="patch", parents=["g01"], round=1,
                       judge="judge-1"),
             Candidate(id="h1", code=code["h1"], origin="patch", parents=["p1", "g02"], round=2,
                       judge="judge-2", title="hybrid <b>bold</b>")]
    ev = MarkerEvaluator()
    for c in cands:
        store.add_candidate(c)
        asyncio.run(store.evaluate(ev, c, split="dev", feedback="nrmse"))
    analysis = Analysis(classification=Classification(time_order=1, space_order=1, linear=True,
                                                      pde_type="hyperbolic", boundary="periodic"),
                        route="analytical", key_facts=["exact solution u0(x - beta t)"],
                        stability=[StabilityBound(scheme="upwind", expression="dx/beta",
                                                  value=0.0098)])
    (store.dir / "analysis.json").write_text(analysis.model_dump_json())
    store.set_status("finished")
    store.write_summary(best_dev_score=9e-4, best_id="h1", best_solver=str(store.dir / "b.py"))
    store.close()
    return tmp_path / "tour"


def check_structure(html: str) -> Structure:
    p = Structure()
    p.feed(html)
    assert "script" not in p.tags and "link" not in p.tags  # nothing to run, nothing to fetch
    assert p.srcs and all(s.startswith("data:image/") for s in p.srcs)
    assert not any(h.startswith(("http:", "https:", "//")) for h in p.hrefs)
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    return p


@pytest.fixture(scope="module")
def run_report(tmp_path_factory, shared_data):
    """A scripted codepde run and its report, winner figure included (one real evaluation)."""
    run_dir = scripted_run(tmp_path_factory.mktemp("run"))
    return run_dir, write_report(run_dir, max_samples=2, data_dir=shared_data)


def test_run_report_has_tree_plots_and_diffs(run_report):
    run_dir, out = run_report
    assert out == run_dir / "report.html"
    html = out.read_text()
    p = check_structure(html)
    assert {"lineage-tree", "curve", "winner-plot"} <= p.ids
    assert (run_dir / "plots" / "winner-dev.png").is_file()  # drawn once, cached
    text = "".join(p.text)
    assert "s00.d1" in text and "s00 → s00.d1" in text.replace("\n", " ").replace("  ", " ")
    assert p.classes.count("winner") == 1 and "add" in p.classes and "del" in p.classes
    # Making the report does not touch the run's accounting.
    summary = json.loads((run_dir / "summary.json").read_text())
    db = RunStore.open(run_dir)
    assert db.n_evaluations == summary["evaluations"] == 3
    db.close()


def test_tournament_tree_hybrid_diffs_and_analysis(tmp_path):
    run_dir = tournament_run(tmp_path)
    html = write_report(run_dir, plot=False).read_text()
    p = check_structure(html)
    text = " ".join("".join(p.text).split())
    assert "hybrid of p1, g02" in text and "route" in text and "analytical" in text
    assert "exact solution u0(x - beta t)" in text
    assert "rounds" in p.ids  # best score per round table
    assert "p1 → h1 (hybrid" in text and "g02 → h1 (hybrid" in text
    assert "hybrid &lt;b&gt;bold&lt;/b&gt;" in html
    # Tree nesting: h1 under p1 under g01.
    i_g01, i_p1, i_h1 = (html.index(f'data-candidate="{c}"') for c in ("g01", "p1", "h1"))
    assert i_g01 < i_p1 < i_h1


def test_report_of_a_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(ReportError, match="neither a run folder"):
        write_report(tmp_path)


def _chromium() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        found = shutil.which(name) if not os.path.isabs(name) else (name if os.path.exists(name) else None)
        if found:
            return found
    return None


def _dump_dom(html_file: Path, tmp_path: Path) -> str:
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           html_file.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.stdout, f"chromium printed no DOM: {done.stderr[-2000:]}"
    return done.stdout


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed")
def test_reports_render_in_headless_chromium(tmp_path, run_report):
    # A baseline run: tree, score curve, the winner's solution/reference/error figure, diffs.
    dom = _dump_dom(run_report[1], tmp_path)
    assert 'id="lineage-tree"' in dom and 'id="curve"' in dom and 'id="winner-plot"' in dom
    assert 'class="diff"' in dom and 'data-candidate="s00.d1"' in dom
    # A tournament: nested tree with a hybrid, rounds table and chart, hybrid diffs.
    dom = _dump_dom(write_report(tournament_run(tmp_path), plot=False), tmp_path)
    assert 'id="rounds"' in dom and dom.count('class="plot"') >= 2
    assert 'data-candidate="h1"' in dom and "hybrid of p1, g02" in dom


def test_refinement_report_diffs_each_program_against_its_closest_seed(tmp_path):
    fence = lambda code: f"```python\n{code}```\n"  # noqa: E731
    seeds = ScriptedModel({"codepde.generate": [fence(SHIFT + f"# SCORE {k}e-3\n")
                                                for k in (5, 3, 4)]})
    asyncio.run(run_baseline("codepde", load_task("advection"), model=seeds,
                             evaluator=MarkerEvaluator(), out_root=tmp_path,
                             cfg=BaselineConfig(samples=3, concurrency=1)))
    refine = ScriptedModel({"codepde-r.generate": [fence(SHIFT + "# SCORE 3e-3\n# refined\n")]})
    asyncio.run(run_baseline("codepde-r", load_task("advection"), model=refine,
                             evaluator=MarkerEvaluator(), out_root=tmp_path,
                             seed_run=tmp_path / "advection-codepde",
                             cfg=BaselineConfig(refine_samples=1)))
    html = write_report(tmp_path / "advection-codepde-r", plot=False).read_text()
    text = " ".join("".join(check_structure(html).text).split())
    # One diff, against the seed that differs only by the added line (s01, score 3e-3).
    assert text.count("→ r00") == 1 and "seed-s01 → r00 (baseline, closest of 3 parents" in text
    assert "hybrid of" not in text and "shown seed-" in text


def test_reference_audit_shows_in_the_html_report(tmp_path):
    """The audit block report.md prints (floor, best against the converged solution) is in the
    HTML page too, with its code spans as code and nothing unescaped."""
    run_dir = tournament_run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["reference_audit"] = {
        "status": "ok", "reference_error": 3.12e-4, "samples": 4, "float32_floor": 6.0e-8,
        "audit": "<cache>/burgers-ab12.json", "best_nrmse": 2.9e-4,
        "best_nrmse_vs_converged": 1.6e-8, "best_below_reference_error": True,
        "stopped_at_floor": True, "floor": 3.37e-4}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    html = write_report(run_dir, plot=False).read_text()
    p = check_structure(html)
    assert "audit" in p.ids
    text = " ".join("".join(p.text).split())
    assert "Reference error of the dev data: 3.120e-04" in text
    assert "Best solver against the converged solution: 1.600e-08" in text
    assert "stopped at the reference floor" in text
    assert "<code>&lt;cache&gt;/burgers-ab12.json</code>" in html


def test_run_without_an_audit_has_no_audit_section(tmp_path):
    html = write_report(tournament_run(tmp_path), plot=False).read_text()
    assert 'id="audit"' not in html
