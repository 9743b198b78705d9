"""Reading structure out of model replies (the replies here are written by us)."""

from __future__ import annotations

import pytest
from jinja2 import UndefinedError

from pdesharp.genesis import static_check, title_of
from pdesharp.prompting import available_libraries, extract_code, extract_json, render
from pdesharp.task import load_task


def test_extract_code_prefers_the_longest_python_block():
    text = "```python\nx = 1\n```\nthen\n```python\ndef solver():\n    return 2\n```\n```bash\nls\n```"
    assert extract_code(text) == "def solver():\n    return 2\n"
    assert extract_code("```\ndef solver():\n    pass\n```") == "def solver():\n    pass\n"
    assert extract_code("```\nls -l\n```") is None and extract_code("no code") is None


def test_extract_json_prefers_the_fenced_block_and_tolerates_slips():
    text = 'Ranking below.\n```json\n{"nominee": "g2", "ranking": ["g2", "g1",],}\n```\n' \
           'In code I would use {"a": 1}.'
    assert extract_json(text) == {"nominee": "g2", "ranking": ["g2", "g1"]}
    assert extract_json('facts: {"applies": True, "method": None}') == {"applies": True, "method": None}
    assert extract_json("nothing here") is None


def test_templates_are_strict():
    with pytest.raises(UndefinedError):
        render("genesis", route="numerical")  # the task variables are missing


def test_static_check_reasons():
    task = load_task("advection")
    good = "import numpy as np\n\ndef solver(u0_batch, t_coordinate, beta):\n    return u0_batch\n"
    assert static_check(good, task) == "ok"
    assert static_check(good.replace("beta)", "speed)"), task).startswith("solver takes")
    assert static_check("def solver(:\n", task).startswith("syntax error")
    assert "not installed" in static_check("import torchvision\n" + good, task)
    # an import nested in any statement block is found (the check walks statements only)
    nested = good.replace("    return u0_batch\n", "    for _ in range(1):\n        try:\n"
                          "            pass\n        except ImportError:\n            if True:\n"
                          "                with open('x'):\n"
                          "                    from torchvision import ops\n    return u0_batch\n")
    assert static_check(nested, task) == "imports torchvision, which is not installed"
    cased = good.replace("    return u0_batch\n", "    match beta:\n        case 1:\n"
                         "            import imaginary_lib.fft\n    return u0_batch\n")
    assert static_check(cased, task) == "imports imaginary_lib.fft, which is not installed"
    assert static_check("import numpy\n", task) == "no top-level function solver"
    assert "numpy" in available_libraries()
    assert title_of("**Title:** WENO5 + SSPRK3\nmore") == "WENO5 + SSPRK3"
