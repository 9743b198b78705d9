"""The translator's prompt and reply handling: documented equation syntax round-trips through
the parser, the example spec is valid and robust YAML, every Task field is covered (asked or
defaulted), questions win over a YAML draft, two bounded correction rounds with the exact error.

Scripted and served replies are written by us for these tests, not recorded from a real model."""

from __future__ import annotations

import asyncio
import re

import pytest
import sympy as sp
import yaml
from llm_server import LLMServer

from pdesharp.cli import main
from pdesharp.equation import EquationError, parse_system
from pdesharp.llm.scripted import ScriptedModel
from pdesharp.task import EquationSpec, Task, load_task, load_task_file, task_from_dict
from pdesharp.translator import (
    DEFAULT_FRAMES,
    MAX_FIX_ROUNDS,
    TranslateError,
    example_spec,
    translate,
    translation_messages,
)

HEAT = ("Solve the heat equation u_t = 0.1 u_xx on (0, 1) with periodic boundaries from t = 0 to "
        "t = 1.")


def user_prompt() -> str:
    return translation_messages(HEAT)[1].content


def section(text: str, title: str) -> str:
    """The text of the prompt's ``# <title>`` section, up to the next heading."""
    match = re.search(rf"^# {re.escape(title)}.*?$(.*?)(?=^# |\Z)", text, re.S | re.M)
    assert match, f"the prompt has no section {title!r}"
    return match.group(1)


def yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, re.S)


def heat_spec(**changes) -> dict:
    data = load_task("advection").model_dump(mode="json", exclude={"codepde"})
    data.update(name="heat", title="1D heat equation", parameters={"nu": 0.1},
                time_span=[0.0, 1.0])
    data["equation"]["equations"] = ["dt(u) - nu*dx(u, 2)"]
    data["solver"]["args"][2] = {"name": "nu", "kind": "parameter", "doc": "diffusivity"}
    data.update(changes)
    return data


def fenced(data: dict | str) -> str:
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    return "```yaml\n" + text + "```"


# -- (c) equation syntax: the documented examples parse --------------------------------------

def documented_examples() -> list[dict]:
    blocks = yaml_blocks(section(user_prompt(), "Equation syntax"))
    assert len(blocks) == 1
    return yaml.safe_load(blocks[0])


def parse_example(ex: dict):
    eq = EquationSpec(**ex["equation"])  # only real EquationSpec fields, with their defaults
    params = list(ex.get("parameters", {}))
    return parse_system(eq.equations, eq.unknowns, space=eq.space, time=eq.time,
                        coefficients=eq.coefficients, parameters=params + list(eq.constants))


def test_every_documented_equation_example_parses():
    examples = documented_examples()
    assert len(examples) >= 6
    for ex in examples:
        system = parse_example(ex)  # raises EquationError on any undeclared name or bad syntax
        assert len(system.exprs) == len(system.unknowns), ex["pde"]
    # The examples cover what the syntax section documents.
    text = " ".join(e for ex in examples for e in ex["equation"]["equations"])
    for feature in ("dx(u, 2)", "dx(u, 3)", "dy(u, 2)", "**", "*u*", " = ", "dt(h*v)", "pi"):
        assert feature in text, feature
    kinds = {k for ex in examples for k in ex["equation"]}
    assert {"constants", "coefficients", "space", "time"} <= kinds


def test_second_order_example_means_u_xx_and_lhs_rhs_equals_residual_form():
    by_pde = {ex["pde"]: ex for ex in documented_examples()}
    heat = parse_example(next(ex for p, ex in by_pde.items() if p.startswith("heat")))
    t, x = sp.symbols("t x", real=True)
    u = sp.Function("u")(t, x)
    nu = sp.Symbol("nu", real=True)
    # lhs = rhs is moved to lhs - rhs: exactly u_t - nu*u_xx, no tolerance needed (symbolic).
    assert sp.simplify(heat.exprs[0].doit() - (u.diff(t) - nu * u.diff(x, 2))) == 0
    # The rules' own claim: "dt(u) + beta*dx(u)" and "dt(u) = -beta*dx(u)" are one equation.
    a, b = (parse_system([e], ["u"], space=["x"], parameters=["beta"]).exprs[0]
            for e in ("dt(u) + beta*dx(u)", "dt(u) = -beta*dx(u)"))
    assert sp.simplify(a - b) == 0


