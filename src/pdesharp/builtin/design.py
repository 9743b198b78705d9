"""Solver designs: a scheme family and a value for each of its design axes.

A :class:`Family` (one module per family in :mod:`pdesharp.builtin.families`) owns everything
about its schemes: the design axes (:class:`Axis`), when it applies to a problem and how its
designs rank, its time-step rule and the code it renders. A :class:`Design` is one point of a
family's design space. The axes that matter for a problem are written at the top of the
generated solver, one constant per line, where the judges edit them; a design's :meth:`key`
keeps only the axes that change the computation, so two designs that differ in an axis the
scheme does not use (a limiter under WENO5) are recognised as the same solver before any run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from pdesharp.task import Task


@dataclass(frozen=True)
class Axis:
    """One design axis: a constant of the generated solver."""

    name: str  # the constant's name, e.g. "LIMITER"
    default: object
    choices: tuple = ()  # allowed values of a categorical axis; () for a number
    comment: str = ""

    def literal(self, value) -> str:
        if isinstance(value, str):
            return f'"{value}"'
        if isinstance(value, float) and math.isinf(value):
            return "np.inf"
        return repr(value)

    def parse(self, text: str):
        """The value written on a solver's constant line (raises ValueError)."""
        text = text.strip()
        if text.startswith('"') and text.endswith('"'):
            return text[1:-1]
        if text in ("True", "False"):
            return text == "True"
        if text == "np.inf":
            return math.inf
        return int(text) if isinstance(self.default, int) and not isinstance(self.default, bool) \
            else float(text)


@dataclass(frozen=True)
class Design:
    """A family name and a value for each of the family's axes (constant name -> value)."""

    family: str
    values: tuple = ()  # ((name, value), ...) in the family's axis order

    def __getitem__(self, name: str):
        for k, v in self.values:
            if k == name:
                return v
        raise KeyError(f"design of family {self.family!r} has no axis {name}")

    def get(self, name: str, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def with_(self, **changes) -> "Design":
        names = [k for k, _ in self.values]
        unknown = set(changes) - set(names)
        if unknown:
            raise KeyError(f"family {self.family!r} has no axes {sorted(unknown)}")
        return Design(self.family, tuple((k, changes.get(k, v)) for k, v in self.values))

    def as_dict(self) -> dict:
        return dict(self.values)


@dataclass
class Problem:
    """What the families need to know about a task: its structure and the analysis' numbers."""

    task: Task
    struct: object  # BalanceLaw or EllipticProblem
    facts: dict = field(default_factory=dict)  # the analysis' design facts (dx, stiffness...)

    @property
    def steady(self) -> bool:
        return self.task.steady

    @property
    def dim(self) -> int:
        return len(self.task.equation.space)

    @cached_property
    def law_facts(self):
        from pdesharp.builtin.physics import law_facts

        return law_facts(self.struct)

    @property
    def dt_output(self) -> float:
        if self.task.time_span is None:
            return 0.0
        t0, t1 = self.task.time_span
        return (t1 - t0) / max((self.task.n_frames or 101) - 1, 1)


# (axis name, new value, reason[, ((axis, value), ...) that change with it]): a move is along one
# axis; the optional fourth part keeps another fixed in the solver's terms (a finer grid at the
# same time step also scales a CFL the solver measures in the finer grid's cells)
Move = tuple


def move_changes(m: Move) -> dict:
    """The axis values a move sets: its own axis', and those that change with it."""
    return {m[0]: m[1], **dict(m[3] if len(m) > 3 else ())}


def move_title(m: Move) -> str:
    """A proposal's title for the move: "REFINE -> 4", or "REFINE -> 4, CFL -> 0.2" (the
    judge reads the moved axis back from the first name)."""
    return ", ".join(f"{a} -> {v}" for a, v in move_changes(m).items())


class Family:
    """Base of the scheme families; each module in ``families`` subclasses it."""

    name = ""
    axes: tuple[Axis, ...] = ()

    # -- when and what ---------------------------------------------------------------------
    def applies(self, p: Problem) -> bool:
        raise NotImplementedError

    def candidates(self, p: Problem) -> list[Design]:
        """Designs of this family for ``p``, best predicted first."""
        raise NotImplementedError

    def design(self, **values) -> Design:
        unknown = set(values) - {a.name for a in self.axes}
        if unknown:
            raise KeyError(f"family {self.name!r} has no axes {sorted(unknown)}")
        return Design(self.name, tuple((a.name, values.get(a.name, a.default)) for a in self.axes))

    def relevant(self, p: Problem) -> list[str]:
        """Axes that are design choices for this problem (written in the solver's header)."""
        return [a.name for a in self.axes]

    def active(self, d: Design, p: Problem) -> set[str]:
        """Relevant axes whose value changes the computation, given the other axes' values."""
        return set(self.relevant(p))

    def key(self, d: Design, p: Problem) -> tuple:
        """Identity of the computation: two designs with equal keys give the same solver."""
        act = self.active(d, p)
        return (self.name,) + tuple((a.name, d[a.name]) for a in self.axes if a.name in act)

    # -- search ----------------------------------------------------------------------------
    def moves(self, d: Design, p: Problem, strategy: str, failed: bool) -> list[Move]:
        """Changes along one axis (:data:`Move`) in the strategy's preference order."""
        return []

    def speed_moves(self, d: Design, p: Problem) -> list[Move]:
        """Changes worth an evaluation only when time decides (the objective's eligible solvers,
        or ties at the floor): designs predicted as accurate and cheaper, never an accuracy
        search's step (they can only tie)."""
        return []

    def max_cfl(self, d: Design, p: Problem) -> float | None:
        """The largest CFL a larger-step move offers (the explicit part's stability limit, with
        a margin); None where the family has no CFL axis a step-size prediction could move
        (:func:`pdesharp.builtin.evidence.step_to_bar`)."""
        return None

    def repair(self, d: Design, p: Problem, status: str) -> dict:
        """Axis changes for a run that failed with ``status`` (the judge's debugging step)."""
        return {}

    # -- description -----------------------------------------------------------------------
    def title(self, d: Design, p: Problem) -> str:
        raise NotImplementedError

    def orders(self, d: Design, p: Problem) -> tuple[int, int]:
        """Formal (space, time) order; 8 stands for spectral / exact."""
        raise NotImplementedError

    def cost(self, d: Design, p: Problem) -> float:
        """Work per unit time relative to MUSCL + SSP-RK2 at CFL 0.4 on the output grid."""
        return 1.0

    # -- code ------------------------------------------------------------------------------
    def libraries(self, d: Design, p: Problem) -> tuple[str, ...]:
        """Library modules every run of the solver imports inside a function, imported at the
        top of the file as well: the evaluator loads a file's top-level library imports before
        its clock starts (:mod:`pdesharp.evaluate.preload`), as a user's process loads them once."""
        return ()

    def render(self, d: Design, p: Problem) -> str:
        """The solver's code after the design-axes header, up to (not including) the entry."""
        raise NotImplementedError


def rank_score(fam: Family, d: Design, p: Problem) -> float:
    """Lower is better: favour high formal order, then low cost."""
    order = min(fam.orders(d, p))
    return -2.0 * order + 0.5 * math.log10(fam.cost(d, p) + 1e-9)
