"""A hard clock for one computation on input pdesharp did not write.

SymPy evaluates some constructs eagerly and without bound (``floor(exp(10**99))`` asks for the
integer part of a number with about 4e98 digits; ``sin`` of a huge Float reduces its argument at
a precision that grows with it), and one such library call never returns to a caller that checks
a deadline between steps. So the clock has to interrupt the call itself:

* in the main thread, ``SIGALRM`` (:func:`time_limit`): the handler raises between two Python
  bytecodes, and SymPy's and mpmath's loops are Python. The exception is a ``BaseException``,
  so no ``except Exception`` inside the library swallows it, and the signal repeats until the
  block is left, in case a bare ``except:`` did;
* in any other thread (signals reach only the main thread), :func:`within` runs the
  computation in a forked child and kills it at the limit.

Nested limits keep the outer one: an inner timer never outlives it, and on exit the outer timer
is re-armed with what is left of it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
REPEAT = 0.25  # seconds between repeated signals once the limit has passed
RESTRIKE = 1e-3  # seconds to the next signal when one came before the block began or as it ends


class TimeUp(Exception):
    """A computation under the clock ran past its limit."""


class _TimeUp(BaseException):  # not an Exception: no `except Exception` swallows it
    pass


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float, quiet: bool = True):
    """Give up the block after ``seconds`` (SIGALRM; in other threads the block runs without a
    limit: use :func:`within` there). ``quiet``: the block just ends at the limit; else
    :class:`TimeUp` is raised."""
    if not _main_thread():
        yield
        return
    # The timer is armed inside the try, so the finally always disarms it; and the handler
    # raises only once the block has begun. A limit shorter than the few bytecodes between
    # arming and the block (1e-4 s in a test) used to raise here, before the try: the timer
    # then stayed armed and the handler installed, and _TimeUp struck 0.25 s later wherever
    # the program was (pytest's own report writing).
    state = {"open": False, "setup": True, "walking": False}
    me = sys._getframe()  # this generator's frame

    def stop(signum, frame):
        if state["open"]:
            if state["walking"]:  # a signal during the walk below: the next one decides
                return
            state["walking"] = True
            try:
                entering_or_leaving = _in_clock(frame, me)
            finally:
                state["walking"] = False
            if not entering_or_leaving:
                raise _TimeUp
        # the block has not begun or is being left: strike again soon (the finally disarms)
        if state["setup"] or state["open"]:
            signal.setitimer(signal.ITIMER_REAL, RESTRIKE, REPEAT)

    outer = signal.getitimer(signal.ITIMER_REAL)[0]
    began = time.monotonic()
    old = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, min(seconds, outer) if outer > 0 else seconds,
                         REPEAT)
        state["open"], state["setup"] = True, False
        yield
    except _TimeUp:
        state["open"] = False
        if not quiet:
            raise TimeUp(f"more than {seconds:g} s") from None
    finally:
        state["open"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 1e-3))


def _in_clock(frame, me) -> bool:
    """Whether the signal came while the block is being entered or left rather than while it
    runs: this clock's own frame, or contextlib's ``__enter__`` or ``__exit__`` of this clock,
    is on the stack. _TimeUp raised in ``__enter__`` (after the timer is armed, before the
    ``with`` has begun) or in the clean-up (a repeat, when the process was descheduled for
    longer than REPEAT after the first _TimeUp) escapes the ``with``: the generator stays
    suspended with its timer armed and the next signal strikes wherever the program is. Both
    were seen with three suites at once on two cores (an xdist worker ended mid-test). The
    repeat is for a block that swallowed the first _TimeUp, which is running its own code.
    (Frames below the block's are its callers: none of these kinds can be among them.)"""
    while frame is not None:
        if frame is me:
            return True
        if frame.f_code in _GCM_CODES and getattr(getattr(
                frame.f_locals.get("self"), "gen", None), "gi_frame", None) is me:
            return True
        frame = frame.f_back
    return False


_GCM_CODES = (contextlib._GeneratorContextManager.__enter__.__code__,
              contextlib._GeneratorContextManager.__exit__.__code__)


def within(seconds: float, fn: Callable[[], T]) -> T:
    """``fn()``, or :class:`TimeUp` once it has run ``seconds``. An exception ``fn`` raises is
    raised here. Off the main thread ``fn`` runs in a forked child (its result and exceptions
    must pickle), killed at the limit."""
    if _main_thread():
        with time_limit(seconds, quiet=False):
            return fn()
    return _in_child(seconds, fn)


def _in_child(seconds: float, fn: Callable[[], T]) -> T:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send the pickled outcome, leave without cleanup
        try:
            os.close(read_end)
            try:
                outcome = ("value", fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises
                outcome = ("error", exc)
            try:
                data = pickle.dumps(outcome)
            except Exception as exc:  # noqa: BLE001 - an unpicklable value or exception
                data = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                raise TimeUp(f"more than {seconds:g} s")
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    try:
        kind, value = pickle.loads(b"".join(chunks))
    except Exception as exc:  # noqa: BLE001 - the child died before it could answer
        raise RuntimeError(f"the computation ended without a result ({exc})") from None
    if kind == "error":
        raise value
    return value
