"""The Task: one PDE to solve, as a validated record.

A task is read from YAML (the five built-in tasks live in ``pdesharp/tasks/*.yaml``) or built in
Python. It carries everything the rest of the pipeline needs: prose for a language model, the
machine-readable equation, the parameters *as passed to the solver*, the domain and boundary
conditions, the solver's call signature, where the reference data lives, and evaluation settings.
"""

from __future__ import annotations

from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import keyword
import math
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pdesharp.untrusted import MAX_YAML_BYTES, task_name, yaml_data

if TYPE_CHECKING:  # SymPy (through pdesharp.equation) is imported once an equation is parsed
    from pdesharp.equation import ParsedSystem


class TaskError(ValueError):
    """A task spec is malformed or cannot be found; the message says what to fix."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EquationSpec(_Model):
    """The PDE in residual form, one string per equation (see :mod:`pdesharp.equation`)."""

    unknowns: list[str]
    equations: list[str]
    space: list[str] = Field(default_factory=lambda: ["x"])
    time: str | None = "t"
    coefficients: list[str] = Field(default_factory=list)
    constants: dict[str, float] = Field(
        default_factory=dict,
        description="Fixed constants of the PDE that are not solver arguments (e.g. Gamma).",
    )


class ArgSpec(_Model):
    """One solver argument and where the evaluator takes it from."""

    name: str
    kind: Literal["initial", "coefficient", "time", "parameter", "grid"]
    field: str | None = None  # unknown (initial) or coefficient name; parameter name if omitted
    # (a "grid" argument takes no field: it is the output grid's coordinates, see pdesharp.grid)
    doc: str = ""

    @field_validator("name")
    @classmethod
    def _python_name(cls, v: str) -> str:
        if not v.isidentifier() or keyword.iskeyword(v):
            raise ValueError(f"solver argument {v!r} is not a Python argument name"
                             + (f"; name it {v}_ (with field: {v})" if keyword.iskeyword(v) else ""))
        return v


class SolverSpec(_Model):
    """The solver's Python interface: ``def <name>(<args>) -> <returns>``."""

    name: str = "solver"
    args: list[ArgSpec]
    returns: list[str]  # unknown names in return order; a single name means a bare array
    template: str  # Python source of the stub with its docstring, shown to the model

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(a.name for a in self.args)})"


class CodePDEStatement(_Model):
    """The task as CodePDE's prompts state it (``--task-facts codepde``), in this project's own
    words: its description and solver template, nothing more. Optional: a task without one is
    stated at that level by its own ``title``, ``description`` and ``solver.template``."""

    title: str  # a neutral one-line name (the task's own title may name data or methods)
    description: str
    template: str  # same function name and argument names as ``solver.template``


class SplitSpec(_Model):
    """Where one split's reference data can be found.

    ``files`` are candidate paths relative to the data directory, tried in order; the first that
    exists is used. ``samples`` optionally restricts to a slice of the file ("first:100",
    "last:50"), which is how dev/test are cut from a single PDEBench file.
    """

    files: list[str]
    samples: str | None = None

    @field_validator("samples")
    @classmethod
    def _check_samples(cls, v: str | None) -> str | None:
        if v is None:
            return v
        head, _, n = v.partition(":")
        if head not in ("first", "last") or not n.isdigit() or int(n) < 1:
            raise ValueError(f"samples must look like 'first:100' or 'last:50', got {v!r}")
        return v


class DownloadSpec(_Model):
    """Published sources of the reference data (used by ``pdesharp data download``)."""

    codepde_dev: str | None = None  # path inside the Hugging Face dataset LDA1020/codepde-data
    codepde_test: str | None = None
    pdebench_file: str | None = None  # PDEBench Train file name (see PDEBench's URL list)
    pdebench_url: str | None = None
    pdebench_md5: str | None = None


class DataSpec(_Model):
    """HDF5 layout of the reference data and where each split lives."""

    fields: dict[str, str]  # unknown name -> HDF5 key (e.g. u -> tensor)
    coefficients: dict[str, str] = Field(default_factory=dict)  # coefficient name -> HDF5 key
    t_key: str | None = "t-coordinate"
    x_key: str | None = "x-coordinate"
    dev: SplitSpec | None = None
    test: SplitSpec | None = None
    download: DownloadSpec = Field(default_factory=DownloadSpec)


class ConvergenceSpec(_Model):
    """CodePDE's empirical convergence test (see docs/tasks.md)."""

    kind: Literal["time_1d", "cns_1d", "downsample_2d", "none"] = "none"
    grids: list[int] = Field(default_factory=list)  # time_1d/cns_1d: nx values
    rates: list[int] = Field(default_factory=list)  # downsample_2d: downsampling factors
    batch: int = 5
    compare: Literal["finest", "adjacent"] = "finest"


