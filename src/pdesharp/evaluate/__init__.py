"""Evaluating solver files: sandboxed execution and CodePDE-exact metrics.

``Evaluator(task, ...).evaluate(code, split=..., feedback=...)`` runs a solver's source in a
sealed sandbox (:mod:`.sandbox`, :mod:`.sealed`) on a split's inputs and returns an
:class:`~pdesharp.records.EvalResult` (nRMSE as CodePDE computes it, per field too, the
normalised PDE residual, CodePDE's empirical convergence order computed by the parent, the
solver time measured from outside, memory, scrubbed output tails, the isolation used).

Module map: ``sealed.run_sealed`` is the executor seam (code + arrays in, checked arrays and
times out); ``executors`` runs it here or, through ``ray_executor``, on a Ray cluster's workers;
``sandbox`` chooses and assembles the isolation; ``launch``, ``child`` and
``confine`` are the standalone programs that run on the other side; ``cgroups`` limits the
sandbox as a whole; ``scoring``, ``metrics``, ``residual``, ``convergence``, ``plot`` judge.
The exports are resolved lazily (cheap ``import pdesharp.evaluate``).
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
