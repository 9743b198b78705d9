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
The errors add as vectors, though, and the score is their norm: a pair measured where another
axis' error was far larger (both scores above :data:`MASKED` x the base's) saw its own change
shrunk, uncorrelated errors adding in quadrature, and predicts nothing.

Example (shear_advection2d): halving the step at the data grid moved the score by 1.4e-6 (the
truncated modes dominate); another integrator by 2.7e-7; a 2x internal grid by 7.4e-3. From the
2x grid (score 5.0e-6, so an improvement must be at least 5.0e-7), none of these ranks a move:
the step and the integrator were measured under a truncation error 1500x that score, which
hides what they change, and the grid's change only bounds the next refinement's (a bound can
rule a move out, not say how much error the axis still holds). The same move measured twice in
a row up to the base sharpens that bound: the axis' share of the error fell by the ratio of the
two changes, and is predicted to fall by it again. The judges then take the
family's order, cheaper first: half the step; once that measured no change that counts, the
grid.

The formal order is the other prediction (:meth:`Family.orders`): under the accuracy objective a
move or a design of lower formal order than the base is predicted to lose accuracy and is not
proposed either.

Under ``fastest-below`` the same evidence sizes the step (:func:`step_to_bar`): the score is
modelled as E + a CFL^q (q the integrator's formal order, E what the step does not change), fitted
to the measured designs along the CFL axis, and a larger step is aimed at a share of the
objective's bar instead of a fixed factor.
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


# a pair of designs both scored above this multiple of the base's score predicts nothing for it
MASKED = 10.0


def predicted_change(fam: Family, p: Problem, d: Design, axis: str, value,
                     measured: list[tuple[Design, float]],
                     score: float | None = None) -> float | None:
    """The change of the score the move ``axis -> value`` on ``d`` is predicted to make, from
    ``measured`` (designs of ``fam`` with their scores); None when nothing was measured along
    that axis in that direction (:func:`prediction`)."""
    got = prediction(fam, p, d, axis, value, measured, score)
    return None if got is None else abs(got[0])


def prediction(fam: Family, p: Problem, d: Design, axis: str, value,
               measured: list[tuple[Design, float]],
               score: float | None = None) -> tuple[float, bool] | None:
    """The predicted change of :func:`predicted_change`, signed (positive: the score fell, the
    move paid off where it was made), and whether it was measured: the same move made elsewhere
    (from the base's value, or the same change of a categorical axis), rather than a bound from
    a coarser start. A bound can say a move cannot count; it cannot rank moves, since it says
    nothing about how much of the base's error the axis still holds.

    With ``score`` (the base's), a pair whose lower score is above MASKED x ``score`` is not
    evidence: the errors of different axes add as vectors, and uncorrelated ones in quadrature,
    so an axis' error hidden under another's larger one barely moves the score (a change
    there is a lower bound only). 2D Gray-Scott: CFL 0.4 -> 0.6 on a 2x grid moved the score
    1.373e-3 by 2.0e-7, under 10 % of the 4x grid's 2.65e-6; on an 8x grid CFL 0.6 -> 0.3
    moved it by 1.7e-6, from 1.85e-6 to 1.41e-7."""
    old = d[axis]
    keyed = [(x, _axes(fam, x, p), s) for x, s in measured if x.family == fam.name]
    if score is not None:
        keep = {id(x) for x, _, s in keyed if s <= MASKED * abs(score)}
    else:
        keep = None
    best: tuple[float, float] | None = None  # (distance of the start from old, signed change)
    changes = []
    steps = []  # (start, end, signed change, start's axes, end's axes) along the numeric axis
    for i, (x, kx, sx) in enumerate(keyed):
        for y, ky, sy in keyed[i + 1:]:
            differ = {a for a in set(kx) | set(ky) if kx.get(a) != ky.get(a)}
            if differ != {axis} or (keep is not None and id(x) not in keep
                                    and id(y) not in keep):
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
                    change = sa - sb
                    steps.append((va, vb, change, _axes(fam, a, p), _axes(fam, b, p)))
                    if best is None or gap < best[0] or (gap == best[0]
                                                         and abs(change) > abs(best[1])):
                        best = (gap, change)
                elif (va, vb) == (old, value):
                    changes.append(sa - sb)
    if best is not None and best[0] > 0:
        return _decayed(old, value, best[1], steps), False
    if best is not None:
        return best[1], True
    return (max(changes, key=abs), True) if changes else None


def _decayed(old, value, bound: float, steps: list) -> float:
    """A bound from a coarser start, sharpened where the same move was measured twice in a row
    up to the base (old / r -> old and old / r^2 -> old / r, r = old / value, one design between
    them): the error an axis contributes falls geometrically as it is refined, so the next
    change is the last one over the ratio of the last two (when that ratio is above 1). 1D
    conservative Kuramoto-Sivashinsky: CFL 0.2 -> 0.1 -> 0.05 changed the score by 5.9e-7, then
    2.4e-8 (ratio 25, an ETDRK4 step's 2^4 and more); from 2.9e-8, half the step again was
    predicted 1e-9, below what counts, and the search went on to the finer grid, where the
    raw bound (2.4e-8) had let it spend the rejudging cycle on the step."""
    r = old / value if value else 0.0
    if not r or not math.isfinite(r):
        return bound
    near = lambda a, b: math.isclose(a, b, rel_tol=1e-9)  # noqa: E731
    last = [(c, ka) for va, vb, c, ka, _ in steps if near(vb, old) and near(va, old * r)]
    for c1, k1 in last:
        for va, vb, c2, _, kb in steps:
            if near(vb, old * r) and near(va, old * r * r) and kb == k1 and c1 > 0 and c2 > c1:
                return c1 / (c2 / c1)
    return bound


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


# a larger step's own error is aimed at this share of what the bar leaves it (the bar less the
# error the step does not change): the model's order is the formal one, and the step's own
# error can grow faster where a larger step leaves the asymptotic range
AIM = 0.6
# and grows by at most this factor per move: the prediction is an extrapolation
GROWTH = 2.0


def step_to_bar(c: float, score: float, bar: float, floor: float, order: int,
                along: list[tuple[float, float | None]], cap: float) -> tuple[float, bool]:
    """The CFL predicted to bring an eligible design's score (at CFL ``c``) to E + AIM x
    (``bar`` - E), and whether measurements back it. The score is modelled as E + a CFL^order:
    E the error the step does not change (the grid's, the reference's), a CFL^order the step's,
    which alone the model is unsure of (its order). ``along``
    holds the designs measured at other CFLs, every other axis equal: (CFL, score, or None for
    one that failed). The fit takes the nearest of them above ``c`` (a bracket), else the
    nearest below (where the score grew faster between the two than the order allows, a power
    law through both); with none, E = 0: all of the score is the step's, the least growth any
    model of this order allows. A score at or below ``floor`` measures agreement with the
    reference's own scheme, not the step's error: it counts as the floor, and the fit skips it.
    A design that failed at a larger CFL bounds the step by the two CFLs' geometric mean.

    2D Gray-Scott on a 4x grid (integrating-factor RK4): 1.28e-5 at CFL 0.4 and 8.67e-7 at
    0.2 give E = 7e-8 and, for the bar 2.52e-6, CFL 0.233: the ladder's 0.3 (measured 4.16e-6)
    would have spent an evaluation above the bar. 1D Kuramoto-Sivashinsky on a 2x grid: 2.91e-8
    at CFL 0.05 and 5.29e-8 at 0.1 give E = 2.75e-8, for the bar 3.64e-8 CFL 0.068; AIM x bar
    (2.2e-8, under E) had allowed no larger step at all."""
    s = max(score, floor)
    pts = [(x, sx) for x, sx in along if x > 0 and x != c and sx is not None and sx > floor]
    above = [pt for pt in pts if pt[0] > c]
    near = min(above or pts, key=lambda pt: abs(math.log(pt[0] / c)), default=None)
    E, a, v = 0.0, s / c**order, None
    if near is not None:
        slope = (near[1] - s) / (near[0] ** order - c**order)
        if slope <= 0:  # the other step did not raise the score: the step's error is not seen
            v = math.inf
        elif s >= slope * c**order:
            E, a = s - slope * c**order, slope
        else:  # the score grew faster than the formal order: a power law through both
            v = c * (AIM * bar / s) ** (math.log(near[0] / c) / math.log(near[1] / s))
    if v is None:
        v = c if bar <= E else math.inf if a <= 0 else (AIM * (bar - E) / a) ** (1.0 / order)
    v = min(v, GROWTH * c, cap)
    for x, sx in along:
        if x > c and sx is None:
            v = min(v, math.sqrt(c * x))
    return float(f"{max(v, c):.3g}"), near is not None


def sized_moves(fam: Family, p: Problem, d: Design, score: float, bar: float, floor: float,
                runs: list[tuple[Design, float | None]], moves: list) -> tuple[list, tuple | None]:
    """``moves`` with their larger steps replaced by the one :func:`step_to_bar` predicts, first,
    and that move (None when there is none). ``runs``: the measured designs (score None: failed).
    Without a measurement along the CFL axis the prediction assumes all of the score is the
    step's error, so it only enlarges the family's own larger step, never withholds it; with
    one it replaces it, and a step predicted above the bar is not taken."""
    cap = fam.max_cfl(d, p)
    if cap is None or "CFL" not in fam.active(d, p):
        return moves, None
    rest = dict(fam.key(d, p)[1:])
    rest.pop("CFL")
    along = []
    for x, sx in runs:
        if x.family != d.family or x["CFL"] == d["CFL"]:
            continue
        kx = dict(fam.key(x, p)[1:])
        if kx.pop("CFL", None) is not None and kx == rest:
            along.append((x["CFL"], sx))
    q = fam.orders(d, p)[1]
    value, measured = step_to_bar(d["CFL"], score, bar, floor, q, along, cap)
    larger = [m for m in moves if m[0] == "CFL" and m[1] > d["CFL"]]
    if not measured and all(value <= m[1] for m in larger):
        return moves, None  # the family's own step is at least as large: measure it
    keep = [m for m in moves if m not in larger]
    if value <= d["CFL"]:
        return keep, None
    step = ("CFL", value, f"the step predicted to keep the error near {AIM:g} x the bar "
                          f"{bar:.2e} (modelled as E + a CFL^{q}"
                          + (", fitted to the steps measured)" if measured else ")"))
    return [step] + keep, step
