"""Reference audit: how far the reference data are from the PDE they claim to solve.

nRMSE against reference data measures a solver's distance to the *reference*, which is itself a
numerical solution with its own errors (discretisation, float32 clocks and storage). The audit
computes a converged float64 solution from the stored initial conditions (:mod:`.solutions`),
checks that it is converged, and reports the reference's error against it: overall and per
sample, its growth in time, a per-frame clock offset, the drift of conserved quantities and the
float32 storage floor (:mod:`.diagnostics`). Audits are cached by the data file's content
(:mod:`.cache`); runs use a cached audit to show the floor under their scores (:mod:`.runs`).
"""

from __future__ import annotations

import importlib

# where each name lives: imported on first use, so that a submodule that needs neither the
# solvers nor SymPy (the report's sentences, :mod:`.lines`) does not pay for them (~1.3 s)
_HOME = {"AuditResult": "core", "audit_file": "core", "audit_with_cache": "core",
         "cached_audit": "core", "AuditReport": "records", "AuditUnavailable": "solutions"}

__all__ = ["AuditReport", "AuditResult", "AuditUnavailable", "audit_file", "audit_with_cache",
           "cached_audit"]


def __getattr__(name: str):
    if name in _HOME:
        return getattr(importlib.import_module(f"pdesharp.audit.{_HOME[name]}"), name)
    raise AttributeError(f"module 'pdesharp.audit' has no attribute {name!r}")
