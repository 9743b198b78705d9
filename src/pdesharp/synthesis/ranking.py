"""The ranking rule, in one place: which solver the run's objective picks, and the order of a
results list. The tournament's selection, the winner, the judges' listings and the report all
call :func:`pick_best` / :func:`rank` with the run's :class:`Rule`, so no judge is shown an order
the tournament would not pick, and the report's rank 1 is the winner.

Objectives (``--objective``; lower score is better, the score being the feedback's nRMSE or
PDE residual):

``accuracy`` (default; comparable with the paper)
    The lowest score. Scores within ``tie_tolerance`` (relative) of it are a tie, which time
    decides.
``fastest-within:FACTOR``
    The fastest solver whose score is at most FACTOR x the lowest score (FACTOR >= 1).
``fastest-below:TARGET``
    The fastest solver whose score is at most TARGET; while none is, the ``accuracy`` rule.
``fastest-below:floor``
    The same with TARGET the run's floor (below), known once the audit is: the fastest solver
    the reference cannot tell from the most accurate. Under ``accuracy`` the search ends at the
    first solver to reach the floor; under this objective it goes on for faster ones.

Each objective names the *eligible* solvers (the tie, those within the factor, those below the
target). Time then decides among them, but only where it is clear: one wall-clock timing of the
same code varies by tens of percent on a shared machine (by a factor of several for a solver whose
call takes milliseconds: the re-timing below settles those), so every eligible solver whose time
is within ``1 + time_margin`` of the fastest eligible one counts as equally fast, and among those
the lower score wins (then the earlier entry: deterministic). A time that rests on k timings
(the median of a re-timed solver, :mod:`pdesharp.synthesis.timing`) gets the margin divided by
sqrt(k): a median of three is trusted more than one run. Unknown time counts as slowest. Where
the equally fast are re-timed solvers with warm timings (their warm re-timing runs time the call
on all samples but the first alone: no import, compilation or planning), those whose warm time is
within the margin of the least warm time go on, and the lower score wins among them: a small
solver's call is mostly one-off work, and two designs the whole call cannot tell apart may be
5x apart per sample (1D Fisher-KPP: a Strang splitting at 1 ms and ETDRK4 at 5 ms per
sample warm, both about 7 ms a sample in one call on 4 samples).

The reference floor (``Rule.floor``; :mod:`pdesharp.audit.runs`: the audit's reference error
times the floor factor, set only when floor saturation is on). Once the lowest score is at or
below it, every solver at or below the floor is eligible too: the objective's bar becomes
max(bar, floor). Below the floor a lower score measures how closely a solver reproduces the
reference's own discretisation error, not how well it solves the PDE, so time decides among
them, by the same time rule. Above the floor, and with no floor, nothing changes (the
paper-comparable ranking is the plain lowest score). For ``fastest-within`` and
``fastest-below`` the floor only widens the bar: a target below the floor asks for fitting the
reference's errors, which the floor says cannot be told apart from solving the PDE.

The round-off floor (``Rule.round_off``; :func:`pdesharp.evaluate.metrics.rounding_nrmse`, measured
on the run's dev reference by :func:`pdesharp.synthesis.run_rule.data_round_off`): without a
reference floor, scores at or below the nRMSE that rounding the reference to its stored float
type alone causes (2-3e-8 for float32 fields of order one) are ties in the same way: no score can
tell two solvers apart there, and 2e-16 against 1e-18 is not a 150x improvement. From that floor
down a lower score is not an improvement for saturation either (the reference floor ends the
search instead). It is the storage's own nRMSE, not a number of machine epsilons: four units of
float32 round-off (4.8e-7) is some 18x the nRMSE float32 storage costs, and a floor there stopped
searches early on references better than that (issue 30).

Both floors are on by default, for the built-in analyst and language models alike
(``--floor-saturation``); ``--no-floor-saturation`` switches both off: the paper's set-up, the
lowest score alone.

Saturation under an objective (:func:`improved`): a round improves if the lowest score fell by the
saturation factor (as in the paper), or, under a time objective, if the objective's pick got
faster by the saturation factor *and* by more than the timing margin (less is timing noise). For
``fastest-below`` the first solver to reach the target is an improvement; once one has, time
counts, and so does a lowest score that fell by the factor from above the floor: that margin
under the target is what a larger step turns into time. (2D Gray-Scott, target 2.5e-6: a new
integrator at the pick's time went from 8.7e-7 to 2.3e-8, and the search stopped there, one
round before the step that margin allowed.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from pdesharp.records import EvalResult

T = TypeVar("T")

ObjectiveKind = Literal["accuracy", "fastest-within", "fastest-below"]
KINDS: tuple[str, ...] = ("accuracy", "fastest-within", "fastest-below")
OBJECTIVE_HELP = ("accuracy (default: the lowest score; near-ties go to the clearly faster "
                  "solver), fastest-within:FACTOR (the fastest solver whose score is at most "
                  "FACTOR x the lowest score, FACTOR >= 1, e.g. fastest-within:10), "
                  "fastest-below:TARGET (the fastest solver with score <= TARGET, e.g. "
                  "fastest-below:1e-3; while none reaches it, the lowest score), or "
                  "fastest-below:floor (TARGET the run's floor: the reference's own error from "
                  "its audit, times the floor factor)")


class ObjectiveError(ValueError):
    """An ``--objective`` that cannot be read; the message says what is accepted."""


@dataclass(frozen=True)
class Objective:
    """What the run optimises: see the module docstring. ``str()`` gives the spec form."""

    kind: ObjectiveKind = "accuracy"
    value: float | None = None  # FACTOR or TARGET
    # fastest-below:floor, the fastest solver as accurate as the reference can tell: its TARGET
    # is the run's floor (the audit's reference floor, else the data's round-off floor), known
    # only once the audit is; run_rule.build puts it in (:meth:`at`). Until then value is None.
    at_floor: bool = False

    @classmethod
    def parse(cls, text: str | Objective | None) -> Objective:
        if isinstance(text, Objective):
            return text
        spec = (text or "accuracy").strip().lower().replace("_", "-")
        kind, sep, arg = spec.partition(":")
        kind = kind.strip()
        if kind not in KINDS:
            raise ObjectiveError(f"unknown objective {text!r}; use {OBJECTIVE_HELP}")
        if kind == "accuracy":
            if sep:
                raise ObjectiveError(f"objective {text!r}: 'accuracy' takes no value; use "
                                     "--objective accuracy")
            return cls()
        if not arg.strip():
            example = "fastest-within:10" if kind == "fastest-within" else "fastest-below:1e-3"
            raise ObjectiveError(f"objective {text!r} needs a value after a colon, e.g. "
                                 f"--objective {example}")
        if kind == "fastest-below" and arg.strip() == "floor":
            return cls("fastest-below", None, at_floor=True)
        try:
            value = float(arg)
        except ValueError:
            raise ObjectiveError(f"objective {text!r}: {arg.strip()!r} is not a number") from None
        if not math.isfinite(value):
            raise ObjectiveError(f"objective {text!r}: the value must be finite")
        if kind == "fastest-within" and value < 1:
            raise ObjectiveError(
                f"objective {text!r}: FACTOR must be at least 1 (it multiplies the lowest "
                f"score: fastest-within:1 is the lowest score only, fastest-within:10 admits "
                "scores up to 10x the lowest)")
        if kind == "fastest-below" and value <= 0:
            raise ObjectiveError(f"objective {text!r}: TARGET must be a positive score, e.g. "
                                 "fastest-below:1e-3")
        return cls(kind, value)  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.value is None:
            return "fastest-below:floor" if self.at_floor else self.kind
        short = f"{self.value:g}"  # the form a user writes; the exact one where it loses digits
        return f"{self.kind}:{short if float(short) == self.value else repr(self.value)}"

    def at(self, floor: float | None) -> Objective:
        """This objective with its TARGET the run's ``floor`` where it asks for it
        (``fastest-below:floor``), else itself. Without a floor (no audit of the data, and no
        round-off floor) there is no such target: the accuracy objective, whose pick is the
        closest the run can get."""
        if not self.at_floor or self.value is not None:
            return self
        return ACCURACY if floor is None else replace(self, value=float(floor))

    @property
    def by_time(self) -> bool:
        """Time is what the objective minimises (not only a tie-break)."""
        return self.kind != "accuracy"

    def words(self, metric: str = "score") -> str:
        """The objective in one sentence, for the report and the summary."""
        if self.kind == "fastest-within":
            return (f"the fastest solver whose {metric} is at most {self.value:g} x the lowest "
                    f"{metric} (fastest-within:{self.value:g})")
        if self.kind == "fastest-below" and self.at_floor:
            target = "the run's floor" if self.value is None else \
                f"{self.value:.3e}, the run's floor"
            return (f"the fastest solver whose {metric} is at most {target} (the reference's "
                    f"own error times the floor factor, else the data's round-off floor); "
                    f"while none is, the lowest {metric} (fastest-below:floor)")
        if self.kind == "fastest-below":
            return (f"the fastest solver whose {metric} is at most {self.value:g}; while none "
                    f"is, the lowest {metric} (fastest-below:{self.value:g})")
        return f"the lowest {metric}; near-ties go to the clearly faster solver (accuracy)"


ACCURACY = Objective()


def floor_words(floor: float, metric: str = "score") -> str:
    """The floor's rule in words (the report, the summary and the judges say it)."""
    return (f"{metric}s at or below the reference floor {floor:.3e} are within the data's own "
            f"error of the PDE: time decides among them, by the time rule")


