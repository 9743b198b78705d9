"""A hard clock for one computation on input pdesharp did not write.

SymPy evaluates some constructs eagerly and without bound (``floor(exp(10**99))`` asks for the
integer part of a number with about 4e98 digits; ``sin`` of a huge Float reduces its argument at
a precision that grows with it), and one such library call never returns to a caller that checks
a deadline between steps. So the clock has to interrupt the call itself:

* in the main thread, ``SIGALRM`` from a timer aimed at that thread alone (:func:`time_limit`):
  the handler raises between two Python bytecodes, and SymPy's and mpmath's loops are Python.
  The exception is a ``BaseException``, so no ``except Exception`` inside the library swallows
  it, and the signal repeats until the block is left, in case a bare ``except:`` did;
* in any other thread (signals reach only the main thread), :func:`within` runs the
  computation in a forked child and kills it at the limit.

Nested limits keep the outer one: an inner clock never outlives it. A caller's own ITIMER_REAL
(pytest-timeout's, say) is held while the block runs and re-armed with what is left of it.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
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


class _ThreadTimer:
    """A POSIX timer (Linux) whose SIGALRM goes to the main thread alone. The process's
    ITIMER_REAL would not do: the kernel hands a process-wide SIGALRM to any thread that can
    take it (a BLAS or I/O thread, when the main thread is off the CPU with one pending), and
    that thread's C handler can run after the clock has put the caller's handler back. Seen
    under load: the caller's handler (pytest-timeout's) ran for a signal of the clock's; with
    the default handler that ends the process ("Alarm clock"). A signal aimed at this thread
    is pending here until taken, so the clock can take it (:func:`_drain`) before it leaves."""

    class _Sigevent(ctypes.Structure):  # struct sigevent: 64 bytes, the thread id after notify
        _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int),
                    ("notify", ctypes.c_int), ("tid", ctypes.c_int),
                    ("pad", ctypes.c_int * ((64 - 12 - ctypes.sizeof(ctypes.c_void_p)) // 4))]

    class _Spec(ctypes.Structure):  # struct itimerspec: interval, then value
        _fields_ = [("interval_s", ctypes.c_long), ("interval_ns", ctypes.c_long),
                    ("value_s", ctypes.c_long), ("value_ns", ctypes.c_long)]

    libc = None

    def __init__(self):
        event = self._Sigevent(signo=signal.SIGALRM, notify=4,  # SIGEV_THREAD_ID
                               tid=threading.get_native_id())
        self.id = ctypes.c_void_p()
        if self.libc.timer_create(time.CLOCK_MONOTONIC, ctypes.byref(event),
                                  ctypes.byref(self.id)) != 0:
            raise OSError(ctypes.get_errno(), "timer_create")

    def arm(self, value: float, interval: float = 0.0) -> None:
        def split(x):
            return int(x), min(int(round((x - int(x)) * 1e9)), 999_999_999)
        # a zero value would disarm it: a deadline already past strikes in 1 us
        spec = self._Spec(*split(interval), *split(max(value, 1e-6)))
        if self.libc.timer_settime(self.id, 0, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timer_settime")

    def disarm(self) -> None:
        self.libc.timer_settime(self.id, 0, ctypes.byref(self._Spec()), None)

    def close(self) -> None:
        self.libc.timer_delete(self.id)

    @classmethod
    def available(cls) -> bool:
        if cls.libc is None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)  # the C library Python runs on
                for name, args in (("timer_create", [ctypes.c_int, ctypes.c_void_p,
                                                     ctypes.c_void_p]),
                                   ("timer_settime", [ctypes.c_void_p, ctypes.c_int,
                                                      ctypes.c_void_p, ctypes.c_void_p]),
                                   ("timer_delete", [ctypes.c_void_p])):
                    getattr(libc, name).argtypes = args
                    getattr(libc, name).restype = ctypes.c_int
                cls.libc = libc if sys.platform.startswith("linux") else False
            except (OSError, AttributeError):
                cls.libc = False
        return bool(cls.libc)


class _ProcessTimer:
    """ITIMER_REAL, where there are no thread-directed timers (not Linux)."""

    def arm(self, value: float, interval: float = 0.0) -> None:
        signal.setitimer(signal.ITIMER_REAL, max(value, 1e-6), interval)

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def close(self) -> None:
        pass


def _timer() -> _ThreadTimer | _ProcessTimer:
    if _ThreadTimer.available():
        try:
            return _ThreadTimer()
        except OSError:  # no timer left (RLIMIT_SIGPENDING), or a filter forbids it
            pass
    return _ProcessTimer()


def _drain() -> None:
    """Take a SIGALRM pending for this thread before the caller's handler is back: one the
    timer sent just before it was disarmed, not yet delivered."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        if signal.SIGALRM in signal.sigpending():
            signal.sigtimedwait({signal.SIGALRM}, 0)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@dataclasses.dataclass
