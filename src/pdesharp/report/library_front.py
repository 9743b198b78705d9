"""The winner against another library's accuracy-time front (issue 27), in ``report.md``.

``bench/side_by_side.py`` measures a library (exponax, py-pde) on the run's task and writes
``library_front.json`` into the run folder: the library's settings with their accuracy and time,
and the winner's point measured the same way. The report shows them side by side: the front,
the winner, and the library's time at the winner's accuracy (log-log interpolation along the
front) or how far its best point stays from it.

The file lives in a run folder, which may come from someone else: it is data. It is read with a
size bound, every field is checked for type and range, strings are cut and made inert, and a
file that fails a check is reported as ignored (with the reason), never half-shown.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from pdesharp.untrusted import UnsafeFolder, markdown_text, read_inside

FILE = "library_front.json"
MAX_BYTES = 256 * 1024
MAX_POINTS = 400
BEGIN, END = "<!-- library-front -->", "<!-- /library-front -->"


class FrontError(ValueError):
    """library_front.json is not what the bench writes; the message says what is wrong."""


@dataclass(frozen=True)
class Point:
    setting: str
    nrmse: float
    warm: float  # seconds per sample, the batch solved again
    cold: float  # seconds, a fresh process solving the batch (imports, compilation included)


@dataclass(frozen=True)
class ColdSplit:
    """The winner's cold time taken apart: one-off work against work per sample."""

    imports: float  # seconds: importing the solver module (and what it imports)
    first: float  # seconds: the first call on the batch (planning included)
    batch: int  # samples in the batch
    evaluator: float | None  # the evaluator's seconds per sample for the winner, if known


@dataclass(frozen=True)
class LibraryFront:
    library: str
    points: list[Point]  # the library's front (faster and more accurate), fastest first
    winner: Point  # pdesharp's winner, measured the same way
    split: ColdSplit | None = None


