"""Issue 9, the LLM path's second pass: prompts that carry every fact, judges that know the
rules, a report that shows everything. Scripted replies written by us (pipeline_scripts.py);
evaluations are MarkerEvaluator's (nothing executes) unless a test says otherwise."""

from __future__ import annotations

import asyncio
import json
import re

from test_pipeline import J, rules_for, run

from pdesharp.facts import build_facts
from pdesharp.genesis import justification_of, title_of
from pdesharp.pipeline import SolveConfig
from pdesharp.prompting import extract_json, render
from pdesharp.records import Candidate, EvalResult
from pdesharp.roles import Judge, PoolEntry, Proposal, RoundInfo
from pdesharp.store import RunStore
from pdesharp.synthesis.judges import listing
from pdesharp.task import load_task

from pipeline_scripts import (CRASH, MarkerEvaluator, calls, js, nominate, patch, prompts,
                              shift, systems)


def everything(store) -> str:
    return "".join(m for (m,) in store.db.execute("SELECT messages FROM model_calls"))


ONE_ROUND = dict(candidates=2, max_rounds=1, rejudge_cycles=0)
JUDGING = [{"tag": "judge.nominate", "reply": nominate("g1")},
           {"tag": "judge.propose", "reply": patch("    scale = 0.9", "    scale = 1.0", "fix",
                                                   ["g1"])}]
GEN2 = [(shift(0.9), "damped a little"), (shift(0.5), "damped a lot")]


# -- 1. task facts ---------------------------------------------------------------------------
def test_full_facts_state_the_data_and_evaluation_and_name_no_unseen_file(tmp_path, shared_data):
    store, _ = run(tmp_path, rules_for("numerical", GEN2, JUDGING), MarkerEvaluator(),
                   data_dir=str(shared_data), max_samples=2, **ONE_ROUND)
    genesis = prompts(store, "genesis")[0]
    # read off the dev file the evaluator uses (2 samples kept by --max-samples)
    for fact in ("`u0_batch`: float32 array of shape [2, 1024]",
                 "`t_coordinate`: float32 array of shape [201]",
                 "201 output times from 0 to 2, uniform spacing 0.01",
                 "N = 1024 cell centres x_i = (i + 1/2)·dx", "shape [2, 201, 1024]",
                 "N = 256, 512, 1024, 2048", "0.21 (22 values", "within 1200 s",
                 "8192 MB", "1 CPU thread", "no GPU"):
        assert fact in genesis, fact
    task = load_task("advection")
    assert task.reference and f"Reference data: {task.reference}" in genesis
    assert task.notes[0] in genesis and task.initial_condition in genesis
    # nothing points the model at a file it cannot read
    text = everything(store)
    assert not re.search(r"README|shared/data|\.hdf5|\.md\b", text)
    assert "the reference method described in the task" not in text
    facts = json.loads((store.dir / "task_facts.json").read_text())
    assert facts["level"] == "full" and facts["data"]["n_samples"] == 2
    assert store.config["task_facts"] == "full" and store.summary()["task_facts"] == "full"


def test_codepde_facts_give_the_description_and_template_only(tmp_path, shared_data):
    store, _ = run(tmp_path, rules_for("numerical", GEN2, JUDGING), MarkerEvaluator(),
                   data_dir=str(shared_data), max_samples=2, task_facts="codepde", **ONE_ROUND)
    task = load_task("advection")
    text = everything(store)
    for absent in (task.reference, task.notes[0], task.initial_condition, "float32 array",
                   "How a solver is evaluated", "Parameters passed to the solver"):
        assert absent not in text, absent
    genesis = prompts(store, "genesis")[0]
    # CodePDE's statement of the task (its description and template, in our words), not ours
    assert task.codepde.description.strip() in genesis and task.description.strip() not in text
    assert "def solver(u0_batch, t_coordinate, beta)" in genesis and "nRMSE" in genesis
    assert store.summary()["task_facts"] == "codepde"
    assert "task facts: codepde" in (store.dir / "report.md").read_text()


