"""Issue 20 "report" rows: no false comparison between two equal errors; the residual score
is explained where it is shown."""

from __future__ import annotations

from pdesharp.audit.runs import report_lines
from pdesharp.evaluate.residual import EXPLANATION


def block(best: float, ref: float) -> dict:
    return {"status": "ok", "reference_error": ref, "samples": 5, "float32_floor": 1e-7,
            "audit": "a.json", "best_nrmse": best, "best_nrmse_vs_converged": 1e-6,
            "best_below_reference_error": best < ref}


def test_equal_errors_are_not_called_better():
    text = "\n".join(report_lines(block(3.03494e-4, 3.03512e-4)))  # both print 3.035e-04
    assert "better than" not in text and "about as closely" in text


def test_a_clearly_lower_score_is_still_said_to_be_below():
    text = "\n".join(report_lines(block(2.0e-4, 3.035e-4)))
    assert "better than the reference agrees with the PDE (3.035e-04)" in text


def test_residual_explanation_says_what_zero_and_one_mean():
    assert "0 means the equation holds" in EXPLANATION and "no reference data" in EXPLANATION