def round_off_words(round_off: float | None, metric: str = "score") -> str:
    """The round-off floor's rule in words; ``round_off`` None: the rule without its number (the
    ``codepde`` facts level states no number derived from the data)."""
    level = "" if round_off is None else f" {round_off:.1e}"
    return (f"{metric}s at or below{level}, the nRMSE that rounding the reference data to "
            f"their stored precision alone causes, are ties: no {metric} can tell solvers apart "
            f"there, and a lower one is not an improvement")


@dataclass(frozen=True)
class Rule:
    """Everything a ranking, the search's stop and saturation depend on: the objective, its two
    tolerances, the reference floor and the data's round-off floor. A run builds it once
    (:mod:`pdesharp.synthesis.run_rule`) and passes it along; the report reads it back."""

    objective: Objective = ACCURACY
    tie_tolerance: float = 0.01  # relative score gap counted as a tie (accuracy objective)
    time_margin: float = 0.3  # relative time gap within which one timing cannot tell apart
    # the reference floor: once the lowest score is at or below it, every score at or below it
    # is eligible (see the module docstring), and under accuracy the search stops there; None:
    # no floor
    floor: float | None = None
    # without a reference floor, the data's rounding level (run_rule.data_round_off): the same
    # tie rule
    round_off: float | None = None
    # runs recorded before the floor entered the ranking: their floor only stops the search
    stop_only_floor: float | None = None

    @property
    def tie_floor(self) -> float | None:
        """The score at or below which everything counts as equally accurate: the reference
        floor, else the round-off floor (None: neither)."""
        return self.floor if self.floor is not None else self.round_off

    @property
    def reference_floor(self) -> float | None:
        """The reference floor the search stops at (ranking by it or, for older runs, not)."""
        return self.floor if self.floor is not None else self.stop_only_floor

    def stop_score(self) -> float | None:
        """The search stops once the lowest score is at or below this (accuracy objective only:
        under a time objective a solver at the floor can still get faster)."""
        if self.objective.by_time:
            return None
        for floor in (self.floor, self.stop_only_floor, self.round_off):
            if floor is not None:
                return floor
        return None

    def time_words(self, timings: int = 1) -> str:
        """The time rule as one formula, the same for judges, the reporter and the docs."""
        m = self.margin(timings)
        return (f"among eligible solvers, one whose time per sample t is at most (1 + {m:g}) x "
                f"t_fastest (t_fastest: the fastest eligible one's) counts as equally fast, and "
                f"among those the lower score wins; the margin {self.time_margin:g} is divided "
                f"by sqrt(k) for a median of k timings (comparing two solvers, k is the smaller "
                f"of their counts); each next rank is the same rule among the solvers left")

    def goal_words(self, metric: str = "score") -> tuple[str, str]:
        """A time objective in words, for the analysis, and for Genesis with the time rule the
        judges apply ("" under accuracy: the prompts are then the paper's)."""
        if not self.objective.by_time:
            return "", ""
        words = self.objective.words(metric)
        return words, (f"{words}; time is the evaluator's solver time per sample, and "
                       f"{self.time_words()}")

    @classmethod
    def of(cls, config, floor: float | None = None) -> Rule:
        """The rule of a run from its config (a SolveConfig, TournamentSettings, RoundInfo or
        the ``config.json`` dict); absent fields take the defaults (older runs). The floor is
        ``floor`` if given, else the config's ``ranking_floor``: a run folder records it in its
        first ``reference_audit`` event (:func:`pdesharp.synthesis.run_rule.ranking_floor`)."""
        get = config.get if isinstance(config, dict) else (lambda k: getattr(config, k, None))
        tie, margin = get("tie_tolerance"), get("time_margin")
        floor = get("ranking_floor") if floor is None else floor
        round_off = get("round_off")
        return cls(Objective.parse(get("objective")), 0.01 if tie is None else float(tie),
                   0.3 if margin is None else float(margin),
                   None if floor is None else float(floor),
                   None if round_off is None else float(round_off))

    def below_floor(self, lowest: float) -> bool:
        """Is the tie floor in force (known, and the lowest score at or below it)?"""
        return self.tie_floor is not None and lowest <= self.tie_floor

    def floor_kind(self, lowest: float | None) -> Literal["reference", "round_off"] | None:
        """Which floor is in force given the lowest score: the reference floor, the data's
        round-off floor (only where there is no reference floor), or None."""
        if lowest is None or not self.below_floor(lowest):
            return None
        return "reference" if self.floor is not None else "round_off"

    def at_floor(self, score: float | None) -> bool:
        """Is ``score`` at or below the tie floor (tied with every other such score once the
        floor is in force)?"""
        return score is not None and self.tie_floor is not None and score <= self.tie_floor

    def bar_is_floor(self, lowest: float | None) -> bool:
        """Is the objective's bar the reference floor itself (the floor widened it)? A solver
        above the bar is then not eligible because it is above the floor."""
        return (self.floor_kind(lowest) == "reference"
                and self.bar(lowest) == self.floor)  # type: ignore[arg-type]

    def same_score(self, a: float, b: float) -> bool:
        """Are two scores a tie (within the tie tolerance of the larger)? The report uses it to
        say a solver is at the reference's own error rather than better than it."""
        return abs(a - b) <= self.tie_tolerance * max(abs(a), abs(b))

    def bar(self, lowest: float) -> float | None:
        """The highest score that is eligible, given the lowest score; None when the target of
        ``fastest-below`` is not reached (the accuracy rule applies, with the floor)."""
        tie = lowest + abs(lowest) * self.tie_tolerance
        o = self.objective
        if o.kind == "fastest-within":
            bar = max(tie, lowest + abs(lowest) * (o.value - 1.0))
        elif o.kind == "fastest-below":
            # fastest-below:floor not yet given its floor (run_rule.build does): the tie floor
            target = o.value if o.value is not None else self.tie_floor
            if target is None or lowest > target:
                return None
            bar = target
        else:
            bar = tie
        return max(bar, self.tie_floor) if self.below_floor(lowest) else bar

    def unfloored(self) -> Rule:
        """The same rule without the floors (what the run would have picked without them)."""
        return replace(self, floor=None, round_off=None)

    def words(self, metric: str = "score", lowest: float | None = None,
              data_numbers: bool = True) -> str:
        """The objective in one sentence, plus the floor's rule when it is in force (without
        the round-off floor's value when ``data_numbers`` is off: the ``codepde`` facts level
        states no number derived from the data)."""
        text = self.objective.words(metric)
        if lowest is not None and self.below_floor(lowest):
            if self.floor is not None:
                text += "; " + floor_words(self.floor, metric)
            else:
                text += "; " + round_off_words(self.round_off if data_numbers else None, metric)
        return text

    def margin(self, timings: int = 1) -> float:
        """The time margin for a time resting on ``timings`` runs (a median of k)."""
        return self.time_margin / math.sqrt(max(1, timings))


