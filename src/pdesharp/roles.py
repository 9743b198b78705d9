"""Extension points of the pipeline, one ``Protocol`` each.

The pipeline (``pdesharp.pipeline``) only talks to these. An LLM fills them through prompts
(``pdesharp.analysis``, ``pdesharp.genesis``, ``pdesharp.synthesis``); the built-in numerical
analyst (``pdesharp.builtin``) fills them with symbolic analysis and a catalogue of schemes.
Either way the tournament, the run store, the evaluation accounting and the report are the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from pdesharp.llm.base import ChatModel
from pdesharp.records import Analysis, Candidate, EvalResult, Feedback, Split
from pdesharp.task import Task

if TYPE_CHECKING:
    from pdesharp.facts import TaskFacts
    from pdesharp.recording import RecordingModel


class PoolEntry(BaseModel):
    """A candidate with its latest feedback-split evaluation (None if not run yet)."""

    candidate: Candidate
    result: EvalResult | None = None


class Nomination(BaseModel):
    """A judge's reading of the pool: its ranked top list, reasons, and one nominee."""

    judge: str
    ranking: list[str]  # candidate ids, best first
    reasons: dict[str, str] = Field(default_factory=dict)  # candidate id -> reason
    nominee: str


class Proposal(BaseModel):
    """A judge's modification of a base solver: SEARCH/REPLACE blocks, or a whole new file.

    Exactly one of ``patch`` / ``code`` is set. ``parents`` lists every candidate the change
    draws on (the base first; a hybrid names the others it borrows from).
    """

    judge: str
    base: str
    parents: list[str]
    title: str = ""
    justification: str = ""
    patch: str | None = None
    code: str | None = None
    # The judge expects no modification to help (it answered NO_CHANGE): neither patch nor
    # code is set, and nothing is evaluated.
    declined: bool = False


JUDGE_NAMES = ["judge-1", "judge-2", "judge-3"]  # the three judges of a tournament


class RoundInfo(BaseModel):
    """The tournament's rules and state, given to every judge before each round's nominations
    and again before its modifications (:meth:`Judge.observe`)."""

    cycle: int
    round: int
    max_rounds: int
    cycles: int  # 1 + rejudging cycles
    judges: int = 3
    evals_used: int = 0  # counted feedback evaluations so far
    eval_limit: int | None = None  # --max-evals
    saturation_factor: float = 0.9
    patience: int = 1
    stale_rounds: int = 0  # rounds without improvement so far in this cycle
    best_score: float | None = None
    executed: int = 0  # solvers with a result so far
    debug_attempts: int = 2
    tie_tolerance: float = 0.01
    feedback: Feedback = "nrmse"
    # the run's objective (pdesharp.synthesis.ranking): its spec, the timing margin and re-timing
    objective: str = "accuracy"
    time_margin: float = 0.3
    retime: int = 0  # extra timing runs per finalist at the end
    bar: float | None = None  # time objectives: the highest eligible score now (None: none yet)
    leader: str | None = None  # the objective's pick so far, its score and time per sample
    leader_score: float | None = None
    leader_per_sample: float | None = None
    # the reference floor in the ranking (ranking.Rule.floor; --floor-saturation): None: none
    ranking_floor: float | None = None
    # the data's round-off floor (ranking.Rule.round_off): without a reference floor, scores at
    # or below it are ties and a lower one is not an improvement; None: unknown
    round_off: float | None = None
    # the facts level allows numbers derived from the data (``full``): the round-off floor's
    # value is stated; at ``codepde`` only its rule (pdesharp.facts)
    data_numbers: bool = True
    concurrent: int = 1  # evaluations that may run at once during the search (--workers)
    # nominees run one at a time and a nominee at the stop score ends the search at once
    nominees_in_order: bool = False
    # scores are read as measures of the PDE's solution (--floor-saturation): a design
    # predicted less accurate is not worth an evaluation (the built-in judges)
    floor_saturation: bool = True

    @property
    def time_rule(self) -> str:
        """The time rule as one formula (:meth:`pdesharp.synthesis.ranking.Rule.time_words`),
        word for word what the report says."""
        from pdesharp.synthesis.ranking import Rule

        return Rule.of(self).time_words()

    @property
    def rule(self):
        """The run's ranking rule as these fields carry it (:class:`~pdesharp.synthesis.ranking.
        Rule`): every floor question below is asked of it."""
        from pdesharp.synthesis.ranking import Rule

        return Rule.of(self)

    @property
    def round_off_reached(self) -> bool:
        """Without a reference floor: is the lowest score at or below the round-off floor?"""
        return self.rule.floor_kind(self.best_score) == "round_off"

    @property
    def evals_left(self) -> int | None:
        return None if self.eval_limit is None else max(0, self.eval_limit - self.evals_used)

    @property
    def floor_reached(self) -> bool:
        """Is the reference floor in force (known, and the lowest score at or below it)?"""
        return self.rule.floor_kind(self.best_score) == "reference"

    @property
    def objective_kind(self) -> str:
        return self.objective.partition(":")[0]

    @property
    def objective_value(self) -> float | None:
        value = self.objective.partition(":")[2]
        return float(value) if value else None


