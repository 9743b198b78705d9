"""``pdesharp bench``: run methods side by side on tasks and write the comparison table."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

from pdesharp.commands._common import comma_list, fail
from pdesharp.commands.solve_display import result_words
from pdesharp.commands.sandbox import add_executor_arguments
from pdesharp.commands.solve import add_objective_arguments
from pdesharp.llm.cli_args import add_llm_arguments, llm_options
from pdesharp.progress import Progress
from pdesharp.untrusted import terminal


def register(sub) -> None:
    p = sub.add_parser(
        "bench", help="run PDE-SHARP and the baselines on the same tasks and compare them",
        description="Run every method on every task (resumable: finished cells are kept) and "
                    "write table.md / table.csv / table.json in the bench folder. Methods: "
                    "sharp, codepde, codepde-r, cot, moa, cepo (cot/moa/cepo are our "
                    "re-implementations of OptiLLM's techniques unless --optillm-url is given).")
    p.add_argument("--tasks", required=True, type=comma_list, help="comma-separated task names")
    p.add_argument("--methods", type=comma_list,
                   default=["sharp", "codepde", "codepde-r", "cot", "moa", "cepo"],
                   help="comma-separated methods (default: all six)")
    p.add_argument("--model", required=True,
                   help="model spec of every method, e.g. openai:gpt-4o-mini, or compat:NAME "
                        "with --base-url; 'builtin' benches only sharp (the built-in analyst: "
                        "the baselines need a language model)")
    p.add_argument("--base-url", default=None,
                   help="OpenAI-compatible endpoint URL for every method's model (see "
                        "docs/models.md)")
    add_llm_arguments(p)
    p.add_argument("--repeats", type=int, default=1, help="independent repeats per cell")
    p.add_argument("--out", default="runs/bench", help="bench folder (default runs/bench)")
    p.add_argument("--budget-evals", type=int, default=None,
                   help="the same solver-evaluation budget for every method")
    p.add_argument("--samples", type=int, default=32,
                   help="samples for codepde / cot / moa / cepo (CodePDE: 32)")
    p.add_argument("--refine-samples", type=int, default=12, help="codepde-r programs (12)")
    p.add_argument("--candidates", type=int, default=None,
                   help="sharp's Genesis samples, as `pdesharp solve --candidates` (default 32)")
    p.add_argument("--max-rounds", type=int, default=None,
                   help="sharp's rounds per cycle, as `pdesharp solve --max-rounds` (default 4)")
    p.add_argument("--debug-rounds", type=int, default=4, help="debugging rounds per sample (4)")
    p.add_argument("--optillm-url", default=None,
                   help="URL of an OptiLLM proxy you started (e.g. http://127.0.0.1:8000/v1): "
                        "cot/moa/cepo then run the real OptiLLM instead of our re-implementation")
    p.add_argument("--data-dir", default=None, help="reference data folder")
    p.add_argument("--dev-data", default=None, metavar="FILE",
                   help="explicit dev-split HDF5 file (one task), as `pdesharp solve --dev-data`")
    p.add_argument("--test-data", default=None, metavar="FILE",
                   help="explicit test-split HDF5 file (one task)")
    p.add_argument("--no-convergence", action="store_true",
                   help="skip the empirical convergence test in evaluations (as `pdesharp "
                        "solve --no-convergence`; then a cell is comparable with such a run)")
    p.add_argument("--max-samples", type=int, default=None,
                   help="evaluate on the first K samples only (quick runs; not comparable)")
    p.add_argument("--workers", type=int, default=1, help="solver executions at once, per task")
    p.add_argument("--parallel-cells", type=int, default=1,
                   help="methods of one task run at once (they share --workers)")
    p.add_argument("--task-facts", choices=["full", "codepde"], default="full",
                   help="what every method's prompts state about the task: everything the spec "
                        "and the data say (full, default) or exactly what CodePDE's prompts give "
                        "(codepde), for comparisons with published numbers")
    add_objective_arguments(p)  # picks every cell's winner; PDE-SHARP's search follows it
    add_executor_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from pdesharp.bench import BenchConfig, BenchError, BenchIncomplete, run_bench, to_markdown
    from pdesharp.commands.solve import resolved_data
    from pdesharp.llm.presets import is_builtin
    from pdesharp.llm.prices import PriceError
    from pdesharp.task import TaskError

    try:
        llm = llm_options(args)  # also installs --prices as the process default
    except PriceError as exc:
        fail(str(exc))
    methods = list(args.methods)
    if is_builtin(args.model) and set(methods) - {"sharp"}:
        skipped = [m for m in methods if m != "sharp"]
        if "sharp" not in methods:
            fail(f"--model builtin has no language model for {', '.join(skipped)}; give a "
                 "model spec (provider:model), or bench sharp (the built-in analyst)")
        methods = ["sharp"]
        print(f"pdesharp: --model builtin: benching sharp with the built-in analyst only; "
              f"{', '.join(skipped)} need a language model (--model provider:model)",
              file=sys.stderr)
    # recorded as absolute paths: the bench folder is reopened from any shell
    data = resolved_data(args.data_dir, args.dev_data, args.test_data) \
        if (args.data_dir or args.dev_data or args.test_data) else \
        {"data_dir": None, "dev_data": None, "test_data": None}
    cfg = BenchConfig(tasks=args.tasks, methods=methods, model=args.model, out=args.out,
                      repeats=args.repeats, budget_evals=args.budget_evals, samples=args.samples,
                      refine_samples=args.refine_samples, debug_rounds=args.debug_rounds,
                      optillm_url=args.optillm_url, **data,
                      convergence=not args.no_convergence,
                      max_samples=args.max_samples, workers=args.workers,
                      parallel_cells=args.parallel_cells, base_url=args.base_url, llm=llm,
                      prices=args.prices, task_facts=args.task_facts,
                      objective=args.objective, time_margin=args.time_margin, retime=args.retime,
                      executor=args.executor, ray_address=args.ray_address,
                      sharp_options={k: v for k, v in (("candidates", args.candidates),
                                                       ("max_rounds", args.max_rounds))
                                     if v is not None})
    n_cells = args.repeats * len(args.tasks) * len(methods)
    with Progress("bench", unit="cells", total=n_cells) as shown:
        evaluations = [0]

        def on_evaluation(task: str, label: str, split: str, result) -> None:
            evaluations[0] += 1
            shown.step(f"{task}: {result_words(label, split, result)}",
                       evaluations=evaluations[0])

        try:
            rows = asyncio.run(run_bench(
                cfg, progress=shown.note, on_evaluation=on_evaluation,
                on_cell=lambda k, n, words: shown.step(words, done=k, total=n)))
        except (BenchError, TaskError) as exc:
            fail(str(exc))
        except BenchIncomplete as exc:
            print(terminal(to_markdown(exc.rows)))
            fail(terminal(str(exc)), code=1)
    print(terminal(to_markdown(rows)))
    out = shlex.quote(str(Path(cfg.out).expanduser().resolve()))
    print(f"tables written to {out}/table.md, table.csv, table.json; "
          f"HTML: pdesharp report {out}")
    return 0