def seconds(r: EvalResult) -> float:
    """The time a ranking compares: solver seconds per sample as the evaluator measured them
    (a re-timed solver's median), infinity when unknown."""
    s = r.seconds_per_sample if r.n_samples else r.solver_seconds
    return math.inf if s is None else s


def timings(r: EvalResult) -> int:
    """How many runs the result's time rests on (more than one after re-timing)."""
    return max(1, sum(t is not None for t in r.timings))


def eligible(scored: list[tuple[T, EvalResult]], rule: Rule) -> list[int]:
    """Indices of ``scored`` that the objective lets time decide between."""
    if not isinstance(rule, Rule):  # the signature before objectives took a tie tolerance
        raise TypeError(f"rankings take a ranking.Rule, not {rule!r} (a tie tolerance alone is "
                        "Rule(tie_tolerance=...); a run's rule is Rule.of(config))")
    lowest = min(r.score for _, r in scored)
    cap = rule.bar(lowest)
    if cap is None:  # fastest-below with the target not reached: the accuracy rule
        cap = replace(rule, objective=ACCURACY).bar(lowest)
    return [i for i, (_, r) in enumerate(scored) if r.score <= cap]


def _best_index(scored: list[tuple[T, EvalResult]], rule: Rule) -> int:
    return _pick(scored, eligible(scored, rule), rule)


