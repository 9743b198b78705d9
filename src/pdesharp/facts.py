"""The task facts: what a solver author is told about a task, at a chosen level of detail.

Every prompt that asks for code or judges it (PDE-SHARP's and the baselines') carries the same
facts block, rendered from one :class:`TaskFacts` record, so a bench compares methods and not the
information they were given. Two levels (``--task-facts``, recorded in the run and the bench):

``codepde``
    Exactly what CodePDE's prompts give for the task, in this project's words: the task's
    ``codepde`` statement (title, description, solver template; the five built-in tasks have
    one, with CodePDE's own oddities kept, e.g. Burgers' "ν = 0.01"), or, for a task without
    one, its own description and template. No grid convention, reference method, data values,
    evaluation details or notes. Around it every prompt still names the installed libraries,
    the interface rules and that the score is an nRMSE (lower is better), as CodePDE's do. For
    comparisons with published numbers.
``full`` (the default)
    Everything the task spec and the data actually used say: boundary conditions, parameter
    values as passed, time span, how the initial data were drawn, how the reference was computed
    (only if the spec records it), the spec's notes, the exact call the evaluator makes (batch
    size, grid, frames, dtypes, read off the dev file), the refinement study it also runs, the
    limits (time, memory, threads, GPU) and the precise score definition.

Facts come from the task and from the dev split's *shapes and coordinates* and the solver's
*inputs* (initial frames, coefficients); no prompt ever contains a value read from the reference
solution, and nothing refers to a file the model cannot see. The one number about the reference
every level states, once an audit has measured it, is its own error against the PDE
(:attr:`TaskFacts.reference_error`); ``codepde`` states no storage type and no number derived
from the data's values (the round-off floor's value included).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from pdesharp.task import Task

FactsLevel = Literal["codepde", "full"]
FACTS_LEVELS: tuple[str, ...] = ("codepde", "full")


class ArgFacts(BaseModel):
    """One solver argument as the evaluator passes it on the dev split."""

    name: str
    kind: str
    shape: list[int] = Field(default_factory=list)  # arrays only
    dtype: str = ""
    value: float | None = None  # parameters
    text: str = ""  # how to read a structured argument (a 2D grid's tuple), in words


class DataFacts(BaseModel):
    """The dev split as the evaluator uses it: shapes, grid and times (never values)."""

    n_samples: int
    grid: dict[str, int]  # space axis -> points
    n_frames: int | None = None
    t_first: float | None = None
    t_last: float | None = None
    dt_out: float | None = None  # uniform output spacing, None if the times are not uniform
    args: list[ArgFacts] = Field(default_factory=list)
    output_shape: list[int] = Field(default_factory=list)
    output_dtype: str = ""  # the reference's dtype (predictions are compared with it)
    # symbols stability bounds may use, all read off the solver's inputs, never the reference
    # solution: "<field>max" (max |field| of the initial frames) and "<field>min" (their
    # smallest value: a sound speed or a viscous limit needs the smallest density), "umax" /
    # "umin" for a single unknown, "<coefficient>max" / "<coefficient>min", "n<axis>" (points)
    scales: dict[str, float] = Field(default_factory=dict)


class TaskFacts(BaseModel):
    """What the prompts say about the task beyond its description (see the module docstring)."""

    level: FactsLevel = "full"
    data: DataFacts | None = None
    data_note: str = ""  # why there are no data facts (no dev file found, unreadable, ...)
    timeout_s: float | None = None  # the whole evaluation of one solver
    memory_mb: int | None = None
    threads: int = 1  # BLAS/OpenMP threads the solver's process gets
    gpu: bool = False
    convergence: bool = True  # the evaluator runs the task's refinement study
    # a test split exists, so the winner is scored once on held-out data (None: not looked up;
    # a prompt promises that final test only when this is True)
    test_split: bool | None = None
    # the reference's own error (nRMSE against the PDE's solution) from the run's audit
    # (pdesharp.audit.runs.told_error), set once the audit is known; None: not known or not
    # told. Stated at every level, ``codepde`` included: it is a property of the reference
    # (what an exact solver scores), not a value of its arrays, and without it a score below
    # it reads as progress (issue 24)
    reference_error: float | None = None
    # that number is what the dev file states about itself (its generator's estimate), not an
    # audit's measurement: the prompts say whose number it is
    reference_stated: bool = False

    @property
    def full(self) -> bool:
        return self.level == "full"

    @property
    def numbers(self) -> bool:
        """Whether prompts may state numbers read off the data (scales, bounds evaluated at
        the data's grid): ``full`` only, since CodePDE's prompts state none."""
        return self.full and self.data is not None

    @classmethod
    def from_spec(cls, task: Task, level: FactsLevel = "full",
                  note: str = "the data were not inspected") -> "TaskFacts":
        """The facts the task spec alone gives (no data read), with its evaluation limits."""
        return cls(level=level, data_note=note, timeout_s=float(task.evaluation.timeout),
                   memory_mb=task.evaluation.memory_mb)


def build_facts(task: Task, level: FactsLevel = "full", *, data_dir=None, dev_data=None,
                test_data=None, max_samples: int | None = None, timeout: float | None = None,
                memory_mb: int | None = None, convergence: bool = True, threads: int = 1,
                gpu: bool = False) -> TaskFacts:
    """The facts for ``task`` with the evaluator's settings (the same arguments ``Evaluator``
    takes). The dev file is located with the evaluator's rules; if it cannot be read the facts
    say so and the prompts state only what the task spec says."""
    from pdesharp.data.paths import DataNotFound, resolve_split

    try:
        resolve_split(task, "test", data_dir_override=data_dir, explicit=test_data)
        test_split = True
    except DataNotFound:
        test_split = False
    facts = TaskFacts(level=level,
                      timeout_s=float(timeout if timeout is not None else task.evaluation.timeout),
                      memory_mb=memory_mb if memory_mb is not None else task.evaluation.memory_mb,
                      threads=threads, gpu=gpu, convergence=convergence, test_split=test_split)
    try:
        facts.data = read_data_facts(task, data_dir=data_dir, dev_data=dev_data,
                                     max_samples=max_samples)
    except Exception as exc:  # noqa: BLE001 - no data: the spec's facts alone
        facts.data_note = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return facts


def read_data_facts(task: Task, *, data_dir=None, dev_data=None, max_samples=None,
                    scale_samples: int = 20) -> DataFacts:
    """Shapes, dtypes, grid and times of the dev split (as the evaluator selects it), and the
    scales of its initial frames."""
    from pdesharp.data.paths import resolve_split
    from pdesharp.data.reference import load_reference

    path = resolve_split(task, "dev", data_dir_override=data_dir, explicit=dev_data)
    spec = task.data.dev
    samples = spec.samples if spec else None
    limit = min(max_samples, scale_samples) if max_samples else scale_samples
    ref = load_reference(task, path, samples=samples, limit=limit)
    n = _n_selected(task, path, samples, max_samples)
    first = next(iter(ref.fields.values()))
    # one problem (no batched input): the solver returns its fields without the batch axis
    out_shape = [n, *first.shape[1:]] if task.batched else list(first.shape[1:])
    space_shape = first.shape[1:] if task.steady else first.shape[2:]
    grid = {axis: int(size) for axis, size in zip(task.equation.space, space_shape)}
    args: list[ArgFacts] = []
    for a in task.solver.args:
        if a.kind == "initial":
            arr = ref.fields[a.field]
            args.append(ArgFacts(name=a.name, kind=a.kind, shape=[n, *arr.shape[2:]],
                                 dtype=str(arr.dtype)))
        elif a.kind == "coefficient":
            arr = ref.coefficients[a.field]
            args.append(ArgFacts(name=a.name, kind=a.kind, shape=[n, *arr.shape[1:]],
                                 dtype=str(arr.dtype)))
        elif a.kind == "time" and ref.t is not None:
            args.append(ArgFacts(name=a.name, kind=a.kind, shape=[len(ref.t)],
                                 dtype=str(ref.t.dtype)))
        elif a.kind == "parameter":
            args.append(ArgFacts(name=a.name, kind=a.kind,
                                 value=task.parameters[a.field or a.name]))
        elif a.kind == "grid":
            args.append(grid_argument_facts(task, a.name, grid))
    data = DataFacts(n_samples=n, grid=grid, args=args, output_shape=out_shape,
                     output_dtype=str(first.dtype), scales=_scales(task, ref))
    if ref.t is not None and len(ref.t):
        t = np.asarray(ref.t, dtype=np.float64)
        data.n_frames, data.t_first, data.t_last = len(t), float(t[0]), float(t[-1])
        steps = np.diff(t)
        if len(steps) and np.allclose(steps, steps.mean(), rtol=1e-4, atol=0):
            data.dt_out = float(round(steps.mean(), 10))
    return data


def _n_selected(task: Task, path, samples: str | None, max_samples: int | None) -> int:
    """Samples the evaluator passes: the split's selection, capped by ``max_samples``."""
    from pdesharp.data import hdf5

    key = next(iter(task.data.fields.values()))
    with hdf5.open_file(path) as h5:
        n = int(hdf5.dataset(h5, key, path).shape[0])
    if samples is not None:
        n = min(n, int(samples.partition(":")[2]))
    return min(n, max_samples) if max_samples else n


