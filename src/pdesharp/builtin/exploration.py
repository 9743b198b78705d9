"""The built-in judges' choices beyond the neighbouring designs (:mod:`.judge`): exploring
the catalogue while evaluations remain and the score is above the floor (issue 26: a prediction is
no measurement), switching to the best untried design, and curing a failed run by its cause
(:mod:`.diagnosis`). A mixin of :class:`.judge.BuiltinJudge`: it reads the judge's state
(``_info``, ``_task``, ``_bases``) and calls its helpers (``_floor``, ``_speed``, ``_seen``,
``_claim``, ``_why``, ``_try_problem``), so the judge keeps one state and this module one
responsibility."""

from __future__ import annotations

import re

from pdesharp.builtin.author import render
from pdesharp.builtin.design import Design, Problem, move_changes, move_title
from pdesharp.builtin.design_header import (CONSTANT_LINE, constant_patch, header, read_design,
                                            retitle)
from pdesharp.builtin.diagnosis import cause, said
from pdesharp.builtin.evidence import order
from pdesharp.builtin.families import candidate_designs, design_key, family
from pdesharp.roles import PoolEntry, Proposal
from pdesharp.task import Task


class Exploration:
    """Exploration, switching and debugging for :class:`.judge.BuiltinJudge`."""

    def _budget_left(self) -> bool:
        """Evaluations the user granted (--max-evals) and not spent yet. Without a limit the
        predictions decide (the rounds are then the only bound)."""
        i = self._info
        return i is not None and i.eval_limit is not None and i.evals_used < i.eval_limit

    def _explorable(self, base: PoolEntry, d: Design, p: Problem) -> bool:
        """Evaluations left, a measured score above the floor, no time objective met, and a
        design that is not exact in space and time (nothing beats that)."""
        r = base.result
        return (self._budget_left() and r is not None and r.score is not None
                and r.score > self._floor() and not self._speed(r)
                and min(family(d.family).orders(d, p)) < 8)

    def _explore(self, task, p, base, d, seen, blocked, failed) -> Proposal | None:
        """With evaluations left and the score above the floor, predictions do not end the
        search (issue 26): the best untried design of another family, whatever its predicted
        order (a formal order is no measurement: an order-6 method of lines beat the cosine
        series' ETDRK4 on FitzHugh-Nagumo), else the family's own refinements the predictions
        had set aside."""
        if not self._explorable(base, d, p):
            return None
        others = [o for o in candidate_designs(p) if o.family != d.family
                  and design_key(o, p) not in seen]
        if others:
            new = others[0]
            self._claim(design_key(new, p))
            return Proposal(judge=self.name, base=base.candidate.id, parents=[base.candidate.id],
                            title=f"rewrite: {family(new.family).title(new, p)}",
                            code=render(task, new, p), justification=self._why(
                                base, "no design is predicted more accurate, but a prediction"
                                      " is not a measurement and evaluations remain: the best"
                                      " untried design of another family"))
        fam = family(d.family)
        present = {m["name"] for m in CONSTANT_LINE.finditer(header(base.candidate.code))}
        for m in fam.moves(d, p, "accuracy", failed):
            new = d.with_(**move_changes(m))
            k = fam.key(new, p)
            if not present.issuperset(move_changes(m)) or k in seen or k == fam.key(d, p):
                continue
            self._claim(k)
            return Proposal(judge=self.name, base=base.candidate.id, parents=[base.candidate.id],
                            title=move_title(m), patch=constant_patch(
                                base.candidate.code, move_changes(m)) + retitle(
                                base.candidate.code, fam.title(new, p)),
                            justification=self._why(base, f"{m[2]}; predicted below the"
                                                    " saturation factor, tried since evaluations"
                                                    " remain"))
        return None

    def _switch(self, task: Task, p: Problem, base: PoolEntry, seen: set,
                least: int | None = None) -> Proposal | None:
        """The best untried catalogue design (of formal order ``least`` or more, if given)."""
        options = [d for d in candidate_designs(p) if design_key(d, p) not in seen
                   and (least is None or order(family(d.family), d, p) >= least)]
        if not options:
            return None
        new = options[0]  # candidate_designs is ordered best predicted first
        self._claim(design_key(new, p))
        bid = base.candidate.id
        return Proposal(judge=self.name, base=bid, parents=[bid],
                        title=f"rewrite: {family(new.family).title(new, p)}",
                        code=render(task, new, p),
                        justification=self._why(base, "every neighbouring design was tried;"
                                                      " switching to the best untried catalogue"
                                                      " design"))

    async def repair_patch(self, proposal: Proposal, error: str) -> Proposal:
        """Our patches quote the solver's own lines; if one still fails (the base was edited by
        hand), set the same constants by name in the base and send the whole file."""
        code = self._bases.get(proposal.base)
        if code is None or proposal.patch is None:
            raise ValueError(f"cannot repair a proposal on an unknown base: {error}")
        for m in re.finditer(r"^=+\n(?P<name>[A-Z_]+) = (?P<value>[^#\n]+)", proposal.patch, re.M):
            code = re.sub(rf"^{m['name']} = [^#\n]*?(\s*(#.*)?)$",
                          lambda old, m=m: f"{m['name']} = {m['value'].rstrip()}{old.group(1)}",
                          code, count=1, flags=re.M)
        return proposal.model_copy(update={"patch": None, "code": code})

    async def debug(self, entry: PoolEntry) -> Proposal:
        """A failed run, cured by its cause (:mod:`pdesharp.builtin.diagnosis`): a blow-up or
        a timeout by the family's repair (smaller steps, more dissipation, an implicit viscous
        step), a programming error by the catalogue's own code of the design (when the file was
        edited) or another design; else another catalogue design."""
        d = read_design(entry.candidate.code)
        bid = entry.candidate.id
        r = entry.result
        status = r.status if r is not None else "error"
        kind = cause(status, r.error_type if r is not None else "")
        why = said(status, r.error_type if r is not None else "")
        task = self._task
        p = self._try_problem(task) if task is not None else None
        if d is not None and p is not None and kind == "code":
            own = render(task, d, p)
            if own != entry.candidate.code:
                return Proposal(judge=self.name, base=bid, parents=[bid],
                                title=f"debug: the catalogue's code of {d.family}", code=own,
                                justification=f"the run failed ({why}); the file differs from"
                                              " the catalogue's code of its design: that code")
        if d is not None and p is not None and kind != "code":
            fam = family(d.family)
            present = {m["name"] for m in CONSTANT_LINE.finditer(header(entry.candidate.code))}
            changes = {k: v for k, v in fam.repair(d, p, status).items() if k in present}
            new = d.with_(**changes)
            if changes and fam.key(new, p) != fam.key(d, p):
                self._claim(fam.key(new, p))
                return Proposal(
                    judge=self.name, base=bid, parents=[bid],
                    title="debug: " + ", ".join(f"{k} -> {v}" for k, v in changes.items()),
                    patch=constant_patch(entry.candidate.code, changes) + retitle(
                        entry.candidate.code, fam.title(new, p)),
                    justification=f"the run failed ({why}); the family's usual cure for this"
                                  " failure")
        if p is not None:
            seen = self._seen([entry], p)
            if d is not None and kind == "code":  # the family's code failed: another family
                seen |= {design_key(o, p) for o in candidate_designs(p) if o.family == d.family}
            prop = self._switch(task, p, entry, seen) or self._switch(task, p, entry,
                                                                     self._seen([entry], p))
            if prop is not None:
                return prop.model_copy(update={"justification": f"the run failed ({why}); no"
                                               " axis of this design cures it: trying another"
                                               " catalogue design"})
        # nothing to change: resubmitting identical code is looked up, not run again
        return Proposal(judge=self.name, base=bid, parents=[bid], title="unchanged",
                        code=entry.candidate.code,
                        justification=f"the run failed ({why}); the catalogue has nothing"
                                      " untried to offer")