@runtime_checkable
class Analyst(Protocol):
    name: str

    async def analyse(self, task: Task) -> Analysis: ...


@runtime_checkable
class Author(Protocol):
    """Genesis: writes N candidate solvers from the analysis. Executes nothing."""

    name: str

    async def write(self, task: Task, analysis: Analysis, n: int) -> list[Candidate]: ...


@runtime_checkable
class Judge(Protocol):
    """One tournament judge. Keeps its context within a cycle; ``reset`` starts a fresh one."""

    name: str

    def reset(self) -> None: ...

    def observe(self, info: RoundInfo) -> None:
        """The tournament's rules and state: given to every judge before each round's
        nominations and again before its modifications."""
        ...

    async def nominate(self, task: Task, analysis: Analysis, pool: list[PoolEntry]) -> Nomination: ...

    async def propose(
        self, task: Task, base: PoolEntry, results: list[PoolEntry], feedback: Feedback
    ) -> Proposal: ...

    async def repair_patch(self, proposal: Proposal, error: str) -> Proposal:
        """The patch did not apply; ``error`` names the nearest lines. One retry."""
        ...

    async def debug(self, entry: PoolEntry) -> Proposal:
        """``entry`` failed to execute (its result carries the error tail); propose a fix."""
        ...


@runtime_checkable
class SolverEvaluator(Protocol):
    """Runs a solver's source on a split and scores it (see ``pdesharp.evaluate``). ``warm``:
    the first sample in one call, the others in a second timed alone (``EvalResult.warm_*``;
    an evaluator that cannot take a run apart runs it as usual and sets none, and has no true
    ``takes_apart`` attribute: the pipeline then spends no run on the winner's warm timing)."""

    async def evaluate(self, code: str, *, split: Split, feedback: Feedback,
                       label: str = "", warm: bool = False) -> EvalResult: ...


@dataclass
class Roles:
    """Who fills each extension point of a run (LLM roles or the built-in analyst)."""

    analyst: Analyst
    author: Author
    judges: list[Judge]
    reporter: ChatModel | None = None  # writes the report's narrative; None skips it
    # the journalled chat models behind the roles (the live display hooks their calls)
    models: list[RecordingModel] = field(default_factory=list)
    # the task facts every LLM role's prompts state (one shared record; None: built-in roles)
    facts: TaskFacts | None = None

    def know_goal(self, goal: str, timed: str) -> None:
        """The run's objective in words once its rule is built (``fastest-below:floor`` has its
        target only then): what the analysis (``goal``) and Genesis (``timed``, with the time
        rule) prompts state. Roles without such prompts (the built-in ones) have no goal."""
        for role, words in ((self.analyst, goal), (self.author, timed)):
            if hasattr(role, "goal"):
                role.goal = words

    def know_reference(self, error: float | None, stated: bool = False) -> None:
        """From now on every prompt states the reference's own error (None: none is told),
        and whether it is the data file's own statement (``stated``) rather than an audit's:
        part of the shared facts (:attr:`pdesharp.facts.TaskFacts.reference_error`)."""
        if self.facts is not None:
            self.facts.reference_error = error
            self.facts.reference_stated = bool(stated and error is not None)
