"""Reference-data generators: one module per built-in task, imported lazily.

Each generator module (``advection``, ``burgers``, ``reacdiff``, ``cns``, ``darcy`` in this
package) exposes

``generate(n_samples, seed, params=None, nx=..., **options) -> dict[str, np.ndarray]``
    a batch of reference samples keyed by the task's HDF5 layout (``tensor``, ``x-coordinate``,
    ``t-coordinate`` for the 1D tasks; ``Vx``/``density``/``pressure`` for CNS; ``coeff``/``sol``
    for Darcy), with one time value per stored frame;

``simulate(...)``
    the underlying numerical scheme for one batch of initial data (signature per module).

Modules are imported only when asked for, so a missing or broken generator affects only its task.
A task without a dedicated module (a user's YAML task) falls back to the generic Fourier spectral
generator :mod:`.generic` when :func:`generate_to_file` is given the :class:`~pdesharp.task.Task`
itself; it covers periodic time-dependent problems in 1D and 2D.
:func:`write_generated` stores a generated batch as gzip-compressed float32 HDF5 with root
attributes that record where it came from.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pdesharp.data.generate.chunked import ProgressSink

# task name -> module name inside this package. Tests and plug-ins may add entries (or replace
# them with a module path "package.module") through :func:`register_generator`.
GENERATORS: dict[str, str] = {
    "advection": "advection",
    "burgers": "burgers",
    "reacdiff1d": "reacdiff",
    "cns1d": "cns",
    "darcy": "darcy",
}


class GeneratorUnavailable(LookupError):
    """No generator exists (or can be imported) for a task; the message names what is missing."""


def register_generator(task: str, module: str) -> None:
    """Map ``task`` to a generator module (a name in this package or a dotted module path)."""
    GENERATORS[task] = module


def available_generators() -> list[str]:
    return sorted(GENERATORS)


def _module_path(spec: str) -> str:
    return spec if "." in spec else f"{__name__}.{spec}"


def get_generator(task: str) -> ModuleType:
    """The generator module for ``task``; raises :class:`GeneratorUnavailable` with the reason."""
    try:
        spec = GENERATORS[task]
    except KeyError:
        raise GeneratorUnavailable(
            f"no data generator for task {task!r}; generators exist for "
            f"{', '.join(available_generators())}. For your own periodic time-dependent PDE, "
            "`pdesharp data generate path/to/task.yaml` uses the generic spectral generator; "
            "otherwise supply data files with --dev-data/--test-data (see docs/tasks.md)"
        ) from None
    path = _module_path(spec)
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name == path:
            raise GeneratorUnavailable(
                f"the data generator for task {task!r} ({path}) is not available in this "
                "version of pdesharp; use `pdesharp data download` or pass --dev-data/--test-data"
            ) from None
        raise
    if not callable(getattr(module, "generate", None)):
        raise GeneratorUnavailable(f"generator module {path} for task {task!r} has no generate()")
    return module


def generated_path(root: str | os.PathLike, task: str, seed: int, n_samples: int) -> Path:
    """Where ``pdesharp data generate`` writes by default: ``<root>/generated/<task>_seed<S>_n<N>.hdf5``."""
    return Path(root) / "generated" / f"{task}_seed{seed}_n{n_samples}.hdf5"


def _attr_value(value: Any) -> Any:
    """HDF5 attributes take scalars, strings and arrays; everything else is stored as JSON."""
    if isinstance(value, (str, bool, int, float, np.integer, np.floating)):
        return value
    if isinstance(value, np.ndarray):
        return value
    return json.dumps(value, default=str, sort_keys=True)


def write_generated(
    path: str | os.PathLike,
    arrays: Mapping[str, np.ndarray],
    *,
    attrs: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``arrays`` as gzip-compressed float32 HDF5, atomically (``.part`` then rename).

    Floating arrays are stored as float32, as PDEBench and CodePDE do, so that the evaluator sees
    the same dtype as with the published data; integer arrays are kept as they are.
    """
    import h5py

    from pdesharp import __version__

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    meta = {
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "pdesharp_version": __version__,
        **(attrs or {}),
    }
    try:
        with h5py.File(part, "w") as h5:
            for key, value in arrays.items():
                arr = np.asarray(value)
                if arr.dtype.kind == "f":
                    arr = arr.astype(np.float32)
                # Chunked gzip only pays off for non-trivial arrays; coordinates stay contiguous.
                kw: dict[str, Any] = {}
                if arr.ndim >= 2 or arr.size > 4096:
                    kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True}
                h5.create_dataset(key, data=arr, **kw)
            for key, value in meta.items():
                h5.attrs[key] = _attr_value(value)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return path


