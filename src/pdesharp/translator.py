"""Translator: a natural-language PDE description -> a validated Task spec (YAML).

    result = await translate(model, "Solve the heat equation u_t = 0.1 u_xx on (0, 1) ...")
    result.task          # the validated Task, or None if the model asked questions
    result.questions     # what the description leaves open (shown to the user)

The prompt (``prompts/translate.j2``, with its own system prompt ``translate_system.j2``) says
which fields must be asked for when the description lacks them and which get a stated default.
Reply precedence: a ```json block with a non-empty ``questions`` list wins over any YAML in the
same reply (a model with open questions is guessing in its draft). A spec that does not parse or
validate goes back to the model with the exact error, at most ``MAX_FIX_ROUNDS`` times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from pdesharp.llm.base import Message
from pdesharp.prompting import ask, extract_json, fenced_blocks, render
from pdesharp.task import Task, TaskError, load_task, task_from_dict
from pdesharp.untrusted import yaml_data

_YAML = re.compile(r"(yaml|yml)")  # a fence's language (prompting.fenced_blocks)

# Two rounds: a first fix often repairs the YAML and then meets a validation error behind it.
# Bounded, because a model that fails twice on the exact error rarely succeeds a third time.
MAX_FIX_ROUNDS = 2

# Stored frames when the description gives no output spacing: the generic data generator's
# default, so a translated spec and `pdesharp data generate` agree.
DEFAULT_FRAMES = 101

# Written when the description does not say how the initial data are drawn (also in the prompt).
_DEFAULT_IC = ("Not specified: the solver must accept any smooth initial data compatible with "
               "the boundary conditions.")

# The built-in task the prompt's example spec is made from.
_EXAMPLE_TASK = "advection"


class TranslateError(ValueError):
    """The model's spec did not validate even after the allowed corrections."""


@dataclass
class Translation:
    task: Task | None = None
    yaml_text: str = ""
    questions: list[str] = field(default_factory=list)
    fix_rounds: int = 0  # corrections the model needed


@dataclass
class _Parsed:
    task: Task | None
    raw: str
    error: str = ""
    yaml_error: bool = False  # the error came from the YAML parser, not the task validator


class _QuotingDumper(yaml.SafeDumper):
    """Free text in double quotes (a model copying the example then quotes its own values, so a
    colon in a title cannot break the YAML); multi-line text as ``|`` blocks; bare identifiers
    (names, kinds, keys) stay plain."""


def _present_str(dumper: yaml.SafeDumper, value: str):
    if "\n" in value:
        style = "|"
    elif re.search(r"[\s:#]", value):
        style = '"'
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _present_list(dumper: yaml.SafeDumper, value: list):
    # [u], [0.0, 1.0], ["dt(u) + beta*dx(u)"] on one line, as in the built-in task files
    flow = all(_scalar(v) for v in value) and len(repr(value)) <= 80
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


def _present_dict(dumper: yaml.SafeDumper, value: dict):
    flow = 0 < len(value) <= 4 and all(_scalar(v) or (isinstance(v, list) and all(map(_scalar, v)))
                                       for v in value.values()) \
        and not any(isinstance(v, str) and "\n" in v for v in value.values())
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=flow or None)


_QuotingDumper.add_representer(str, _present_str)
_QuotingDumper.add_representer(list, _present_list)
_QuotingDumper.add_representer(dict, _present_dict)


def example_spec() -> str:
    """The example shown to the model: the advection task written as the prompt's rules ask
    for a description that names no data files and gives no output spacing (data: fields
    only; n_frames and initial_condition defaulted, each with a "Default:" note; evaluation
    reduced to the convergence block; none of advection's dataset-specific notes)."""
    data = load_task(_EXAMPLE_TASK).model_dump(mode="json", exclude={"generator", "codepde"},
                                                exclude_none=True)
    data["title"] = "1D linear advection, beta = 0.1"
    data["n_frames"] = DEFAULT_FRAMES
    data["initial_condition"] = _DEFAULT_IC
    data["data"] = {"fields": dict(data["data"]["fields"])}
    conv = data["evaluation"]["convergence"]
    data["evaluation"] = {"convergence": {k: conv[k] for k in ("kind", "grids", "batch", "compare")}}
    data["notes"] = [f"Default: n_frames = {DEFAULT_FRAMES} (the description gives no output spacing).",
                     "Default: initial_condition (the description does not say how the initial "
                     "data are drawn)."]
    task_from_dict(data, "<translator example>")  # the example itself must validate
    return yaml.dump(data, Dumper=_QuotingDumper, sort_keys=False, allow_unicode=True,
                     width=10**6)  # no folding: a folded quoted line looks like a broken one


def translation_messages(description: str) -> list[Message]:
    return [Message(role="system", content=render("translate_system")),
            Message(role="user", content=render("translate", description=description,
                                                example=example_spec(),
                                                default_frames=DEFAULT_FRAMES,
                                                default_ic=_DEFAULT_IC))]


def questions_in(text: str) -> list[str]:
    """The questions of a reply's JSON block ([] if none): they take precedence over YAML."""
    facts = extract_json(text)
    if not facts or not isinstance(facts.get("questions"), list):
        return []
    return [str(q).strip() for q in facts["questions"] if str(q).strip()]


def _parse(text: str) -> _Parsed:
    blocks = [body for _, body in fenced_blocks(text, _YAML)]
    if not blocks:
        return _Parsed(None, "", "the reply has no ```yaml block")
    raw = max(blocks, key=len)
    try:
        data = yaml_data(raw)
    except yaml.YAMLError as exc:
        return _Parsed(None, raw, f"not valid YAML: {exc}", yaml_error=True)
    try:
        return _Parsed(task_from_dict(data, "<translated spec>"), raw)
    except TaskError as exc:
        return _Parsed(None, raw, str(exc))


async def translate(model, description: str, *, max_fix_rounds: int = MAX_FIX_ROUNDS) -> Translation:
    """Ask ``model`` for a spec of ``description``; questions come back instead of a guess.

    Raises :class:`TranslateError` (with the last error) when no valid spec arrives after
    ``max_fix_rounds`` corrections."""
    messages = translation_messages(description)
    text = await ask(model, messages, "translate", temperature=0.0)
    for fix_round in range(max_fix_rounds + 1):
        questions = questions_in(text)
        if questions:
            return Translation(questions=questions, fix_rounds=fix_round)
        parsed = _parse(text)
        if parsed.task is not None:
            return Translation(task=parsed.task, yaml_text=parsed.task.to_yaml(),
                               fix_rounds=fix_round)
        if fix_round == max_fix_rounds:
            break
        messages += [Message(role="assistant", content=text),
                     Message(role="user", content=render(
                         "translate_fix", errors=parsed.error, yaml_error=parsed.yaml_error,
                         round=fix_round + 1, max_rounds=max_fix_rounds))]
        text = await ask(model, messages, "translate.fix", temperature=0.0)
    raise TranslateError(f"the translated spec is still invalid after {max_fix_rounds} "
                         f"correction(s):\n{parsed.error}")
