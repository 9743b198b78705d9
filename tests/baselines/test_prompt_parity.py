"""A bench compares methods, not the information they were given: at either facts level the
baselines' prompts carry exactly the task facts block PDE-SHARP's prompts carry."""

import pytest

from pdesharp.baselines.codepde import Seed, generation_messages
from pdesharp.baselines.common import render
from pdesharp.baselines.codepde import prompt_context
from pdesharp.facts import build_facts
from pdesharp.prompting import facts_block
from pdesharp.prompting import render as render_sharp
from pdesharp.prompting import task_context
from pdesharp.records import EvalResult
from pdesharp.task import builtin_task_names, load_task


@pytest.mark.parametrize("level", ["full", "codepde"])
@pytest.mark.parametrize("name", builtin_task_names())
def test_baseline_prompts_carry_the_facts_sharp_gets(name, level, shared_data):
    task = load_task(name)
    facts = build_facts(task, level, data_dir=shared_data, max_samples=3)
    block = facts_block(task, facts)
    sharp = render_sharp("_task", **task_context(task, "nrmse", facts))
    seed = Seed("s1", "def solver(): pass", EvalResult(status="ok", split="dev",
                                                      feedback="nrmse", nrmse=1e-2))
    prompts = [generation_messages(task, facts)[1].content,
               render("refine", **prompt_context(task, facts), seeds=[seed])]
    assert block in sharp
    stated = task.description if level == "full" else task.codepde.description
    for prompt in prompts + [sharp]:
        assert block in prompt  # the same facts, word for word
        assert stated.strip() in prompt  # and the same statement of the task
    spec_facts = [task.initial_condition, *task.notes, task.reference]
    for fact in filter(None, spec_facts):
        assert (fact in block) == (level == "full"), fact
    # the data section (batch, grid, frames, dtypes of the dev file) only at the full level
    n = facts.data.n_samples  # 3, or fewer in a smaller dev file
    said = "one sample" if n == 1 else f"{n} samples"
    assert n <= 3 and (f"once with the {said} of the development split" in block) == (
        level == "full")
    assert "nRMSE" in block and "lower is better" in block.lower()
