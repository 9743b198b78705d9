"""Issue 20 "report" rows: no false comparison between two equal errors; the residual score
is explained where it is shown."""

from __future__ import annotations

import subprocess
import sys

from pdesharp.audit.lines import report_lines
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


def test_writing_a_report_does_not_load_the_audit_solvers_or_sympy():
    """`pdesharp report` and the report module state an audit's sentences without importing
    the audit's solvers and SymPy (they took 1.7 of the command's 2.5 s of start-up); the
    audit package still hands out its names on first use."""
    code = ("import sys, pdesharp.report.html, pdesharp.reporter\n"
            "heavy = sorted(m for m in ('sympy', 'pdesharp.audit.core', 'pdesharp.audit.solutions')"
            " if m in sys.modules)\n"
            "assert not heavy, heavy\n"
            "from pdesharp.audit import audit_with_cache, AuditUnavailable\n"
            "assert 'pdesharp.audit.core' in sys.modules\n"
            "from pdesharp.audit.runs import report_lines as old\n"
            "from pdesharp.audit.lines import report_lines as new\n"
            "assert old is new\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