def test_unknown_reference_is_said_not_pretended(shared_data):
    spec = load_task("advection").model_dump(mode="json")
    spec.pop("reference")
    from pdesharp.prompting import facts_block
    from pdesharp.task import task_from_dict

    task = task_from_dict(spec)
    block = facts_block(task, build_facts(task, data_dir=shared_data, max_samples=1))
    assert "the task does not say how its reference data were computed" in block
    assert "described in the task" not in block


def test_bench_records_the_facts_level_and_gives_baselines_sharps_facts(shared_data):
    from pdesharp.bench import CELL_SETTINGS, BenchConfig, baseline_config, bench_facts
    from pdesharp.prompting import facts_block, task_context
    from pdesharp.rolesets import facts_for

    cfg = BenchConfig(tasks=["advection"], methods=["sharp", "codepde"], model="m",
                      data_dir=str(shared_data), max_samples=2, task_facts="codepde")
    assert "task_facts" in CELL_SETTINGS  # a resumed bench cannot silently change it
    assert baseline_config(cfg, 0).task_facts == "codepde"
    task = load_task("advection")
    facts = bench_facts(task, cfg)
    sharp = facts_for(SolveConfig(task="advection", model="m", data_dir=str(shared_data),
                                  max_samples=2, task_facts="codepde"), task)
    assert facts == sharp and facts.level == "codepde"
    assert facts_block(task, facts) in render("_task", **task_context(task, "nrmse", sharp))


# -- 2. analysis branching -------------------------------------------------------------------
def test_skipped_analysis_steps_are_explained_in_prompts_and_report(tmp_path):
    store, _ = run(tmp_path, rules_for("transformation", GEN2, JUDGING), MarkerEvaluator(),
                   **ONE_ROUND)
    analysis = json.loads((store.dir / "analysis.json").read_text())
    steps = {s["name"]: s for s in analysis["steps"]}
    assert list(steps) == ["classification", "analytical", "transformation", "decomposition",
                           "stability"]
    assert "step 3 (transformation) found the transformation route" in \
        steps["decomposition"]["skipped"]
    stability_prompt = prompts(store, "analysis.stability")[0]
    assert "Step 4 (decomposition) was not asked: step 3 (transformation)" in stability_prompt
    assert "Step 4, decomposition: not asked" in prompts(store, "genesis")[0]
    assert "Step 4 (decomposition): not asked" in (store.dir / "report.md").read_text()


def test_analytical_route_says_why_there_is_no_stability_step(tmp_path):
    store, _ = run(tmp_path, rules_for("analytical", GEN2, JUDGING), MarkerEvaluator(),
                   **ONE_ROUND)
    steps = {s["name"]: s for s in json.loads((store.dir / "analysis.json").read_text())["steps"]}
    assert steps["transformation"]["skipped"] and steps["decomposition"]["skipped"]
    assert "no time stepping" in steps["stability"]["skipped"]
    assert "Step 5, stability: not asked: an exact solution needs no time stepping" in \
        prompts(store, "genesis")[0]


# -- 3. Genesis diversity --------------------------------------------------------------------
def test_diverse_genesis_shows_earlier_designs_and_is_recorded(tmp_path):
    gen = [(shift(0.9), "Fourier shift, damped"), (shift(0.5), "Upwind FV"),
           (shift(0.7), "WENO5")]
    store, _ = run(tmp_path, rules_for("numerical", gen, JUDGING), MarkerEvaluator(),
                   genesis="diverse", candidates=3, max_rounds=1, rejudge_cycles=0)
    p1, p2, p3 = prompts(store, "genesis")
    assert "Already\nwritten" not in p1 and "Fourier shift, damped" not in p1
    assert "later ones are shown your design" in p1 and "written independently" not in p1
    assert "g1: Fourier shift, damped" in p2 and "Upwind FV" not in p2
    assert "g1: Fourier shift, damped" in p3 and "g2: Upwind FV" in p3
    assert "differs from all of these in its method" in p3
    event = store.events("genesis")[0]
    assert event["mode"] == "diverse" and event["temperature"] == 0.7
    assert "Genesis: diverse sampling at temperature 0.7" in (store.dir / "report.md").read_text()


