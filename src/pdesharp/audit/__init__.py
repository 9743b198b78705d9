"""Reference audit: how far the reference data are from the PDE they claim to solve.

nRMSE against reference data measures a solver's distance to the *reference*, which is itself a
numerical solution with its own errors (discretisation, float32 clocks and storage). The audit
computes a converged float64 solution from the stored initial conditions (:mod:`.solutions`),
checks that it is converged, and reports the reference's error against it: overall and per
sample, its growth in time, a per-frame clock offset, the drift of conserved quantities and the
float32 storage floor (:mod:`.diagnostics`). Audits are cached by the data file's content
(:mod:`.cache`); runs use a cached audit to show the floor under their scores (:mod:`.runs`).
"""

from pdesharp.audit.core import AuditResult, audit_file, audit_with_cache, cached_audit
from pdesharp.audit.records import AuditReport
from pdesharp.audit.solutions import AuditUnavailable

__all__ = ["AuditReport", "AuditResult", "AuditUnavailable", "audit_file", "audit_with_cache",
           "cached_audit"]
