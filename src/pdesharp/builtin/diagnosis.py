"""What a failed run says about its cause, for the built-in judges' debugging step.

A run fails for one of three kinds of reason, and each has its own cure:

* ``numerical``: the scheme blew up or produced NaN (a step too large, too little dissipation):
  the family's repair (smaller steps, a more dissipative limiter);
* ``resources``: out of time or memory: the family's repair (a coarser internal grid, an
  implicit step);
* ``code``: the solver's code raised a programming error (TypeError, NameError, IndexError...)
  or returned the wrong shape. No step size cures it: the catalogue's own code of the same design
  (when the file was edited) or another design.

Only the evaluator's own words are read: the status and the exception's class name (an
identifier the sandbox checked); the solver's text (``detail``) is never parsed for decisions.
"""

from __future__ import annotations

NUMERICAL = frozenset({"FloatingPointError", "OverflowError", "ZeroDivisionError",
                       "LinAlgError", "ArpackNoConvergence", "ConvergenceError"})
RESOURCES = frozenset({"MemoryError", "RecursionError"})


def cause(status: str, error_type: str = "") -> str:
    """``numerical``, ``resources`` or ``code`` for a failed run's status and exception class."""
    if status in ("timeout", "memory") or error_type in RESOURCES:
        return "resources"
    if status == "nan" or error_type in NUMERICAL:
        return "numerical"
    if status == "shape" or error_type:
        return "code"
    return "numerical"  # no exception named (the process died): treat as the scheme's


def said(status: str, error_type: str = "") -> str:
    """The failure in words a report can carry (the status and the class name only)."""
    what = f"{status}: {error_type}" if error_type else status
    if cause(status, error_type) == "code":
        return (f"{what}, a programming error in the solver's code that no smaller step or"
                " other setting of the same code cures")
    return what
