"""``pdesharp eval SOLVER.py --task NAME``: score one solver file, as CodePDE would."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pdesharp.commands._common import add_data_arguments, add_task_argument, fail, task_or_exit
from pdesharp.commands.sandbox import (add_executor_arguments, add_sandbox_arguments,
                                       sandbox_or_exit)
from pdesharp.untrusted import one_line, tail, terminal

RESIDUAL_LABEL = "PDE residual"


def register(sub) -> None:
    p = sub.add_parser("eval", help="evaluate a solver file on a task's reference data (sandboxed)")
    p.add_argument("solver", help="Python file defining the task's solver function")
    add_task_argument(p)
    p.add_argument("--split", choices=["dev", "test"], default="dev")
    p.add_argument("--feedback", choices=["nrmse", "residual", "none"], default="nrmse",
                   help="which score drives selection (recorded in the result)")
    p.add_argument("--json", dest="json_out", default=None, help="write the full result as JSON")
    p.add_argument("--plot", nargs="?", const="", default=None, metavar="PNG",
                   help="write a prediction/reference/error PNG (without a name: SOLVER_plot.png "
                        "beside the solver file)")
    p.add_argument("--prediction", default=None, help="save the prediction as .npz")
    p.add_argument("--timeout", type=float, default=None, help="seconds (default: the task's)")
    p.add_argument("--memory-mb", type=int, default=None, help="address-space limit of the child")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads in the child")
    p.add_argument("--no-convergence", action="store_true", help="skip CodePDE's convergence test")
    p.add_argument("--no-residual", action="store_true",
                   help="skip the PDE residual unless --feedback residual")
    p.add_argument("--max-samples", type=int, default=None, help="evaluate on the first N samples")
    p.add_argument("--keep-scratch", action="store_true",
                   help="copy the solver's scratch folder to a host folder after the run "
                        "(capped at the sandbox's disk size; the result says where)")
    add_sandbox_arguments(p)
    add_executor_arguments(p)
    add_data_arguments(p)
    p.set_defaults(func=run_and_check_plot)


def run_and_check_plot(args) -> int:
    """:func:`run`, and a non-zero exit when ``--plot`` was asked for but no figure was written
    (the table's message row says why), so a script notices."""
    if args.plot == "":  # --plot without a name: a default beside the solver
        solver = Path(args.solver)
        args.plot = str(solver.with_name(f"{solver.stem}_plot.png"))
    code = run(args)
    if code == 0 and args.plot and not Path(args.plot).is_file():
        print(f"pdesharp: error: the plot {args.plot} was not written (see the message row)",
              file=sys.stderr)
        return 1
    return code


def _fmt(v, spec: str = ".3e") -> str:
    return "-" if v is None else format(v, spec)


def run(args) -> int:
    # imported here, not at the top: `pdesharp eval --help` must not import SymPy, h5py, SciPy
    from pdesharp.data.hdf5 import DataError
    from pdesharp.data.paths import DataNotFound
    from pdesharp.evaluate import Evaluator
    from pdesharp.evaluate.residual import EXPLANATION as RESIDUAL_EXPLAINED

    task = task_or_exit(args.task)
    path = Path(args.solver)
    try:
        code = path.read_text()
    except OSError as exc:
        fail(f"cannot read solver file {path}: {exc.strerror}")
    ev = sandbox_or_exit(lambda: Evaluator(
        task, data_dir=args.data_dir, dev_data=args.dev_data, test_data=args.test_data,
        workers=args.workers, timeout=args.timeout, memory_mb=args.memory_mb,
        convergence=not args.no_convergence, max_samples=args.max_samples,
        residual=not args.no_residual, threads=args.threads, keep_scratch=args.keep_scratch,
        device=args.device, unsafe_no_isolation=args.unsafe_no_isolation,
        executor=args.executor, ray_address=args.ray_address))
    try:
        result = ev.evaluate_sync(code, split=args.split, feedback=args.feedback,
                                  label=path.stem, plot_path=Path(args.plot) if args.plot else None,
                                  prediction_path=Path(args.prediction) if args.prediction else None)
    except (DataNotFound, DataError) as exc:  # missing, refused (links, declared size), or made for another task: one line
        fail(str(exc))
    if args.json_out:
        data = result.model_dump(mode="json")
        data["seconds_per_sample"] = result.seconds_per_sample
        data["sandbox"] = ev.isolation
        Path(args.json_out).write_text(json.dumps(data, indent=2))
    console = Console()
    # The solver chose its message, notes and output: plain Text with controls removed (Rich
    # markup off), so it cannot draw a fake row, move the cursor or retitle the terminal.
    table = Table(title=Text(f"{task.name}: {path.name} on {args.split} "
                             f"({result.n_samples} samples)"))
    table.add_column("metric")
    table.add_column("value")
    table.add_row("status", Text(result.status, style="green" if result.ok else "red"))
    table.add_row("nRMSE", _fmt(result.nrmse))
    if len(result.nrmse_per_field) > 1:
        for name, v in result.nrmse_per_field.items():
            table.add_row(Text(f"  nRMSE of {one_line(name, 40)} alone"), _fmt(v))
    table.add_row(RESIDUAL_LABEL, _fmt(result.residual))
    table.add_row("convergence order", _fmt(result.convergence_order, ".3f"))
    table.add_row("solver time (s)", _fmt(result.solver_seconds, ".3f"))
    table.add_row("solver time per sample (s)", _fmt(result.seconds_per_sample, ".2e"))
    table.add_row("wall time (s)", _fmt(result.wall_seconds, ".2f"))
    table.add_row("peak memory (MB)", _fmt(result.peak_memory_mb, ".0f"))
    table.add_row("isolation", Text(one_line(result.isolation, 60)
                                    + (" (UNSAFE)" if result.isolation == "none" else "")))
    if result.message:
        table.add_row("message", Text(terminal(result.message)))
    if result.convergence_note:
        table.add_row("convergence note", Text(terminal(result.convergence_note)))
    if result.plot_path:
        table.add_row("plot", Text(one_line(result.plot_path, 500)))
    console.print(table)
    if result.residual is not None:
        console.print(RESIDUAL_EXPLAINED, markup=False, highlight=False)
    if not result.ok and result.stderr_tail:
        console.print("stderr (tail):", style="bold", markup=False, highlight=False)
        console.print(tail(result.stderr_tail, 2000), markup=False, highlight=False)
    console.print(one_line(result.summary_line(), 2000), markup=False, highlight=False)
    return 0 if result.ok else 1