def _uses_generic(task: Any) -> bool:
    """A Task object gets the generic generator unless a dedicated one is registered for it.

    A registered name counts only for the task it was written for: a user's YAML that reuses a
    built-in name with a different spec (equation, domain, parameters...) is not that task.
    """
    from pdesharp.task import Task, builtin_task_names, load_task

    if not isinstance(task, Task):
        return False
    if task.name not in GENERATORS:
        return True
    return task.name in builtin_task_names() and task != load_task(task.name)


def generate_to_file(
    task: Any,
    n_samples: int,
    seed: int,
    *,
    out: str | os.PathLike,
    params: Mapping[str, float] | None = None,
    nx: int | None = None,
    options: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    extra_attrs: Mapping[str, Any] | None = None,
    sink: ProgressSink | None = None,
    restart: bool = False,
    tolerance: float | None = None,
    check_samples: int | None = None,
    on_tolerance: str = "refuse",
) -> Path:
    """Run the task's generator and write its output to ``out`` with provenance attributes.

    ``task`` is a task name (its registered generator is used) or a :class:`~pdesharp.task.Task`;
    a Task without a dedicated generator is simulated by the generic generator (:mod:`.generic`),
    which raises ``UnsupportedTask`` (a ``ValueError``) naming the reason when the task is outside
    its class. The samples are made in batches kept in ``<out>.partial/`` until the file is
    written, so an interrupted call resumes when repeated (:mod:`.chunked`; ``restart`` discards
    what an interrupted call left). ``sink`` receives
    :class:`~.chunked.GenerationProgress` events.

    The file states its own error (:mod:`.accuracy`): a generator with a resolution knob is
    run at the coarsest level whose error, estimated on ``check_samples`` samples against the
    next finer level, is within ``tolerance`` (default 1e-6 relative); when none is,
    :class:`~.accuracy.ToleranceNotMet` is raised before the full run, unless ``on_tolerance``
    is "warn" (the finest level is written with its estimate). A generator without a knob gets
    the audit's estimate (an independent converged solution of the checked samples).
    ``check_samples=0`` writes no estimate (the file says so).
    """
    from pdesharp.data.generate import accuracy
    from pdesharp.data.generate.chunked import PartialWork, run_batches

    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if on_tolerance not in ("refuse", "warn"):
        raise ValueError(f"on_tolerance must be 'refuse' or 'warn', got {on_tolerance!r}")
    tolerance = accuracy.DEFAULT_TOLERANCE if tolerance is None else float(tolerance)
    if not (tolerance > 0 and np.isfinite(tolerance)):
        raise ValueError(f"tolerance must be a positive number, got {tolerance}")
    checks = accuracy.CHECK_SAMPLES if check_samples is None else int(check_samples)
    if checks < 0:
        raise ValueError(f"check_samples must be >= 0, got {checks}")
    kwargs: dict[str, Any] = dict(options or {})
    if _uses_generic(task):
        maker, size, attrs, per_sample, levels = _generic_plan(task, n_samples, seed, params, nx,
                                                               kwargs, sink)
    else:
        maker, size, attrs, per_sample, levels = _module_plan(task, n_samples, seed, params, nx,
                                                              kwargs)
    if progress:
        progress(f"generating {n_samples} {attrs['task']} samples (seed {seed}) with "
                 f"{attrs['generator']}")
    note = _noter(sink, n_samples)
    choice = None
    if checks and len(levels) > 1:
        keys = _checked_keys(per_sample)
        choice = accuracy.choose_level(accuracy.Knob(levels, maker), n_samples, keys,
                                       tolerance=tolerance, check_samples=checks,
                                       accept=on_tolerance == "warn", note=note)
    level = choice.level if choice else 0
    from pdesharp import __version__

    work = PartialWork(Path(out), {**{k: v for k, v in attrs.items() if k != "task_spec"},
                                   "task_spec_sha256": _sha(attrs.get("task_spec", "")),
                                   "batch": size, "pdesharp_version": __version__,
                                   **({"resolution_level": level} if choice else {})})
    arrays, info, rejected = run_batches(work, n_samples, size,
                                         lambda a, b: maker(a, b, level), per_sample,
                                         restart=restart, sink=sink)
    attrs.update(extra_attrs or {})
    attrs.update({f"scheme_{k}": v for k, v in info.items()})
    if rejected:
        attrs["rejected_draws"] = rejected
    if choice is not None:
        estimate = accuracy.estimate_from_choice(arrays, choice, _checked_keys(per_sample),
                                                 tolerance, levels)
    elif not checks:
        estimate = accuracy.not_estimated("the generation was asked for no check samples",
                                          tolerance)
    else:
        estimate = None  # the audit's estimate, once the file exists
    if estimate is not None:
        attrs.update(estimate.attrs())
    path = write_generated(out, arrays, attrs=attrs)
    work.remove()
    if estimate is None:
        estimate = accuracy.estimate_by_audit(task, path, checks, tolerance, note)
        add_attrs(path, estimate.attrs())
    note(estimate.sentence())
    return path


