"""Issue 25 rows 7-8 and item 3: every parser of a model reply is linear in the reply's length
and bounded in depth.

Before: `'{' * 12000 + '}' * 64` took ~12 min of JSON extraction, `'{"a":' * 3000` died with
RecursionError, and 2,000 unclosed SEARCH/======= blocks made the patch regex backtrack for
minutes. Here each parser gets megabyte-size adversarial input. The limit (20 s a call) is
generous for a loaded 2-core machine (each call takes 0.1-2 s unloaded) and far below what the
quadratic parsers took (minutes to hours at this size). The one-pass rewrites are also checked
to find exactly what the regular expressions they replace found, on random small inputs.
"""

from __future__ import annotations

import random
import re
import time

import pytest

from pdesharp.genesis import justification_of, title_of
from pdesharp.prompting import (MAX_JSON_DEPTH, clean_title, extract_code, extract_json,
                                 fenced_blocks)
from pdesharp.synthesis.patch import PatchError, apply_patch, find_blocks, has_blocks
from pdesharp.translator import _parse as parse_translation

MB = 1_000_000
LIMIT = 20.0  # seconds per parser call on 1 MB

ADVERSARIAL = {
    "open braces": "{" * (MB - 64) + "}" * 64,
    "open keys": '{"a":' * (MB // 5),
    "deep arrays": "[" * MB,
    "deep fenced json": "```json\n" + "[" * MB + "\n```",
    "deep closed objects": "```json\n" + '{"a":' * (MB // 6) + "1" + "}" * (MB // 6) + "\n```",
    "quotes": '{"' * (MB // 2),
    "backslashes": "{" + "\\" * MB,
    "huge integer": '{"a": ' + "1" * MB + "}",
    "nested failures": ("{x" * 20 + "}" * 20) * (MB // 60),
    "failing objects": '{"a"}' * (MB // 5),
    "backticks": "`" * MB,
    "unclosed fences": "```json" * (MB // 7),
    "empty fences": "```\n" * (MB // 4),
    "unclosed blocks": "<<<<<<< SEARCH\n=======\n" * (MB // 23),
    "blank lines": "\n" * MB,
    "labels": "Title: " * (MB // 7),
}
JSON = ["open braces", "open keys", "deep arrays", "deep fenced json", "deep closed objects",
        "quotes", "backslashes", "huge integer", "nested failures", "failing objects"]
FENCES = ["backticks", "unclosed fences", "empty fences", "deep fenced json"]
LINES = ["unclosed blocks", "blank lines", "labels", "backticks"]
# each parser, and the inputs aimed at what it scans for
PARSERS = {
    "extract_json": (extract_json, JSON + FENCES),
    "extract_code": (extract_code, FENCES),
    "has_blocks": (has_blocks, LINES),
    "apply_patch": (lambda text: apply_patch("x = 1\n", text), LINES),
    "translation": (parse_translation, FENCES + ["open keys"]),
    "clean_title": (clean_title, LINES),
    "title_of": (title_of, LINES + ["empty fences"]),
    "justification_of": (justification_of, LINES),
}


@pytest.mark.slow
@pytest.mark.parametrize("parser", PARSERS)
def test_each_parser_is_linear_on_megabyte_adversarial_replies(parser):
    parse, inputs = PARSERS[parser]
    slowest = (0.0, "")
    for name in inputs:
        text = ADVERSARIAL[name]
        began = time.monotonic()
        try:
            parse(text)
        except PatchError:  # a verdict on a malformed patch, as intended
            pass
        took = time.monotonic() - began
        slowest = max(slowest, (took, name))
    assert slowest[0] < LIMIT, f"{parser} took {slowest[0]:.1f} s on {slowest[1]!r}"


def test_what_the_bounded_parsers_still_read():
    # the facts at the end of a reply are found after megabytes of hostile prose
    reply = "{x" * 50_000 + 'Done.\n```json\n{"applies": true, "bounds": [{"a": 1}]}\n```'
    assert extract_json(reply) == {"applies": True, "bounds": [{"a": 1}]}
    assert extract_json('say {"a": 1, "b": [True, None],} ok') == {"a": 1, "b": [True, None]}
    # nesting past MAX_JSON_DEPTH is not read (only its inner objects are); a deep object
    # inside prose does not hide a later one
    inner = extract_json('{"a":' * 30 + "1" + "}" * 30)
    depth = 0
    while isinstance(inner, dict):
        inner, depth = inner["a"], depth + 1
    assert depth == MAX_JSON_DEPTH
    assert extract_json('{"a":' * 30 + "1" + "}" * 30 + ' then {"b": 2}') == {"b": 2}
    assert extract_json('{"n": ' + "9" * 5000 + "}") is None  # past Python's int limit: not read
    code = "x = 1\ny = 2\n"
    patch = "<<<<<<< SEARCH\ny = 2\n=======\ny = 3\n>>>>>>> REPLACE"
    assert apply_patch(code, "prose\n" + patch) == "x = 1\ny = 3\n"


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_YAML = re.compile(r"```(?:yaml|yml)[^\n]*\n(.*?)```", re.DOTALL)
_BLOCK = re.compile(r"^<{5,9} ?SEARCH[^\n]*\n(?P<search>.*?)^={5,9}[ \t]*\n(?P<replace>.*?)"
                    r"^>{5,9} ?REPLACE[^\n]*$", re.DOTALL | re.MULTILINE)


def test_the_one_pass_parsers_find_what_the_regular_expressions_found():
    rng = random.Random(25)
    fence_tokens = ["```", "`", "\n", "json", "yaml", "yml", " ", "\t", "x"]
    block_tokens = ["<<<<<<< SEARCH", "<<<<< SEARCH x", "<<<<<<<<<< SEARCH", "=======",
                    "===== \t", "==========", ">>>>>>> REPLACE", ">>>>>REPLACE", "\n", "a", " "]
    for _ in range(5000):
        text = "".join(rng.choice(fence_tokens) for _ in range(rng.randint(0, 30)))
        assert fenced_blocks(text) == _FENCE.findall(text), repr(text)
        assert [b for _, b in fenced_blocks(text, re.compile("(yaml|yml)"))] == \
            _YAML.findall(text), repr(text)
        text = "".join(rng.choice(block_tokens) for _ in range(rng.randint(0, 30)))
        assert [(b.search, b.replace) for b in find_blocks(text)] == \
            [(m["search"], m["replace"]) for m in _BLOCK.finditer(text)], repr(text)