def _scales(task: Task, ref) -> dict[str, float]:
    """Scales of what the solver receives: the initial frames of a time-dependent task and the
    coefficient fields. A steady task's unknowns are the reference *solution*: nothing of them
    (only their grid) is read."""
    out: dict[str, float] = {}
    inputs = {name: arr[:, 0] for name, arr in ref.fields.items()} if not task.steady else {}
    inputs.update(ref.coefficients)
    for name, arr in inputs.items():
        out[f"{name}max"] = float(np.abs(arr).max())
        out[f"{name}min"] = float(arr.min())  # signed: the smallest density, not |.|
    for arr in [*ref.fields.values(), *ref.coefficients.values()][:1]:
        space = arr.shape[1:] if task.steady else arr.shape[2:]
        for axis, size in zip(task.equation.space, space):
            out[f"n{axis}"] = int(size)
    if not task.steady and len(task.equation.unknowns) == 1 \
            and f"{task.equation.unknowns[0]}max" in out:
        out["umax"] = out[f"{task.equation.unknowns[0]}max"]
        out["umin"] = out[f"{task.equation.unknowns[0]}min"]
    return out


def reference_scales(task: Task, data_dir=None, dev_data=None, limit: int = 20) -> dict[str, float]:
    """Symbols a stability bound may use (see :attr:`DataFacts.scales`); empty if the data
    cannot be read (bounds then stay symbolic)."""
    try:
        return read_data_facts(task, data_dir=data_dir, dev_data=dev_data,
                               scale_samples=limit).scales
    except Exception:  # noqa: BLE001 - missing or unreadable data: no numbers, not an error
        return {}


