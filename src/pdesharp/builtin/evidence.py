"""What the measured designs predict about a move: the built-in judges spend no evaluation on a
move whose predicted change of the score is below what the search can count.

A move changes one design axis of a base design (a smaller step, a finer internal grid, another
integrator). Two measured designs of the same family that differ in exactly that axis, in the same
direction (or, for a categorical axis, by the same change of value), measured what such a move
does: the absolute change of the score between them. Discretisation errors of different axes add
to first order, so the change a move made elsewhere predicts the change it makes here, and the
measurement that started where the base is, or coarser along the axis (a larger step, a coarser
grid), bounds it from above: the error an axis contributes shrinks as the axis is refined. When
that predicted change is below (1 - saturation factor) x the base's score, the evaluation could
not count as an improvement (a round improves only by the saturation factor), and the move is
not proposed. Where nothing was measured along the axis, nothing is predicted and the move stays.

Example (shear_advection2d): halving the step at the data grid moved the score by 1.4e-6 (the
truncated modes dominate); another integrator by 2.7e-7; a 2x internal grid by 7.4e-3. From the
2x grid (score 5.0e-6, so an improvement must be at least 5.0e-7), the grid is refined again
first, the step next, and the integrator not at all.

The formal order is the other prediction (:meth:`Family.orders`): under the accuracy objective a
move or a design of lower formal order than the base is predicted to lose accuracy and is not
proposed either.
"""

from __future__ import annotations

import math

from pdesharp.builtin.design import Design, Family, Problem


def order(fam: Family, d: Design, p: Problem) -> int:
    """The design's formal order (the lower of space and time; 8 stands for spectral/exact)."""
    return min(fam.orders(d, p))


def _axes(fam: Family, d: Design, p: Problem) -> dict[str, object]:
    return dict(fam.key(d, p)[1:])


def _numeric(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def predicted_change(fam: Family, p: Problem, d: Design, axis: str, value,
                     measured: list[tuple[Design, float]]) -> float | None:
    """The change of the score the move ``axis -> value`` on ``d`` is predicted to make, from
    ``measured`` (designs of ``fam`` with their scores); None when nothing was measured along
    that axis in that direction."""
    old = d[axis]
    keyed = [(x, _axes(fam, x, p), s) for x, s in measured if x.family == fam.name]
    best: tuple[float, float] | None = None  # (distance of the start from old, change)
    changes = []
    for i, (x, kx, sx) in enumerate(keyed):
        for y, ky, sy in keyed[i + 1:]:
            differ = {a for a in set(kx) | set(ky) if kx.get(a) != ky.get(a)}
            if differ != {axis}:
                continue
            for (a, sa), (b, sb) in (((x, sx), (y, sy)), ((y, sy), (x, sx))):
                va, vb = a[axis], b[axis]
                if _numeric(old) and _numeric(value) and _numeric(va) and _numeric(vb):
                    step = value - old
                    if step == 0 or (vb - va) * step <= 0:
                        continue  # another direction
                    if (va - old) * step > 0:
                        continue  # started finer than the base: a lower bound, no prediction
                    gap = abs(va - old) if math.isfinite(va - old) else math.inf
                    change = abs(sa - sb)
                    if best is None or gap < best[0] or (gap == best[0] and change > best[1]):
                        best = (gap, change)
                elif (va, vb) == (old, value):
                    changes.append(abs(sa - sb))
    if best is not None:
        return best[1]
    return max(changes) if changes else None


def below_resolution(change: float | None, score: float, saturation_factor: float) -> bool:
    """Is a predicted change too small to count as an improvement of ``score``?"""
    return change is not None and change < (1.0 - saturation_factor) * abs(score)


def agreement(entries, info) -> str:
    """Without a reference floor: do designs of two different method families agree on the
    lowest score within the tie tolerance? Then that score is the reference's own error
    (two independent discretisations cannot share their errors, only the data's), every
    change of design is predicted to move the score by less than the tie, and no evaluation
    is spent on one. Returns why, or "" when they do not agree (or a floor is known)."""
    from pdesharp.builtin.design_header import read_design
    from pdesharp.synthesis.ranking import Rule

    i = info
    if i is None or i.rule.reference_floor is not None or i.feedback != "nrmse":
        return ""
    scored = {}
    for e in entries:
        r = e.result
        d = read_design(e.candidate.code)
        if r is None or r.score is None or d is None:
            continue
        if d.family not in scored or r.score < scored[d.family][0]:
            scored[d.family] = (r.score, e.candidate.id)
    if len(scored) < 2:
        return ""
    (low, a), *rest = sorted(scored.values())
    tie = low * (1 + max(Rule.of(i).tie_tolerance, 0.0))
    close = [(s, cid) for s, cid in rest if s <= tie]
    if not close:
        return ""
    return (f"{a} ({low:.3e}) and {close[0][1]} ({close[0][0]:.3e}), designs of different "
            f"method families, agree within the {100 * Rule.of(i).tie_tolerance:g} % tie: "
            "their common score is the reference's own error, which no change of design "
            "can be told apart from")
