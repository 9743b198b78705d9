"""Baselines run through the same tasks, model layer, evaluator and run store as ``sharp``.

Methods (see docs/baselines.md):

* ``codepde``   CodePDE repeated sampling: N samples, each debugged up to 4 times; best dev score.
* ``codepde-r`` CodePDE-R: the 5 best programs of a ``codepde`` run refined into 12 new ones.
* ``cot``, ``moa``, ``cepo``: OptiLLM's CoT-reflection, Mixture-of-Agents and CePO as the
  model behind CodePDE's sampling. By default our **re-implementation** of each technique
  (:mod:`pdesharp.baselines.optillm`); with ``optillm_url`` the real OptiLLM proxy run by the
  user (:mod:`pdesharp.baselines.optillm_proxy`).

Entry point: :func:`pdesharp.baselines.runner.run_baseline`.
"""

from __future__ import annotations

BASELINES = ("codepde", "codepde-r", "cot", "moa", "cepo")
OPTILLM_METHODS = ("cot", "moa", "cepo")

LABELS = {
    "sharp": "PDE-SHARP",
    "codepde": "CodePDE repeated sampling (best of N)",
    "codepde-r": "CodePDE-R refinement",
    "cot": "CoT-reflection",
    "moa": "Mixture of Agents",
    "cepo": "CePO",
}


def method_label(method: str, *, optillm_url: str | None = None) -> str:
    """The name a table or report shows: OptiLLM methods always say which implementation ran."""
    base = LABELS.get(method, method)
    if method in OPTILLM_METHODS:
        return f"{base} (OptiLLM proxy)" if optillm_url else f"{base} (re-implementation of OptiLLM)"
    return base


def short_label(method: str, *, optillm_url: str | None = None) -> str:
    if method in OPTILLM_METHODS:
        return f"{method} (OptiLLM)" if optillm_url else f"{method} (re-impl.)"
    return method