def test_independent_genesis_prompts_differ_only_in_the_index(tmp_path):
    store, _ = run(tmp_path, rules_for("numerical", GEN2, JUDGING), MarkerEvaluator(),
                   **ONE_ROUND)
    p1, p2 = prompts(store, "genesis")
    assert p1.replace("#1 of 2", "#2 of 2") == p2
    assert store.events("genesis")[0]["mode"] == "independent"


# -- 4. judges know the rules; one ranking rule ----------------------------------------------
class TimedEvaluator(MarkerEvaluator):
    """MarkerEvaluator with a run time per code: ``seconds = X`` in a comment."""

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        r = await super().evaluate(code, split=split, feedback=feedback, label=label)
        m = re.search(r"# seconds = ([0-9.]+)", code)
        return r.model_copy(update={"solver_seconds": float(m.group(1))}) if m else r


def test_judges_are_told_the_rules_budget_and_state(tmp_path):
    # 1.990e-3 in 30 s and 2.000e-3 in 1 s: within the 1 % tie tolerance
    slow, fast = shift(0.99901) + "# seconds = 30\n", shift(0.999) + "# seconds = 1\n"
    rules = rules_for("numerical", [(slow, "slow"), (fast, "fast")], [
        {"tag": "judge.nominate", "context": f"You are {J[0]},", "reply": nominate("g1")},
        {"tag": "judge.nominate", "reply": nominate("g2")},
        {"tag": "judge.propose", "reply": "NO_CHANGE\n" + js({"no_change": True,
                                                                 "justification": "done"})}])
    store, res = run(tmp_path, rules, TimedEvaluator(), candidates=2, max_rounds=2,
                     rejudge_cycles=0, max_evals=7, saturation_factor=0.8, patience=1)
    system = systems(store, "judge.nominate")[0]
    for rule in ("best_new < 0.8 × best_old", "After 1 round without improvement",
                 "7 evaluations for the whole search", "at most 6 evaluations",
                 "up to 2 debugging", "within 1 % of the lowest",
                 "repeated runs of the same code can differ"):
        assert rule in system, rule
    first = prompts(store, "judge.nominate")[0]
    assert "Nothing has been executed yet" in first and "0 evaluations used, 7 left of 7" in first
    propose = prompts(store, "judge.propose")[0]
    assert "2 evaluations used, 5 left of 7" in propose
    # the tie goes to the faster solver in the tournament, in the judges' listing (the old
    # listing sorted by score alone put the slower g1 first) and in the report
    assert res.best_id == "g2"
    assert "best first; the same for all judges): 1. g2, 2. g1." in propose
    assert "(rank 1 of 2)" in propose.split("### Solver g2")[1].split("###")[0]
    # saturation: all judges declined; the run says why it ended
    assert res.status == "finished" and "every judge declined" in res.stop_reason
    assert store.summary()["stop_reason"] == res.stop_reason
    # round 1 improved (from nothing); round 2 did not, and every judge declined again
    report = (store.dir / "report.md").read_text()
    assert "Search ended: saturation in cycle 0, round 2" in report
    assert "| cycle 0, round 2 | – |" in report  # a round in which nothing new ran is listed
    narrative = prompts(store, "reporter")[0]
    assert "cycle 0, round 2: ran nothing new" in narrative
    declines = re.findall(r"- cycle 0, round (\d): (judge-\d) on", narrative)
    assert declines == sorted(declines) and len(declines) == 6  # not completion order


class RecordingJudge:
    """A minimal judge written against the Protocol alone (no attributes probed)."""

    def __init__(self, name):
        self.name, self.seen = name, []

    def reset(self):
        pass

    def observe(self, info: RoundInfo):
        self.seen.append(info)

    async def nominate(self, task, analysis, pool):
        from pdesharp.roles import Nomination

        return Nomination(judge=self.name, ranking=[pool[0].candidate.id],
                          nominee=pool[0].candidate.id)

    async def propose(self, task, base, results, feedback):
        return Proposal(judge=self.name, base=base.candidate.id, parents=[base.candidate.id],
                        declined=True)

    async def repair_patch(self, proposal, error):
        return proposal

    async def debug(self, entry):
        return Proposal(judge=self.name, base=entry.candidate.id, parents=[], declined=True)


