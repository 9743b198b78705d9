"""``pdesharp bench`` end to end: two tasks, the methods, the scripted model (replies ours),
the real sandboxed evaluator on 2 dev samples; table counts checked against the stores."""

from __future__ import annotations

import asyncio
import csv
import json
import sqlite3

import pytest
from bench_script import make_script

from pdesharp.bench import BenchConfig, cell_dir, run_bench
from pdesharp.evaluate import Evaluator
from pdesharp.llm import ScriptedModel

METHODS = ["sharp", "codepde", "codepde-r", "cot", "moa", "cepo"]
# model calls per method with samples=1, refine_samples=1 and the script in bench_script:
# codepde: generate (crash) + 1 debug on advection... see expected_calls below.


def store_counts(run_dir):
    db = sqlite3.connect(run_dir / "run.sqlite")
    out = {
        # the search's evaluations: the winner's warm timing (a PDE-SHARP run's one more run of
        # its winner, row id "<id>#w") fed no decision and is not in a bench's count
        "evaluations": db.execute("SELECT COUNT(*) FROM evaluations WHERE counted=1 AND "
                                  "split='dev' AND candidate_id NOT LIKE '%#w'").fetchone()[0],
        "warm": db.execute("SELECT COUNT(*) FROM evaluations WHERE candidate_id LIKE '%#w'"
                           ).fetchone()[0],
        "debug_iterations": db.execute("SELECT COUNT(*) FROM debug_iterations").fetchone()[0],
        "model_calls": db.execute("SELECT COUNT(*) FROM model_calls WHERE cached=0").fetchone()[0],
    }
    db.close()
    return out