# -- what the prompts say -------------------------------------------------------------------
def _num(v: float) -> str:
    return f"{v:.6g}"


def _spacing(length: float, cells: int) -> str:
    """length/cells as a fraction and a number: "1/1024 ≈ 0.000977"."""
    frac = f"{_num(length)}/{cells}" if length != 1 else f"1/{cells}"
    return f"{frac} ≈ {length / cells:.3g}"


def grid_sentence(task: Task, data: DataFacts) -> str:
    """Where the N values of the inputs sit, per space axis."""
    from pdesharp.grid import convention

    c = convention(task.grid)
    parts = []
    for axis, n in data.grid.items():
        lo, hi = task.domain[axis]
        first = f"{_num(lo)} + " if lo else ""
        where = (f"both ends of [{_num(lo)}, {_num(hi)}] included" if c.ends_included else
                 f"of [{_num(lo)}, {_num(hi)}]")
        parts.append(f"N = {n} {c.words} {axis}_i = {first}{c.index}·d{axis}, i = 0..N-1, "
                     f"d{axis} = {_spacing(hi - lo, c.gaps(n))}, {where}")
    return "; ".join(parts)


def grid_argument_facts(task: Task, name: str, grid: dict[str, int]) -> ArgFacts:
    """A ``grid`` argument (pdesharp.grid): the output grid's coordinates, in words."""
    axes = list(grid)
    if len(axes) == 1:
        text = (f"float64 array {axes[0]} of shape [{grid[axes[0]]}], the coordinates of the "
                "output points (the grid below)")
    else:
        text = (f"a tuple ({', '.join(axes)}) of float64 arrays of shapes "
                f"{' and '.join(f'[{grid[a]}]' for a in axes)}, the coordinates of the output "
                f"points along each axis (the grid below; np.meshgrid({', '.join(axes)}, "
                "indexing=\"ij\") gives the mesh, array axis 0 is "
                f"{axes[0]})")
    return ArgFacts(name=name, kind="grid", shape=[grid[a] for a in axes], dtype="float64",
                    text=text)