def _checked_keys(per_sample: set[str]) -> list[str]:
    return sorted(per_sample)


def _noter(sink, total: int):
    from pdesharp.data.generate.chunked import GenerationProgress

    def note(message: str) -> None:
        if sink:
            sink(GenerationProgress("check", 0, total, message=message))
    return note


def add_attrs(path: str | os.PathLike, attrs: Mapping[str, Any]) -> None:
    """Set root attributes of an existing HDF5 file (the estimate made after writing it)."""
    import h5py

    with h5py.File(path, "r+") as h5:
        for key, value in attrs.items():
            h5.attrs[key] = _attr_value(value)


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def _generic_plan(task, n_samples, seed, params, nx, kwargs, sink):
    from pdesharp.data.generate import generic

    run_task = generic.with_parameters(task, params)
    known = {"n_frames", "method", "rtol", "tol"}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise ValueError(f"unknown generator options {unknown}; known: {', '.join(sorted(known))}")
    generic.check_task(run_task)

    def maker(first: int, last: int, level: int = 0):
        return generic.make_batch(run_task, seed, first, last, nx, sink=sink, total=n_samples,
                                  **kwargs, **({"level": level} if level else {}))

    attrs = {
        "generator": generic.__name__,
        "task": task.name,
        "seed": int(seed),
        "n_samples": int(n_samples),
        "parameters": {**task.parameters, **dict(params or {})},
        "options": {**kwargs, **({"nx": nx} if nx is not None else {})},
        "task_spec": task.to_yaml(),  # the full spec: the file says which PDE it solves
        **{f"scheme_{k}": v for k, v in generic.scheme_attrs(task).items()},
    }
    levels = generic.resolution_levels(run_task, nx, **kwargs)
    return maker, generic.batch_size(task), attrs, set(task.data.fields.values()), levels


def _module_plan(task, n_samples, seed, params, nx, kwargs):
    from pdesharp.data.generate.chunked import Batch

    name = task if isinstance(task, str) else task.name
    module = get_generator(name)
    if nx is not None:
        kwargs["nx"] = nx
    size = getattr(module, "BATCH", None)
    size = int(size) if isinstance(size, int) and size > 0 else n_samples

    levels: list[str] = []
    describe = getattr(module, "resolution_levels", None)  # the module's resolution knob
    if callable(describe):
        levels = [str(v) for v in describe(dict(params) if params else None, nx, **kwargs)]

    def maker(first: int, last: int, level: int = 0):
        ranged = {"sample_range": (first, last)} if size < n_samples or levels else {}
        arrays = module.generate(n_samples, seed, dict(params) if params else None, **kwargs,
                                 **ranged, **({"level": level} if level else {}))
        if not isinstance(arrays, Mapping) or not arrays:
            raise TypeError(f"{module.__name__}.generate() returned {type(arrays).__name__}, "
                            "not a dict of arrays")
        return Batch({k: np.asarray(v) for k, v in arrays.items()})

    attrs = {
        "generator": module.__name__,
        "task": name,
        "seed": int(seed),
        "n_samples": int(n_samples),
        "parameters": dict(params) if params else "generator defaults",
        "options": dict(kwargs),
    }
    extra = getattr(module, "ATTRS", None)  # a module may describe its scheme (name, CFL, ...)
    if isinstance(extra, Mapping):
        attrs.update({f"scheme_{k}": v for k, v in extra.items()})
    from pdesharp.task import Task, load_task

    spec = task if isinstance(task, Task) else _builtin_or_none(name, load_task)
    per_sample = (set(spec.data.fields.values()) | set(spec.data.coefficients.values())
                  if spec is not None else set())
    return maker, size if per_sample else n_samples, attrs, per_sample, levels


def _builtin_or_none(name: str, load):
    try:
        return load(name)
    except Exception:  # a plug-in generator for a name that is no task: one batch, no split
        return None


__all__ = [
    "GENERATORS",
    "GeneratorUnavailable",
    "available_generators",
    "generate_to_file",
    "generated_path",
    "get_generator",
    "register_generator",
    "write_generated",
]
