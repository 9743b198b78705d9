"""Evaluating solver files: sandboxed execution and CodePDE-exact metrics.

``Evaluator(task, ...).evaluate(code, split=..., feedback=...)`` runs a solver's source in a
sandboxed child process on a split's reference data and returns an
:class:`~pdesharp.records.EvalResult` (nRMSE as CodePDE computes it, the normalised PDE residual,
CodePDE's empirical convergence order, timings, memory, output tails).

The exports are resolved lazily so that the sandboxed child, which imports
``pdesharp.evaluate.run_child``, does not pay for the parent-side machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pdesharp.evaluate.evaluator import Evaluator
    from pdesharp.evaluate.metrics import nrmse
    from pdesharp.evaluate.sandbox import available_libraries

__all__ = ["Evaluator", "available_libraries", "nrmse"]


def __getattr__(name: str):
    if name == "Evaluator":
        from pdesharp.evaluate.evaluator import Evaluator

        return Evaluator
    if name == "available_libraries":
        from pdesharp.evaluate.sandbox import available_libraries

        return available_libraries
    if name == "nrmse":
        from pdesharp.evaluate.metrics import nrmse

        return nrmse
    raise AttributeError(f"module 'pdesharp.evaluate' has no attribute {name!r}")