def time_tied(scored: list[tuple[T, EvalResult]], pool: list[int], rule: Rule) -> list[int]:
    """The indices of ``pool`` the whole-call times cannot tell apart from the fastest (within
    the margin for the fewer runs of the two); all of ``pool`` when no time is known."""
    fastest = min(pool, key=lambda i: (seconds(scored[i][1]), i))
    t_min = seconds(scored[fastest][1])
    if math.isinf(t_min):
        return list(pool)
    k_min = timings(scored[fastest][1])
    return [i for i in pool if seconds(scored[i][1]) <= t_min * (
        1 + rule.margin(min(k_min, timings(scored[i][1]))))]


def _pick(scored: list[tuple[T, EvalResult]], pool: list[int], rule: Rule) -> int:
    """The time rule among the indices ``pool``: the lowest score among those not clearly
    slower than the fastest."""
    close = time_tied(scored, pool, rule)
    # re-timed finalists the whole calls cannot tell apart: their warm calls can (the
    # per-sample part, without the one-off work that dominates a small solver's call)
    warm = [scored[i][1].warm_per_sample for i in close]
    if len(close) > 1 and None not in warm:
        k = min(len(scored[i][1].warm_timings) or 1 for i in close)
        close = [i for i, w in zip(close, warm) if w <= min(warm) * (1 + rule.margin(k))]
    # the lower score, then (equal scores: the same numbers) the faster, then the earlier
    return min(close, key=lambda i: (scored[i][1].score, seconds(scored[i][1]), i))