@pytest.mark.parametrize("bad, rule", [
    ("dt(u) + u**3 - u^3", "never u^3"), ("dt(u) - 2u", "never 2u"),
    ("dt(u) == 0", 'never "=="'), ("dt(u) + kappa*u", "Any other name is an error")])
def test_forms_the_prompt_forbids_are_rejected_by_the_parser(bad, rule):
    assert rule in " ".join(section(user_prompt(), "Equation syntax").split())
    with pytest.raises(EquationError):
        parse_system([bad], ["u"], space=["x"])


# -- (b, d, e) the example spec ---------------------------------------------------------------

def test_example_is_a_valid_spec_without_data_files_and_with_default_notes():
    blocks = yaml_blocks(section(user_prompt(), "Example spec"))
    assert len(blocks) == 1 and blocks[0] == example_spec()
    task = task_from_dict(yaml.safe_load(blocks[0]), "<example>")
    assert task.data.dev is None and task.data.test is None
    assert task.data.fields == {"u": "tensor"} and task.data.download.model_dump(exclude_none=True) == {}
    assert task.n_frames == DEFAULT_FRAMES and task.notes
    assert all(n.startswith("Default:") for n in task.notes)  # nothing advection-specific
    assert task.evaluation.convergence.kind == "time_1d"


def test_example_quotes_free_text_so_a_colon_cannot_break_it():
    example = example_spec()
    for key in ("title", "initial_condition"):
        assert re.search(rf'^{key}: "', example, re.M), key
    assert '- "Default:' in example and 'doc: "' in example
    # A model copying the quoting can put ': ' in a title; unquoted, the same text breaks.
    quoted = re.sub(r'^title: ".*"$', 'title: "Heat: 1D, nu = 0.1 # demo"', example, flags=re.M)
    assert task_from_dict(yaml.safe_load(quoted)).title == "Heat: 1D, nu = 0.1 # demo"
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(quoted.replace('"Heat: 1D, nu = 0.1 # demo"', "Heat: 1D, nu = 0.1"))


# -- (a) every field is asked for or defaulted -----------------------------------------------

def test_field_guide_names_every_task_field_and_the_defaults():
    guide = section(user_prompt(), "What each field needs")
    missing = [f for f in Task.model_fields if f"`{f}" not in guide]
    assert not missing, f"fields the translator prompt does not cover: {missing}"
    ask_part, default_part = guide.split("Default when the description is silent")
    for item in ("equation itself", "every parameter", "domain", "boundary conditions",
                 "time span"):
        assert item in ask_part, item
    for default in ("`grid`: cell_centres", f"`n_frames` (stored frames, t0 included): {DEFAULT_FRAMES}",
                    "`initial_condition`", "{kind: none}", "fields: {u: tensor}",
                    "Do not write dev, test or download"):
        assert default in default_part, default


def test_default_frames_agree_with_the_data_generator():
    from pdesharp.data.generate.generic import DEFAULT_FRAMES as GENERATOR_FRAMES

    assert DEFAULT_FRAMES == GENERATOR_FRAMES


# -- (f) its own system prompt ----------------------------------------------------------------

def test_translator_has_its_own_system_prompt():
    model = ScriptedModel({"translate": [fenced(heat_spec())]})
    asyncio.run(translate(model, HEAT))
    system = model.calls[0].messages[0]
    assert system.role == "system" and "task translator" in system.content
    assert "before writing code" not in system.content and "do not write a solver" in system.content


