"""report.md's section on another library's accuracy-time front (issue 27 item 3): the numbers
it states, and library_front.json treated as the untrusted data it is."""

from __future__ import annotations

import json

import pytest

from pdesharp.report import library_front as lf


def _front(**over):
    d = {"library": "exponax", "winner": {"setting": "best_solver.py", "nrmse": 1e-6,
                                          "warm": 0.002, "cold": 0.5},
         "points": [{"setting": "1 substep", "nrmse": 1e-4, "warm": 0.001, "cold": 3.0},
                    {"setting": "4 substeps", "nrmse": 1e-8, "warm": 0.004, "cold": 3.5},
                    {"setting": "slow and worse", "nrmse": 1e-3, "warm": 0.01, "cold": 9.0}]}
    d.update(over)
    return d


def test_time_at_the_winners_accuracy_is_interpolated_along_the_front(tmp_path):
    (tmp_path / lf.FILE).write_text(json.dumps(_front()))
    (tmp_path / "report.md").write_text("# run\n")
    lf.update_report(tmp_path)
    lf.update_report(tmp_path)  # a second measurement replaces the section, never doubles it
    text = (tmp_path / "report.md").read_text()
    assert text.count("## Against exponax's accuracy-time front") == 1
    # 1e-6 lies halfway (in log) between 1e-4 and 1e-8: warm sqrt(0.001 * 0.004) = 0.002, cold
    # sqrt(3 * 3.5); the winner's 0.002 s is then 1.00x
    assert "takes 0.002 s per sample warm" in text and "1.00x (warm)" in text
    assert f"{0.5 / (3.0 * 3.5) ** 0.5:.2f}x (cold)" in text
    assert "slow and worse" not in text and "2 of the 3 settings" in text  # dominated: not shown


def test_a_library_that_cannot_reach_the_winner_is_said_by_how_much(tmp_path):
    (tmp_path / lf.FILE).write_text(json.dumps(_front(winner={
        "setting": "w", "nrmse": 1e-10, "warm": 0.01, "cold": 0.3})))
    text = "\n".join(lf.section(tmp_path))
    assert "does not reach" in text and "100x the winner's error" in text


@pytest.mark.parametrize("raw,reason", [
    (b"\xff\xfe", "not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON"),  # nesting that blows the parser's stack
    (b"x" * (lf.MAX_BYTES + 10), "larger than"),
    (json.dumps(_front(library="<script>alert(1)</script>")).encode(), "library"),
    (json.dumps(_front(points=[])).encode(), "'points'"),
    (json.dumps(_front(points=[{"setting": "a", "nrmse": float("nan"), "warm": 1,
                                "cold": 1}])).encode(), "positive finite"),
    (json.dumps(_front(points=[{"setting": "a", "nrmse": True, "warm": 1, "cold": 1}])).encode(),
     "positive finite"),
    (json.dumps(_front(winner="fast")).encode(), "winner must be a mapping"),
    (json.dumps(_front(winner_split={"import": 0.1, "first": 1.0, "batch": 1e9})).encode(),
     "batch"),
    (json.dumps(_front(winner_split={"import": -1, "first": 1.0, "batch": 8})).encode(),
     "winner_split.import"),
])
def test_a_malformed_file_is_ignored_with_its_reason(tmp_path, raw, reason):
    (tmp_path / lf.FILE).write_bytes(raw)
    lines = lf.section(tmp_path)
    assert len(lines) == 3 and "ignored" in lines[1] and reason in lines[1]
    assert "<script>" not in "\n".join(lines)


def test_settings_text_is_inert_in_the_table(tmp_path):
    pts = _front()["points"]
    pts[0]["setting"] = "| injected | `code` <b>x</b>\nnew row"
    (tmp_path / lf.FILE).write_text(json.dumps(_front(points=pts)))
    row = next(ln for ln in lf.section(tmp_path) if "injected" in ln)
    assert "\\| injected" in row  # the pipe is escaped: no extra table column
    assert "<b>" not in row and "\n" not in row and "\\`code\\`" in row


def test_no_file_no_section(tmp_path):
    assert lf.section(tmp_path) == []


def test_a_link_in_place_of_the_file_is_not_followed(tmp_path):
    """A run folder from someone else whose library_front.json is a link to a valid front
    elsewhere: the link is not followed, the section says why it ignored the file."""
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(_front()))
    run = tmp_path / "run"
    run.mkdir()
    (run / lf.FILE).symlink_to(outside)
    lines = lf.section(run)
    assert len(lines) == 3 and "ignored" in lines[1] and "symbolic" in lines[1]
    assert "exponax" not in "\n".join(lines)


def test_the_winners_one_off_and_per_sample_time_are_told_apart(tmp_path):
    # cold 0.5 s = import 0.1 s + first call 0.3 s on 8 samples (+ set-up); warm 0.002 s per
    # sample: 8 x 0.002 = 0.016 s of the first call is per sample, 0.284 s one-off
    (tmp_path / lf.FILE).write_text(json.dumps(_front(winner_split={
        "import": 0.1, "first": 0.3, "batch": 8, "evaluator": 0.04})))
    text = "\n".join(lf.section(tmp_path))
    assert "importing the module takes 0.1 s" in text and "batch of 8 samples 0.3 s" in text
    assert "about 0.284 s of the first call is one-off" in text
    assert "0.04 s per sample for this winner, against 0.002 s warm" in text
    (tmp_path / lf.FILE).write_text(json.dumps(_front()))  # an older file: no such sentence
    assert "One-off" not in "\n".join(lf.section(tmp_path))
