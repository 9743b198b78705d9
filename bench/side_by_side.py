"""pdesharp's winners beside exponax and py-pde, at equal accuracy, warm and cold (issue 27).

    pip install -e ".[bench]"            # jax, jaxlib (CPU), exponax, py-pde
    python bench/side_by_side.py         # the whole suite (hours: Gray-Scott alone is long)
    python bench/side_by_side.py --quick # six cases, short sweeps, 4 samples (py-pde: 2)
    python bench/side_by_side.py --report-only   # the last results again, fronts into reports

The work folder (``--work``, default ``$XDG_CACHE_HOME/pdesharp-bench/side_by_side``) keeps the
data, references and winners; a winner is solved again when the pdesharp sources change
(``--keep-winners`` keeps it, ``--resolve`` forces a new one).

For every case of the suite (bench/sbs_cases.py: APEBench's physical scenarios with exponax's
initial-condition generators, py-pde's examples on boxes with walls):

1. data: the library's initial conditions and a converged reference (bench/sbs_reference.py:
   ETDRK4 pseudo-spectral on a finer grid, its error in time bounded by the run with half the
   steps, in space measured by a run on a finer grid still), which dev.hdf5 states as pdesharp's
   generators do: the solves below take it as their floor;
2. pdesharp's winner: ``pdesharp solve task.yaml --dev-data dev.hdf5`` with the built-in analyst
   (no model), once per objective (``accuracy``, and ``fastest-below:TOL`` with the case's TOL;
   where the library's front stops short of TOL or of the accuracy winner's nRMSE, also
   ``fastest-below`` at the library's best nRMSE: pdesharp's fastest solver at the accuracy the
   library reaches, solved for and paired with it), kept
   in the work folder and reused while the pdesharp sources are unchanged;
3. the library's accuracy-time curve: a sweep of its step count (exponax: substeps per frame,
   ETDRK order 2 and 4, float32 and float64; py-pde: explicit Runge-Kutta with an adaptive
   tolerance, on the data grid and on a 3x finer one, with its NumPy and its Numba backend)
   against the reference, each point a fresh process (bench/sbs_worker.py: cold = library
   import + set-up + first batch; warm = per sample of the batch solved again, median), carried
   on past the sweep's last step count while the library's error is above pdesharp's and still
   falls (sbs_pairing.extend), so that "cannot reach" is the library's limit, not the sweep's;
4. pairing: the winner and the library points that bracket its accuracy are run again in turns,
   ``--repeat`` times, each in a fresh process, and the medians of those runs give the times
   and the cold ratio; the warm ratio is the median of ``--duel-rounds`` rounds' ratios, the
   winner and each of those points timed in turns in one process (bench/sbs_turns.py): this
   VM's speed drifts by up to 2x over seconds, so separate processes catch different phases of
   it (1D KS: the winner 0.05-0.10 s/sample in four back to back), adjacent calls share one.

Warm times are wall-clock; the table also gives the ratio of warm CPU seconds (every thread's),
which a loaded machine disturbs less (a multi-threaded library's CPU time exceeds its wall time
on a quiet machine, so on one that ratio flatters pdesharp's single-threaded NumPy).

Per case it prints pdesharp's accuracy and warm/cold times, the library's time at that accuracy
(log-log interpolation along its front; at its best accuracy when it cannot reach pdesharp's, and
by how much it misses; at the reference's own error when pdesharp's is below it: a lower nRMSE
there measures agreement with the reference's errors, and a library point measured below it
counts at it, as where the library runs the reference's own discretisation), and the ratios
pdesharp / library. It writes ``results.json`` and ``fronts.png`` into the work folder (and each
case's library points into ``<case>/sweep.json`` as soon as they are measured). Absolute
times are context; the ratios are the result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from sbs_cases import BY_NAME, CASES, QUICK, Case, finer, setting, sweep  # noqa: E402
from sbs_data import OUTPUT  # noqa: E402
from sbs_pairing import at_accuracy, at_floor, best_point, extend, front  # noqa: E402
from sbs_tables import export_front, plot, reference_error, table  # noqa: E402
from sbs_turns import duel  # noqa: E402
from sbs_reference import upsample  # noqa: E402


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---- 1. data and 2. winners ----------------------------------------------------------------
def ensure_data(case: Case, work: Path, samples: int) -> Path:
    d = work / case.name
    meta = d / "reference.json"
    got = json.loads(meta.read_text()) if meta.exists() else {}
    if (got.get("samples"), got.get("output"), got.get("refine"), got.get("substeps")) == \
            (samples, OUTPUT, case.ref_refine, case.ref_substeps):
        if "spatial" not in got:  # made before its spatial error was measured: measure it
            log(f"{case.name}: the reference's spatial error (a run on a finer grid)")
            subprocess.run([sys.executable, str(HERE / "sbs_data.py"), case.name, str(d),
                            "--check-only"], check=True, stdout=subprocess.DEVNULL)
        return d
    log(f"{case.name}: initial data and converged reference ({samples} samples)")
    subprocess.run([sys.executable, str(HERE / "sbs_data.py"), case.name, str(d),
                    "--samples", str(samples)], check=True, stdout=subprocess.DEVNULL)
    return d


def source_key() -> str:
    """The pdesharp sources a winner depends on: a change re-runs the solve."""
    h = hashlib.sha256()
    for p in sorted((REPO / "src" / "pdesharp").rglob("*")):
        if p.suffix in (".py", ".j2", ".yaml") and p.is_file():
            h.update(p.relative_to(REPO).as_posix().encode() + p.read_bytes())
    return h.hexdigest()[:16]


AT_FLOOR = "fastest-below:floor"


def run_tag(case: Case, objective: str) -> str:
    """The run folder of an objective's winner: accuracy, fastest (the case's tolerance),
    floor (the fastest at the reference's own error, where the accuracy winner stopped
    there), or at_library (the library's best accuracy, where it cannot reach pdesharp's)."""
    if objective in ("accuracy", AT_FLOOR):
        return objective.rpartition(":")[2]
    return "fastest" if objective == f"fastest-below:{case.tol:g}" else "at_library"


def floor_objective(accuracy: dict | None) -> str | None:
    """Where the accuracy winner (its run's summary) is at the reference floor, the question a
    user who needs that accuracy asks: the fastest solver at the floor. The accuracy search
    stops at the first solver to reach it, which need not be the fastest there (1D KS: a
    4x grid at CFL 0.05, 1.4x exponax's time at the same accuracy)."""
    audit = (accuracy or {}).get("reference_audit") or {}
    floor, best = audit.get("ranking_floor"), (accuracy or {}).get("best_dev_score")
    return AT_FLOOR if floor is not None and best is not None and best <= floor else None


def library_objective(case: Case, points: list[dict], mine: float | None = None) -> str | None:
    """Where the library's front stops short of the case's tolerance or of ``mine`` (the nRMSE
    of pdesharp's most accurate winner), the question its user asks of pdesharp: the fastest
    solver at the library's best accuracy (fastest-below at its best point's nRMSE), else None.
    A solve of its own: the other runs' solvers were chosen for other accuracies."""
    fw = front(points, "warm")
    goal = case.tol if mine is None or not math.isfinite(mine) else min(case.tol, mine)
    if not fw or fw[-1]["nrmse"] <= goal:
        return None
    return f"fastest-below:{best_point(fw)['nrmse']:.3g}"


def ensure_winner(case: Case, d: Path, objective: str, key: str, force: bool,
                  keep: bool = False) -> dict | None:
    tag = run_tag(case, objective)
    run = d / "runs" / tag
    stamp = run / "bench_key.json"
    # the sources and the data: a winner chosen against a reference made again is stale too
    data = hashlib.sha256((d / "reference.json").read_bytes()).hexdigest()[:16]
    want = {"key": key, "objective": objective, "reference": data}
    same = stamp.exists() and (json.loads(stamp.read_text()) == want or (
        keep and json.loads(stamp.read_text())["objective"] == objective))
    if not force and same and (run / "best_solver.py").exists():
        return json.loads((run / "summary.json").read_text())
    log(f"{case.name}: pdesharp solve --objective {objective}")
    if run.exists():
        import shutil

        shutil.rmtree(run)
    t0 = time.perf_counter()
    # this interpreter's pdesharp (its venv's script), not whichever one PATH finds first
    script = Path(sys.executable).with_name("pdesharp")
    p = subprocess.run([str(script) if script.exists() else "pdesharp", "solve",
                        str(d / "task.yaml"), "--dev-data",
                        str(d / "dev.hdf5"), "--out", str(d / "runs"), "--run-id", tag,
                        "--objective", objective, "--quiet"],  # floor: the file's own error
                       capture_output=True, text=True)
    if not (run / "best_solver.py").exists():
        log(f"{case.name}: no winner ({p.returncode}): {p.stderr.strip()[-400:]}")
        return None
    summary = json.loads((run / "summary.json").read_text())
    summary["bench_solve_seconds"] = time.perf_counter() - t0
    (run / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    stamp.write_text(json.dumps(want))
    return summary


def solver_key(path: Path) -> str:
    """The solver a winner's file holds: its text without the header line pdesharp writes (run
    id, score), so that two objectives whose searches ended at the same solver are paired once
    (2D Gray-Scott: ``fastest-below:floor`` found nothing faster than the accuracy winner)."""
    from pdesharp.pipeline import WINNER_HEADER
    from pdesharp.store import code_sha256  # the run store's identity of a solver's code

    lines = path.read_text().splitlines(keepends=True)
    return code_sha256("".join(x for x in lines if not x.startswith(WINNER_HEADER)))


def call_spec(task_path: Path) -> list:
    from pdesharp.task import load_task

    task = load_task(str(task_path))
    fields = list(task.equation.unknowns)
    out = []
    for a in task.solver.args:
        if a.kind == "initial":
            out.append(["initial", fields.index(a.field)])
        elif a.kind == "time":
            out.append(["time", None])
        else:
            out.append(["scalar", float(task.parameters[a.field or a.name])])
    return out


# ---- 3. the worker processes -------------------------------------------------------------------
def inputs(case: Case, d: Path, refine: int) -> tuple[Path, int, int]:
    """The worker's inputs at an r times finer grid: (npz, stride, offset)."""
    path = d / f"inputs_r{refine}.npz"
    # made once per reference (again when the data are: the workers score against the npz's
    # copy), not at every job of a pairing
    if path.exists() and path.stat().st_mtime >= (d / "dev.hdf5").stat().st_mtime:
        with np.load(path) as z:
            if "offset" in z.files:
                return path, refine, int(z["offset"])
    import h5py

    with h5py.File(d / "dev.hdf5", "r") as h5:
        keys = ["tensor"] if len(case.fields) == 1 else list(case.fields)
        ref = np.array([h5[k][()] for k in keys])  # [var, B, T, N...]
        t = h5["t-coordinate"][()]
    w0, offset = upsample(ref[:, :, 0], refine, case.walls)
    np.savez(path, w0=w0, t=t, ref=ref, offset=offset)
    return path, refine, offset


def work_jobs(case, d, kind, settings, repeat=3, solver=None, call=None) -> list[dict]:
    """Run ``settings`` [(config, refine)] in one fresh worker process, in order: the first's
    cold time is a fresh process's; the later ones' add the process's import time to their own
    set-up and first batch (their compilation is their own: a new stepper compiles anew)."""
    items = []
    for config, refine in settings:
        npz, stride, offset = inputs(case, d, refine)
        items.append({"config": config, "inputs": str(npz), "stride": stride, "offset": offset})
    job = {"case": case.name, "solver_kind": kind, "repeat": repeat, "solver": solver,
           "call": call, "items": items}
    path = d / f"job_{os.getpid()}.json"
    path.write_text(json.dumps(job))
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, str(HERE / "sbs_worker.py"), str(path)],
                       capture_output=True, text=True, env=env, timeout=3600)
    lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0:
        log(f"  {kind} {settings[len(lines)][0] if len(lines) < len(settings) else ''}: failed:"
            f" {p.stderr.strip()[-300:]}")
    out = []
    for i, (config, refine) in enumerate(settings):
        r = lines[i] if i < len(lines) else {"failed": True}
        r.update(config=config, refine=refine)
        out.append(r)
    return out


def work_job(case, d, kind, config, refine=1, repeat=3, solver=None, call=None) -> dict:
    """One setting in a fresh process (its cold time is a fresh process's)."""
    return work_jobs(case, d, kind, [(config, refine)], repeat, solver, call)[0]


def store_sweep(d: Path, ref_meta: dict, points: list[dict]) -> None:
    """The library's points, kept as soon as the sweep ends: a run stopped later (a winner's
    solve, the pairs) leaves them for --reuse-sweep (results.json is written at a case's end)."""
    tmp = d / "sweep.json.part"
    tmp.write_text(json.dumps({"reference": ref_meta, "points": points}, default=str))
    tmp.replace(d / "sweep.json")


def stored_sweep(case: Case, d: Path, work: Path, ref_meta: dict) -> list[dict] | None:
    """The last sweep's points for --reuse-sweep: the case's own sweep.json, else its entry in
    results.json; None when there is none or it was scored against another reference."""
    kept = json.loads((d / "sweep.json").read_text()) if (d / "sweep.json").exists() else None
    if kept is None and (work / "results.json").exists():
        kept = next((r for r in json.loads((work / "results.json").read_text())
                     if r["case"] == case.name and r["points"]), None)
    if kept and kept.get("reference") != ref_meta:
        log(f"{case.name}: the reference changed since the last sweep: sweeping again")
        return None
    return kept["points"] if kept and kept.get("points") else None


# ---- 4. fronts, interpolation, pairing -----------------------------------------------------
def run_case(case: Case, args, key: str) -> dict:
    d = ensure_data(case, args.work, args.samples or (4 if args.quick else case.samples))
    ref_meta = json.loads((d / "reference.json").read_text())
    call = call_spec(d / "task.yaml")
    winners = {}

    def solved(obj: str) -> dict | None:
        s = ensure_winner(case, d, obj, key, args.resolve, args.keep_winners)
        if s is not None:
            winners[obj] = s
        return s

    # where the accuracy search stopped at the reference floor, also the fastest there
    objectives = ["accuracy", floor_objective(solved("accuracy")), f"fastest-below:{case.tol:g}"]
    objectives = [obj for obj in objectives if obj is not None]
    for obj in objectives[1:]:
        solved(obj)
    if args.prepare:
        return {"case": case.name, "library": case.library, "title": case.title,
                "reference": ref_meta, "points": [], "rows": [], "winners": winners}
    points = []
    groups: dict[str, list] = {}
    for config, refine in sweep(case, args.quick):  # one process per precision
        groups.setdefault(str(config.get("x64")), []).append((config, refine))
    old = stored_sweep(case, d, args.work, ref_meta) if args.reuse_sweep else None
    if old:
        points, groups = old, {}  # only the pairs are new
        log(f"{case.name}: {case.library} points of the last sweep")
    for settings in groups.values():
        log(f"{case.name}: {case.library} sweep")
        for p in work_jobs(case, d, case.library, settings, repeat=3):
            points.append(p)
            if not p.get("failed"):
                log(f"  {p['config']} r{p['refine']}: nRMSE {p['nrmse']:.2e} warm"
                    f" {p['warm']:.2e} s/sample cold {p['cold']:.2f} s")
    mine = winners.get("accuracy", {}).get("best_dev_score")
    # the sweep carried on past its last setting while the library's error is still falling and
    # above what pdesharp reaches (down to the reference's own error: no pairing goes below it)
    goal = max(min(case.tol, mine if mine is not None and math.isfinite(mine) else case.tol),
               reference_error(ref_meta))

    def measured(config, refine):
        p = work_job(case, d, case.library, config, refine, 3)
        if not p.get("failed"):
            log(f"  past the sweep: {p['config']} r{p['refine']}: nRMSE {p['nrmse']:.2e} warm"
                f" {p['warm']:.2e} s/sample cold {p['cold']:.2f} s")
        return p

    # (a library point slower than that winner and less accurate is beaten on both counts)
    slowest = winners.get("accuracy", {}).get("best_seconds_per_sample")
    points += extend(points, goal, lambda p: finer(case, p, args.quick), measured, setting,
                     slowest)
    store_sweep(d, ref_meta, points)  # before the solves and pairs below, which take hours
    at_floor(points, reference_error(ref_meta))  # (goal is at the floor or above: no extension
    # starts below it)
    extra = library_objective(case, points, mine)
    if extra is not None:  # the library cannot reach pdesharp's accuracy: pdesharp at its best
        objectives.append(extra)
        won = ensure_winner(case, d, extra, key, args.resolve, args.keep_winners)
        if won is not None:
            winners[extra] = won
    rows = []
    paired: dict[str, dict] = {}  # solver_key -> its row: one solver is paired once
    for obj in objectives:
        if obj not in winners:
            continue
        solver = str(d / "runs" / run_tag(case, obj) / "best_solver.py")
        ident = solver_key(Path(solver))
        same = paired.get(ident)
        if same is not None:
            log(f"  {obj}: the same solver as the {same['objective']} row: its pairing")
            rows.append(dict(same, objective=obj, same_as=same["objective"],
                             evaluator_per_sample=winners[obj].get("winner_time", {}).get(
                                 "per_sample")))
            export_front(case, d / "runs" / run_tag(case, obj), points,
                         dict(rows[-1], evaluator=rows[-1]["evaluator_per_sample"]))
            continue
        fw, fc = front(points, "warm"), front(points, "cold")
        mine = [work_job(case, d, "pdesharp", {}, 1, 3, solver, call)]
        if mine[0].get("failed"):
            rows.append({"objective": obj, "failed": True})
            continue
        err = mine[0]["nrmse"]
        # below the reference's own error a lower nRMSE is agreement with the reference's
        # errors, not with the PDE's solution (the floor a run stops at): both sides are
        # compared at that error at least (1D Burgers: pdesharp 4.8e-11, exponax 3.4e-15 on
        # the reference's own grid and steps, for a reference 1.1e-10 from the solution)
        goal = max(err, reference_error(ref_meta))
        _, bw, _ = at_accuracy(fw, goal, "warm")
        _, bc, _ = at_accuracy(fc, goal, "cold")
        bracket = {json.dumps([p["config"], p["refine"]], sort_keys=True): p for p in bw + bc}
        again = {k: [] for k in bracket}
        for _ in range(args.repeat - 1):  # pairs: pdesharp, then each bracketing library point
            mine.append(work_job(case, d, "pdesharp", {}, 1, 3, solver, call))
            for k, p in bracket.items():
                again[k].append(work_job(case, d, case.library, p["config"], p["refine"], 3))
        for k, p in bracket.items():  # medians over the sweep's run and the paired ones
            runs = [p] * (not old) + [q for q in again[k] if not q.get("failed")] or [p]
            p["warm"] = statistics.median(q["warm"] for q in runs)
            p["cold"] = statistics.median(q["cold"] for q in runs)
            p["warm_cpu"] = statistics.median(q["warm_cpu"] for q in runs)
        fw, fc = front(points, "warm"), front(points, "cold")
        lib_w, _, reached = at_accuracy(fw, goal, "warm")
        lib_c, _, _ = at_accuracy(fc, goal, "cold")
        lib_cpu, _, _ = at_accuracy(front(points, "warm_cpu"), goal, "warm_cpu")
        ok = [m for m in mine if not m.get("failed")]
        warm = statistics.median(m["warm"] for m in ok)
        cold = statistics.median(m["cold"] for m in ok)
        best = fw[-1]["nrmse"] if fw else math.nan
        export_front(case, d / "runs" / run_tag(case, obj),
                     points, {"nrmse": err, "warm": warm, "cold": cold, "batch": ok[0]["batch"],
                              "first": statistics.median(m["first"] for m in ok),
                              "import": statistics.median(m["import"] for m in ok),
                              "evaluator": winners[obj].get("winner_time", {}).get("per_sample")})
        cpu = statistics.median(m["warm_cpu"] for m in ok)
        # the warm ratio: in turns in one process (a fresh process per timing, above, catches
        # another phase of this machine's speed drift; those ratios stay as ratio_warm_procs)
        _, bw, _ = at_accuracy(fw, goal, "warm")
        turns = duel(case, d, solver, call, bw, goal, args.duel_rounds, inputs, log)
        if turns is not None:
            log(f"  {obj}: in turns, warm ratio {turns['warm']['ratio']:.3g} (quartiles"
                f" {turns['warm']['quartiles'][0]:.3g}-{turns['warm']['quartiles'][1]:.3g},"
                f" {turns['rounds']} rounds); in separate processes {warm / lib_w:.3g}")
        rows.append({"objective": obj, "nrmse": err, "warm": warm, "cold": cold,
                     "warm_cpu": cpu, "lib_warm_cpu": lib_cpu,
                     "ratio_warm_cpu": turns["warm_cpu"]["ratio"] if turns else cpu / lib_cpu,
                     "ratio_warm_procs": warm / lib_w, "turns": turns,
                     "import": statistics.median(m["import"] for m in ok), "batch": ok[0]["batch"],
                     "first": statistics.median(m["first"] for m in ok),
                     "evaluator_per_sample": winners[obj].get("winner_time", {}).get("per_sample"),
                     "title": winners[obj].get("winner", {}).get("title")
                     if isinstance(winners[obj].get("winner"), dict) else None,
                     "lib_warm": lib_w, "lib_cold": lib_c, "lib_reaches": reached,
                     "lib_best_nrmse": best,
                     "ratio_warm": turns["warm"]["ratio"] if turns else warm / lib_w,
                     "ratio_cold": cold / lib_c, "runs": len(ok)})
        paired[ident] = rows[-1]
    return {"case": case.name, "library": case.library, "title": case.title,
            "reference": ref_meta, "points": points, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="six cases, short sweeps, 3 pairs")
    ap.add_argument("--cases", help="comma-separated case names (default: all, or --quick's)")
    ap.add_argument("--samples", type=int, help="samples per case (default 8; --quick 4)")
    ap.add_argument("--repeat", type=int, help="paired runs per winner (default 5; --quick 3)")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get(
        "XDG_CACHE_HOME", Path.home() / ".cache")) / "pdesharp-bench" / "side_by_side")
    ap.add_argument("--resolve", action="store_true", help="re-run pdesharp solve")
    ap.add_argument("--keep-winners", action="store_true",
                    help="reuse stored winners even if the pdesharp sources changed since")
    ap.add_argument("--report-only", action="store_true",
                    help="print the table and plot of the last results.json, and put each"
                         " winner's front into its run folder's report.md")
    ap.add_argument("--duel-rounds", type=int, default=15,
                    help="rounds of the warm ratio in turns, in one process (default 15)")
    ap.add_argument("--reuse-sweep", action="store_true",
                    help="the library's points of the last sweep (the case's sweep.json, else"
                         " results.json): only the pairs run")
    ap.add_argument("--prepare", action="store_true",
                    help="only make the data and pdesharp's winners (no timing)")
    args = ap.parse_args()
    args.repeat = args.repeat or (3 if args.quick else 5)
    names = args.cases.split(",") if args.cases else (QUICK if args.quick else
                                                     [c.name for c in CASES])
    args.work.mkdir(parents=True, exist_ok=True)
    if args.report_only:  # the table, plot and run-folder fronts of the last results.json
        results = json.loads((args.work / "results.json").read_text())
        for r in results:
            case, d = BY_NAME[r["case"]], args.work / r["case"]
            if (d / "reference.json").exists():  # its error as measured now (sbs_data.py)
                r["reference"] = json.loads((d / "reference.json").read_text())
            for row in r["rows"]:
                if not row.get("failed"):
                    export_front(case, d / "runs" / run_tag(case, row["objective"]), r["points"],
                                 dict(row, evaluator=row.get("evaluator_per_sample")))
        print(table(results))
        plot(results, args.work / "fronts.png")
        return
    key = source_key()
    results = []
    store = args.work / "results.json"
    for name in names:
        results.append(run_case(BY_NAME[name], args, key))
        if args.prepare:  # nothing timed: the last run's points stay for --reuse-sweep
            continue
        # this run's cases replace their earlier entries; other cases' stay (a later
        # --report-only shows them all)
        earlier = json.loads(store.read_text()) if store.exists() else []
        mine = {r["case"] for r in results}
        store.write_text(json.dumps([r for r in earlier if r["case"] not in mine] + results,
                                    indent=1, default=str))
    if args.prepare:
        for r in results:
            for obj, w in r["winners"].items():
                print(r["case"], obj, w.get("best_dev_score"),
                      w.get("winner_time", {}).get("per_sample"), w.get("bench_solve_seconds"))
        return
    print(table(results))
    plot(results, args.work / "fronts.png")
    print(f"\nresults: {args.work / 'results.json'}\nplot:    {args.work / 'fronts.png'}")


if __name__ == "__main__":
    main()
