"""``pdesharp suite``: run, resume, report and import suites of cases (docs/suites.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from pdesharp.commands._common import comma_list, fail
from pdesharp.commands.solve import add_objective_arguments
from pdesharp.commands.solve_display import result_words
from pdesharp.llm.cli_args import add_llm_arguments, llm_options
from pdesharp.progress import Progress
from pdesharp.untrusted import terminal


def register(sub) -> None:
    p = sub.add_parser("suite", help="run every case of a suite folder, resumably, and tabulate",
                       description="Suites: many PDEs in one command (docs/suites.md).")
    ss = p.add_subparsers(dest="suite_command", metavar="SUBCOMMAND")
    run = ss.add_parser(
        "run", help="solve every case of a suite folder with every method (resumable)",
        description="Every case folder of SUITE (task.yaml + dev.hdf5 [+ test.hdf5], or "
                    "case.yaml naming a built-in task) solved by every method at the same "
                    "budget. Running the same command again (or `pdesharp suite resume OUT`) "
                    "repeats no finished case and no recorded evaluation or model call.")
    run.add_argument("suite", help="the suite folder")
    run.add_argument("--out", default=None,
                     help="results folder (default runs/suite-<suite folder name>)")
    run.add_argument("--methods", type=comma_list, default=["sharp"],
                     help="comma-separated: sharp (PDE-SHARP, default), codepde, codepde-r, "
                          "cot, moa, cepo")
    run.add_argument("--model", default="builtin",
                     help="model of every method: provider:model, compat:NAME with --base-url, "
                          "or builtin (the built-in analyst, default; sharp only)")
    run.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint URL")
    add_llm_arguments(run)
    run.add_argument("--repeats", type=int, default=1, help="independent repeats per case")
    run.add_argument("--budget-evals", type=int, default=None,
                     help="the same solver-evaluation budget for every case and method")
    run.add_argument("--max-usd", type=float, default=None, help="sharp: cost budget per case")
    run.add_argument("--max-tokens", type=int, default=None,
                     help="sharp: token budget per case")
    run.add_argument("--candidates", type=int, default=None,
                     help="sharp's Genesis samples (pdesharp solve's default 32)")
    run.add_argument("--max-rounds", type=int, default=None, help="sharp's rounds per cycle")
    run.add_argument("--audit", choices=["auto", "compute", "off"], default="auto",
                     help="sharp's reference audit of each case's dev data (as `pdesharp "
                          "solve --audit`; cases with an exact reference need none)")
    run.add_argument("--samples", type=int, default=32,
                     help="samples for codepde / cot / moa / cepo (32)")
    run.add_argument("--refine-samples", type=int, default=12, help="codepde-r programs (12)")
    run.add_argument("--debug-rounds", type=int, default=4, help="debugging rounds (4)")
    run.add_argument("--optillm-url", default=None, help="an OptiLLM proxy for cot/moa/cepo")
    run.add_argument("--data-dir", default=None,
                     help="data folder for cases that name a built-in task without data files")
    run.add_argument("--max-samples", type=int, default=None,
                     help="evaluate on the first K samples only (quick runs; not comparable)")
    run.add_argument("--no-convergence", action="store_true",
                     help="skip the empirical convergence test in evaluations")
    run.add_argument("--workers", type=int, default=1, help="solver executions at once, per case")
    run.add_argument("--task-facts", choices=["full", "codepde"], default="full",
                     help="what the prompts state about each task (as `pdesharp solve`)")
    add_objective_arguments(run)
    g = run.add_argument_group("where cases run (docs/cluster.md)")
    g.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: one case after another here (default); ray: whole cases on "
                        "the workers of a Ray cluster, each case's evaluations sealed on the "
                        "worker that runs it")
    g.add_argument("--ray-address", default=None, metavar="ADDRESS",
                   help="with --executor ray: 'auto', 'ray://HOST:10001', or none for a local "
                        "Ray instance")
    run.set_defaults(func=cmd_run)

    res = ss.add_parser("resume", help="continue a killed or interrupted suite run",
                        description="Runs the suite again with the settings recorded in OUT. A "
                                      "folder recording an endpoint, a key variable, a price "
                                      "file or where solvers run is refused: continue it with "
                                      "`pdesharp suite run SUITE --out OUT` and those flags.")
    res.add_argument("out", help="the suite's results folder")
    res.set_defaults(func=cmd_resume)

    rep = ss.add_parser("report", help="rewrite a suite's table and HTML page from its store")
    rep.add_argument("out", help="the suite's results folder")
    rep.set_defaults(func=cmd_report)

    imp = ss.add_parser(
        "import", help="turn a public benchmark into a suite folder",
        description="pdeagent FILE.jsonl: PDEAgent-Bench records (manufactured solutions, exact "
                    "references); codepde: CodePDE's five tasks; apebench: APEBench's "
                    "scenarios (needs `pip install apebench`, which brings JAX).")
    imp.add_argument("format", choices=["pdeagent", "codepde", "apebench"])
    imp.add_argument("source", nargs="?", default=None,
                     help="pdeagent: the JSONL file; codepde: unused; apebench: unused")
    imp.add_argument("--out", required=True, help="the suite folder to write")
    imp.add_argument("--ids", type=comma_list, default=None,
                     help="only these record ids / task names / scenario names")
    imp.add_argument("--force", action="store_true", help="rewrite existing case folders")
    imp.add_argument("--samples", type=int, default=4,
                     help="apebench: samples per split (4)")
    imp.add_argument("--set", dest="settings", action="append", default=None,
                     metavar="NAME=VALUE",
                     help="apebench: override a scenario setting as APEBench's own keyword "
                          "arguments do (num_points, num_substeps, test_temporal_horizon, "
                          "train_seed, test_seed, ...); named in the case")
    imp.set_defaults(func=cmd_import)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def cmd_run(args) -> int:
    from pdesharp.data.paths import data_dir
    from pdesharp.llm.prices import PriceError
    from pdesharp.suite.run import SuiteConfig

    try:
        llm = llm_options(args)
    except PriceError as exc:
        fail(str(exc))
    suite = Path(args.suite).expanduser()
    out = Path(args.out).expanduser() if args.out else Path("runs") / f"suite-{suite.resolve().name}"
    cfg = SuiteConfig(
        suite=str(suite.resolve()), out=str(out.resolve()), methods=list(args.methods),
        model=args.model, repeats=args.repeats, budget_evals=args.budget_evals,
        max_usd=args.max_usd, max_tokens=args.max_tokens, candidates=args.candidates,
        max_rounds=args.max_rounds, audit=args.audit, samples=args.samples,
        refine_samples=args.refine_samples, debug_rounds=args.debug_rounds,
        optillm_url=args.optillm_url,
        # recorded as an absolute path ($PDESHARP_DATA resolved): a resume finds the data from
        # any shell
        data_dir=str(data_dir(args.data_dir).expanduser().resolve()),
        max_samples=args.max_samples, convergence=not args.no_convergence,
        workers=args.workers, executor=args.executor, ray_address=args.ray_address,
        task_facts=args.task_facts, objective=args.objective, time_margin=args.time_margin,
        retime=args.retime, base_url=args.base_url, llm=llm, prices=args.prices)
    return _run(cfg)


def cmd_resume(args) -> int:
    from pdesharp.suite.run import SuiteRunError, load, recorded_user_settings
    from pdesharp.untrusted import one_line

    try:
        cfg = load(Path(args.out).expanduser())
    except SuiteRunError as exc:
        fail(str(exc))
    said = recorded_user_settings(cfg)
    if said:
        fail(f"this suite folder records {one_line(', '.join(said), 400)}. A resume takes where "
             "solvers run and which endpoint gets which key from its own command line, never "
             "from the folder: continue it with `pdesharp suite run SUITE --out "
             f"{shlex.quote(cfg.out)}` and those flags (the same values, or others) if you "
             "mean it; finished cases are not run again")
    return _run(cfg)


def _run(cfg) -> int:
    from pdesharp.bench import BenchError
    from pdesharp.evaluate.executors import ExecutorUnavailable
    from pdesharp.llm.presets import is_builtin
    from pdesharp.suite.cases import SuiteError
    from pdesharp.suite.results import pass_lines
    from pdesharp.suite.run import SuiteRunError, run_suite

    if is_builtin(cfg.model) and set(cfg.methods) - {"sharp"}:
        fail("--model builtin has no language model for "
             f"{', '.join(m for m in cfg.methods if m != 'sharp')}; give a model spec "
             "(provider:model) or run only sharp (the built-in analyst)")
    with Progress("suite", unit="cases") as shown:
        evaluations = [0]

        def on_evaluation(case, label, split, result) -> None:
            evaluations[0] += 1
            shown.step(f"{case}: {result_words(label, split, result)}",
                       evaluations=evaluations[0])

        try:
            result = run_suite(
                cfg, on_case=lambda k, n, words: shown.step(words, done=k, total=n),
                stage=lambda case, words: shown.set(stage=f"{case}: {words}"),
                on_evaluation=on_evaluation, note=shown.note)
        except (SuiteError, SuiteRunError, BenchError, ExecutorUnavailable) as exc:
            fail(str(exc))
    out = Path(cfg.out)
    print(terminal((out / "table.md").read_text()))
    where = shlex.quote(str(out))
    print(f"results in {where}: table.md, table.csv, table.json, index.html; the store is "
          f"suite.sqlite")
    if result.failed:
        print(f"pdesharp: {len(result.failed)} case(s) failed ({', '.join(result.failed)}); "
              f"their work is kept: `pdesharp suite resume {where}` continues them",
              file=sys.stderr)
        return 1
    return 0


def cmd_report(args) -> int:
    from pdesharp.suite.run import SuiteRunError, rewrite_page

    try:
        page = rewrite_page(Path(args.out).expanduser())
    except SuiteRunError as exc:
        fail(str(exc))
    print(f"written {page.parent / 'table.md'} and {page}")
    return 0


def cmd_import(args) -> int:
    out = Path(args.out).expanduser()
    if args.format == "pdeagent":
        if not args.source:
            fail("pdesharp suite import pdeagent FILE.jsonl --out SUITE")
        from pdesharp.suite.importers.pdeagent import import_jsonl

        try:
            got = import_jsonl(args.source, out, ids=args.ids, force=args.force)
        except OSError as exc:
            fail(f"cannot read {args.source}: {exc.strerror or exc}")
    elif args.format == "codepde":
        from pdesharp.suite.importers.codepde import import_codepde

        got = import_codepde(out, names=args.ids, force=args.force)
    else:
        from pdesharp.suite.importers.apebench import ApebenchUnavailable, import_apebench

        try:
            got = import_apebench(out, names=args.ids, samples=args.samples, force=args.force,
                                  settings=args.settings, note=lambda s: print(terminal(s)))
        except (ApebenchUnavailable, ValueError) as exc:
            fail(str(exc))
    print(f"{len(got.written)} case(s) written to {out}"
          + (f", {len(got.skipped)} already there (--force rewrites them)" if got.skipped else ""))
    for r in got.refused:
        print(terminal(f"  refused {r['name']}: {r['reason']}"))
    print(f"run them with: pdesharp suite run {shlex.quote(str(out))}")
    return 0 if got.written or got.skipped else 1