def pick_best(scored: list[tuple[T, EvalResult]], rule: Rule) -> tuple[T, EvalResult]:
    """The best of ``scored`` (items with an ok result and a score, in a fixed order)."""
    return scored[_best_index(scored, rule)]


def rank(scored: list[tuple[T, EvalResult]], rule: Rule) -> list[tuple[T, EvalResult]]:
    """``scored`` best first: the solvers eligible in the whole list (the objective's bar set by
    its lowest score), each next one by the time rule among those left; then the others, ranked
    by the accuracy rule (the tie of the best of the rest first, and so on). Rank 1 is
    :func:`pick_best`; an eligible solver is never ranked below one that is not."""
    return [scored[i] for i in _rank_indices(scored, rule)]


def _rank_indices(scored: list[tuple[T, EvalResult]], rule: Rule) -> list[int]:
    if not scored:
        return []
    pool = eligible(scored, rule)
    out, rest = [], list(pool)
    while rest:
        i = _pick(scored, rest, rule)
        out.append(i)
        rest.remove(i)
    others = [i for i in range(len(scored)) if i not in pool]
    accuracy = Rule(tie_tolerance=rule.tie_tolerance, time_margin=rule.time_margin)
    return out + [others[j] for j in _rank_indices([scored[i] for i in others], accuracy)]