class _Open:
    timer: _ThreadTimer | _ProcessTimer
    deadline: float  # time.monotonic()


_open: list[_Open] = []  # the main thread's open clocks, outermost first
# a forked child has none: timers are not inherited, and the child's clocks are its own
os.register_at_fork(after_in_child=_open.clear)


@contextlib.contextmanager
def time_limit(seconds: float, quiet: bool = True):
    """Give up the block after ``seconds`` (SIGALRM; in other threads the block runs without a
    limit: use :func:`within` there). ``quiet``: the block just ends at the limit; else
    :class:`TimeUp` is raised. An enclosing clock's deadline, or the caller's own ITIMER_REAL
    if sooner, ends the block too. Both are held while the block runs and then go on with what
    is left of them (the caller's interval kept)."""
    if not _main_thread():
        yield
        return
    # The handler raises only once the block has begun and never while the clock is being
    # entered or left (see _in_clock): then it strikes again in RESTRIKE. The finally always
    # deletes the timer and puts the caller's handler and timers back. A limit shorter than the
    # few bytecodes between arming and the block (1e-6 s in a test) strikes during the set-up.
    state = {"open": False, "walking": False}
    me = sys._getframe()  # this generator's frame
    timer = _timer()

    def stop(signum, frame):
        if not state["open"] or state["walking"]:  # (a signal during the walk or the re-arm
            return                                  # below: the timer's next one decides)
        state["walking"] = True
        try:
            if not _in_clock(frame, me):
                raise _TimeUp
            timer.arm(RESTRIKE, REPEAT)  # Python code: a signal inside it must not recurse
        finally:
            state["walking"] = False

    def unraisable(info):
        # The strike landed in a finalizer (a weakref callback or __del__ run by the garbage
        # collector), where an exception cannot propagate: Python prints it as "Exception
        # ignored in ..." and the block runs on. Strike again soon instead (seen in a suite).
        if info.exc_type is _TimeUp and state["open"]:
            timer.arm(RESTRIKE, REPEAT)
        else:
            caller_hook(info)

    enclosing = _open[-1] if _open else None
    began, outer, interval, entry = time.monotonic(), 0.0, 0.0, None
    caller_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:  # (a signal pending for the old handler runs it here, before the swap)
        old = signal.signal(signal.SIGALRM, stop)
    except BaseException:
        sys.unraisablehook = caller_hook
        timer.close()
        raise
    try:
        outer, interval = signal.setitimer(signal.ITIMER_REAL, 0)  # the caller's timer, held
        if enclosing is not None:
            enclosing.timer.disarm()
        entry = _Open(timer, min([began + seconds, *([enclosing.deadline] if enclosing else []),
                                  *([began + outer] if outer > 0 else [])]))
        _open.append(entry)
        state["open"] = True
        timer.arm(entry.deadline - time.monotonic(), REPEAT)
        yield
    except _TimeUp:
        state["open"] = False
        if not quiet:
            raise TimeUp(f"more than {seconds:g} s") from None
    finally:
        state["open"] = False
        timer.disarm()
        timer.close()
        _drain()
        signal.signal(signal.SIGALRM, old)
        if sys.unraisablehook is unraisable:  # (unless the block put its own in meanwhile)
            sys.unraisablehook = caller_hook
        if entry is not None:
            _open.remove(entry)
        now = time.monotonic()
        if enclosing is not None:  # it goes on; if its deadline has passed, it strikes now
            enclosing.timer.arm(max(enclosing.deadline - now, RESTRIKE), REPEAT)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (now - began), 1e-3), interval)


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
