"""Translator: questions instead of guesses, one correction round, CLI round trip.

Scripted replies are written by us for these tests, not recorded from a real model."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from pdesharp.cli import main
from pdesharp.llm.scripted import ScriptedModel
from pdesharp.task import load_task, load_task_file
from pdesharp.translator import TranslateError, translate

HEAT = "Solve the heat equation u_t = 0.1 u_xx on (0, 1) with periodic boundaries up to t = 1."


def spec_yaml(**changes) -> str:
    data = load_task("advection").model_dump(mode="json", exclude={"codepde"})
    data.update(name="heat", title="1D heat equation", parameters={"nu": 0.1})
    data["equation"]["equations"] = ["dt(u) - nu*dx(dx(u))"]
    data["solver"]["args"][2] = {"name": "nu", "kind": "parameter", "doc": "diffusivity"}
    data.update(changes)
    return "```yaml\n" + yaml.safe_dump(data, sort_keys=False) + "```"


def test_missing_information_gives_questions():
    model = ScriptedModel({"translate": [
        'Some facts are missing.\n```json\n{"questions": ["What is the domain?", '
        '"Which boundary conditions?"]}\n```']})
    out = asyncio.run(translate(model, "Solve the heat equation."))
    assert out.task is None and out.questions == ["What is the domain?", "Which boundary conditions?"]


def test_invalid_spec_is_corrected_once():
    broken = spec_yaml(parameters={"kappa": 0.1})  # the solver argument nu names no parameter
    model = ScriptedModel({"translate.fix": [spec_yaml()], "translate": [broken]})
    out = asyncio.run(translate(model, HEAT))
    assert out.task.name == "heat" and out.task.parameters == {"nu": 0.1}
    fix_prompt = model.calls[1].prompt
    assert "nu" in fix_prompt and "names no parameter" in fix_prompt


def test_still_invalid_after_correction_raises():
    # Two correction rounds are allowed (translator.MAX_FIX_ROUNDS): three bad replies.
    model = ScriptedModel({"translate": ["no yaml here", "```yaml\nname: [unclosed\n```",
                                         "```yaml\nname: [unclosed\n```"]})
    with pytest.raises(TranslateError, match="still invalid"):
        asyncio.run(translate(model, HEAT))
    assert len(model.calls) == 3


def test_cli_translate_writes_a_valid_spec(tmp_path, capsys):
    rules = tmp_path / "rules.yaml"
    rules.write_text("# written by us for this test\n" + yaml.safe_dump(
        {"rules": [{"tag": "translate", "reply": spec_yaml()}]}))
    out = tmp_path / "heat.yaml"
    assert main(["translate", HEAT, "--model", f"scripted:{rules}", "--out", str(out)]) == 0
    assert load_task_file(out).name == "heat"
    assert "pdesharp solve" in capsys.readouterr().out
