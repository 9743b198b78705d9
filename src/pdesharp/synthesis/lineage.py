"""What a modification kept of its parent: definitions left unreachable, and rewrites.

A judge that replaces a solver with another design often renames the old entry point and keeps
it in the file ("for reference"). The old code then never runs, yet it would ship in the
winning file, and line for line the new file still contains its parent, so the ancestry would
show a finite-volume rewrite as a refinement of the spectral solver it replaced (issue 24).

:func:`prune_unreachable` removes top-level functions nothing refers to, only where removing
them cannot change what the module does: a ``def`` without decorators, whose defaults and
annotations call nothing, binds a name and does nothing else, and a name no code, attribute or
string of the module mentions is never looked up. :func:`kept_share` measures how much of a
child's live code comes from its parent; below :data:`REWRITE_SHARE` the child is a rewrite.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter

REWRITE_SHARE = 1 / 3  # a child keeping less of its parent's lines than this is a rewrite


def _calls_nothing(node: ast.AST | None) -> bool:
    return node is None or not any(isinstance(n, ast.Call) for n in ast.walk(node))


def _removable(node: ast.stmt) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
        return False
    a = node.args
    exprs = [*a.defaults, *a.kw_defaults, node.returns,
             *(x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
               if x is not None)]
    return all(_calls_nothing(e) for e in exprs)


def _mentions(top: ast.stmt) -> set[str]:
    """Every name a top-level statement could look up: loaded names, attributes and string
    constants (getattr, globals()[...], __all__)."""
    found: set[str] = set()
    for n in ast.walk(top):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            found.add(n.value)
    return found


def _dead(tree: ast.Module, entry: str) -> list[ast.stmt]:
    """The removable functions no other live top-level statement mentions, to a fixed point (a
    helper only a removed helper called goes too). Each statement's names are collected once:
    one parse and one walk of the module, however long the chain."""
    names = [_mentions(top) for top in tree.body]
    count = Counter(name for found in names for name in found)
    dead: set[int] = set()
    while True:
        more = [k for k, (top, found) in enumerate(zip(tree.body, names))
                if k not in dead and _removable(top) and top.name != entry
                and count[top.name] == (top.name in found)]
        if not more:
            return [tree.body[k] for k in sorted(dead)]
        for k in more:  # removing them all at once is removing them one by one
            count.subtract(names[k])
        dead.update(more)


def prune_unreachable(code: str, entry: str) -> tuple[str, list[str]]:
    """``code`` without the top-level functions nothing refers to (see the module docstring),
    and their names; the code unchanged when it does not parse or nothing can go."""
    pruned, names = _pruned(code, entry)
    return pruned, list(names)


@functools.lru_cache(maxsize=64)  # every rewrite check prunes the parent again
def _pruned(code: str, entry: str) -> tuple[str, tuple[str, ...]]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, ()
    dead = _dead(tree, entry)
    if not dead:
        return code, ()
    lines = code.splitlines(keepends=True)
    for node in reversed(dead):  # whole lines: a def shares none with another statement
        del lines[node.lineno - 1:node.end_lineno]
    return _tidy("".join(lines)), tuple(node.name for node in dead)


def _tidy(code: str) -> str:
    """At most two blank lines in a row, and none at the end."""
    out: list[str] = []
    for line in code.splitlines():
        if not line.strip() and len(out) >= 2 and not out[-1].strip() and not out[-2].strip():
            continue
        out.append(line)
    return "\n".join(out).rstrip() + "\n"


def _code_lines(code: str) -> list[str]:
    return [s for s in (line.strip() for line in code.splitlines())
            if s and not s.startswith("#")]


def kept_share(parent: str, child: str, entry: str) -> float:
    """The share of the child's live code lines (unreachable definitions pruned) that occur in
    its parent's live code: 1 for an unchanged solver, near 0 for a new design."""
    mine = _code_lines(prune_unreachable(child, entry)[0])
    theirs = set(_code_lines(prune_unreachable(parent, entry)[0]))
    return sum(line in theirs for line in mine) / len(mine) if mine else 1.0


def is_rewrite(parent: str, child: str, entry: str) -> bool:
    """Does ``child`` replace ``parent`` rather than modify it (:data:`REWRITE_SHARE`)?"""
    return kept_share(parent, child, entry) < REWRITE_SHARE
