"""How a judge sees the pool's code: in full, as a forward diff, or summarised with a reason.

A listing runs oldest first (:func:`forward_order`: every solver after the solvers it was built
from), so a patch is shown as a forward diff from its parent, which the reader already has
(earlier in the conversation or higher on the page), never an older solver as a diff of a newer
one. Which solvers' code matters is the caller's rule (``full_first``: the best few, the
leader's parents, ...); a solver that matters brings its line of first parents with it, so its
diff has something to apply to. The rest are shown as a small diff when one exists, else
summarised with the reason their code is not shown. A code budget bounds what one prompt may
show.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from pdesharp.roles import PoolEntry

MAX_CODE_CHARS = 16000  # per solver in a listing: one runaway reply must not flood a prompt
CODE_BUDGET = 20000  # characters of solver code (full or diff) one judge message may list
FULL_CODE_TOP = 3  # the best executed solvers shown in full (budget permitting)
DIFF_SHARE = 0.5  # a diff is shown instead of the code when it is at most this share of it

NEVER_NOMINATED = "not shown: it has not run, and no judge nominated it in an earlier cycle"


@dataclass
class Shown:
    """How one solver appears in a listing."""

    mode: str  # "full", "diff", "earlier", "base", "summary", "none"
    text: str = ""  # the code or the diff
    against: str = ""  # the solver a diff is taken against (always older: see forward_order)
    why: str = ""  # "summary": why the code is not shown


def budget_reason(budget: int) -> str:
    return (f"not shown: this prompt's code budget ({budget:,} characters) was spent on the "
            "solvers above")


def diff(a: str, b: str, a_id: str, b_id: str) -> str:
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), f"{a_id}.py",
                                          f"{b_id}.py", n=2, lineterm=""))


def capped(code: str) -> str:
    if len(code) <= MAX_CODE_CHARS:
        return code
    return code[:MAX_CODE_CHARS] + f"\n# ... ({len(code) - MAX_CODE_CHARS} more characters)"


def _age(e: PoolEntry) -> tuple:
    c = e.candidate
    natural = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", c.id)]
    return (c.origin != "genesis", c.cycle, c.round, natural)


def forward_order(entries: list[PoolEntry]) -> list[PoolEntry]:
    """``entries`` oldest first, every solver after those of its parents that are listed."""
    by_id = {e.candidate.id: e for e in entries}
    out: list[PoolEntry] = []
    seen: set[str] = set()

    def visit(cid: str) -> None:
        if cid in seen or cid not in by_id:
            return
        seen.add(cid)
        for p in by_id[cid].candidate.parents:
            visit(p)
        out.append(by_id[cid])

    for e in sorted(entries, key=_age):
        visit(e.candidate.id)
    return out


def listing(entries: list[PoolEntry], *, known: dict[str, str], budget: int,
            full_first: list[str], base_id: str | None = None,
            rest: str = "not shown", why: dict[str, str] | None = None) -> dict[str, Shown]:
    """Decide how each of ``entries`` is shown, the listing being read in
    :func:`forward_order`.

    ``known`` maps the ids whose code the reader already has (earlier in the conversation) to
    their code. The solvers in ``full_first`` (in that priority), with their first-parent lines
    up to a solver the reader has, are shown while ``budget`` characters last: as a forward
    diff from a parent the reader has when that diff is small, else in full. Any other solver
    is a small forward diff if one fits, else a summary with its reason: the budget, or
    ``why[id]`` if given, else ``rest`` (the caller's rule for whose code is shown)."""
    by_id = {e.candidate.id: e.candidate for e in entries}
    position = {e.candidate.id: i for i, e in enumerate(forward_order(entries))}
    out: dict[str, Shown] = {}
    have = dict(known)
    left = budget

    def show(cid: str, wanted: bool) -> None:
        nonlocal left
        c = by_id[cid]
        code = capped(c.code)
        near = nearest(c, {i: s for i, s in have.items()
                            if i in known or position.get(i, -1) < position[cid]})
        change = diff(have[near], c.code, near, cid) if near else ""
        if change and len(change) <= DIFF_SHARE * len(c.code) and len(change) <= left:
            out[cid], left = Shown("diff", change, near), left - len(change)
        elif wanted and len(code) <= left:
            out[cid], left = Shown("full", code), left - len(code)
        else:
            out[cid] = Shown("summary", why=budget_reason(budget) if wanted
                             else (why or {}).get(cid, rest))
            return
        have[cid] = c.code

    for cid in by_id:
        c = by_id[cid]
        if cid == base_id:
            out[cid] = Shown("base")
        elif cid in known:
            out[cid] = Shown("earlier")
        elif not c.code.strip():
            out[cid] = Shown("none")
    for cid in [i for i in full_first if i in by_id]:
        line = []  # cid and its first parents back to one the reader has, oldest first
        p: str | None = cid
        while p is not None and p in by_id and p not in out and p not in line:
            line.insert(0, p)
            parents = by_id[p].parents
            p = parents[0] if parents else None
        for i in line:  # an ancestor the budget leaves out: the next is diffed or full
            show(i, True)
    for cid in by_id:
        if cid not in out:
            show(cid, False)
    return out


def nearest(c, have: dict[str, str]) -> str | None:
    """The solver the reader has that ``c`` is closest to: a parent if one is there, else the
    most similar code."""
    for p in c.parents:
        if p in have:
            return p
    if not have:
        return None
    return max(have, key=lambda i: difflib.SequenceMatcher(None, have[i], c.code).quick_ratio())
