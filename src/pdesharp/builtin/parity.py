"""Sine or cosine per unknown along one walled axis, carried along the equations' couplings: a
term coupling unknowns i and j with a derivative of odd order along the axis maps a sine series
to a cosine one, an even order keeps it (parity_i = parity_j xor odd order). Shared by the
sine/cosine bases of the families (:mod:`.families.bases`) and the reader of constrained systems
(:mod:`.constraint`)."""

from __future__ import annotations


def flip(p: str) -> str:
    return "cos" if p == "sin" else "sin"


def propagate(parity: list[str | None], edges, axis: int) -> int | None:
    """Fill the ``None`` entries of ``parity`` (in place) from the known ones along ``edges``
    (``(i, j, orders)``: unknowns i and j coupled by a derivative of ``orders[axis]`` along the
    axis), until nothing changes. Returns None, or the index of an unknown whose known parity
    contradicts what a coupling requires."""
    changed = True
    while changed:
        changed = False
        for i, j, orders in edges:
            odd = orders[axis] % 2 == 1
            for src, dst in ((j, i), (i, j)):
                if parity[src] is None:
                    continue
                want = flip(parity[src]) if odd else parity[src]
                if parity[dst] is None:
                    parity[dst], changed = want, True
                elif parity[dst] != want:
                    return j
    return None