def test_tournament_talks_to_judges_through_the_protocol_only(tmp_path):
    from pdesharp.records import Analysis, Classification
    from pdesharp.synthesis.tournament import Tournament, TournamentSettings

    judges = [RecordingJudge(n) for n in J]
    assert all(isinstance(j, Judge) for j in judges)
    task = load_task("advection")
    store = RunStore.create(tmp_path, task=task, config={}, run_id="t")
    analysis = Analysis(classification=Classification(time_order=1, space_order=1, linear=True,
                                                      pde_type="hyperbolic", boundary="periodic"))
    t = Tournament(task, analysis, judges, store, MarkerEvaluator(),
                   TournamentSettings(max_rounds=1, rejudge_cycles=0, max_evals=9))
    asyncio.run(t.run([Candidate(id="g1", code=shift(0.9), origin="genesis")]))
    before, after = judges[0].seen  # before the nominations, and before the modifications
    assert (before.round, before.executed, before.evals_used, before.eval_limit) == (1, 0, 0, 9)
    assert (after.executed, after.evals_used, after.evals_left) == (1, 1, 8)


def test_builtin_is_decided_in_one_place():
    import pdesharp.rolesets as rolesets
    from pdesharp.llm import presets

    assert rolesets.is_builtin is presets.is_builtin
    assert SolveConfig(model=None).builtin and SolveConfig(model="").builtin
    assert SolveConfig(model="builtin").model == "builtin"
    assert not SolveConfig(model="openai:gpt-4o").builtin


# -- 5. prompt size --------------------------------------------------------------------------
def _entry(cid, code, score=None, parents=()):
    result = None if score is None else EvalResult(status="ok", split="dev", feedback="nrmse",
                                                   nrmse=score, solver_seconds=1.0, n_samples=2)
    return PoolEntry(candidate=Candidate(id=cid, code=code, origin="patch", parents=list(parents),
                                         title=f"design {cid}"), result=result)


BIG = "import numpy as np\n\n" + "".join(f"def helper_{i}(u):\n    return u * {i}\n\n"
                                         for i in range(60)) + "def solver(u0_batch):\n    return u0_batch\n"


def test_listing_shows_full_code_where_it_matters_and_diffs_or_summaries_elsewhere():
    variants = [_entry(f"p{i}", BIG.replace("u * 7\n", f"u * {7 + i}\n"), 1e-3 * (1 + i),
                       parents=["p0"] if i else []) for i in range(10)]
    other = _entry("q1", BIG.replace("def helper", "def other"), None)
    budget = len(BIG) + 1000
    shown = listing(variants + [other], known={}, budget=budget,
                    full_first=["p0", "p1", "p2", "q1"])
    assert shown["p0"].mode == "full"  # the best: full code
    assert shown["p1"].mode == shown["p2"].mode == "diff"  # near-copies: small diffs
    assert all(len(shown[f"p{i}"].text) < 400 for i in range(1, 3))
    assert shown["q1"].mode == "summary"  # its full code no longer fits, and no near solver
    modes = [shown[f"p{i}"].mode for i in range(3, 10)]
    assert set(modes) <= {"diff", "summary"} and "diff" in modes  # diffs while they fit
    assert sum(len(s.text) for s in shown.values()) <= budget < len(BIG) * 11
    earlier = listing(variants[:2], known={"p0": BIG}, budget=6000, full_first=["p0", "p1"],
                      base_id="p1")
    assert earlier["p0"].mode == "earlier" and earlier["p1"].mode == "base"