def times_sentence(data: DataFacts) -> str:
    if data.n_frames is None:
        return ""
    spacing = (f"uniform spacing {_num(data.dt_out)}" if data.dt_out is not None
               else "non-uniform spacing")
    return (f"{data.n_frames} output times from {_num(data.t_first)} to {_num(data.t_last)}, "
            f"{spacing}")


def refinement_sentence(task: Task, facts: TaskFacts) -> str:
    """The refinement study the evaluator runs after the main call (CodePDE's convergence
    test), in words: the extra calls a solver must survive."""
    conv = task.evaluation.convergence
    if not facts.convergence or conv.kind == "none":
        return ""
    if conv.kind in ("time_1d", "cns_1d"):
        grids = ", ".join(str(g) for g in conv.grids)
        times = ""
        if facts.data is not None and facts.data.t_last is not None:
            from pdesharp.evaluate.convergence import output_times

            tc = output_times(np.float32(facts.data.t_first or 0.0),
                              np.float32(facts.data.t_last) / 10)
            times = (f", with t_coordinate = 0, 0.01, …, {tc[-1]:.2f} ({len(tc)} values, "
                     "float64)")
        ics = ("5 smooth profiles (a sine, a sine with an added high mode, two Gaussians, "
               "|sine|)" if conv.kind == "time_1d" else
               f"{conv.batch} random states in which every field is the same random profile "
               "(so density and pressure may be zero or negative: return what you can, do not "
               "raise)")
        return (f"It then calls the solver again on {ics} sampled at N = {grids} cell centres"
                f"{times}, to measure the empirical convergence rate.")
    if conv.kind == "downsample_2d":
        n = next(iter(facts.data.grid.values())) if facts.data is not None else None
        sizes = (" (N = " + ", ".join(str(math.ceil(n / r)) for r in conv.rates) + ")"
                 if n else "")
        rates = ", ".join(str(r) for r in conv.rates)
        return (f"It then calls the solver again on the first {conv.batch} inputs subsampled "
                f"with strides {rates} ([:, ::r, ::r]){sizes}, and compares each result with its "
                "own full-resolution answer, to measure the empirical convergence rate.")
    return ""


def statement(task: Task, facts: TaskFacts | None) -> dict[str, str]:
    """The task's title, description and solver template as the prompts state them at the
    facts level: the ``codepde`` statement at ``codepde`` (when the task has one)."""
    if facts is not None and not facts.full and task.codepde is not None:
        s = task.codepde
        return {"title": s.title, "description": s.description, "template": s.template}
    return {"title": task.title, "description": task.description,
            "template": task.solver.template}


def parameter_text(value) -> str:
    """A parameter as the solver receives it: its value, and the multiple of π it is when that
    is how the benchmark set it (Burgers' nu = 0.01/π, which CodePDE's prompt calls 0.01)."""
    text = f"{value}"
    if isinstance(value, float) and value and math.isfinite(value):
        times_pi = value * math.pi
        short = float(f"{times_pi:.3g}")
        if abs(short - times_pi) <= 1e-12 * abs(times_pi):
            text += f" (= {short:g}/π)"
    return text


def context(task: Task, facts: TaskFacts) -> dict:
    """The template variables of the facts block (``prompts/_facts.j2``)."""
    data = facts.data
    return {
        "facts": facts,
        "data": data,
        "parameters": {k: parameter_text(v) for k, v in task.parameters.items()},
        "grid_sentence": grid_sentence(task, data) if data else "",
        "times_sentence": times_sentence(data) if data else "",
        "refinement": refinement_sentence(task, facts) if facts.full else "",
        "initial_condition": task.initial_condition.strip(),
        "reference": task.reference.strip(),
        "task_notes": [n.strip() for n in task.notes if n.strip()],
    }
