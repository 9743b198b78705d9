"""A generated solver's design header: the constant lines between ``# ---- design axes`` and
``# ---- end of design axes`` that the built-in analyst renders. The judges read a design back
from them and patch them with the same SEARCH/REPLACE blocks the LLM judges write."""

from __future__ import annotations

import functools
import re

from pdesharp.builtin.design import Design
from pdesharp.builtin.families import FAMILIES

CONSTANT_LINE = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*) = (?P<value>[^#\n]+?)(?P<comment>\s+#.*)?$", re.M)
_HEAD = re.compile(r"# ---- design axes.*?\n(.*?)# ---- end of design axes", re.S)


def header(code: str) -> str:
    m = _HEAD.search(code)
    return m.group(1) if m else ""


@functools.lru_cache(maxsize=256)  # the judges ask it of every pool file, every round
def read_design(code: str) -> Design | None:
    """The design a generated solver was rendered from, read back from its constant lines
    (the design-axes header; axes that are fixed for the problem are read where they stand)."""
    head = header(code)
    m = re.search(r'^FAMILY = "(\w+)"', head, re.M)
    if m is None or m.group(1) not in FAMILIES:
        return None
    fam = FAMILIES[m.group(1)]
    lines = {x["name"]: x["value"] for x in CONSTANT_LINE.finditer(code)}
    heads = {x["name"]: x["value"] for x in CONSTANT_LINE.finditer(head)}
    lines.update(heads)
    values = {}
    for axis in fam.axes:
        if axis.name in lines:
            try:
                values[axis.name] = axis.parse(lines[axis.name])
            except ValueError:
                if axis.name in heads:
                    return None
                # a computed constant outside the header that an axis added later took the
                # name of (a file rendered before the spectral DEALIAS axis: "DEALIAS =
                # EXACT_DEALIAS if ..."): the axis' default, as for a line not written at all
    return fam.design(**values)


def constant_patch(code: str, changes: dict[str, object]) -> str:
    """SEARCH/REPLACE blocks that set design constants in the header, keeping each comment."""
    head = header(code)
    fam = read_design(code)
    axes = {a.name: a for a in FAMILIES[fam.family].axes} if fam else {}
    blocks = []
    for name, value in changes.items():
        m = next((m for m in CONSTANT_LINE.finditer(head) if m["name"] == name), None)
        if m is None:
            raise KeyError(f"the solver's design header has no axis {name}"
                           f" (its axes: {[x['name'] for x in CONSTANT_LINE.finditer(head)]})")
        text = axes[name].literal(value) if name in axes else repr(value)
        new = f"{name} = {text}{m['comment'] or ''}"
        blocks.append(f"<<<<<<< SEARCH\n{m.group(0)}\n=======\n{new}\n>>>>>>> REPLACE")
    return "\n".join(blocks)


def retitle(code: str, title: str) -> str:
    """A SEARCH/REPLACE block that keeps the solver's docstring title in step with its design."""
    first = code.split("\n", 1)[0]
    if not first.startswith('"""') or ": " not in first:
        return ""
    head = first[: first.index(": ", 3)]
    line = f"{head}: {title}."
    return "" if line == first else f"\n<<<<<<< SEARCH\n{first}\n=======\n{line}\n>>>>>>> REPLACE"