def test_prompt_budget_bounds_judge_prompts_and_tokens_are_reported(tmp_path):
    big = lambda s: shift(s) + "".join(f"\ndef helper_{i}(u):\n    return u * {i}\n"  # noqa: E731
                                       for i in range(80))
    gen = [(big(0.5 + 0.05 * i), f"variant {i}") for i in range(8)]
    rules = rules_for("numerical", gen, [{"tag": "judge.nominate", "reply": nominate("g1")},
                                         {"tag": "judge.propose", "reply": "NO_CHANGE"}])
    budget = 4000
    store, _ = run(tmp_path, rules, MarkerEvaluator(), candidates=8, max_rounds=1,
                   rejudge_cycles=1, prompt_budget=budget)
    code_chars = len(big(0.5))
    assert code_chars * 8 > 3 * budget
    # the budget bounds each message's listing (a conversation's opening turn has two: the
    # Genesis solvers, the pool now)
    for c in calls(store, "judge.nominate"):
        for m in c[1:]:
            blocks = re.findall(r"```(?:python|diff)\n(.*?)```", m["content"], re.DOTALL)
            assert sum(len(b) for b in blocks) <= budget + 8 * 4  # fences' newlines
    for p in prompts(store, "judge.nominate"):
        assert "code budget (4,000 characters) was spent" in p or "with this change" in p
    tokens = {r[0]: r[1] for r in store.db.execute(
        "SELECT tag, MAX(prompt_tokens) FROM model_calls GROUP BY tag")}
    report = (store.dir / "report.md").read_text()
    assert "## Model calls" in report
    assert "| judge.nominate | 6 |" in report and f"/ {tokens['judge.nominate']} |" in report


# -- 6. hygiene ------------------------------------------------------------------------------
def test_labels_titles_and_analysis_prose_are_clean(tmp_path):
    reply = ("**Justification:** Justification: the exact shift is exact.\n```python\npass\n```")
    assert justification_of(reply) == "the exact shift is exact."
    long = ("Title: Fourier pseudo-spectral shift with exponential time differencing for the "
            "stiff linear part and a carefully tuned sub-step controller for the rest")
    title = title_of(long)
    assert len(title) <= 100 and title.endswith("…") and not title[:-1].endswith(" ")
    assert long.split("Title: ")[1].startswith(title[:-1])
    aside = "(Note to the analyst: I am not sure about this; let me think aloud.)"
    rules = rules_for("numerical", GEN2, JUDGING)
    rules.insert(0, {"tag": "analysis.transformation", "reply": aside + "\n" + js(
        {"applies": False, "method": "", "summary": "Cole-Hopf does not apply: linear."})})
    rules.insert(0, {"tag": "genesis", "sample": 0, "reply": "Title: damped\nJustification: "
                     "a damped shift.\n```python\n" + shift(0.9) + "```"})
    store, _ = run(tmp_path, rules, MarkerEvaluator(), **ONE_ROUND)
    genesis = prompts(store, "genesis")[0]
    assert "Note to the analyst" not in genesis and "Cole-Hopf does not apply" in genesis
    assert "Note to the analyst" not in "".join(systems(store, "judge.nominate"))
    assert store.candidate("g1").justification == "a damped shift."
    nominate_prompt = prompts(store, "judge.nominate")[0]
    assert "Justification: a damped shift." in nominate_prompt
    assert "Justification: Justification" not in everything(store)


# -- 7. narrative ----------------------------------------------------------------------------
def test_reporter_sees_the_whole_scored_pool(tmp_path):
    gen = [(shift(0.5), "half"), (shift(0.8), "damped"), (shift(0.6), "third")]
    rules = rules_for("numerical", gen, [
        {"tag": "judge.nominate", "context": f"You are {J[2]},", "reply": nominate("g3")},
        {"tag": "judge.nominate", "reply": nominate("g2")},
        {"tag": "judge.propose", "context": f"You are {J[2]},", "reply": "NO_CHANGE"},
        {"tag": "judge.propose", "reply": patch("    scale = 0.8", "    scale = 0.95", "less",
                                                ["g2"])}])
    store, res = run(tmp_path, rules, MarkerEvaluator(), candidates=3, max_rounds=1,
                     rejudge_cycles=0)
    prompt = prompts(store, "reporter")[0]
    ran = [r[0] for r in store.db.execute(
        "SELECT candidate_id FROM evaluations WHERE split='dev' AND counted=1")]
    assert set(ran) >= {"g2", "g3", "c0r1-j1"}
    for cid in ran:  # every scored solver, not only the winner's ancestors
        result = store.result_for(cid, "dev", "nrmse")
        assert f"{cid} " in prompt and f"{result.nrmse:.3e}" in prompt
    assert "#1 " + res.best_id in prompt
    assert (store.dir / "narrative.md").read_text().strip() == "Narrative written by the test."


