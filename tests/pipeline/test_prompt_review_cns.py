"""Issue 21 (CNS real-reply review): what the model needed and the prompts lacked or misstated.

Found by reading every prompt of the CNS bridge run (tests/fixtures/bridge_cns_codepde): the
stability step offered a "dy" to a 1D task and only maxima (rhomax, vmax, pmax) while a sound
speed and a viscous limit need the smallest density; the Genesis prompt pushed array
vectorisation on a method of ~1e5 explicit steps although numba was installed; judges read "up
to 1 evaluation run at a time"; the reporter stated the time rule in other words than the
judges. Whole scripted runs (replies written by us, prompt_runs.py; nothing executes).
"""

from __future__ import annotations

import numpy as np
import pytest
from pipeline_scripts import prompts, systems
from prompt_runs import solve_run

from pdesharp.analysis import evaluate_bound
from pdesharp.data.paths import resolve_split
from pdesharp.data.reference import load_reference
from pdesharp.prompting import render, task_context
from pdesharp.records import Analysis, Classification
from pdesharp.roles import RoundInfo
from pdesharp.synthesis.ranking import Rule
from pdesharp.task import load_task


@pytest.fixture(scope="module")
def cns_run(tmp_path_factory, shared_data):
    return solve_run(tmp_path_factory.mktemp("cns"), "cns1d", data_dir=str(shared_data),
                     max_samples=2, workers=1)


def test_stability_step_offers_the_task_axes_and_the_smallest_values(cns_run, shared_data):
    (stability,) = prompts(cns_run, "analysis.stability")
    text = " ".join(stability.split())
    assert "grid spacing (dx)" in text and "dy" not in text  # a 1D task has no dy
    assert "rhomax, vmax, pmax for the largest |rho| (and so on) in the data and rhomin, vmin, " \
        "pmin for the smallest rho (and so on)" in text
    # the full facts state the smallest input value, read off the initial frames (inputs)
    task = load_task("cns1d")
    ref = load_reference(task, resolve_split(task, "dev", data_dir_override=shared_data),
                         limit=2)
    rho_min = float(np.min(ref.fields["rho"][:, 0]))
    smallest = text.split("the smallest value there: ", 1)[1].split(")", 1)[0]
    assert f"rhomin = {rho_min:.4g}" in smallest
    assert f"rhomax = {float(np.abs(ref.fields['rho'][:, 0]).max()):.4g}" in text


def test_a_bound_in_the_smallest_density_becomes_a_number(shared_data):
    from pdesharp.facts import build_facts

    task = load_task("cns1d")
    scales = build_facts(task, data_dir=shared_data, max_samples=2).data.scales
    value, note = evaluate_bound("0.8*rhomin*dx**2/(2*(zeta + 4*eta/3))", task, scales)
    # dx = 2/nx at the data's grid; mu = zeta + 4 eta/3 at the task's parameters (exact
    # arithmetic of the same formula: only float rounding differs)
    mu = task.parameters["zeta"] + 4 * task.parameters["eta"] / 3
    dx = 2 / scales["nx"]
    assert note == "" and value == pytest.approx(0.8 * scales["rhomin"] * dx**2 / (2 * mu),
                                                 rel=1e-12)
    assert scales["rhomin"] < scales["rhomax"]  # signed smallest, not another |max|


def test_genesis_offers_compiled_loops_only_when_numba_is_installed():
    task = load_task("cns1d")
    analysis = Analysis(classification=Classification(time_order=1, space_order=2, linear=False,
                                                      pde_type="mixed", boundary="periodic"))
    from pdesharp.prompting import analysis_context

    ctx = {**task_context(task, "nrmse"), **analysis_context(analysis)}
    with_numba = " ".join(render("genesis", **{**ctx, "libraries": ["numpy", "numba"]},
                                 index=1, total=1, earlier=[], diverse=False).split())
    without = " ".join(render("genesis", **{**ctx, "libraries": ["numpy", "scipy"]},
                              index=1, total=1, earlier=[], diverse=False).split())
    assert "compile the loops with numba when the method takes many small steps" in with_numba
    assert "numba" not in without
    for text in (with_numba, without):
        assert "a time step set by that sample's own wave speeds, is done per sample" in text


def test_judges_and_reporter_state_the_same_time_rule(cns_run):
    rule = Rule.of(cns_run.config)
    words = rule.time_words()
    judge = " ".join(systems(cns_run, "judge.nominate")[0].split())
    (reporter,) = prompts(cns_run, "reporter")
    assert words in judge and words in " ".join(reporter.split())
    assert "more than 30 % faster" not in reporter
    # one evaluation at a time (the default workers) is said so, not "up to 1 ... run"
    assert "During the search evaluations run one at a time on a shared machine" in judge
    assert "up to 1 evaluation" not in judge


def test_several_workers_are_stated_as_a_bound():
    from pdesharp.synthesis.ranking import Rule as R

    info = RoundInfo(cycle=0, round=1, max_rounds=2, cycles=1, concurrent=2)
    text = " ".join(render("_rule", info=info).split())
    assert "During the search up to 2 evaluations run at a time" in text
    assert R.of({}).time_words() in text
