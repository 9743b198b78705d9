"""The tournament's settings (:class:`TournamentSettings`): what the pipeline hands
:class:`pdesharp.synthesis.tournament.Tournament` from the run's configuration."""

from __future__ import annotations

from dataclasses import dataclass, field

from pdesharp.records import Feedback
from pdesharp.synthesis.ranking import Rule


@dataclass
class TournamentSettings:
    feedback: Feedback = "nrmse"
    max_rounds: int = 4
    rejudge_cycles: int = 1
    saturation_factor: float = 0.9  # a round "improves" if best_new < factor * best_old
    patience: int = 1  # rounds without improvement before the cycle stops
    debug_attempts: int = 2
    workers: int = 2
    max_evals: int | None = None  # the run's evaluation budget (told to the judges)
    # the run's one ranking rule (objective, tie tolerance, time margin, reference floor,
    # round-off floor; pdesharp.synthesis.run_rule builds it): every ranking, the stop at the
    # floor and saturation use it
    rule: Rule = field(default_factory=Rule)
    # the facts level allows numbers derived from the data (--task-facts full): the judges are
    # told the round-off floor's value, not only its rule
    data_numbers: bool = True
    retime: int = 0  # extra timing runs per finalist when time decides at the end (timing.py)
    # run a round's nominees one at a time in nomination order while the rule has a stop score,
    # and end the search as soon as one reaches it (with floor saturation, every role: the
    # search stops at the floor, issue 24); False: concurrently, as the paper's rounds, and a
    # floor reached ends the search with its round
    nominees_in_order: bool = False
    # the run reads scores as measures of the PDE's solution (--floor-saturation, the built-in
    # default): the built-in judges then spend nothing on designs predicted less accurate
    floor_saturation: bool = True
