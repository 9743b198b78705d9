"""A bench compares methods, not the information they were given: the baselines' prompts carry
the same task facts (initial conditions, notes, how scores are computed) as PDE-SHARP's."""

import pytest

from pdesharp.baselines.common import render
from pdesharp.prompting import render as render_sharp
from pdesharp.prompting import task_context
from pdesharp.task import builtin_task_names, load_task


@pytest.mark.parametrize("name", builtin_task_names())
def test_baseline_prompts_carry_the_facts_sharp_gets(name):
    task = load_task(name)
    sharp = render_sharp("_task", **task_context(task, "nrmse"))
    seeds = [{"code": "def solver(): pass", "result_line": "nRMSE: 1.000e-02"}]
    for prompt in (render("generate", task=task, libraries=["numpy"]),
                   render("refine", task=task, libraries=["numpy"], seeds=seeds)):
        for fact in [task.initial_condition, *task.notes]:
            assert fact in sharp, fact  # the fact is one PDE-SHARP's prompt shows ...
            assert fact in prompt, fact  # ... so the baseline sees it too
        assert "nRMSE against the task's reference data" in prompt
