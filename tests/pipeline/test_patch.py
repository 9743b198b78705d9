"""SEARCH/REPLACE applier: exact, whitespace-tolerant and indent-shifted matches; failures."""

from __future__ import annotations

import pytest

from pdesharp.synthesis.patch import PatchError, apply_patch, nearest_lines, parse_blocks

CODE = '''import numpy as np

def solver(u0_batch, t_coordinate, beta):
    dx = 1.0 / u0_batch.shape[1]
    cfl = 0.4
    for k in range(10):
        u = step(u, cfl)
    return u
'''


def blk(search, replace):
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


def test_exact_match_replaces_once():
    out = apply_patch(CODE, blk("    cfl = 0.4", "    cfl = 0.8"))
    assert "cfl = 0.8" in out and "cfl = 0.4" not in out
    assert out.count("\n") == CODE.count("\n")


def test_multiple_blocks_apply_in_order_and_prose_is_ignored():
    patch = ("Here is my change.\n```\n" + blk("    cfl = 0.4", "    cfl = 0.3") + "\n"
             + blk("    cfl = 0.3", "    cfl = 0.2  # second block sees the first") + "\n```\n")
    out = apply_patch(CODE, patch)
    assert "cfl = 0.2  # second block" in out


def test_trailing_whitespace_tolerated():
    out = apply_patch(CODE, blk("    cfl = 0.4   \n    for k in range(10):  ", "    cfl = 0.1\n    for k in range(5):"))
    assert "cfl = 0.1" in out and "range(5)" in out and "range(10)" not in out


def test_indent_shift_is_matched_and_replacement_reindented():
    # the model quoted the loop dedented to column 0; the replacement is at the same depth
    search = "for k in range(10):\n    u = step(u, cfl)"
    replace = "for k in range(20):\n    u = step(u, cfl)\n    u = limit(u)"
    out = apply_patch(CODE, blk(search, replace))
    assert "    for k in range(20):\n        u = step(u, cfl)\n        u = limit(u)\n    return u" in out
    compile(out, "<patched>", "exec")  # still valid Python


def test_indent_shift_deeper_than_file():
    search = "        dx = 1.0 / u0_batch.shape[1]\n        cfl = 0.4"
    out = apply_patch(CODE, blk(search, "        dx = 2.0\n        cfl = 0.4"))
    assert "\n    dx = 2.0\n    cfl = 0.4\n" in out


def test_absent_search_raises_with_nearest_lines():
    with pytest.raises(PatchError) as info:
        apply_patch(CODE, blk("    cfl = 0.5", "    cfl = 0.9"))
    err = info.value
    assert err.block == 1
    assert "cfl = 0.4" in err.nearest and "cfl = 0.4" in str(err)


def test_second_block_failure_is_not_skipped():
    patch = blk("    cfl = 0.4", "    cfl = 0.3") + "\n" + blk("    nothing_like_this()", "x")
    with pytest.raises(PatchError) as info:
        apply_patch(CODE, patch)
    assert info.value.block == 2


def test_partial_line_does_not_match_under_shift():
    # 'u = step(u, cfl)' must not match inside a line with other text before it
    code = "def f():\n    v = u = step(u, cfl)\n"
    with pytest.raises(PatchError):
        apply_patch(code, blk("u = step(u, cfl)\n", "pass"))


def test_malformed_and_missing_blocks():
    with pytest.raises(PatchError, match="malformed"):
        parse_blocks("<<<<<<< SEARCH\nx\n>>>>>>> REPLACE")
    with pytest.raises(PatchError, match="no SEARCH/REPLACE"):
        parse_blocks("I would change the CFL number.")
    with pytest.raises(PatchError, match="empty"):
        apply_patch(CODE, blk("", "x = 1"))


def test_replacement_may_delete_lines():
    out = apply_patch(CODE, "<<<<<<< SEARCH\n    cfl = 0.4\n=======\n>>>>>>> REPLACE")
    assert "cfl" not in out.split("for")[0]


def test_nearest_lines_numbers_lines():
    text = nearest_lines(CODE, "cfl = 0.45")
    assert "   5 |     cfl = 0.4" in text
