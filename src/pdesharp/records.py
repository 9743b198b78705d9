"""Typed records that cross module boundaries: evaluations, analysis facts, candidates.

They are pydantic models so that they serialise to the run store and to JSON unchanged.
"""

from __future__ import annotations

import statistics
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Split = Literal["dev", "test"]
Feedback = Literal["nrmse", "residual", "none"]
EvalStatus = Literal["ok", "error", "timeout", "memory", "nan", "shape"]


class EvalResult(BaseModel):
    """The outcome of one solver evaluation (one *counted* execution of a solver file)."""

    model_config = ConfigDict(extra="forbid")

    status: EvalStatus
    split: Split
    feedback: Feedback
    n_samples: int = 0
    nrmse: float | None = None  # CodePDE's formula; None with feedback "none"/"residual" on no data
    nrmse_per_sample: list[float] = Field(default_factory=list)
    # each output field scored alone (same formula); the joint score above stays CodePDE's
    nrmse_per_field: dict[str, float] = Field(default_factory=dict)
    residual: float | None = None  # normalised PDE residual of the prediction (no data needed)
    # nRMSE against the converged solution of a reference audit (pdesharp.audit), when the run
    # has one; for the report only, never shown to a model
    nrmse_converged: float | None = None
    convergence_order: float | None = None  # CodePDE's empirical rate; None if the test failed
    convergence_note: str = ""  # why the convergence test failed, if it did
    # Solver wall time on the split, measured by the evaluator (never by the solver): from the
    # sealed child's "ready", before the solver module is imported, to the end of its run. The
    # one time the system uses (ranking, report, summary); per sample: seconds_per_sample.
    solver_seconds: float | None = None
    # Re-timed code (pdesharp.synthesis.timing): solver_seconds of the runs of it on the split
    # its time rests on, the first run first (the search's own timing, unless it ran beside
    # another evaluation: then ``shared_timing``), None for a run that failed; solver_seconds
    # is then their median.
    timings: list[float | None] = Field(default_factory=list)
    shared_timing: float | None = None  # the search's timing, left out: it shared the cores
    # A warm timing (Evaluator.evaluate(warm=True)): the first sample in one call, the other
    # ``warm_samples`` in a second whose inputs the sandbox's watchdog held back until the
    # runner asked (pdesharp.evaluate.sealed): that call's time alone, as a script calling the
    # solver again pays it; solver_seconds is both calls' (import and first call included)
    warm_seconds: float | None = None
    warm_samples: int = 0
    # a re-timed solver's warm calls (synthesis.timing: its warm re-timing runs), seconds per
    # sample each; their median is warm_per_sample
    warm_timings: list[float] = Field(default_factory=list)
    wall_seconds: float | None = None  # the whole evaluation (sandboxes, scoring, convergence)
    peak_memory_mb: float | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    # one-line summary of a failure in pdesharp's own words (never text the solver wrote)
    message: str = ""
    error_type: str = ""  # the class name of the exception the solver raised, an identifier
    # what the solver's process said about itself (its exception text, notes): untrusted, like
    # stdout_tail and stderr_tail; shown to a model only inside a prompt block (untrusted.py)
    detail: str = ""
    plot_path: str | None = None
    isolation: str = ""  # the sandbox mechanism the solver ran under ("none": unsafe)
    host: str = ""  # the Ray node that ran the solver ("": this machine)
    retries: int = 0  # re-submissions after the machine running it was lost (counted once)

    @property
    def seconds_per_sample(self) -> float | None:
        if self.solver_seconds is None or not self.n_samples:
            return None
        return self.solver_seconds / self.n_samples

    @property
    def warm_per_sample(self) -> float | None:
        """The warm call's time per sample: the median over ``warm_timings``, else this run's
        own (None without a warm timing)."""
        if self.warm_timings:
            return statistics.median(self.warm_timings)
        if self.warm_seconds is None or not self.warm_samples:
            return None
        return self.warm_seconds / self.warm_samples

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def score(self) -> float | None:
        """The number that drives selection for this result's feedback mode (lower is better)."""
        if not self.ok:
            return None
        if self.feedback == "nrmse":
            return self.nrmse
        if self.feedback == "residual":
            return self.residual
        return None

    def summary_line(self) -> str:
        """CodePDE-style one-line result, as shown to models in refinement."""
        if not self.ok:
            return f"status: {self.status} | {self.message}"
        parts = []
        if self.feedback == "nrmse" and self.nrmse is not None:
            parts.append(f"nRMSE: {self.nrmse:.3e}")
        if self.feedback == "residual" and self.residual is not None:
            parts.append(f"PDE residual: {self.residual:.3e}")
        if self.solver_seconds is not None:
            parts.append(f"Time: {self.solver_seconds:.2f}s")
        if self.convergence_order is not None:
            parts.append(f"Average convergence rate: {self.convergence_order:.3f}")
        return " | ".join(parts) if parts else "status: ok (no score: feedback 'none')"


Route = Literal["analytical", "transformation", "hybrid", "numerical"]


class Classification(BaseModel):
    time_order: int | None = None  # highest time-derivative order; None for steady problems
    space_order: int  # highest spatial-derivative order
    linear: bool
    pde_type: Literal["hyperbolic", "parabolic", "elliptic", "mixed", "dispersive", "other"]
    boundary: str
    notes: str = ""


class StabilityBound(BaseModel):
    """An explicit time-step bound, symbolic and evaluated on the data's bounds."""

    scheme: str  # e.g. "explicit upwind / Rusanov FV", "explicit central diffusion"
    expression: str  # SymPy-parsable in dx, dy, and the task's parameters / field bounds
    value: float | None = None  # evaluated at the task's grid and field bounds
    note: str = ""


STEP_NUMBERS = {"classification": 1, "analytical": 2, "transformation": 3, "decomposition": 4,
                "stability": 5}  # the five Analysis steps, in the order they are asked


class AnalysisStep(BaseModel):
    """One of the five Analysis steps: the prose answer and the decision it took."""

    name: Literal["classification", "analytical", "transformation", "decomposition", "stability"]
    text: str
    applies: bool | None = None  # steps 2-4: does this route apply?
    facts: dict = Field(default_factory=dict)
    skipped: str = ""  # why the step was not asked (an earlier step decided the route)


class Analysis(BaseModel):
    """The structured result of the Analysis stage (LLM or built-in analyst)."""

    classification: Classification
    route: Route = "numerical"
    steps: list[AnalysisStep] = Field(default_factory=list)
    stability: list[StabilityBound] = Field(default_factory=list)
    recommended_schemes: list[str] = Field(default_factory=list)
    key_facts: list[str] = Field(default_factory=list)  # short lines for prompts and the report
    source: str = "llm"  # "llm" or "builtin"


class Disagreement(BaseModel):
    """An LLM analysis fact that contradicts the built-in symbolic analysis."""

    fact: str  # e.g. "classification.pde_type", "stability[explicit diffusion].value"
    llm: str
    builtin: str
    severity: Literal["info", "warning", "error"] = "warning"
    note: str = ""


Origin = Literal["genesis", "patch", "debug", "baseline", "seed"]


class Candidate(BaseModel):
    """One solver in the pool: its code and where it came from."""

    id: str
    code: str
    origin: Origin
    parents: list[str] = Field(default_factory=list)
    judge: str | None = None
    round: int = 0
    cycle: int = 0
    title: str = ""  # short name of the design ("WENO5 + SSPRK3, CFL 0.4")
    justification: str = ""
    static_check: str = "ok"  # "ok" or the reason the free static check failed
