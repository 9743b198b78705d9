"""A suite folder: its cases, read without trusting anything in it.

Layout (docs/suites.md)::

    SUITE/
      suite.yaml          optional: {name: ..., cases: [burgers, advection]} (built-in or example
                          task names, solved on the data folder's data)
      refused.json        optional: cases an importer could not convert, with the reason
      <case>/             one folder per case, named as the case
        task.yaml         a task spec (long or short form), with dev.hdf5 beside it; or
        case.yaml         {task: NAME}: a built-in or example task, on its data in this folder
                          (dev.hdf5, test.hdf5) or, without them, on the data folder's
        dev.hdf5          the dev split (feedback); test.hdf5: the test split (scored once)
        reference.yaml    optional: how the reference was made and its own error
                          {kind: exact | generated | published | unknown, error: 6e-8, note: ...}

A suite folder is input someone hands you. Only the file names above are read, each must be a
regular file in the case folder (a symlink, a device or a FIFO refuses the case, so no file
outside the folder is ever read through it), YAML is read with a size bound, a nesting bound and
no anchors or aliases (a few hundred bytes of aliases can expand to gigabytes), every name that
becomes a path goes through :func:`pdesharp.suite.names.check_name`, and HDF5 files are read by
:mod:`pdesharp.data.hdf5` (no external links, no decompression bombs). A case that fails a
check is *refused*, with the reason, and the other cases run.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pdesharp.suite.names import BadName, check_name
from pdesharp.task import Task, TaskError, builtin_task_names, load_task, task_from_dict
from pdesharp.untrusted import MAX_YAML_BYTES, one_line, yaml_data

MAX_JSON_BYTES = 4 * 2**20  # refused.json
MAX_CASES = 5000
SUITE_FILE, REFUSED_FILE = "suite.yaml", "refused.json"
TASK_FILE, CASE_FILE, REFERENCE_FILE = "task.yaml", "case.yaml", "reference.yaml"
DEV_FILE, TEST_FILE = "dev.hdf5", "test.hdf5"
RESULTS_MARK = "suite.sqlite"  # a suite's output folder, never a case
REFERENCE_KINDS = ("exact", "generated", "published", "unknown")


class SuiteError(ValueError):
    """The suite folder itself cannot be used (missing, not a folder, no cases)."""


class CaseRefused(ValueError):
    """One case cannot be used; the message says why (the other cases run)."""


@dataclass(frozen=True)
class Reference:
    """What a case's reference is: ``exact`` (a closed form, e.g. a manufactured solution),
    ``generated`` (by a solver whose error is estimated), ``published`` (a benchmark's files)
    or ``unknown``; ``error``: its own relative error in the score's norm, if known (for an
    exact reference, the float32 storage bound)."""

    kind: str = "unknown"
    error: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    task: Task
    task_ref: str  # a built-in or example name, or the absolute path of the case's task.yaml
    dev_data: str | None = None  # None: the task's declared files under the data folder
    test_data: str | None = None
    reference: Reference = field(default_factory=Reference)
    folder: str | None = None


@dataclass(frozen=True)
class Refused:
    name: str  # for display only (one line, bounded)
    reason: str


@dataclass
class Suite:
    root: Path
    name: str
    cases: list[Case]
    refused: list[Refused]


# -- bounded readers --------------------------------------------------------------------------
def regular_file(path: Path, what: str, limit: int | None = None) -> Path:
    """``path`` if it is a regular file (not a symlink) of at most ``limit`` bytes."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise CaseRefused(f"{what} {path.name} is missing") from None
    except OSError as exc:
        raise CaseRefused(f"{what} {path.name} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise CaseRefused(f"{what} {path.name} is a symbolic link; a suite's files must be "
                          "regular files inside the case folder (copy the file in)")
    if not stat.S_ISREG(st.st_mode):
        raise CaseRefused(f"{what} {path.name} is not a regular file")
    if limit is not None and st.st_size > limit:
        raise CaseRefused(f"{what} {path.name} is {st.st_size} bytes; at most {limit}")
    return path