# -- (g) questions win over a YAML draft ------------------------------------------------------

def test_questions_win_over_a_yaml_draft_in_the_same_reply():
    reply = ("Here is a draft, but I am not sure.\n" + fenced(heat_spec()) +
             '\n```json\n{"questions": ["Which boundary conditions hold at x = 0 and x = 1?"]}\n```')
    model = ScriptedModel({"translate": [reply]})
    out = asyncio.run(translate(model, HEAT))
    assert out.task is None and out.questions == ["Which boundary conditions hold at x = 0 and x = 1?"]
    assert len(model.calls) == 1


def test_an_empty_questions_list_does_not_hide_the_spec():
    reply = '```json\n{"questions": []}\n```\n' + fenced(heat_spec())
    out = asyncio.run(translate(ScriptedModel({"translate": [reply]}), HEAT))
    assert out.task is not None and out.task.name == "heat" and out.questions == []


# -- (b) two bounded correction rounds with the exact error -----------------------------------

def test_two_correction_rounds_feed_back_the_exact_errors():
    good = yaml.safe_dump(heat_spec(), sort_keys=False)
    colon = re.sub(r"^title: .*$", "title: Heat: 1D", good, flags=re.M)  # unquoted ': '
    unknown_param = fenced(heat_spec(parameters={"kappa": 0.1}))  # solver arg nu names none
    model = ScriptedModel({"translate": [fenced(colon)],
                           "translate.fix": [unknown_param, fenced(good)]})
    out = asyncio.run(translate(model, HEAT))
    assert out.task.name == "heat" and out.fix_rounds == 2 and MAX_FIX_ROUNDS == 2
    first_fix, second_fix = model.calls[1].messages[-1].content, model.calls[2].messages[-1].content
    assert "mapping values are not allowed here" in first_fix and "YAML parser" in first_fix
    assert "Correction 1 of 2" in first_fix and "double quotes" in first_fix
    assert "names no parameter" in second_fix and "task validator" in second_fix
    assert "Correction 2 of 2 (the last one)" in second_fix
    # The whole exchange stays in the conversation: system, task, then (reply, fix) twice.
    assert [m.role for m in model.calls[2].messages] == [
        "system", "user", "assistant", "user", "assistant", "user"]


def test_correction_rounds_are_bounded_and_report_the_last_error():
    broken = fenced("name: [unclosed\n")
    model = ScriptedModel({"translate": [broken] * 3})
    with pytest.raises(TranslateError, match="after 2 correction"):
        asyncio.run(translate(model, HEAT))
    assert len(model.calls) == 1 + MAX_FIX_ROUNDS
    model = ScriptedModel({"translate": ["no yaml"]})
    with pytest.raises(TranslateError, match="no ```yaml block"):
        asyncio.run(translate(model, HEAT, max_fix_rounds=0))


def test_questions_during_a_correction_end_it():
    model = ScriptedModel({"translate": ["no yaml at all"],
                           "translate.fix": ['```json\n{"questions": ["What is nu?"]}\n```']})
    out = asyncio.run(translate(model, HEAT))
    assert out.questions == ["What is nu?"] and out.fix_rounds == 1


# -- the real HTTP path -------------------------------------------------------------------------

def test_cli_translate_over_a_loopback_endpoint(tmp_path, capsys):
    out = tmp_path / "heat.yaml"
    with LLMServer([fenced(heat_spec())]) as srv:
        assert main(["translate", HEAT, "--model", "compat:x", "--base-url", srv.url,
                     "--no-cache", "--llm-retries", "0", "--out", str(out)]) == 0
        body = srv.chat_requests[0].body
    assert body["model"] == "x" and body["messages"][0]["role"] == "system"
    assert "Equation syntax" in body["messages"][1]["content"]
    assert load_task_file(out).parameters == {"nu": 0.1}
    capsys.readouterr()