class EvaluationSpec(_Model):
    timeout: float = 1200.0  # seconds for the whole evaluation of one solver, as in CodePDE
    memory_mb: int = 8192
    convergence: ConvergenceSpec = Field(default_factory=ConvergenceSpec)
    plot_sample: int = 2
    # which stored frames the nRMSE compares: all of them, t = 0 included (CodePDE's formula,
    # the default), or only the final one (benchmarks that score the solution at the end time,
    # e.g. PDEAgent-Bench's transient cases); left out of dumps when it is the default
    score_frames: Literal["all", "final"] = Field("all", exclude_if=lambda v: v == "all")


class GeneratorSpec(_Model):
    """Optional: how the generic reference generator draws initial data (see docs/tasks.md).

    Only used by :mod:`pdesharp.data.generate.generic` for tasks without a dedicated generator.
    """

    modes: int = Field(4, ge=1, le=64)  # highest wavenumber (per axis) of the random modes
    decay: float = Field(2.0, ge=0.0)  # mode amplitudes fall off like |k|^-decay
    ranges: dict[str, tuple[float, float]] = Field(default_factory=dict)  # unknown -> [lo, hi]
    oversample: int = Field(4, ge=1, le=16)  # internal grid = oversample x output grid


class Task(_Model):
    """A PDE task. See ``docs/tasks.md`` for the YAML format."""

    name: str
    title: str
    description: str  # prose for a language model
    equation: EquationSpec
    parameters: dict[str, float] = Field(default_factory=dict)  # as passed to the solver
    domain: dict[str, tuple[float, float]]  # axis -> (lo, hi)
    grid: Literal["cell_centres", "nodes", "periodic_nodes"] = "cell_centres"
    boundary: str  # e.g. "periodic", "dirichlet: u = 0"
    time_span: tuple[float, float] | None = None
    n_frames: int | None = None  # stored frames including t = 0
    initial_condition: str = ""  # prose; how the data's initial conditions were drawn
    # prose; how the reference data were computed (told to models with --task-facts full);
    # empty when the spec does not know, and then the prompts say so
    reference: str = Field("", exclude_if=lambda v: not v)
    solver: SolverSpec
    data: DataSpec
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)
    notes: list[str] = Field(default_factory=list)  # comparability notes for humans
    # What CodePDE's prompts give for this task (``--task-facts codepde``); left out when unset.
    codepde: CodePDEStatement | None = Field(None, exclude_if=lambda v: v is None)
    # Optional settings of the generic data generator; left out of dumps when unset.
    generator: GeneratorSpec | None = Field(None, exclude_if=lambda v: v is None)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        """Checked where it is read: a name becomes part of run folder names (issue 25)."""
        return task_name(v)

    @model_validator(mode="after")
    def _consistent(self) -> "Task":
        eq = self.equation
        for axis in eq.space:
            if axis not in self.domain:
                raise ValueError(f"domain has no range for space axis {axis!r}")
        for axis, (lo, hi) in self.domain.items():
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"domain range of {axis!r} must be finite with lo < hi, got"
                                 f" [{lo}, {hi}]")
        for name in self.solver.returns:
            if name not in eq.unknowns:
                raise ValueError(f"solver returns {name!r}, which is not an unknown {eq.unknowns}")
        for name in self.data.fields:
            if name not in eq.unknowns:
                raise ValueError(f"data field {name!r} is not an unknown {eq.unknowns}")
        for a in self.solver.args:
            if a.kind == "parameter" and (a.field or a.name) not in self.parameters:
                raise ValueError(f"solver argument {a.name!r} names no parameter in {list(self.parameters)}")
            if a.kind == "initial" and a.field not in eq.unknowns:
                raise ValueError(f"solver argument {a.name!r}: initial field {a.field!r} is not an unknown")
            if a.kind == "coefficient" and a.field not in eq.coefficients:
                raise ValueError(f"solver argument {a.name!r}: {a.field!r} is not a coefficient")
        _check_grid_arguments(self)
        for name, (lo, hi) in (self.generator.ranges.items() if self.generator else ()):
            if name not in eq.unknowns:
                raise ValueError(
                    f"generator.ranges names {name!r}, which is not an unknown {eq.unknowns}")
            if not lo < hi:
                raise ValueError(f"generator.ranges[{name!r}] needs lo < hi, got [{lo}, {hi}]")
        if self.codepde is not None:
            problem = _template_problem(self.codepde.template, self.solver)
            if problem:
                raise ValueError(f"codepde.template: {problem}")
        if eq.time is not None and self.time_span is None:
            raise ValueError("a time-dependent task needs time_span")
        from pdesharp.equation import EquationError

        try:
            self.system
        except EquationError as exc:
            raise ValueError(str(exc)) from exc
        return self

    @cached_property
    def system(self) -> ParsedSystem:
        """The parsed equation system (parameters and constants as symbols)."""
        from pdesharp.equation import parse_system

        eq = self.equation
        return parse_system(
            eq.equations,
            eq.unknowns,
            space=eq.space,
            time=eq.time,
            coefficients=eq.coefficients,
            parameters=list(self.parameters) + list(eq.constants),
        )

    @property
    def steady(self) -> bool:
        return self.equation.time is None

    @property
    def batched(self) -> bool:
        """Does the solver take a batch of inputs (initial data or coefficient fields)? If not
        (a steady task whose inputs are the grid and parameters), there is one problem: the
        solver returns the field without a batch axis, see docs/tasks.md."""
        return any(a.kind in ("initial", "coefficient") for a in self.solver.args)

    @property
    def constants(self) -> dict[str, float]:
        """Every numeric value the symbolic equation needs: parameters and fixed constants."""
        return {**self.equation.constants, **self.parameters}

    def to_yaml(self) -> str:
        return yaml.dump(self.model_dump(mode="json"), Dumper=_BlockDumper, sort_keys=False,
                         allow_unicode=True, width=100)