def test_reporter_says_a_failed_solver_failed_and_gives_it_no_time(tmp_path):
    """(bridge review, issue 27) A solver that crashed was listed to the reporter by its status
    alone ("nan g2 ...; nRMSE -, 0.274 s/sample"), with the time until it failed as if it
    were a time per sample."""
    gen = [(shift(0.5), "half"), (CRASH, "crashes")]
    rules = rules_for("numerical", gen, [
        {"tag": "judge.nominate", "context": f"You are {J[0]},", "reply": nominate("g2")},
        {"tag": "judge.nominate", "reply": nominate("g1")},
        {"tag": "judge.propose", "reply": "NO_CHANGE"}])
    store, res = run(tmp_path, rules, MarkerEvaluator(), candidates=2, max_rounds=1,
                     rejudge_cycles=0, debug_attempts=0)
    assert store.result_for("g2", "dev", "nrmse").status == "error"
    prompt = prompts(store, "reporter")[0]
    line = next(x for x in prompt.splitlines() if " g2 " in x)
    assert line.startswith("- failed (error) g2 (crashes): genesis") and "/sample" not in line
    assert line.endswith("; no nRMSE, no time")
    assert next(x for x in prompt.splitlines() if " g1 " in x).startswith("- #1 g1 (half)")
    # with no debugging attempts the judges are told so, not "up to 0 debugging attempts"
    told = " ".join(systems(store, "judge.nominate")[0].split())
    assert "fails to execute is not debugged in this run" in told and "up to 0" not in told
    assert re.search(r"costs at most 6 evaluations\.\n- Ranking",
                     systems(store, "judge.nominate")[0])  # its own line (the bridge review)


# -- 9. stop reason and the evaluations journal ----------------------------------------------
def test_evaluations_journal_has_no_gaps_and_reuses_are_explained(tmp_path):
    genesis = [(shift(0.5), "a"), (shift(0.5), "same code")]  # g2 is g1's code
    rules = rules_for("numerical", genesis, [
        {"tag": "judge.nominate", "context": f"You are {J[0]},", "reply": nominate("g1")},
        {"tag": "judge.nominate", "reply": nominate("g2")},
        {"tag": "judge.propose", "reply": "NO_CHANGE"}])
    store, res = run(tmp_path, rules, MarkerEvaluator(has_test=False), candidates=2,
                     max_rounds=2, rejudge_cycles=1, patience=2)
    seqs = [r[0] for r in store.db.execute("SELECT seq FROM evaluations ORDER BY seq")]
    assert seqs == list(range(1, len(seqs) + 1))  # no AUTOINCREMENT gaps
    report = (store.dir / "report.md").read_text()
    assert "| 1 | `g1` | dev | ok |" in report and "| – (reuses g1) | `g2` | dev | ok |" in report
    assert res.stop_reason.startswith("saturation in cycle 1")


# -- 10. report CLI, HTML, show --------------------------------------------------------------
def test_html_has_what_report_md_has_and_uses_the_runs_data(tmp_path, shared_data):
    from pdesharp.report.html import write_report

    wrong = ("Scripted wrong answer.\n" + js({"time_order": 1, "space_order": 1, "linear": False,
                                             "pde_type": "parabolic", "boundary": "periodic"}))
    rules = rules_for("numerical", GEN2, [{"tag": "analysis.classification", "reply": wrong},
                                          *JUDGING])
    store, _ = run(tmp_path, rules, MarkerEvaluator(), dev_data=str(shared_data /
                                                                    "advection_dev.hdf5"),
                   max_samples=2, convergence=False, **ONE_ROUND)
    html = write_report(store.dir, plot=True).read_text()  # no data folder given here
    assert 'id="winner-plot"' in html  # drawn on the run's own dev data
    assert "Narrative written by the test." in html
    assert "model says parabolic" in html  # the symbolic checks
    view_rounds = re.findall(r"<tr><td>cycle \d, round \d</td>", html)
    assert view_rounds and 'id="solver-table"' in html and 'id="evaluation-table"' in html
    assert "s/sample" in html