def _num(v, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise FrontError(f"{what} must be a positive finite number")
    return float(v)


def _text(v, what: str, limit: int) -> str:
    if not isinstance(v, str):
        raise FrontError(f"{what} must be a string")
    return markdown_text(" ".join(v.split())[:limit])


def _point(d, what: str) -> Point:
    if not isinstance(d, dict):
        raise FrontError(f"{what} must be a mapping")
    return Point(_text(d.get("setting", ""), f"{what}.setting", 80),
                 _num(d.get("nrmse"), f"{what}.nrmse"), _num(d.get("warm"), f"{what}.warm"),
                 _num(d.get("cold"), f"{what}.cold"))


def parse(raw: bytes) -> LibraryFront:
    if len(raw) > MAX_BYTES:
        raise FrontError(f"larger than {MAX_BYTES} bytes")
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise FrontError(f"not JSON ({type(e).__name__})") from None
    if not isinstance(d, dict) or not isinstance(d.get("points"), list):
        raise FrontError("expected a mapping with a list 'points'")
    if not 1 <= len(d["points"]) <= MAX_POINTS:
        raise FrontError(f"'points' must hold 1 to {MAX_POINTS} entries")
    library = _text(d.get("library"), "library", 40)
    if not re.fullmatch(r"[A-Za-z0-9_.\- ]+", library):
        raise FrontError("library: letters, digits, '.', '_', '-' and spaces only")
    points = [_point(p, f"points[{i}]") for i, p in enumerate(d["points"])]
    return LibraryFront(library, sorted(points, key=lambda p: p.warm), _point(d.get("winner"),
                                                                             "winner"),
                        _split(d.get("winner_split")))


def _split(d) -> ColdSplit | None:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise FrontError("winner_split must be a mapping")
    batch = d.get("batch")
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 10**6:
        raise FrontError("winner_split.batch must be an integer from 1 to 10^6")
    ev = d.get("evaluator")
    return ColdSplit(_num(d.get("import"), "winner_split.import"),
                     _num(d.get("first"), "winner_split.first"), batch,
                     None if ev is None else _num(ev, "winner_split.evaluator"))


def read(run_dir: str | Path) -> LibraryFront | None:
    """The run folder's library front, None when there is none; FrontError when malformed."""
    try:  # a regular file inside the folder, no link followed (pdesharp.untrusted)
        raw = read_inside(run_dir, FILE, limit=MAX_BYTES)
    except UnsafeFolder as exc:
        raise FrontError(str(exc)) from None
    return None if raw is None else parse(raw)


def front_of(points: list[Point], key: str = "warm") -> list[Point]:
    """The settings no other beats in both time ``key`` and nRMSE, fastest first."""
    front: list[Point] = []
    for p in sorted(points, key=lambda p: (getattr(p, key), p.nrmse)):
        if not front or p.nrmse < front[-1].nrmse:
            front.append(p)
    return front


def at_accuracy(points: list[Point], err: float, key: str) -> tuple[float, bool]:
    """The library's time ``key`` at accuracy ``err`` along its front (log-log between the two
    points that bracket it), and whether it reaches it; not reached: its most accurate point's."""
    front = front_of(points, key)
    best = front[-1]
    if err < best.nrmse:
        return getattr(best, key), False
    for a, b in zip(front, front[1:]):
        if b.nrmse <= err <= a.nrmse:
            s = math.log(err / a.nrmse) / math.log(b.nrmse / a.nrmse)
            return math.exp(math.log(getattr(a, key))
                            + s * math.log(getattr(b, key) / getattr(a, key))), True
    return getattr(front[0], key), True


def markdown(front: LibraryFront) -> list[str]:
    w = front.winner
    lib_w, reached = at_accuracy(front.points, w.nrmse, "warm")
    lib_c, _ = at_accuracy(front.points, w.nrmse, "cold")
    best = min(p.nrmse for p in front.points)
    head = (f"At the winner's nRMSE {w.nrmse:.2e}, {front.library} takes {lib_w:.3g} s per sample"
            f" warm and {lib_c:.3g} s cold: the winner's times are {w.warm / lib_w:.2f}x (warm) and"
            f" {w.cold / lib_c:.2f}x (cold) of the library's." if reached else
            f"{front.library} does not reach the winner's nRMSE {w.nrmse:.2e}: its most accurate "
            f"setting stays at {best:.2e} ({best / w.nrmse:.3g}x the winner's error), in "
            f"{lib_w:.3g} s per sample warm and {lib_c:.3g} s cold.")
    lines = [BEGIN, f"## Against {front.library}'s accuracy-time front", "",
             "Measured by bench/side_by_side.py on this task's data, in one run: warm is the time "
             "per sample of the batch solved again, cold a fresh process solving the batch "
             "(imports and compilation included), accuracy the nRMSE against the converged "
             "reference. " + head, "",
             "| solver | setting | nRMSE | warm s/sample | cold s |", "|---|---|---|---|---|",
             f"| **pdesharp winner** | {w.setting} | {w.nrmse:.2e} | {w.warm:.3g} | {w.cold:.3g} |"]
    shown = front_of(front.points)
    lines += [f"| {front.library} | {p.setting} | {p.nrmse:.2e} | {p.warm:.3g} | {p.cold:.3g} |"
              for p in shown]
    return lines + ["", f"The library's front by warm time: {len(shown)} of the "
                        f"{len(front.points)} settings measured.", ""] + split_lines(front) + [END]


def split_lines(front: LibraryFront) -> list[str]:
    """Which part of the winner's time is one-off and which is per sample (issue 27)."""
    s, w = front.split, front.winner
    if s is None:
        return []
    once = max(s.first - w.warm * s.batch, 0.0)
    ev = "" if s.evaluator is None else (
        f" pdesharp's evaluator times one call in a fresh sealed process, from after the imports"
        f" of the NumPy/SciPy/Numba modules its file names to the process's end (the rest of the"
        f" module's import and planning included): {s.evaluator:.3g} s"
        f" per sample for this winner, against {w.warm:.3g} s warm.")
    text = (f"One-off and per sample: of the winner's cold {w.cold:.3g} s, importing the module"
            f" takes {s.imports:.3g} s and the first call on the batch of {s.batch} samples"
            f" {s.first:.3g} s; the batch solved again takes {w.warm:.3g} s per sample, so about"
            f" {once:.3g} s of the first call is one-off (coefficient sets, transform plans, first"
            f" touches of memory), kept for the next batch in the same process.")
    return [text + ev, ""]


def section(run_dir: str | Path) -> list[str]:
    """report.md's lines for the run folder's library front: none without the file, a one-line
    note when it is malformed."""
    try:
        front = read(run_dir)
    except (FrontError, OSError) as e:
        return [BEGIN, f"{FILE} ignored: {markdown_text(str(e))[:200]}", END]
    return [] if front is None else markdown(front)


def update_report(run_dir: str | Path) -> None:
    """Put the section into an existing report.md (replacing an earlier one)."""
    path = Path(run_dir) / "report.md"
    text = path.read_text() if path.is_file() else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)].rstrip("\n") + "\n" + text[text.index(END) + len(END):]
    lines = section(run_dir)
    if lines:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
    path.write_text(text)