def _read_bytes(path: Path, what: str, limit: int) -> bytes:
    regular_file(path, what, limit)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)  # O_NOFOLLOW: a file swapped for a link since is refused
    except OSError as exc:
        raise CaseRefused(f"{what} {path.name} cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise CaseRefused(f"{what} {path.name} is larger than {limit} bytes")
    return data


def read_yaml(path: Path, what: str, limit: int = MAX_YAML_BYTES):
    data = _read_bytes(path, what, limit)
    try:
        return yaml_data(data, limit=limit)
    except UnicodeDecodeError:
        raise CaseRefused(f"{what} {path.name} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise CaseRefused(f"{what} {path.name} is not usable YAML: "
                          f"{one_line(str(exc), 200)}") from None


def read_json(path: Path, what: str, limit: int = MAX_JSON_BYTES):
    data = _read_bytes(path, what, limit)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise CaseRefused(f"{what} {path.name} is not JSON: {one_line(str(exc), 200)}") from None


# -- one case ---------------------------------------------------------------------------------
def _named_task(name: object) -> tuple[Task, str]:
    """A built-in or example task by name (never a path: a suite names no files)."""
    name = check_name(name, what="task name")
    from pdesharp.examples import example_path

    if name not in builtin_task_names() and example_path(name) is None:
        raise CaseRefused(f"{name!r} is not a built-in or example task; put its task.yaml in "
                          "the case folder instead")
    try:
        return load_task(name), name
    except TaskError as exc:
        raise CaseRefused(one_line(str(exc), 300)) from None


def _reference(folder: Path) -> Reference:
    path = folder / REFERENCE_FILE
    if not os.path.lexists(path):
        return Reference()
    data = read_yaml(path, "the reference description")
    if not isinstance(data, dict) or set(data) - {"kind", "error", "note"}:
        raise CaseRefused(f"{REFERENCE_FILE} takes only kind, error and note")
    kind = data.get("kind", "unknown")
    if kind not in REFERENCE_KINDS:
        raise CaseRefused(f"{REFERENCE_FILE}: kind must be one of {', '.join(REFERENCE_KINDS)}")
    error = data.get("error")
    if error is not None and (isinstance(error, bool) or not isinstance(error, (int, float))
                              or not math.isfinite(error) or error < 0):
        raise CaseRefused(f"{REFERENCE_FILE}: error must be a finite number >= 0")
    note = data.get("note", "")
    if not isinstance(note, str):
        raise CaseRefused(f"{REFERENCE_FILE}: note must be text")
    return Reference(kind=kind, error=None if error is None else float(error),
                     note=one_line(note, 500))


def _data(folder: Path, name: str, required: bool) -> str | None:
    path = folder / name
    if not os.path.lexists(path):
        if required:
            raise CaseRefused(f"{name} is missing (a case with its own task.yaml brings its "
                              "reference data: dev.hdf5, and test.hdf5 if it has a test split)")
        return None
    return str(regular_file(path, "the data file").resolve())


def read_case(folder: Path) -> Case:
    """One case folder (its name already checked); :class:`CaseRefused` with the reason."""
    name = folder.name
    has_task, has_case = (os.path.lexists(folder / f) for f in (TASK_FILE, CASE_FILE))
    if has_task == has_case:
        raise CaseRefused(f"a case folder holds either {TASK_FILE} or {CASE_FILE} (found "
                          f"{'both' if has_task else 'neither'})")
    if has_task:
        path = folder / TASK_FILE
        spec = read_yaml(path, "the task spec")
        try:
            task = task_from_dict(spec, f"{name}/{TASK_FILE}")
        except TaskError as exc:
            raise CaseRefused(one_line(str(exc), 500)) from None
        except RecursionError:
            raise CaseRefused(f"{TASK_FILE} is nested too deeply") from None
        ref = str(path.resolve())
    else:
        spec = read_yaml(folder / CASE_FILE, "the case description")
        if not isinstance(spec, dict) or set(spec) - {"task", "note"} or "task" not in spec:
            raise CaseRefused(f"{CASE_FILE} is {{task: NAME}} (a built-in or example task), "
                              "optionally with a note")
        try:
            task, ref = _named_task(spec["task"])
        except BadName as exc:
            raise CaseRefused(str(exc)) from None
    return Case(name=name, task=task, task_ref=ref,
                dev_data=_data(folder, DEV_FILE, required=has_task),
                test_data=_data(folder, TEST_FILE, required=False),
                reference=_reference(folder), folder=str(folder.resolve()))


# -- the suite --------------------------------------------------------------------------------
def discover(root: str | Path) -> Suite:
    """Every case of the suite folder ``root``, in name order (built-in names of suite.yaml
    first), and the refused ones with their reasons."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise SuiteError(f"{root} is not a folder (a suite is a folder of case folders; "
                         "`pdesharp suite import` makes one from a benchmark's files)")
    cases: list[Case] = []
    refused: list[Refused] = []
    name = root.resolve().name
    meta = root / SUITE_FILE
    if os.path.lexists(meta):
        try:
            spec = read_yaml(meta, "the suite description")
            if not isinstance(spec, dict) or set(spec) - {"name", "cases", "note"}:
                raise CaseRefused(f"{SUITE_FILE} takes name, cases and note")
            name = check_name(spec.get("name", name), what="suite name")
            listed = spec.get("cases") or []
            if not isinstance(listed, list) or len(listed) > MAX_CASES:
                raise CaseRefused(f"{SUITE_FILE}: cases must be a list of task names")
        except (CaseRefused, BadName) as exc:
            raise SuiteError(f"{meta}: {exc}") from None
        for entry in listed:
            try:
                task, ref = _named_task(entry)
                cases.append(Case(name=ref, task=task, task_ref=ref,
                                  reference=Reference(kind="published")))
            except (CaseRefused, BadName) as exc:
                refused.append(Refused(one_line(entry, 80), str(exc)))
    entries = sorted(os.scandir(root), key=lambda e: e.name)
    for entry in entries:
        if entry.name.startswith(".") or entry.name in (SUITE_FILE, REFUSED_FILE):
            continue
        if entry.is_symlink():
            refused.append(Refused(one_line(entry.name, 80), "the case folder is a symbolic "
                                   "link; a suite's cases must be folders inside it"))
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue  # README, notes: not cases
        if os.path.lexists(Path(entry.path) / RESULTS_MARK):
            continue  # a suite's results folder placed inside it
        try:
            check_name(entry.name, what="case folder")
            case = read_case(Path(entry.path))
        except (CaseRefused, BadName) as exc:
            refused.append(Refused(one_line(entry.name, 80), str(exc)))
            continue
        if any(c.name == case.name for c in cases):
            refused.append(Refused(case.name, "a built-in case of suite.yaml has this name"))
            continue
        cases.append(case)
        if len(cases) > MAX_CASES:
            raise SuiteError(f"{root} has more than {MAX_CASES} cases")
    refused += _import_refusals(root)
    if not cases and not refused:
        raise SuiteError(f"{root} has no case folders (each holds task.yaml + dev.hdf5, or "
                         "case.yaml naming a built-in task; see docs/suites.md)")
    return Suite(root=root, name=name, cases=cases, refused=refused)


def _import_refusals(root: Path) -> list[Refused]:
    """What an importer could not convert (refused.json), shown in the suite's table."""
    path = root / REFUSED_FILE
    if not os.path.lexists(path):
        return []
    try:
        data = read_json(path, "the importer's refusals")
    except CaseRefused as exc:
        return [Refused(REFUSED_FILE, str(exc))]
    if not isinstance(data, list):
        return [Refused(REFUSED_FILE, "not a list of {name, reason}")]
    out = []
    for item in data[:MAX_CASES]:
        if isinstance(item, dict):
            out.append(Refused(one_line(item.get("name", "?"), 80),
                               "at import: " + one_line(item.get("reason", ""), 500)))
    return out