def test_html_header_names_the_builtin_model_and_show_tracks_a_running_run(tmp_path, capsys):
    import time

    from pdesharp.cli import main
    from pdesharp.pipeline import dump_config
    from pdesharp.report.html import render_run

    store = RunStore.create(tmp_path, task=load_task("advection"),
                            config=dump_config(SolveConfig(task="advection")), run_id="r")
    store.set_status("running")
    time.sleep(0.3)
    store.event("analysis", route="numerical")  # a step of the run: its wall time is current
    assert "model <code>builtin</code>" in render_run(store.dir, plot=False)
    assert main(["show", str(store.dir)]) == 0
    out = capsys.readouterr().out
    seconds = float(re.search(r"wall_seconds\s+([0-9.]+) s", out).group(1))
    assert seconds >= 0.3 and "still running" in out


# -- 13. tolerant JSON -----------------------------------------------------------------------
def test_json_with_escaped_quotes_and_braces_in_strings():
    assert extract_json('{"note": "use \\"}\\" carefully", "nominee": "g2"}') == {
        "note": 'use "}" carefully', "nominee": "g2"}
    text = 'I pick {g1}. Then {"nominee": "g1", "why": "a {brace} inside",} trailing.'
    assert extract_json(text) == {"nominee": "g1", "why": "a {brace} inside"}
    assert extract_json('```json\nHere: {"applies": False}\n```') == {"applies": False}


# -- 8. the symbolic cross-check compares like with like -------------------------------------
def _llm_analysis(*bounds):
    from pdesharp.records import Analysis, Classification, StabilityBound

    return Analysis(classification=Classification(time_order=1, space_order=2, linear=False,
                                                  pde_type="parabolic", boundary="periodic"),
                    route="hybrid", stability=[StabilityBound(scheme=s, expression=e)
                                               for s, e in bounds])


def test_cross_check_compares_bounds_of_the_same_stability_class_only():
    from pdesharp.builtin import BuiltinAnalyst, DataBounds, compare_analyses
    from pdesharp.builtin.compare import bound_kind

    task = load_task("reacdiff1d")
    builtin = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (0.0, 1.0)}, n={"x": 1024})
                             ).analyse_sync(task)
    # scripted (written by us) bounds a strong model gives for reaction-diffusion; the scheme
    # classes are unconditionally stable or spectral, so none may be an error
    llm = _llm_analysis(
        ("Strang splitting with exact diffusion (Fourier) and exact logistic step", "0.01/rho"),
        ("ETDRK4 for reaction-diffusion", "0.5/rho"),
        ("IMEX: implicit diffusion, explicit reaction", "0.2/rho"),
        ("explicit RK4 with Fourier spectral diffusion", "2.78*dx**2/(pi**2*nu)"))
    found = compare_analyses(llm, builtin, task)
    stab = [d for d in found if d.fact.startswith("stability")]
    assert stab and all(d.severity == "info" and "not compared" in d.note for d in stab)
    # a reaction-only bound is a source limit (it does not scale with dx), never "diffusive"
    assert bound_kind(llm.stability[0], task) == "source"
    assert bound_kind(llm.stability[3], task) == "diffusive"
    assert all("diffusive" not in d.fact for d in stab[:3])
    # like with like: an explicit forward-Euler diffusion bound 3x too large is an error
    wrong = _llm_analysis(("explicit central diffusion, forward Euler", "1.5*dx**2/nu"))
    error, = [d for d in compare_analyses(wrong, builtin, task) if d.fact.startswith("stab")]
    assert error.fact == "stability[diffusive].value" and error.severity == "error"
    assert "off by a factor 3" in error.note


def test_cross_check_prints_max_u_not_u():
    from pdesharp.builtin import BuiltinAnalyst, DataBounds, compare_analyses

    task = load_task("burgers")
    builtin = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (-1.0, 1.0)}, n={"x": 1024})
                             ).analyse_sync(task)
    wrong = _llm_analysis(("explicit upwind, forward Euler", "20*dx"))
    found = [d for d in compare_analyses(wrong, builtin, task) if d.fact.startswith("stab")]
    assert found and "max|u|" in found[0].builtin and "Abs(u)" not in found[0].builtin
