"""The child's status record, read by the parent: pdesharp's own words for how a run ended.

The record is written inside the solver's process, so the solver can forge any of it. The
parent believes only what it can check (a status from a fixed set, an exception class name
reduced to an identifier, a stage from a fixed list, integers) and writes the message itself
from those; the record's free text is kept apart as untrusted detail (see ``sealed``).
"""

from __future__ import annotations

import re

import numpy as np

from pdesharp.evaluate.child import OutputError, check_shape
from pdesharp.untrusted import identifier

# the stages the runner names in its record (child.runner); any other text is dropped
STAGE = re.compile(r"setup|loading the solver|checking the outputs|the solver call"
                   r"( \(case \d{1,4}\))?")


def record_message(status: str, error_type: str, stage: str, case: int | None = None) -> str:
    """The one-line message of a run that ended with a status record, in pdesharp's words."""
    where = f" during {stage}" if stage else ""
    if status == "error":
        return f"the solver raised {error_type or 'an exception'}{where}"
    if status == "memory":
        return f"the solver ran out of memory ({error_type or 'MemoryError'}{where})"
    if status == "shape":
        return ("the solver's output is not one real array of the expected shape per output" +
                (f" (call {case + 1})" if case else ""))
    return ""


def shape_message(record: dict, slots: list[list[dict]], steady: bool) -> str:
    """The shape error in pdesharp's words from the record's numbers, checked against what the
    parent asked for ("" if the record does not name an output and a plausible shape)."""
    case, name, got = record.get("case"), record.get("output"), record.get("got_shape")
    if not (isinstance(case, int) and 0 <= case < len(slots) and isinstance(got, list)
            and len(got) <= 8 and all(type(n) is int and 0 <= n < 2**40 for n in got)):
        return ""
    wanted = next((o["shape"] for o in slots[case] if o["name"] == name), None)
    if wanted is None:
        return ""
    try:
        check_shape(name, _Shape(got), tuple(wanted), steady)
    except OutputError as exc:
        return str(exc) + (f" (call {case + 1})" if case else "")
    return ""


class _Shape:
    """Stands in for an array in :func:`check_shape` (only the shape is known here)."""

    def __init__(self, shape: list[int]):
        self.shape, self.ndim = tuple(shape), len(shape)


def apply_record(run, record: dict | None, end: dict,
                 outputs: list[dict[str, np.ndarray]], problem: str,
                 slots: list[list[dict]] | None = None, steady: bool = False) -> None:
    """``run``'s (a ``sealed.SealedRun``, which imports this module) status, message and
    outputs from the runner's status record ``record`` (None: the runner left none; ``end``:
    the watchdog's end event) and the arrays read back."""
    if record is None:
        how = f"by signal {end['signal']}" if end.get("signal") else \
            f"with exit code {end.get('exit_code')}"
        run.status = "error"
        run.message = f"the solver process died {how} without a result"
        return
    # Every text field of the record was written inside the solver's process, which can forge
    # it: the message is written here from checked pieces (the status, the exception's class
    # name as an identifier, a known stage); the record's own words go to ``detail``.
    status = record.get("status")
    run.status = status if status in ("ok", "error", "memory", "shape") else "error"
    if isinstance(record.get("case"), int):
        run.failed_case = record["case"]
    etype = record.get("error_type")
    run.error_type = identifier(etype) if isinstance(etype, str) and etype and \
        run.status in ("error", "memory") else ""
    stage = record.get("stage")
    stage = stage if isinstance(stage, str) and STAGE.fullmatch(stage) else ""
    run.message = record_message(run.status, run.error_type, stage, run.failed_case)
    if run.status == "shape":
        run.message = shape_message(record, slots or [], steady) or run.message
    run.traceback = str(record.get("traceback", ""))
    notes = record.get("notes") if isinstance(record.get("notes"), list) else []
    run.detail = "\n".join([str(record.get("message", ""))[:2000],
                            *(str(n)[:500] for n in notes[:10])]).strip()
    if run.status == "ok":
        if problem:
            run.status, run.message = "shape", problem
        else:
            run.outputs = outputs
