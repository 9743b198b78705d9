"""Both sides of a held-back case (child.py's ``job["gate"]``, the runner's warm timing).

Standalone like its siblings child.py, confine.py and preload.py (the standard library; NumPy
in the runner): inside the sandbox it is a read-only copy beside them.

The last case's inputs reach the child in a memory file that only the watchdog reads
(:class:`Gate`), and only once the runner asks for them over a pipe, after the earlier cases'
calls (:func:`inputs`); the watchdog's clock at that request starts the interval that no work on
those inputs can precede. The solver, in the runner's process, may ask early (a longer interval),
never (the run waits for its timeout), or flood the request pipe (one request is read, then the
pipe is closed); the inputs are written without blocking, so a runner that does not read cannot
stall the watchdog.
"""

from __future__ import annotations

import os
import select
import time


def inputs(pipes: tuple[int, int], size: int) -> dict:
    """Ask the watchdog for the held-back inputs and read them (``size`` bytes of ``.npz``)."""
    import io

    import numpy as np

    req_w, data_r = pipes
    try:
        os.write(req_w, b"G")
    except OSError:
        pass  # asked already (the solver may have): the inputs are on their way or will not come
    chunks, got = [], 0
    while got < size:
        try:  # the solver holds this descriptor too and may have made it non-blocking
            chunk = os.read(data_r, min(1 << 20, size - got))
        except BlockingIOError:
            select.select([data_r], [], [])
            continue
        if not chunk:
            raise RuntimeError("the held-back inputs did not arrive")
        chunks.append(chunk)
        got += len(chunk)
    with np.load(io.BytesIO(b"".join(chunks)), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


class Gate:
    """The watchdog's side of a held-back case: on the runner's first request, the time, then
    the memory file's bytes into the data pipe without blocking (a runner that does not read
    cannot stall the watchdog, whose timeout still holds)."""

    def __init__(self, fd: int, size: int, emit):
        self.fd, self.size, self.sent, self.emit = fd, size, 0, emit
        self.req_r, req_w = os.pipe()
        data_r, self.data_w = os.pipe()
        self.runner_ends = (req_w, data_r)
        self.t: float | None = None
        self.buf = b""

    def in_runner(self) -> tuple[int, int]:
        """The runner's side after the fork: the memory file and the watchdog's ends closed
        (before any code of the solver exists: not its to read); the pipes to ask and read by."""
        for fd in (self.fd, self.req_r, self.data_w):
            os.close(fd)
        return self.runner_ends

    def after_fork(self) -> None:
        """The watchdog's side after the fork: the runner's ends closed."""
        for fd in self.runner_ends:
            os.close(fd)
        os.set_blocking(self.data_w, False)

    def waits(self) -> tuple[list[int], list[int]]:
        """What the watchdog's select watches: the request pipe until it is closed, the data
        pipe while the inputs are being sent."""
        return ([self.req_r] if self.req_r >= 0 else [],
                [self.data_w] if self.t is not None and self.data_w >= 0 else [])

    def serve(self, readable: list[int], writable: list[int]) -> None:
        """After the select: hear a request, send what the data pipe takes (at once when just
        asked)."""
        sending = self.t is not None
        if self.req_r >= 0 and self.req_r in readable:
            self.asked()
        if self.t is not None and self.data_w >= 0 and (self.data_w in writable or not sending):
            self.send()

    def asked(self) -> None:
        """The request pipe is readable: a request (timed once, told through ``emit``), or its
        end."""
        if os.read(self.req_r, 64) and self.t is None:
            self.t = time.monotonic()
            self.emit(self.t)
        else:  # closed, or asked again: nothing more to hear
            os.close(self.req_r)
            self.req_r = -1

    def send(self) -> None:
        """Write what the pipe takes; close it when all is sent (or the runner is gone)."""
        try:
            while self.sent < self.size:
                if not self.buf:
                    self.buf = os.pread(self.fd, min(1 << 16, self.size - self.sent), self.sent)
                    if not self.buf:
                        break
                n = os.write(self.data_w, self.buf)
                self.buf, self.sent = self.buf[n:], self.sent + n
        except BlockingIOError:
            return
        except OSError:
            pass
        os.close(self.data_w)
        self.data_w = -1