def _template_problem(template: str, spec: SolverSpec) -> str:
    """Why ``template`` does not define ``spec``'s function with its argument names ("" if it
    does): a second template must not change the interface the evaluator calls."""
    import ast

    try:
        tree = ast.parse(template)
    except SyntaxError as exc:
        return f"not valid Python (line {exc.lineno}: {exc.msg})"
    wanted = [a.name for a in spec.args]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == spec.name:
            got = [a.arg for a in node.args.posonlyargs + node.args.args]
            return "" if got == wanted else (f"{spec.name} takes ({', '.join(got)}), the solver "
                                             f"spec says ({', '.join(wanted)})")
    return f"defines no function {spec.name}"


def _check_grid_arguments(task: Task) -> None:
    """A ``grid`` argument (the output grid's coordinates) is one at most and names no field."""
    grids = [a for a in task.solver.args if a.kind == "grid"]
    if len(grids) > 1:
        raise ValueError(f"solver arguments {[a.name for a in grids]}: at most one of kind 'grid'")
    for a in grids:
        if a.field is not None:
            raise ValueError(f"solver argument {a.name!r} of kind 'grid' takes no field (it is the"
                             " output grid's coordinates: x in 1D, (x, y) in 2D)")


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (descriptions, templates) as readable ``|`` blocks."""


def _str_presenter(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_presenter)


def _format_validation(err: ValidationError, source: str) -> str:
    lines = [f"invalid task spec {source}:"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        lines.append(f"  - {loc}: {e['msg']}")
    return "\n".join(lines)


def task_from_dict(data: dict, source: str = "<dict>") -> Task:
    if not isinstance(data, dict):
        raise TaskError(f"invalid task spec {source}: expected a mapping at the top level")
    try:
        data = _long_form(data, source)
        return Task.model_validate(data)
    except (ValidationError, TaskError) as err:
        from pdesharp.expressible import verdict

        said = verdict(str(data.get("name", source)), data)
        if said is not None:  # a construct no task can express: one line naming it
            exc = TaskError(said)
            exc.inexpressible = True
            raise exc from None
        if isinstance(err, TaskError):
            raise
        raise TaskError(_format_validation(err, source)) from None


def _long_form(data: dict, source: str) -> dict:
    """The short form's omitted keys derived (:mod:`pdesharp.task_short`); the long form as is."""
    from pdesharp.task_short import ShortFormError, expand
    from pdesharp.task_values import ValueFormulaError, resolve_values

    try:
        return expand(resolve_values(data))
    except (ShortFormError, ValueFormulaError) as exc:
        raise TaskError(f"invalid task spec {source}:\n  - {exc}") from None


def load_task_file(path: str | Path) -> Task:
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_YAML_BYTES + 1)  # a task file may be anyone's: read it bounded
    except OSError as exc:
        raise TaskError(f"cannot read task spec {path}: {exc.strerror}") from None
    try:
        data = yaml_data(raw)
    except UnicodeDecodeError:
        raise TaskError(f"task spec {path} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise TaskError(f"task spec {path} is not valid YAML: {exc}") from None
    return task_from_dict(data, str(path))


def builtin_task_names() -> list[str]:
    folder = resources.files("pdesharp") / "tasks"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_task(name_or_path: str | Path) -> Task:
    """A built-in task by name, a YAML spec by path, or a shipped example task by name."""
    text = str(name_or_path)
    if text in builtin_task_names():
        ref = resources.files("pdesharp") / "tasks" / f"{text}.yaml"
        return task_from_dict(yaml_data(ref.read_bytes()), f"built-in task {text!r}")
    if text.endswith((".yaml", ".yml")) or Path(text).exists():
        return load_task_file(text)
    from pdesharp.examples import example_path

    example = example_path(text)
    if example is not None:
        return load_task_file(example)
    raise TaskError(
        f"unknown task {text!r}: built-in tasks are {', '.join(builtin_task_names())};"
        " `pdesharp tasks` lists the example tasks too; or give the path of a YAML spec"
        " (`pdesharp tasks new` writes one; see docs/tasks.md)"
    )
