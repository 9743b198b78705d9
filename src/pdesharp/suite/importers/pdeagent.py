"""PDEAgent-Bench's JSONL cases -> suite case folders, references exact.

A PDEAgent-Bench record (one JSON object per line) names a PDE family (``oracle_config.pde.type``),
its coefficients, a manufactured solution ``u`` (``oracle_config.pde.manufactured_solution.u``),
Dirichlet data (``oracle_config.bc``), for transient families a time window
(``oracle_config.pde.time``: ``t0``, ``t_end``, ``dt``) and the output grid
(``oracle_config.output.grid``: ``bbox``, ``nx``, ``ny``, both ends of each axis included). The
solution is wanted on that grid (at ``t_end`` for a transient case) and scored by the relative
L2 error over the grid points.

From a record this importer derives, symbolically and through the one safe expression reader
(:func:`pdesharp.expression.read`: the JSONL is untrusted input), the source term f = L(u), the
boundary data (u on the boundary) and the initial data (u at t0), writes them into a task
(``grid: nodes``, the record's grid convention) and evaluates u at the grid points in float64 for
the reference (stored as float32: an exact reference whose own error is the storage bound).
A transient case is scored on its final frame only (``evaluation.score_frames: final``), as
PDEAgent-Bench scores it; a steady case's nRMSE is PDEAgent-Bench's relative L2 error on the grid.
Both splits hold the one manufactured problem: test on the record's grid (the number the table
reports), dev on the nested grid with half the spacing count (what a search sees).

Families, coefficients and boundary data (Dirichlet, Neumann, Robin, side by side, derived from
u): :mod:`.pdeagent_pde`. Any other record is refused with the reason (listed in
``refused.json`` and in the suite's table), never guessed at.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp
import yaml

from pdesharp.clock import TimeUp, time_limit
from pdesharp.expression import ExpressionError, read
from pdesharp.suite.importers import pdeagent_pde as pde_forms
from pdesharp.suite.importers import staged
from pdesharp.suite.importers.pdeagent_pde import Refused
from pdesharp.suite.names import BadName, check_name
from pdesharp.untrusted import one_line, task_name_for

MAX_LINE_BYTES = 64 * 1024  # one record; the published ones are about 1-2 kB
MAX_RECORDS = 5000  # PDEAgent-Bench v2 has 645
MAX_DEPTH = 16  # nesting of a record (a real one has 5)
MAX_POINTS = 1025  # grid points per axis
MAX_FRAMES = 2001
MAX_VALUES = 5 * 10**7  # values of one split (points x frames)
RECORD_SECONDS = 120.0  # deriving and writing one record (a real one: about a second)
STORAGE_BOUND = 2.0**-24  # float32's relative rounding: an exact reference's own error
RecordRefused = Refused  # this record cannot be imported; the message says why


@dataclass
class Imported:
    written: list[str]
    refused: list[dict]  # {name, reason}
    skipped: list[str]  # existing case folders left as they were


# -- reading the JSONL, bounded ---------------------------------------------------------------
def records(path: str | Path):
    """(line number, record or RecordRefused) for every non-empty line; a line longer than
    MAX_LINE_BYTES is skipped without being held in memory."""
    with open(path, "rb") as f:
        number = 0
        while True:
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            number += 1
            if number > MAX_RECORDS:
                yield number, RecordRefused(f"more than {MAX_RECORDS} records; the rest of the "
                                            "file is not read")
                return
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # drain the rest of the line
                    line = f.readline(MAX_LINE_BYTES)
                yield number, RecordRefused(f"line {number} is longer than {MAX_LINE_BYTES} "
                                            "bytes")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except RecursionError:
                yield number, RecordRefused(f"line {number} is nested too deeply")
                continue
            except ValueError as exc:
                yield number, RecordRefused(f"line {number} is not JSON: {one_line(exc, 120)}")
                continue
            if _depth(data) > MAX_DEPTH:
                yield number, RecordRefused(f"line {number} is nested more than {MAX_DEPTH} "
                                            "levels deep")
                continue
            yield number, data


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _get(data: Any, *keys: str, kind: type | tuple = dict, required: bool = True):
    """``data[k1][k2]...``, checked to be of ``kind``."""
    where = "record"
    for k in keys:
        if not isinstance(data, dict) or k not in data:
            if required:
                raise RecordRefused(f"{where} has no {k!r}")
            return None
        data, where = data[k], f"{where}.{k}"
    if not isinstance(data, kind) or isinstance(data, bool) and kind is not bool:
        raise RecordRefused(f"{where} is not {getattr(kind, '__name__', 'of the right kind')}")
    return data


_number = pde_forms.number


# -- one record -> a task spec and its reference ----------------------------------------------
@dataclass
class Problem:
    name: str
    family: str
    space: list[str]
    domain: dict[str, tuple[float, float]]
    points: dict[str, int]
    params: dict[str, float]
    u: sp.Expr
    time: tuple[float, float, int] | None  # (t0, t_end, frames)
    timeout: float
    note: str
    fields: dict = field(default_factory=dict)  # coefficients given as expressions of x, y, z
    reaction: str | None = None  # reaction_diffusion's R(u)
    boundary: str = ""  # the task's boundary clauses (derived from u)


def problem(rec: Any) -> Problem:
    """The record's PDE, read and checked (RecordRefused names what is not supported)."""
    if not isinstance(rec, dict):
        raise RecordRefused("a record is a JSON object")
    try:
        name = check_name(rec.get("id"), what="case id")
    except BadName as exc:
        raise RecordRefused(str(exc)) from None
    oracle = _get(rec, "oracle_config")
    pde = _get(oracle, "pde")
    family = _get(pde, "type", kind=str)
    pde_forms.check_family(family)
    manufactured = _get(pde, "manufactured_solution", required=False)
    if not manufactured or not isinstance(manufactured.get("u"), str):
        raise RecordRefused("no manufactured solution u: its reference is PDEAgent-Bench's "
                            "oracle (a finite-element solve), which is not reproduced here")
    grid = _get(oracle, "output", "grid")
    bbox = _get(grid, "bbox", kind=list)
    if len(bbox) not in (2, 4, 6):
        raise RecordRefused("output.grid.bbox must be [x0, x1], [x0, x1, y0, y1] or "
                            "[x0, x1, y0, y1, z0, z1]")
    space = ["x", "y", "z"][: len(bbox) // 2]
    box = {a: (_number(bbox[2 * i], "bbox"), _number(bbox[2 * i + 1], "bbox"))
           for i, a in enumerate(space)}
    domain_type = _get(oracle, "domain", "type", kind=str)
    units = {"unit_interval": 1, "unit_square": 2, "unit_cube": 3}
    if domain_type in units:
        if units[domain_type] != len(space):
            raise RecordRefused(f"the domain {domain_type} and the output box disagree in "
                                "dimension")
        if box != {a: (0.0, 1.0) for a in space}:
            raise RecordRefused("an output box other than the whole domain is not imported")
    elif domain_type not in ("rectangle", "box", "interval"):
        raise RecordRefused(f"the domain type {one_line(domain_type, 40)!r} is not imported "
                            "(a box: unit_interval/square/cube, interval, rectangle, box)")
    for a, (lo, hi) in box.items():
        if not lo < hi:
            raise RecordRefused(f"the output box along {a} is empty")
    points = {}
    for a, key in zip(space, ("nx", "ny", "nz")):
        n = _get(grid, key, kind=int)
        if not 3 <= n <= MAX_POINTS:
            raise RecordRefused(f"output.grid.{key} must be between 3 and {MAX_POINTS}")
        points[a] = n
    t = sp.Symbol("t", real=True)
    timing = _get(pde, "time", required=False)
    if family in pde_forms.TRANSIENT_ONLY and timing is None:
        raise RecordRefused(f"a {family} record needs pde.time (t0, t_end, dt)")
    time = _time(timing) if timing is not None else None
    if math.prod(points.values()) * (time[2] if time else 1) > MAX_VALUES:
        raise RecordRefused(f"more than {MAX_VALUES:.0e} reference values")
    names = {a: sp.Symbol(a, real=True) for a in space}
    if time is not None:
        names["t"] = t
    params, fields = pde_forms.coefficients(pde, family, space, names)
    reaction = params.pop("_reaction", None)
    try:
        u = read(manufactured["u"], where=f"the manufactured solution of {name}", names=names)
    except ExpressionError as exc:
        raise RecordRefused(str(exc)) from None
    bounds = (time[0], time[1]) if time else None
    bc = pde_forms.boundary(_get(oracle, "bc", required=False), u, names, space, box, bounds)
    timeout = _get(rec, "evaluation_config", "timeout_sec", kind=(int, float), required=False)
    timeout = min(max(_number(timeout, "timeout_sec", positive=True), 10.0), 3600.0) \
        if timeout is not None else 600.0
    note = one_line(_get(pde, "description", kind=str, required=False) or "", 300)
    return Problem(name=name, family=family, space=space, domain=box, points=points,
                   params=params, u=u, time=time, timeout=timeout, note=note, fields=fields,
                   reaction=reaction, boundary=bc)


def _time(timing: Any) -> tuple[float, float, int]:
    if not isinstance(timing, dict):
        raise RecordRefused("pde.time must be an object")
    t0 = _number(timing.get("t0", 0.0), "t0")
    t1 = _number(timing.get("t_end"), "t_end")
    dt = _number(timing.get("dt"), "dt", positive=True)
    if not t1 > t0:
        raise RecordRefused("t_end must be after t0")
    steps = (t1 - t0) / dt
    if steps > MAX_FRAMES - 1:
        raise RecordRefused(f"more than {MAX_FRAMES - 1} time steps of dt")
    frames = max(1, round(steps)) + 1  # output frames at the oracle's steps (only the last scored)
    return t0, t1, frames


def source(p: Problem) -> sp.Expr:
    """f = L(u) (+ u_t), with the coefficients as symbols (the task's parameters)."""
    X = [sp.Symbol(a, real=True) for a in p.space]
    P = {k: sp.Symbol(k, real=True) for k in p.params}
    f = pde_forms.operator(p.family, p.u, X, P, p.fields, p.reaction)
    if p.time is not None:
        f = sp.diff(p.u, sp.Symbol("t", real=True)) + f
    return f


def operator_text(p: Problem) -> str:
    text = pde_forms.operator_text(p.family, p.space, p.fields, p.reaction)
    return ("dt(u) " + ("+ " + text if not text.startswith("-") else "- " + text[1:])
            if p.time is not None else text)


def spec(p: Problem) -> dict:
    """The task spec (short form, data section derived) of a record's problem."""
    f = source(p)
    u_text = sp.sstr(p.u)
    what = {"poisson": "Poisson", "heat": "heat", "convection_diffusion":
            "convection-diffusion", "reaction_diffusion": "reaction-diffusion",
            "helmholtz": "Helmholtz"}[p.family]
    out: dict[str, Any] = {
        "name": task_name_for(p.name),
        "title": f"PDEAgent-Bench {p.name}: {what} problem with a manufactured solution",
        "equation": {"unknowns": ["u"], "equations": [f"{operator_text(p)} = {sp.sstr(f)}"]},
        "parameters": dict(p.params),
        "domain": {a: list(v) for a, v in p.domain.items()},
        "grid": "nodes",
        "boundary": p.boundary or f"dirichlet: u = {u_text}",
        "reference": (f"Exact: the manufactured solution u = {u_text} evaluated at the output "
                      "nodes in float64, stored as float32 (relative rounding at most 6e-8)."),
        "evaluation": {"timeout": p.timeout, "convergence": {"kind": "none"}, "plot_sample": 0},
        "notes": ["Imported from a PDEAgent-Bench record: the output grid includes both ends of "
                  "every axis, as that benchmark's grids do."],
    }
    if p.time is not None:
        t0, t1, frames = p.time
        out["time_span"] = [t0, t1]
        out["n_frames"] = frames
        u0 = sp.sstr(p.u.subs(sp.Symbol("t", real=True), t0))
        out["initial_condition"] = f"The manufactured solution at t = {t0:g}: u = {u0}."
        out["evaluation"]["score_frames"] = "final"
        out["notes"].append("Scored on the final frame only (the solution at the end time), as "
                            "PDEAgent-Bench scores a transient case.")
    return out


def _check_source(p: Problem) -> None:
    """The source as written into the task, read back by the expression reader, is the one
    derived (at a few points, relative to its size): nothing was lost in printing it."""
    X = [sp.Symbol(a, real=True) for a in p.space]
    t = sp.Symbol("t", real=True)
    f = source(p).subs({sp.Symbol(k, real=True): v for k, v in p.params.items()})
    text = spec(p)["equation"]["equations"][0].split("=", 1)[1]
    names = {a: x for a, x in zip(p.space, X)} | {"t": t} | \
        {k: sp.Float(v) for k, v in p.params.items()}
    back = read(text, where="the derived source", names=names)
    args = X + ([t] if p.time is not None else [])
    rng = np.random.default_rng(0)
    g = sp.lambdify(args, f - back, "numpy")
    s = sp.lambdify(args, f, "numpy")
    pts = rng.uniform(0.1, 0.9, size=(8, len(args)))
    scale = max(1.0, max(abs(float(s(*q))) for q in pts))
    worst = max(abs(float(g(*q))) for q in pts)
    if not worst <= 1e-9 * scale:  # sstr prints exact numbers; only float rounding remains
        raise RecordRefused(f"the derived source does not read back (off by {worst:.1e})")


def arrays(p: Problem, task, scale: int = 1) -> dict[str, np.ndarray]:
    """The reference on the output grid (every ``scale``-th point: the dev split's nested
    grid), keyed as the task's data section says."""
    from pdesharp.grid import axis_points

    X = [sp.Symbol(a, real=True) for a in p.space]
    t = sp.Symbol("t", real=True)
    pts = [axis_points(*p.domain[a], (p.points[a] - 1) // scale + 1, "nodes")
           for a in p.space]
    mesh = np.meshgrid(*pts, indexing="ij")
    shape = tuple(len(q) for q in pts)
    out: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):  # a value that is not finite is refused just below
        _fill(out, p, task, X, t, mesh, shape)
    for a, q in zip(p.space, pts):
        out[f"{a}-coordinate"] = q
    if not np.all(np.isfinite(out[task.data.fields["u"]])):
        raise RecordRefused("the manufactured solution is not finite on the grid")
    return out


def _fill(out: dict, p: Problem, task, X, t, mesh, shape) -> None:
    field = task.data.fields["u"]
    if p.time is None:
        ev = sp.lambdify(X, p.u, "numpy")
        out[field] = (np.asarray(ev(*mesh), dtype=np.float64) * np.ones(shape))[None]
    else:
        t0, t1, frames = p.time
        times = np.linspace(t0, t1, frames)
        ev = sp.lambdify(X + [t], p.u, "numpy")
        out[field] = np.stack([np.asarray(ev(*mesh, tk), dtype=np.float64) * np.ones(shape)
                               for tk in times])[None]
        out[task.data.t_key or "t-coordinate"] = times


def write_case(p: Problem, folder: Path, record: dict) -> None:
    """The case folder, written beside and renamed into place (never half-written)."""
    from pdesharp.data.generate import write_generated
    from pdesharp.task import TaskError, task_from_dict

    data = spec(p)
    try:
        task = task_from_dict(json.loads(json.dumps(data)), f"record {p.name}")
    except TaskError as exc:
        raise RecordRefused(f"the derived task does not validate: {one_line(exc, 300)}") from None
    _check_source(p)
    with staged(folder) as part:
        (part / "task.yaml").write_text(
            "# Imported by `pdesharp suite import pdeagent` from a PDEAgent-Bench record\n"
            "# (the record is kept in record.json). Source, boundary and initial data derived\n"
            "# from the manufactured solution; the reference is that solution at the nodes.\n"
            + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))
        attrs = {"made_by": "pdesharp suite import pdeagent", "case": p.name,
                 "reference": "exact: the manufactured solution at the output nodes"}
        dev_scale = 2 if all((n - 1) % 2 == 0 and (n - 1) // 2 >= 2
                             for n in p.points.values()) else 1
        write_generated(part / "dev.hdf5", arrays(p, task, dev_scale), attrs=attrs)
        write_generated(part / "test.hdf5", arrays(p, task, 1), attrs=attrs)
        (part / "reference.yaml").write_text(yaml.safe_dump({
            "kind": "exact", "error": float(f"{STORAGE_BOUND:.2e}"),
            "note": "manufactured solution evaluated in float64 at the output nodes, stored "
                    "as float32"}, sort_keys=False))
        (part / "record.json").write_text(json.dumps(record, indent=1))


