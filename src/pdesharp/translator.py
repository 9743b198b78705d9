"""Translator: a natural-language PDE description -> a validated Task spec (YAML).

When the description lacks something a solver needs (domain, boundary conditions, parameter
values, time span, output signature), the model is told to ask instead of guessing, and the
questions are returned to the user. A spec that fails validation goes back to the model once
with the validation errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from pdesharp.llm.base import Message
from pdesharp.prompting import ask, extract_json, render
from pdesharp.task import Task, TaskError, load_task, task_from_dict

_YAML = re.compile(r"```(?:yaml|yml)[^\n]*\n(.*?)```", re.DOTALL)


class TranslateError(ValueError):
    """The model's spec did not validate even after one correction."""


@dataclass
class Translation:
    task: Task | None = None
    yaml_text: str = ""
    questions: list[str] = field(default_factory=list)


def _parse(text: str) -> tuple[Task | None, str, str]:
    """(task, yaml text, error) from a reply."""
    blocks = _YAML.findall(text)
    if not blocks:
        return None, "", "the reply has no ```yaml block"
    raw = max(blocks, key=len)
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        return None, raw, f"not valid YAML: {exc}"
    try:
        return task_from_dict(data, "<translated spec>"), raw, ""
    except TaskError as exc:
        return None, raw, str(exc)


async def translate(model, description: str) -> Translation:
    example = load_task("advection").to_yaml()
    messages = [Message(role="system", content=render("system", role="the task translator")),
                Message(role="user", content=render("translate", description=description,
                                                    example=example))]
    text = await ask(model, messages, "translate", temperature=0.0)
    facts = extract_json(text) if "```yaml" not in text else None
    if facts and isinstance(facts.get("questions"), list) and facts["questions"]:
        return Translation(questions=[str(q) for q in facts["questions"]])
    task, raw, error = _parse(text)
    if task is None:
        messages += [Message(role="assistant", content=text),
                     Message(role="user", content=render("translate_fix", errors=error))]
        text = await ask(model, messages, "translate.fix", temperature=0.0)
        task, raw, error = _parse(text)
        if task is None:
            raise TranslateError(f"the translated spec is still invalid after one correction:\n{error}")
    return Translation(task=task, yaml_text=task.to_yaml())
