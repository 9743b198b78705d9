"""SEARCH/REPLACE patches, the way judges modify a solver.

A patch is one or more blocks::

    <<<<<<< SEARCH
    <lines that occur in the file>
    =======
    <their replacement>
    >>>>>>> REPLACE

Blocks apply in order, each to the result of the previous one. A SEARCH text is matched
exactly first; then line by line ignoring trailing whitespace; then modulo a uniform shift of
the leading indentation (models often quote a method body at the wrong depth), in which case the
replacement is re-indented by the same shift. A block that matches nowhere is never skipped: it
raises :class:`PatchError` naming the nearest lines in the file, so the judge can retry once.

A reply is untrusted text of any length: blocks are found in one pass over its lines (a regular
expression backtracked for minutes on 2,000 unclosed blocks), matching is bounded by
:data:`MAX_MATCH_WORK`, and the nearest-lines hint by a deadline.
"""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass

# The marker lines: a whole line each; the SEARCH and divider lines end with a newline
_MARKER = re.compile(r"^(?:<{5,9} ?SEARCH[^\n]*\n|={5,9}[ \t]*\n|>{5,9} ?REPLACE[^\n]*$)",
                     re.MULTILINE)
MAX_MATCH_WORK = 2_000_000  # solver lines x SEARCH lines compared for one block at most
NEAREST_SECONDS = 2.0  # spent looking for the nearest lines of a SEARCH that does not occur
NEAREST_CHARS = 2000  # of the SEARCH text and of each window compared with it


class PatchError(ValueError):
    """A patch cannot be applied. ``block`` is the 1-based index of the failing block."""

    def __init__(self, message: str, block: int | None = None, nearest: str = ""):
        super().__init__(message)
        self.block = block
        self.nearest = nearest


@dataclass(frozen=True)
class Block:
    search: str
    replace: str


def find_blocks(text: str) -> list[Block]:
    """Every SEARCH/REPLACE block in ``text``, in one pass over its marker lines: a SEARCH
    line, the first divider line after it, the first REPLACE line after that. That is what the
    regular expression ``^<{5,9} ?SEARCH[^\\n]*\\n(.*?)^={5,9}[ \\t]*\\n(.*?)^>{5,9}
    ?REPLACE[^\\n]*$`` (DOTALL, MULTILINE) matches, without its backtracking."""
    blocks: list[Block] = []
    want, body, divider, replace = "<", 0, 0, 0
    for m in _MARKER.finditer(text):
        kind = text[m.start()]
        if kind != want:
            continue
        if kind == "<":
            want, body = "=", m.end()
        elif kind == "=":
            want, divider, replace = ">", m.start(), m.end()
        else:
            blocks.append(Block(text[body:divider], text[replace:m.start()]))
            want = "<"
    return blocks


def parse_blocks(text: str) -> list[Block]:
    """Every SEARCH/REPLACE block in ``text`` (a model reply may wrap them in prose/fences)."""
    blocks = find_blocks(text)
    if not blocks:
        if "SEARCH" in text and "<<<<" in text:
            raise PatchError("a SEARCH/REPLACE block is malformed: each needs the lines "
                             "'<<<<<<< SEARCH', '=======' and '>>>>>>> REPLACE', in that order")
        raise PatchError("no SEARCH/REPLACE block found in the reply")
    return blocks


def has_blocks(text: str) -> bool:
    return bool(find_blocks(text))


def apply_patch(code: str, patch: str) -> str:
    """``code`` with every block of ``patch`` applied, or :class:`PatchError`."""
    for i, block in enumerate(parse_blocks(patch), start=1):
        code = apply_block(code, block, index=i)
    return code


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _trim_blank_edges(lines: list[str]) -> list[str]:
    lo, hi = 0, len(lines)
    while lo < hi and not lines[lo].strip():
        lo += 1
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    return lines[lo:hi]


def _common_indent(lines: list[str]) -> str:
    indents = [_indent(ln) for ln in lines if ln.strip()]
    if not indents:
        return ""
    prefix = indents[0]
    for ind in indents[1:]:
        while not ind.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


def _match_shifted(window: list[str], search: list[str], s_indent: str) -> str | None:
    """The indent that, replacing ``s_indent``, turns ``search`` into ``window``; else None."""
    shift: str | None = None
    for w, s in zip(window, search):
        if not s.strip():
            if w.strip():
                return None
            continue
        body = s[len(s_indent):].rstrip()
        w = w.rstrip()
        if not w.endswith(body) or w[: len(w) - len(body)].strip():
            return None
        ind = w[: len(w) - len(body)]
        if shift is None:
            shift = ind
        elif ind != shift:
            return None
    return shift


def apply_block(code: str, block: Block, index: int = 1) -> str:
    search, replace = block.search, block.replace
    if not search.strip():
        raise PatchError(f"block {index}: the SEARCH part is empty; quote the lines to replace",
                         block=index)
    if search in code:  # exact (the common case)
        return code.replace(search, replace, 1)
    lines = code.splitlines(keepends=False)
    s_lines = _trim_blank_edges(search.splitlines())
    r_lines = replace.splitlines()
    n = len(s_lines)
    if n * len(lines) > MAX_MATCH_WORK:
        raise PatchError(f"block {index}: a SEARCH of {n} lines cannot be matched against a "
                         f"solver of {len(lines)} lines; quote only the lines to replace",
                         block=index)
    s_indent = _common_indent(s_lines)
    for start in range(len(lines) - n + 1):
        window = lines[start:start + n]
        shift = _match_shifted(window, s_lines, s_indent)
        if shift is None:
            continue
        r_base = s_indent  # the replacement is written at the same depth as the SEARCH
        new = []
        for ln in r_lines:
            if not ln.strip():
                new.append("")
            elif ln.startswith(r_base):
                new.append(shift + ln[len(r_base):].rstrip())
            else:
                new.append(ln.rstrip())
        trailing = "\n" if code.endswith("\n") else ""
        return "\n".join(lines[:start] + new + lines[start + n:]) + trailing
    nearest = nearest_lines(code, "\n".join(s_lines))
    raise PatchError(
        f"block {index}: the SEARCH text does not occur in the solver. The nearest lines in "
        f"the solver are:\n{nearest}\nQuote the current solver text exactly in SEARCH.",
        block=index, nearest=nearest)


def nearest_lines(code: str, search: str, context: int = 1) -> str:
    """The window of ``code`` most similar to ``search`` (difflib ratio), with line numbers.
    A hint: the texts compared are cut to NEAREST_CHARS and the search stops at
    NEAREST_SECONDS with the best window so far."""
    lines = code.splitlines()
    s_lines = search.splitlines() or [""]
    n = max(1, len(s_lines))
    best, best_start = -1.0, 0
    target = "\n".join(ln.strip() for ln in s_lines)[:NEAREST_CHARS]
    deadline = time.monotonic() + NEAREST_SECONDS
    for start in range(max(1, len(lines) - n + 1)):
        window = "\n".join(ln.strip() for ln in lines[start:start + n])[:NEAREST_CHARS]
        matcher = difflib.SequenceMatcher(None, window, target, autojunk=False)
        if matcher.real_quick_ratio() > best and matcher.quick_ratio() > best:
            ratio = matcher.ratio()
            if ratio > best:
                best, best_start = ratio, start
        if time.monotonic() > deadline:
            break
    lo = max(0, best_start - context)
    hi = min(len(lines), best_start + n + context)
    return "\n".join(f"{i + 1:4d} | {lines[i]}" for i in range(lo, hi))