def import_jsonl(path: str | Path, out: str | Path, *, ids: list[str] | None = None,
                 force: bool = False) -> Imported:
    """Every record of ``path`` (or those named in ``ids``) as a case folder under ``out``;
    refusals go to ``out/refused.json``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written, refused, skipped = [], [], []
    seen: set[str] = set()
    for number, rec in records(path):
        name = rec.get("id") if isinstance(rec, dict) else None
        shown = one_line(name, 80) if isinstance(name, str) else f"line {number}"
        if ids is not None and name not in ids:
            continue
        try:
            if isinstance(rec, RecordRefused):
                raise rec
            # SymPy's differentiation and simplification of a record's solution have no
            # bound of their own: a hard clock per record (pdesharp.clock)
            with time_limit(RECORD_SECONDS, quiet=False):
                p = problem(rec)
                if p.name in seen:
                    raise RecordRefused(f"a second record with the id {p.name!r}")
                seen.add(p.name)
                folder = out / p.name
                if folder.exists() and not force:
                    skipped.append(p.name)
                    continue
                write_case(p, folder, rec)
            written.append(p.name)
        except RecordRefused as exc:
            refused.append({"name": shown, "reason": str(exc)})
        except TimeUp:
            refused.append({"name": shown, "reason": f"not imported within {RECORD_SECONDS:g} s "
                            "(the solution's derivatives or values take too long to compute)"})
        except (ValueError, TypeError, ZeroDivisionError, OverflowError, RecursionError) as exc:
            refused.append({"name": shown, "reason": f"cannot be imported: "
                            f"{type(exc).__name__}: {one_line(exc, 200)}"})
    (out / "refused.json").write_text(json.dumps(refused, indent=1))
    if not (out / "suite.yaml").exists():
        (out / "suite.yaml").write_text(yaml.safe_dump(
            {"name": check_name(_suite_name(path), what="suite name"),
             "note": "imported from PDEAgent-Bench records"}, sort_keys=False))
    return Imported(written=written, refused=refused, skipped=skipped)


def _suite_name(path) -> str:
    import re

    stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(path).stem).strip("._-") or "pdeagent"
    return ("pdeagent-" + stem)[:80].replace("..", "_")
