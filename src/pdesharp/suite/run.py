"""``pdesharp suite run``: every case of a suite folder, every method, one results store.

Layout of a suite's output folder::

    suite.json                 the suite's settings (what every case is run with)
    suite.sqlite               the results store: each case's state and table rows
    cases/<case>/              one bench folder per case (`pdesharp bench` of that case alone:
                               bench.json, <task>/<method>-r<k>/ run folders, its own tables)
    table.md, .csv, .json      the suite's table and its Pass@ rates; index.html (suite report)

A case is the unit of work: it runs as `pdesharp bench` would run its one task (same budget for
every case and method, the case's own data files), through :func:`pdesharp.bench.run_bench`,
so a cell whose ``summary.json`` exists is finished and never run again, and an unfinished
cell is reopened: its journal replays every recorded model call and looks up every recorded
evaluation (the `pdesharp resume` machinery). Running the same command again, or `pdesharp
suite resume OUT`, therefore repeats no finished case and no recorded evaluation.

With ``executor="ray"`` whole cases go to the workers of a Ray cluster (:mod:`.ray_cases`);
the evaluations of a case run sealed on the worker that runs the case.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from pdesharp.suite.cases import Case, Suite, discover
from pdesharp.suite.names import BadName, check_name
from pdesharp.suite.results import REFUSED_PREFIX, ResultsStore, pass_at, write_tables

CONFIG_FILE = "suite.json"


class SuiteRunError(ValueError):
    """A suite cannot start or continue (settings differ, folder busy); the message says why."""


@dataclass
class SuiteConfig:
    suite: str  # the suite folder (absolute)
    out: str
    methods: list[str] = field(default_factory=lambda: ["sharp"])
    model: str = "builtin"
    repeats: int = 1
    budget_evals: int | None = None  # the same evaluation budget for every case and method
    max_usd: float | None = None  # per case, PDE-SHARP's search (sharp)
    max_tokens: int | None = None
    candidates: int | None = None  # sharp: Genesis samples (pdesharp solve's default 32)
    max_rounds: int | None = None
    audit: str = "auto"  # sharp's reference audit (pdesharp solve --audit)
    samples: int = 32  # codepde / cot / moa / cepo
    refine_samples: int = 12
    debug_rounds: int = 4
    optillm_url: str | None = None
    max_samples: int | None = None
    convergence: bool = True
    workers: int = 1
    executor: str = "local"  # "ray": whole cases on the workers of a Ray cluster
    ray_address: str | None = None
    data_dir: str | None = None  # where built-in cases without their own files find data
    task_facts: str = "full"
    objective: str = "accuracy"
    time_margin: float = 0.3
    retime: int | None = None
    base_url: str | None = None
    llm: dict = field(default_factory=dict)
    prices: str | None = None

    # settings that change what a case computes: fixed for a suite folder (as for a bench)
    FIXED = ("methods", "model", "repeats", "budget_evals", "max_usd", "max_tokens",
             "candidates", "max_rounds", "audit", "samples", "refine_samples", "debug_rounds",
             "optillm_url", "max_samples", "convergence", "task_facts", "objective",
             "time_margin", "retime")

    @classmethod
    def from_dict(cls, data: dict) -> "SuiteConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def case_bench(self, case: Case):
        """The `pdesharp bench` of ``case`` alone: its settings, its data files."""
        from pdesharp.bench import BenchConfig

        sharp = {k: v for k, v in (("candidates", self.candidates),
                                   ("max_rounds", self.max_rounds), ("max_usd", self.max_usd),
                                   ("max_tokens", self.max_tokens)) if v is not None}
        # an exact reference's own error is known (its storage bound): no audit to compute
        sharp["audit"] = "off" if case.reference.kind == "exact" else self.audit
        return BenchConfig(
            tasks=[case.task_ref], task_names=[case.task.name], methods=list(self.methods),
            model=self.model, out=str(case_dir(self.out, case.name)), repeats=self.repeats,
            budget_evals=self.budget_evals, samples=self.samples,
            refine_samples=self.refine_samples, debug_rounds=self.debug_rounds,
            optillm_url=self.optillm_url, data_dir=self.data_dir, dev_data=case.dev_data,
            test_data=case.test_data, convergence=self.convergence,
            max_samples=self.max_samples, workers=self.workers,
            # a case's evaluations run where the case runs: on this machine, or sealed on the
            # Ray worker that runs the whole case
            executor="local", task_facts=self.task_facts, objective=self.objective,
            time_margin=self.time_margin, retime=self.retime, base_url=self.base_url,
            llm=dict(self.llm), prices=self.prices, sharp_options=sharp)


def case_dir(out: str | Path, name: str) -> Path:
    return Path(out) / "cases" / check_name(name, what="case name")


# -- one case ---------------------------------------------------------------------------------
Stage = Callable[[str, str], None]  # (case, words)


REFUSAL = ": UnsupportedTask: "  # how a cell refused by the built-in analyst fails (bench)


def refusal(failures: list[str]) -> str:
    """The built-in analyst's refusal among a case's failed cells ("" if none): a verdict on the
    case (its PDE is outside the catalogue), recorded as such, not a failure to retry."""
    for f in failures:
        if REFUSAL in f:
            return f.split(REFUSAL, 1)[1]
    return ""


def run_case(cfg: SuiteConfig, case: Case, *, stage: Stage | None = None,
             on_evaluation: Callable | None = None) -> dict:
    """Run (or finish) every cell of ``case``; returns {state, reason, rows}. Blocking (it runs
    the case's own event loop): the serial driver calls it, and so does a Ray worker."""
    from pdesharp.bench import BenchError, BenchIncomplete, run_bench
    from pdesharp.task import TaskError

    try:
        check_name(case.task.name, what="task name")
    except BadName as exc:
        return {"state": "refused", "reason": str(exc), "rows": []}
    bench = cfg.case_bench(case)
    say = (lambda words: stage(case.name, words)) if stage else None
    try:
        rows = asyncio.run(run_bench(
            bench, progress=None,
            on_evaluation=None if on_evaluation is None else
            (lambda task, label, split, r: on_evaluation(case.name, label, split, r)),
            on_stage=None if say is None else (lambda method, s: say(f"{method}: {s}"))))
        state, reason = "done", ""
    except BenchIncomplete as exc:
        why = refusal(exc.failures)
        rows, state = exc.rows, "refused" if why else "failed"
        reason = why or "; ".join(exc.failures)[:2000]
    except (BenchError, TaskError) as exc:
        rows, state, reason = [], "failed", str(exc)[:2000]
    return {"state": state, "reason": reason, "rows": [with_summary(r) for r in rows]}


def run_stored_case(settings: dict, case: Case, stage: Stage | None = None) -> dict:
    """:func:`run_case` from the settings as stored (what a Ray worker runs: a module-level
    function, shipped by reference)."""
    return run_case(SuiteConfig.from_dict(settings), case, stage=stage)


def with_summary(row: dict) -> dict:
    """A bench row with what the suite table adds from the first repeat's summary.json: the
    reference audit block and why the search stopped or failed."""
    from pdesharp.untrusted import UnsafeFolder, read_text_inside

    try:  # a results folder may be someone else's: bounded, no link followed
        summary = json.loads(read_text_inside(row["runs"][0], "summary.json") or "{}")
    except (OSError, ValueError, RecursionError, IndexError, KeyError, UnsafeFolder):
        return row
    if not isinstance(summary, dict):
        return row
    audit = summary.get("reference_audit") or {}
    note = summary.get("test_note") or ""
    if summary.get("status") in ("budget_stop",) and summary.get("stop_reason"):
        note = summary["stop_reason"]
    return {**row, "audit": {k: audit.get(k) for k in ("status", "reference_error",
                                                        "best_nrmse_vs_converged")},
            "note": note}


# -- the suite --------------------------------------------------------------------------------
def prepare(cfg: SuiteConfig) -> tuple[Suite, ResultsStore]:
    """Discover the cases, open (or create) the output folder and check that its settings are
    this suite's; records the refused cases."""
    from pdesharp.bench import ALL_METHODS

    bad = [m for m in cfg.methods if m not in ALL_METHODS]
    if bad:
        raise SuiteRunError(f"unknown method(s) {', '.join(bad)}; choose from "
                            f"{', '.join(ALL_METHODS)}")
    if cfg.executor not in ("local", "ray"):
        raise SuiteRunError(f"unknown executor {cfg.executor!r}")
    suite = discover(cfg.suite)
    out = Path(cfg.out)
    if out.resolve() == Path(cfg.suite).resolve():
        raise SuiteRunError("--out must not be the suite folder itself (a results folder "
                            "inside it is fine: it is never taken for a case)")
    out.mkdir(parents=True, exist_ok=True)
    old = out / CONFIG_FILE
    if old.is_file():
        before = json.loads(old.read_text())
        changed = [k for k in SuiteConfig.FIXED if before.get(k) != asdict(cfg)[k]]
        if before.get("suite") != cfg.suite:
            changed.insert(0, "suite")
        if changed:
            what = ", ".join(f"{k}: {before.get(k)!r} -> {asdict(cfg)[k]!r}" for k in changed)
            raise SuiteRunError(f"{out} holds a suite run with other settings ({what}); its "
                                "finished cases would not be comparable. Use the same "
                                "settings (`pdesharp suite resume` reads them), or a new --out.")
    old.write_text(json.dumps(asdict(cfg), indent=2))
    store = ResultsStore(out)
    store.put("config", asdict(cfg))
    store.put("name", suite.name)
    store.put("cases", [c.name for c in suite.cases])
    for i, r in enumerate(suite.refused):
        store.record(f"{REFUSED_PREFIX}{r.name}", -1 - i, state="refused", reason=r.reason)
    return suite, store


def reference_of(case: Case) -> dict:
    return {"kind": case.reference.kind, "error": case.reference.error,
            "note": case.reference.note}


def finish(cfg: SuiteConfig, store: ResultsStore, name: str) -> list[dict]:
    """Write the table files and the HTML page from the results store."""
    rows = store.table(cfg.methods)
    summary = pass_at(rows, cfg.methods)
    write_tables(cfg.out, rows, summary, name)
    from pdesharp.suite.page import write_page

    write_page(cfg.out, cfg, rows, summary, name)
    return rows


@dataclass
class SuiteResult:
    rows: list[dict]
    summary: list[dict]
    failed: list[str]
    refused: list[str]


def run_suite(cfg: SuiteConfig, *, on_case: Callable[[int, int, str], None] | None = None,
              stage: Stage | None = None, on_evaluation: Callable | None = None,
              note: Callable[[str], None] | None = None) -> SuiteResult:
    """Run every case not yet done (serially here, or on a Ray cluster), recording each in the
    results store as it ends, then write the table. ``on_case(done, total, words)``."""
    from pdesharp.runlock import RunBusy, claim

    suite, store = prepare(cfg)
    try:
        lock = claim(cfg.out)  # one driver per output folder
    except RunBusy as exc:
        store.close()
        raise SuiteRunError(f"{cfg.out} is being run by process {exc.pid}; wait for it or "
                            "stop it (a killed suite leaves a stale lock, which is ignored)")
    try:
        todo = []
        done = 0
        total = len(suite.cases)
        for i, case in enumerate(suite.cases):
            state = store.state(case.name)
            if state == "refused" or state == "done" and _cells_finished(cfg, case):
                done += 1
                if note:
                    note(f"{case.name}: already {store.state(case.name)}")
                continue
            todo.append((i, case))
        if on_case:
            on_case(done, total, f"{done} of {total} cases already done")

        def record(i: int, case: Case, got: dict) -> None:
            nonlocal done
            store.record(case.name, i, state=got["state"], task=case.task.name,
                         reason=got["reason"], reference=reference_of(case), rows=got["rows"])
            done += 1
            if on_case:
                words = got["state"] + (f": {got['reason'][:200]}" if got["reason"] else "")
                on_case(done, total, f"{case.name}: {words}")

        if cfg.executor == "ray":
            from pdesharp.suite.ray_cases import run_on_ray

            run_on_ray(cfg, todo, work=run_stored_case, record=record, stage=stage,
                       note=note)
        else:
            for i, case in todo:
                if stage:
                    stage(case.name, "starting")
                record(i, case, run_case(cfg, case, stage=stage, on_evaluation=on_evaluation))
        rows = finish(cfg, store, suite.name)
        summary = pass_at(rows, cfg.methods)
        states = {c.name: store.state(c.name) for c in suite.cases}
        return SuiteResult(rows=rows, summary=summary,
                           failed=[n for n, s in states.items() if s == "failed"],
                           refused=[n for n, s in states.items() if s == "refused"]
                           + [r.name for r in suite.refused])
    finally:
        lock.unlink(missing_ok=True)
        store.close()


def _cells_finished(cfg: SuiteConfig, case: Case) -> bool:
    """Every cell of a done case still has its summary.json."""
    from pdesharp.bench_tables import cell_dir

    out = case_dir(cfg.out, case.name)
    cells = [cell_dir(out, case.task.name, m, k) for m in cfg.methods
             for k in range(cfg.repeats)]
    return all((c / "summary.json").is_file() for c in cells)


# What a resume never takes from the folder, as `pdesharp resume` (commands/solve.py,
# USER_SETTINGS): where solvers run, which endpoint gets which key, the price file. A folder
# from someone else could otherwise send this user's key to its own endpoint.
USER_SETTINGS = {"base_url": "--base-url", "optillm_url": "--optillm-url",
                 "executor": "--executor", "ray_address": "--ray-address", "prices": "--prices"}


def load(out: str | Path) -> SuiteConfig:
    """The settings a suite output folder was run with (for `pdesharp suite resume` and
    `report`); its ``out`` is ``out`` itself, wherever the folder was written (a moved folder,
    or one whose suite.json names another place, is still written in here)."""
    from pdesharp.untrusted import UnsafeFolder, read_inside

    try:
        raw = read_inside(out, CONFIG_FILE, limit=1 << 20)
        data = json.loads(raw) if raw is not None else None
    except (UnsafeFolder, ValueError, RecursionError) as exc:
        raise SuiteRunError(f"{CONFIG_FILE} in {out} cannot be used: {exc}") from None
    if not isinstance(data, dict):
        raise SuiteRunError(f"{out} is not a suite output folder (no {CONFIG_FILE})")
    try:
        cfg = SuiteConfig.from_dict(data)
    except TypeError as exc:
        raise SuiteRunError(f"{CONFIG_FILE} in {out} cannot be used: {exc}") from None
    cfg.out = str(Path(out).resolve())
    return cfg


def recorded_user_settings(cfg: SuiteConfig) -> list[str]:
    """The flags (with values) of :data:`USER_SETTINGS` that ``cfg`` records other than their
    defaults, the key variable included: a resume refuses them."""
    defaults = SuiteConfig(suite="", out="")
    said = [f"{flag} {getattr(cfg, key)}" for key, flag in USER_SETTINGS.items()
            if getattr(cfg, key) != getattr(defaults, key)]
    if (cfg.llm or {}).get("api_key_env"):
        said.append(f"--api-key-env {cfg.llm['api_key_env']}")
    return said


def rewrite_page(out: str | Path, page: str | Path | None = None) -> Path:
    """The table files and the HTML page again, from the results store (`pdesharp report OUT`,
    `pdesharp suite report OUT`); ``page``: another file for the HTML."""
    from pdesharp.suite.page import render
    from pdesharp.untrusted import UnsafeFolder, check_folder

    try:  # a results folder handed over is untrusted input: regular files and folders only
        check_folder(out, "suite folder")
    except UnsafeFolder as exc:
        raise SuiteRunError(str(exc)) from None
    cfg = load(out)
    store = ResultsStore(out)
    try:
        rows = finish(cfg, store, store.get("name") or "")
        if page is None:
            return Path(out) / "index.html"
        path = Path(page)
        path.write_text(render(cfg, rows, pass_at(rows, cfg.methods), store.get("name") or ""))
        return path
    finally:
        store.close()