@pytest.fixture(scope="module")
def bench(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("bench")
    cfg = BenchConfig(tasks=["advection", "burgers"], methods=METHODS, model="scripted",
                      out=str(out), samples=1, refine_samples=1,
                      sharp_options={"candidates": 1, "max_rounds": 1, "rejudge_cycles": 0,
                                     "no_cache": True,
                                     # the table's counts are the point here, not the floor:
                                     # no audit (burgers' would cost ~15 s of this fixture)
                                     "audit": "off"},
                      parallel_cells=3)
    models = {}

    def model_factory(method, task, repeat):  # noqa: ARG001
        # One scripted model per cell so that each cell's calls can be counted separately.
        m = ScriptedModel(make_script(task.name), name=f"scripted:{method}")
        models[(task.name, method)] = m
        return m

    def evaluator_factory(task):
        # 2 samples, no convergence test / residual: tiny and fast, still the real sandbox.
        return Evaluator(task, data_dir=shared_data, max_samples=2, convergence=False,
                         residual=False, workers=2)

    rows = asyncio.run(run_bench(cfg, model_factory=model_factory,
                                 evaluator_factory=evaluator_factory))
    return out, cfg, rows, models, model_factory, evaluator_factory


def test_bench_table_counts_match_the_stores(bench):
    out, cfg, rows, models, *_ = bench
    best_of = [r for r in rows if "@" in r["method"]]
    rows = [r for r in rows if "@" not in r["method"]]
    assert [(r["task"], r["method"]) for r in rows] == [
        (t, m) for t in ("advection", "burgers") for m in METHODS]
    for r in rows:
        run_dir = cell_dir(out, r["task"], r["method"], 0)
        counts = store_counts(run_dir)
        assert r["evaluations"] == counts["evaluations"]
        assert counts["warm"] == (r["method"] == "sharp")  # PDE-SHARP's winner alone
        assert r["debug_iterations"] == counts["debug_iterations"]
        assert r["model_calls"] == counts["model_calls"] == len(models[(r["task"], r["method"])].calls)
        assert r["nrmse"] is not None, (r["task"], r["method"], r["statuses"])
        assert r["score_split"] == "dev"  # the shared data has no test split
        assert r["nrmse"] is not None and r["nrmse"] == r["dev_score"]
    by = {(r["task"], r["method"]): r for r in rows}
    # codepde: a crashing first solver, one debugging round, the fix: 2 executions, 2 calls.
    assert (by["advection", "codepde"]["evaluations"], by["advection", "codepde"]["debug_iterations"],
            by["advection", "codepde"]["model_calls"]) == (2, 1, 2)
    assert by["advection", "codepde"]["debug_per_solver"] == 1.0
    # One sample each: cot 1 call, moa 3 candidates + critique + final, cepo 3x(3x2 + 2) + 3.
    assert by["advection", "cot"]["model_calls"] == 1
    assert by["advection", "moa"]["model_calls"] == 5
    assert by["advection", "cepo"]["model_calls"] == 27
    for m in ("codepde-r", "cot", "moa", "cepo"):
        assert by["advection", m]["evaluations"] == 1 and by["advection", m]["debug_iterations"] == 0
    # The exact shift is far better than a frozen Burgers solution; both are real numbers.
    assert by["advection", "cot"]["nrmse"] < 1e-2 < by["burgers", "cot"]["nrmse"]
    assert "re-impl" in by["advection", "moa"]["label"]
    table = (out / "table.md").read_text()
    assert "| advection | cepo (re-impl.) |" in table
    with open(out / "table.csv") as fh:
        csv_rows = [r for r in csv.DictReader(fh) if "@" not in r["method"]]
    assert len(csv_rows) == 12 and float(csv_rows[1]["evaluations"]) == 2
    assert csv_rows[1]["test_nrmse"] == ""  # no test split in the shared data: none claimed
    assert json.loads((out / "table.json").read_text())[1]["model_calls"] == 2
    # sharp: 5 analysis + 1 genesis + 3 nominations + 3 proposals + narrative; g1 and the
    # patch (three identical proposals share one execution) run on dev.
    assert by["advection", "sharp"]["model_calls"] == 13
    # issue 21.4: time decides between them (equal scores within the tie), so the default
    # re-times both finalists twice, one run at a time: 2 + 4 counted evaluations; if their
    # medians still tie (both are a shift; the machine decides), each runs warm twice more
    summary = json.loads((cell_dir(out, "advection", "sharp", 0) / "summary.json").read_text())
    timed = summary["winner_time"]
    tied = "tied on their medians" in timed["how"]
    assert timed["retime_evaluations"] == (8 if tied else 4), timed["how"]
    if tied:  # the warm runs: the second sample's call alone, in the sandbox
        assert len(timed["warm_timings_per_sample"]) == 2
        assert "its calls after the first, timed alone" in timed["how"]
    n = 2 + timed["retime_evaluations"]
    assert by["advection", "sharp"]["evaluations"] == n
    assert by["advection", "sharp"]["label"] == "sharp"
    # CodePDE best-of-N at PDE-SHARP's N evaluations: CodePDE made only 2 (crash, fix), so its
    # best of them is its winner; the row says N and counts what CodePDE had
    row = {r["task"]: r for r in best_of}["advection"]
    assert row["method"] == f"codepde@{n}" and row["label"] == f"CodePDE best-of-{n}"
    assert row["evaluations"] == 2 and row["dev_score"] == by["advection", "codepde"]["dev_score"]
    assert f"| advection | CodePDE best-of-{n} |" in table


def test_best_of_n_takes_the_first_n_evaluations_in_the_order_they_ran(bench):
    from pdesharp.bench_fair import best_of_first

    codepde = cell_dir(bench[0], "advection", "codepde", 0)
    first = best_of_first(codepde, 1)  # the crashing first solver alone: no result
    assert first == {"evaluations": 1, "candidate": None}
    both = best_of_first(codepde, 2)  # with its debugged version
    summary = json.loads((codepde / "summary.json").read_text())
    assert both["candidate"] == summary["best_solver"] and both["evaluations"] == 2
    assert both["dev_score"] == summary["best_dev_score"] and "def solver" in both["code"]


def test_best_of_n_is_recomputed_when_the_codepde_cell_gained_evaluations(bench, tmp_path):
    """A CodePDE cell resumed with more samples has more of its first N evaluations: the stored
    best-of-N (written when it had fewer) is not reused (it was, while N stayed the same)."""
    import asyncio
    import shutil

    from pdesharp.bench_fair import BEST_OF_FILE, equal_budget

    out = bench[0]
    sharp = cell_dir(out, "advection", "sharp", 0)
    codepde = tmp_path / "codepde"
    shutil.copytree(cell_dir(out, "advection", "codepde", 0), codepde)
    stale = json.loads((codepde / BEST_OF_FILE).read_text())
    assert stale["available"] == 2  # CodePDE's two evaluations (crash, fix)
    stale.update(available=1, evaluations=1, candidate=None, dev_score=None)
    (codepde / BEST_OF_FILE).write_text(json.dumps(stale))  # as written after its first only
    row = asyncio.run(equal_budget(sharp, codepde, evaluator=None))
    assert row["available"] == 2 and row["evaluations"] == 2 and row["candidate"] is not None
    assert json.loads((codepde / BEST_OF_FILE).read_text())["candidate"] == row["candidate"]


def test_bench_is_resumable_finished_cells_are_not_rerun(bench):
    out, cfg, rows, models, model_factory, evaluator_factory = bench
    calls = []

    def counting_factory(method, task, repeat):
        calls.append((task.name, method))
        return model_factory(method, task, repeat)

    again = asyncio.run(run_bench(cfg, model_factory=counting_factory,
                                  evaluator_factory=evaluator_factory))
    assert calls == []
    assert [r["evaluations"] for r in again] == [r["evaluations"] for r in rows]


def test_bench_html_report_has_table_and_one_curve_per_task(bench):
    from html.parser import HTMLParser

    from pdesharp.report.html import write_report

    out = bench[0]
    html = write_report(out).read_text()

    class P(HTMLParser):
        ids, srcs, cells = set(), [], 0

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if "id" in a:
                self.ids.add(a["id"])
            if tag == "img":
                self.srcs.append(a.get("src", ""))
            if tag == "td":
                self.cells += 1

    p = P()
    p.feed(html)
    assert {"comparison", "task-advection", "task-burgers"} <= p.ids
    assert len(p.srcs) == 2 and all(s.startswith("data:image/svg+xml;base64,") for s in p.srcs)
    from pdesharp.bench import COLUMNS

    # 14 rows (2 tasks x 6 methods, and CodePDE best-of-N per task) x the table's columns
    assert p.cells == 14 * len(COLUMNS)
    assert "cepo (re-impl.)" in html and "<script" not in html


def test_a_handed_over_best_of_n_file_is_read_as_data(tmp_path):
    """best_of_n.json and reference_audit.json in a bench folder someone handed over: a link is
    not followed, a non-number where a number goes and a file that is no JSON object are
    ignored, rather than read or crashing the table."""
    import json

    from pdesharp.bench_fair import AUDIT_FILE, BEST_OF_FILE, reference_error, stored_record

    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"reference_error": 1e-3}))
    task = tmp_path / "burgers"
    task.mkdir()
    (task / AUDIT_FILE).symlink_to(secret)
    assert reference_error(tmp_path, "burgers") is None
    (task / AUDIT_FILE).unlink()
    (task / AUDIT_FILE).write_text(json.dumps({"reference_error": 2e-4}))
    assert reference_error(tmp_path, "burgers") == 2e-4
    for bad in ({"n": "13", "dev_score": 1e-3}, {"n": 3, "dev_score": [1]}, [1, 2], "x"):
        (task / BEST_OF_FILE).write_text(json.dumps(bad))
        assert stored_record(task, BEST_OF_FILE) is None
    (task / BEST_OF_FILE).write_text('{"n": 3, "dev_score": NaN}')
    assert stored_record(task, BEST_OF_FILE) is None
    (task / BEST_OF_FILE).write_text(json.dumps({"n": 3, "dev_score": 1e-3, "test_nrmse": None}))
    assert stored_record(task, BEST_OF_FILE) == {"n": 3, "dev_score": 1e-3, "test_nrmse": None}
