"""The configuration of a run (``config.json``; ``pdesharp resume`` reloads it).

Its own module so that the roles (:mod:`pdesharp.rolesets`, :mod:`pdesharp.builtin`), the bench
and the pipeline can all read it without importing one another.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from pdesharp.facts import FactsLevel
from pdesharp.genesis import GenesisMode
from pdesharp.llm.presets import BUILTIN, is_builtin
from pdesharp.records import Feedback
from pdesharp.synthesis.judges import CODE_BUDGET
from pdesharp.synthesis.ranking import Objective


class SolveConfig(BaseModel):
    """Everything a run depends on; saved as the run's ``config.json`` (resume reloads it)."""

    task: str = ""  # built-in task name or spec path, for `pdesharp resume`
    model: str = BUILTIN  # "provider:model", "builtin", or "scripted:PATH" (testing aid)
    judges: list[str] | None = None  # three model specs; default: the main model three times
    candidates: int = Field(32, ge=1)
    feedback: Feedback = "nrmse"
    max_rounds: int = Field(4, ge=1)
    rejudge_cycles: int = Field(1, ge=0)
    saturation_factor: float = Field(0.9, gt=0, le=1)
    patience: int = Field(1, ge=1)
    debug_attempts: int = Field(2, ge=0)
    workers: int = Field(2, ge=1)
    max_usd: float | None = None
    max_tokens: int | None = None
    max_evals: int | None = None
    seed: int = 0  # recorded only: the pipeline makes no random choices
    no_cache: bool = False
    out: str = "runs"
    data_dir: str | None = None
    dev_data: str | None = None
    test_data: str | None = None
    timeout: float | None = None
    max_samples: int | None = None  # evaluate on the first samples only (quick runs, tests)
    convergence: bool = True  # run CodePDE's empirical convergence test in each evaluation
    device: Literal["cpu", "cuda"] = "cpu"  # what solvers may use inside the sandbox
    unsafe_no_isolation: bool = False  # run solvers with no sandbox (recorded everywhere)
    executor: Literal["local", "ray"] = "local"  # where solvers run (resume uses the same)
    ray_address: str | None = None  # "auto", "ray://host:port"; None: a local Ray instance
    # Scores within this relative distance of the best count as a tie, won by the faster
    # solver (solver_seconds): a 0.07 % nRMSE edge is noise next to a 3x run-time difference.
    tie_tolerance: float = Field(0.01, ge=0)
    # What the run optimises (pdesharp.synthesis.ranking): "accuracy" (the lowest score, as in
    # the paper), "fastest-within:FACTOR" or "fastest-below:TARGET". Time decides only past
    # time_margin (relative); at the end, close finalists are re-timed `retime` more times each
    # (counted evaluations, one at a time; default 2 under every objective) and their median
    # times decide (pdesharp.synthesis.timing).
    objective: str = "accuracy"
    time_margin: float = Field(0.3, ge=0)
    retime: int | None = Field(None, ge=0)  # None: 2 whenever time decides (timing.py)
    base_url: str | None = None  # OpenAI-compatible endpoint override
    llm: dict = Field(default_factory=dict)  # make_model options (api_key_env, timeout, ...)
    prices: str | None = None  # price table YAML overriding the shipped one
    # What the prompts tell the models about the task (pdesharp.facts): "codepde" = exactly
    # what CodePDE's prompts give (comparisons with published numbers), "full" = everything.
    task_facts: FactsLevel = "full"
    genesis: GenesisMode = "independent"  # Genesis sampling (pdesharp.genesis)
    prompt_budget: int = Field(CODE_BUDGET, ge=0)  # characters of solver code per judge message
    # Reference audit (pdesharp.audit): "auto" uses a cached audit of the dev data and computes
    # a missing one when it is cheap (pdesharp.audit.cost: a minute or less), "compute" computes
    # one first if none is cached (seconds to minutes), "off" ignores audits.
    audit: Literal["auto", "compute", "off"] = "auto"
    # rank, stop and pick by the floors (the audit's reference floor, else the data's round-off
    # floor: pdesharp.synthesis.ranking); None: on, for the built-in analyst and models alike;
    # False: the paper's set-up (the lowest score alone)
    floor_saturation: bool | None = None
    floor_factor: float | None = Field(None, gt=0)  # floor = factor x reference error;
    #                                                 None: 1 / saturation_factor
    # every prompt after the audit states the reference's own error (pdesharp.audit.runs);
    # None: whenever floor saturation is on; True: under --no-floor-saturation too
    judges_see_reference_error: bool | None = None

    @field_validator("model", mode="before")
    @classmethod
    def _no_model_is_builtin(cls, v):
        """No model (None or empty) means the built-in analyst, as on the command line."""
        return BUILTIN if v is None or not str(v).strip() else v

    @field_validator("objective", mode="before")
    @classmethod
    def _objective_spec(cls, v):
        """Validated and written in one form ("fastest-within:10"); errors say what is accepted."""
        return str(Objective.parse(v))

    @model_validator(mode="after")
    def _floor_target_has_a_floor(self):
        """``fastest-below:floor`` needs the floors: nRMSE feedback (a residual is not compared
        with the reference) and floor saturation on."""
        if Objective.parse(self.objective).at_floor and (
                self.feedback != "nrmse" or self.floor_saturation is False):
            raise ValueError(
                "--objective fastest-below:floor takes its target from the reference's own "
                "error, which needs --feedback nrmse and floor saturation on (drop "
                "--no-floor-saturation), or give the target as a number: "
                "--objective fastest-below:1e-6")
        return self

    @property
    def metric(self) -> str:
        """What a score is called in words: the nRMSE, or (residual feedback) a score."""
        return "nRMSE" if self.feedback == "nrmse" else "score"

    @property
    def builtin(self) -> bool:
        return is_builtin(self.model)
