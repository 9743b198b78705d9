"""Test doubles for the baseline tests, written by us.

``MarkerEvaluator`` stands in for the sandboxed evaluator where a test is about the baselines'
control flow, not about executing code: it reads a marker comment in the solver source
(``# SCORE 1e-3``, ``# RAISE``, ``# NAN``) and returns the matching EvalResult. The scripted
model replies used with it are written by us too; none is a recording of a real model.
"""

from __future__ import annotations

import re

from pdesharp.records import EvalResult


class MarkerEvaluator:
    def __init__(self, test_data: bool = True):
        self.calls: list[tuple[str, str]] = []  # (label, split)
        self.test_data = test_data

    def has_split(self, split: str) -> bool:
        return split == "dev" or self.test_data

    async def evaluate(self, code: str, *, split, feedback, label: str = "",
                       warm: bool = False) -> EvalResult:
        self.calls.append((label, split))
        if "# RAISE" in code:
            return EvalResult(status="error", split=split, feedback=feedback,
                              message="ZeroDivisionError: division by zero",
                              stdout_tail="step 1\n" * 2000, stderr_tail="Traceback ...")
        if "# NAN" in code:
            return EvalResult(status="nan", split=split, feedback=feedback,
                              message="prediction contains NaN", stdout_tail="dt=0.1")
        m = re.search(r"# SCORE ([0-9.eE+-]+)", code)
        score = float(m.group(1)) if m else 0.5
        if split == "test":
            score *= 1.1  # a different number, so a test can tell dev and test apart
        return EvalResult(status="ok", split=split, feedback=feedback, n_samples=2, nrmse=score,
                          solver_seconds=0.01, convergence_order=1.0)


def solver_reply(marker: str, extra: str = "") -> str:
    """A scripted reply (ours) with a plan and one python block carrying ``marker``."""
    return (f"Plan: use an exact shift.{extra}\n\n```python\nimport numpy as np\n"
            f"{marker}\ndef solver(u0_batch, t_coordinate, beta):\n    return None\n```\n")
