"""Self-contained HTML reports of runs and benches (``pdesharp report``)."""

from __future__ import annotations


def write_report(*args, **kwargs):
    """See :func:`pdesharp.report.html.write_report` (imported lazily: importing the package
    needs neither Jinja2 nor the audit)."""
    from pdesharp.report.html import write_report as _write

    return _write(*args, **kwargs)


__all__ = ["write_report"]