def lowest(scored: list[tuple[T, EvalResult]]) -> tuple[T, EvalResult]:
    """The lowest score, whatever the objective (the earlier entry on equal scores)."""
    return min(enumerate(scored), key=lambda p: (p[1][1].score, p[0]))[1]


def decided_by_time(scored: list[tuple[T, EvalResult]], rule: Rule) -> bool:
    """Does the pick depend on time? (Two or more eligible solvers with a known time.)"""
    return sum(not math.isinf(seconds(scored[i][1])) for i in eligible(scored, rule)) >= 2


def decided_by_floor(scored: list[tuple[T, EvalResult]], rule: Rule) -> bool:
    """Did the floor change the pick? (The rule without its floor picks another solver.)"""
    if not scored or rule.tie_floor is None:
        return False
    return _best_index(scored, rule) != _best_index(scored, rule.unfloored())


@dataclass(frozen=True)
class Standing:
    """What saturation compares between rounds: the lowest score and the objective's pick."""

    lowest: float
    score: float  # the pick's score
    seconds: float  # the pick's time per sample (inf when unknown)
    target_met: bool  # fastest-below: a solver reached the target


def standing(scored: list[tuple[T, EvalResult]], rule: Rule) -> Standing | None:
    if not scored:
        return None
    _, pick = pick_best(scored, rule)
    low = lowest(scored)[1].score
    return Standing(lowest=low, score=pick.score, seconds=seconds(pick),
                    target_met=rule.bar(low) is not None)


def improved(rule: Rule, before: Standing | None, after: Standing | None,
             factor: float) -> bool:
    """Did the round improve, in the objective's currency? (See the module docstring.)"""
    if after is None:
        return False
    if before is None:
        return True
    # at the data's round-off a lower score is not an improvement: only a score that was above
    # the round-off floor can improve (the reference floor stops the search instead)
    at_round_off = rule.round_off is not None and rule.tie_floor == rule.round_off \
        and before.lowest <= rule.round_off
    better_score = after.lowest < factor * before.lowest and not at_round_off
    if not rule.objective.by_time:
        return better_score
    faster = after.seconds < min(factor, 1.0 / (1.0 + rule.time_margin)) * before.seconds
    if rule.objective.kind == "fastest-below":
        if not after.target_met:
            return better_score
        margin = better_score and before.lowest > (rule.tie_floor or 0.0)
        return faster or not before.target_met or margin
    return better_score or faster


def no_gain_words(rule: Rule, factor: float, target_met: bool) -> str:
    """What did not happen in a round :func:`improved` counted as no gain, with its factors in
    numbers (a pick 0.86x as slow is faster by the factor 0.9, yet inside a 30 % margin)."""
    o, m = rule.objective, rule.time_margin
    faster = (f"the objective's pick's time did not fall below {min(factor, 1 / (1 + m)):.3g}x "
              f"its previous (the factor {factor:g}, past the {100 * m:g} % timing margin)")
    if o.kind == "fastest-within":
        return f"the best score did not improve by the factor {factor:g}, and {faster}"
    if o.kind == "fastest-below" and target_met:
        return (f"{faster}, and the lowest score did not fall by the factor {factor:g} from "
                "above the floor")
    if o.kind == "fastest-below":
        return ("the best score (no solver below the target yet) did not improve by the factor "
                f"{factor:g}")
    return f"the best score did not improve by the factor {factor:g}"
