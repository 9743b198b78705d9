"""Bench: how good a solver the built-in analyst's roles reach within an evaluation budget.

For each task: built-in Analysis -> Genesis (N designs) -> a tournament loop of at most
``--budget`` counted evaluations (the three judges nominate, nominees run, each judge patches its
base, patched solvers run, repeat). Every solver run goes through ``pdesharp.evaluate.Evaluator``
(sandboxed child, CodePDE's nRMSE); ``--samples`` limits the dev samples per evaluation.

    python bench/bench_builtin.py --tasks burgers advection --budget 13 --samples 5
"""

from __future__ import annotations

import argparse
import asyncio
import time

from pdesharp.builtin import BuiltinAnalyst, BuiltinAuthor, BuiltinJudge
from pdesharp.evaluate import Evaluator
from pdesharp.roles import PoolEntry
from pdesharp.synthesis.patch import apply_patch
from pdesharp.task import load_task

PUBLISHED = {"advection": 5.2e-4, "burgers": 1.05e-4, "reacdiff1d": 2.3e-3, "cns1d": 1.4e-2,
             "darcy": 3.9e-3}


async def tournament(task, evaluator, budget: int, n_candidates: int, log) -> tuple:
    analysis = await BuiltinAnalyst(data_dir=evaluator.data_dir).analyse(task)
    pool = [PoolEntry(candidate=c) for c in await BuiltinAuthor().write(task, analysis, n_candidates)]
    shared: set = set()
    judges = [BuiltinJudge(name=f"judge-{i + 1}", shared=shared) for i in range(3)]
    used = 0

    async def run(entry: PoolEntry):
        nonlocal used
        used += 1
        t0 = time.time()
        entry.result = await evaluator.evaluate(entry.candidate.code, split="dev", feedback="nrmse",
                                                label=entry.candidate.id)
        log(f"  [{used:2d}] {entry.candidate.id:>6} {entry.candidate.title[:70]:70s} "
            f"{entry.result.summary_line()} ({time.time() - t0:.0f}s)")

    rnd = 0
    while used < budget:
        rnd += 1
        noms = [await j.nominate(task, analysis, pool) for j in judges]
        nominees = []
        for nom in noms:
            e = next(p for p in pool if p.candidate.id == nom.nominee)
            if e.result is None and e not in nominees:
                nominees.append(e)
        for e in nominees:
            if used < budget:
                await run(e)
        for j, nom in zip(judges, noms):
            if used >= budget:
                break
            base = next(p for p in pool if p.candidate.id == nom.nominee)
            if base.result is None or not base.result.ok:
                ok = [p for p in pool if p.result is not None and p.result.score is not None]
                base = min(ok, key=lambda p: p.result.score) if ok else base
            prop = await (j.debug(base) if base.result is not None and not base.result.ok
                          else j.propose(task, base, pool, "nrmse"))
            code = prop.code if prop.code is not None else apply_patch(base.candidate.code, prop.patch)
            new = base.candidate.model_copy(update={
                "id": f"r{rnd}{j.name[-1]}", "code": code, "origin": "patch", "parents": prop.parents,
                "judge": j.name, "round": rnd, "title": prop.title})
            entry = PoolEntry(candidate=new)
            pool.append(entry)
            await run(entry)
    ok = [p for p in pool if p.result is not None and p.result.score is not None]
    best = min(ok, key=lambda p: p.result.score) if ok else None
    return best, used, analysis


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=list(PUBLISHED))
    ap.add_argument("--budget", type=int, default=13)
    ap.add_argument("--candidates", type=int, default=8)
    ap.add_argument("--samples", type=int, default=None, help="dev samples per evaluation")
    ap.add_argument("--data-dir", default="../shared/data/pdebench")
    args = ap.parse_args()
    rows = []
    for name in args.tasks:
        task = load_task(name)
        ev = Evaluator(task, data_dir=args.data_dir, convergence=False, max_samples=args.samples,
                       residual=False)
        print(f"== {name}", flush=True)
        t0 = time.time()
        best, used, _ = asyncio.run(tournament(task, ev, args.budget, args.candidates,
                                               lambda s: print(s, flush=True)))
        score = best.result.score if best else float("nan")
        rows.append((name, score, used, best.candidate.title if best else "-", time.time() - t0))
        print(f"   best {score:.3e} after {used} evaluations: {rows[-1][3]}", flush=True)
    print("\n| task | best dev nRMSE | evaluations | published best | design |")
    print("|---|---|---|---|---|")
    for name, score, used, title, _ in rows:
        print(f"| {name} | {score:.3e} | {used} | {PUBLISHED.get(name, float('nan')):.2e} | {title} |")


if __name__ == "__main__":
    main()
