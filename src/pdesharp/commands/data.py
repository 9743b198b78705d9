"""``pdesharp data``: download, subset, generate and inspect reference data.

    pdesharp data info [TASK]
    pdesharp data download TASK|all [--source codepde|pdebench] [--split dev|test|both]
    pdesharp data subset TASK --source FILE [--out-dir DIR]
    pdesharp data generate TASK --samples N --seed S [--nx N] [--out FILE] [--tolerance TOL]
    pdesharp data audit TASK [--dev-data FILE] [--split dev|test] [--samples K] [--json OUT]
"""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pdesharp.commands._common import fail, task_or_exit
from pdesharp.data.paths import data_dir
from pdesharp.progress import Progress
from pdesharp.task import builtin_task_names
from pdesharp.untrusted import plain, rich_markup


def _console() -> Console:
    # soft_wrap: long paths stay on one line, so they can be copied and grepped.
    return Console(soft_wrap=True, highlight=False)


def _add_data_dir(p) -> None:
    p.add_argument("--data-dir", default=None,
                   help="reference data folder (default: $PDESHARP_DATA or the user cache)")


def register(sub) -> None:
    p = sub.add_parser("data", help="download, subset, generate and inspect reference data",
                       description=__doc__.split("\n\n", 1)[0])
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    info = dsub.add_parser("info", help="which reference files are present, per task and split")
    info.add_argument("task", nargs="?", help="task name or YAML path (default: all built-in tasks)")
    _add_data_dir(info)
    info.add_argument("--dev-data", default=None, metavar="FILE",
                      help="check this file as the task's dev split (as `solve --dev-data`)")
    info.add_argument("--test-data", default=None, metavar="FILE",
                      help="check this file as the task's test split")
    info.set_defaults(func=run_info)

    dl = dsub.add_parser("download", help="fetch the published dev/test files of a task")
    dl.add_argument("task", help="built-in task name, a task YAML path, or 'all'")
    dl.add_argument("--source", choices=["codepde", "pdebench"], default="codepde",
                    help="codepde: CodePDE's released subsets on Hugging Face (default, small);"
                         " pdebench: the full PDEBench Train file (GBs), then cut into dev/test")
    dl.add_argument("--split", choices=["dev", "test", "both"], default="both")
    dl.add_argument("--base-url", default=None,
                    help="mirror to fetch from instead of the published location")
    dl.add_argument("--force", action="store_true", help="download again even if the file exists")
    dl.add_argument("--retries", type=int, default=3,
                    help="times to resume after a dropped connection (default 3)")
    _add_data_dir(dl)
    dl.set_defaults(func=run_download)

    ss = dsub.add_parser("subset", help="cut dev (last 50) / test (first 100) from a PDEBench file")
    ss.add_argument("task", help="task name or YAML path (decides which keys are copied)")
    ss.add_argument("--source", required=True, help="the full PDEBench HDF5 file")
    ss.add_argument("--split", choices=["dev", "test", "both"], default="both")
    ss.add_argument("--out-dir", default=None,
                    help="output folder (default: <data-dir>/codepde/<pde>/ with CodePDE's names)")
    ss.add_argument("--overwrite", action="store_true")
    _add_data_dir(ss)
    ss.set_defaults(func=run_subset)

    gen = dsub.add_parser("generate", help="simulate fresh reference data with a built-in generator")
    gen.add_argument("task", help="built-in task name, or a task YAML path (time-dependent user"
                                  " tasks, periodic or with walls in 1D or 2D, use the generic"
                                  " spectral generators)")
    gen.add_argument("--samples", type=int, required=True, help="number of samples")
    gen.add_argument("--seed", type=int, required=True, help="random seed (recorded in the file)")
    gen.add_argument("--nx", type=int, default=None, help="grid size (default: the generator's)")
    gen.add_argument("--out", default=None,
                     help="output file (default: <data-dir>/generated/<task>_seed<S>_n<N>.hdf5)")
    gen.add_argument("--darcy-low", type=float, choices=[3.0, 4.0], default=None,
                     help="darcy only: the low coefficient value (FNO paper: 3; CodePDE port: 4)")
    gen.add_argument("--tolerance", type=float, default=None, metavar="TOL",
                     help="the largest error the reference may have, as nRMSE relative to the "
                          "PDE's solution (default 1e-6): the resolution is raised until an "
                          "estimate on a few samples is within it")
    gen.add_argument("--check-samples", type=int, default=None, metavar="K",
                     help="samples on which the error is estimated (default 2; 0: no estimate,"
                          " which the file then says)")
    gen.add_argument("--on-tolerance", choices=["refuse", "warn"], default="refuse",
                     help="when no resolution reaches --tolerance: stop before the full run "
                          "(refuse, default) or write the finest resolution with its estimated"
                          " error (warn)")
    gen.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    gen.add_argument("--restart", action="store_true",
                     help="discard the samples an interrupted run kept in <out>.partial/ "
                          "(by default the same command continues from them)")
    _add_data_dir(gen)
    gen.set_defaults(func=run_generate)

    au = dsub.add_parser("audit", help="how far the reference data are from a converged "
                                       "solution of the PDE (cached for runs)")
    au.add_argument("task", help="built-in task name or task YAML path")
    au.add_argument("--dev-data", "--data", dest="data_file", default=None, metavar="FILE",
                    help="the HDF5 file to audit (default: the task's --split file)")
    au.add_argument("--split", choices=["dev", "test"], default="dev",
                    help="which split's file to audit when no file is given (default dev)")
    au.add_argument("--samples", type=int, default=None, metavar="K",
                    help="audit the first K samples of the split only (quicker)")
    au.add_argument("--frames", type=int, default=None, metavar="F",
                    help="audit the first F frames only (a partial audit: runs do not use it)")
    au.add_argument("--json", default=None, metavar="OUT",
                    help="also write the audit report as JSON to OUT")
    au.add_argument("--force", action="store_true", help="recompute even if a cached audit exists")
    au.add_argument("--no-store", action="store_true", help="do not write the audit to the cache")
    _add_data_dir(au)
    au.set_defaults(func=run_audit)


# ---------------------------------------------------------------------------------------------


def run_info(args) -> int:
    from pdesharp.data.info import generated_files, human_size, task_status

    names = [args.task] if args.task else builtin_task_names()
    explicit = {"dev": args.dev_data, "test": args.test_data}
    if any(explicit.values()) and not args.task:
        fail("--dev-data/--test-data describe one task's files: name the task "
             "(pdesharp data info TASK --dev-data FILE)")
    root = data_dir(args.data_dir)
    # Piped output (logs, CI) gets a wide table instead of rich's 80-column default. Paths,
    # HDF5 keys and errors come from task files and data files: every cell is plain() text.
    console = Console() if Console().is_terminal else Console(width=200)
    console.print(plain(f"data directory: {root}"))
    table = Table()
    for col in ("task", "split", "status", "file", "samples", "shape", "dtype", "size",
                "own error"):
        table.add_column(col, overflow="fold")
    from pdesharp.data.stated_error import read_file_estimate

    def own(value: float | None) -> str:  # what the file states about its own error
        return "-" if value is None else f"{value:.1e}"
    missing = 0
    hints: list[str] = []
    for name in names:
        task = task_or_exit(name)
        # hints name the task as typed (a YAML path stays a path) and where this listing looked
        for st in task_status(task, args.data_dir, ref=name, explicit=explicit):
            if st.present:
                shape = ", ".join(f"{k} {list(v)}" for k, v in st.shapes.items())
                n = f"{st.n_samples}" + (f" ({st.samples})" if st.samples else "")
                row = (task.name, st.split, plain("present", style="green"), st.path, n, shape,
                       st.dtype or "-", human_size(st.size_bytes), own(st.own_error))
            elif st.path is not None:
                missing += 1
                row = (task.name, st.split, plain("broken", style="red"),
                       f"{st.path}: {st.error}", "-", "-", "-", human_size(st.size_bytes), "-")
            else:
                missing += 1
                first = st.candidates[0] if st.candidates else "-"
                row = (task.name, st.split, plain("missing", style="yellow"),
                       f"(looked for {first})", "-", "-", "-", "-", "-")
                hints.append(f"{task.name} {st.split}: {st.hint}")
            table.add_row(*(c if isinstance(c, Text) else plain(c) for c in row))
        for path in generated_files(task, args.data_dir):
            stated = read_file_estimate(path)
            table.add_row(*map(plain, (task.name, "generated", "present", path, "-", "-", "-",
                                       human_size(path.stat().st_size),
                                       own(stated.estimate if stated is not None else None))))
    console.print(table)
    out = _console()
    if hints:
        out.print("To get the missing files:")
        for line in hints:
            out.print(plain(f"  {line}"))
    out.print("own error: the nRMSE from the PDE's solution that a generated file states about "
              "itself (`pdesharp data audit` measures it for any file it can)")
    if missing:
        out.print("Missing files are looked for at the task's candidate paths under the data"
                      " directory (see `pdesharp tasks show TASK`, data.dev.files); any HDF5 file"
                      " can also be given with --dev-data/--test-data.")
    return 0


def run_download(args) -> int:
    from pdesharp.data.download import (DownloadError, manual_placement_hint, plan_downloads,
                                        rich_progress_fetch)

    console = _console()
    names = builtin_task_names() if args.task == "all" else [args.task]
    root = data_dir(args.data_dir)
    for name in names:
        task = task_or_exit(name)
        try:
            files = plan_downloads(task, args.source, args.split, root, base_url=args.base_url)
        except DownloadError as exc:
            if args.task == "all":
                console.print(f"[yellow]skipping {rich_markup(name)}[/]: {rich_markup(exc)}")
                continue
            fail(str(exc))
        if args.source == "pdebench" and not args.force:
            # Skip a multi-GB download when the subsets it would produce already exist.
            from pdesharp.data.subset import subset_targets

            wanted = _splits(args.split)
            targets = subset_targets(task, root, files[0].target)
            if all(targets[s].exists() for s in wanted):
                console.print(plain(f"{name}: {', '.join(str(targets[s]) for s in wanted)} already present"))
                continue
        try:
            results = rich_progress_fetch(files, force=args.force, retries=args.retries,
                                          console=console)
        except DownloadError as exc:
            others = [f for f in files if str(f.target) not in str(exc) and not f.target.exists()]
            more = ("\nThe other file(s) of this download, if you place them by hand:\n"
                    + manual_placement_hint(others, header=False, footer=False)) if others else ""
            fail(str(exc) + more, code=1)
        except KeyboardInterrupt:
            parts = [f.part for f in files if f.part.exists()]
            console.print("interrupted; rerun the same command to resume" +
                          (f" ({', '.join(map(str, parts))} kept)" if parts else ""))
            raise
        for r in results:
            checks = f" (verified: {', '.join(r.verified)})" if r.verified else ""
            console.print(plain(f"{name}: {r.status} {r.path}{checks}"))
            if r.status == "downloaded" and not r.verified:
                console.print("  no checksum is published for this file; its SHA-256 was recorded"
                              f" in {r.path.name}.sha256")
        if args.source == "pdebench":
            _subset_after_download(console, task, files[0].target, root, args)
    return 0


def _splits(choice: str) -> tuple[str, ...]:
    return ("dev", "test") if choice == "both" else (choice,)


def _subset_after_download(console, task, source: Path, root: Path, args) -> None:
    from pdesharp.data.reference import DataError
    from pdesharp.data.subset import make_subsets, subset_targets

    targets = subset_targets(task, root, source)
    wanted = {s: targets[s] for s in _splits(args.split) if args.force or not targets[s].exists()}
    if not wanted:
        return
    try:
        res = make_subsets(task, source, wanted, overwrite=True)
    except DataError as exc:
        fail(f"downloaded {source}, but cutting dev/test from it failed: {exc}", code=1)
    for w in res.warnings:
        console.print(f"[yellow]warning[/]: {rich_markup(w)}")
    for split, path in res.paths.items():
        lo, hi = res.indices[split]
        console.print(plain(f"{task.name}: {split} subset (samples {lo}..{hi - 1}) -> {path}"))


def run_subset(args) -> int:
    from pdesharp.data.reference import DataError
    from pdesharp.data.subset import make_subsets, subset_targets

    task = task_or_exit(args.task)
    source = Path(args.source).expanduser()
    if not source.is_file():
        fail(f"source file {source} does not exist")
    root = data_dir(args.data_dir)
    targets = subset_targets(task, root, source, Path(args.out_dir) if args.out_dir else None)
    wanted = {s: targets[s] for s in _splits(args.split)}
    try:
        res = make_subsets(task, source, wanted, overwrite=args.overwrite)
    except DataError as exc:
        fail(str(exc))
    console = _console()
    for w in res.warnings:
        console.print(f"[yellow]warning[/]: {rich_markup(w)}")
    for split, path in res.paths.items():
        lo, hi = res.indices[split]
        console.print(plain(f"{split}: samples {lo}..{hi - 1} of {res.n_source} -> {path}"))
    if res.t_dropped:
        console.print("t-coordinate: dropped the last value (the source stores T+1 times for T frames)")
    return 0


def _generate_with_progress(task, args, out: Path, options: dict, keep: Path, progress):
    from pdesharp.data.generate import GeneratorUnavailable, chunked, generate_to_file
    from pdesharp.data.generate.accuracy import ToleranceNotMet
    from pdesharp.data.generate.chunked import StalePartialWork

    def sink(event) -> None:
        if event.kind == "start":
            if event.done:
                progress.note(f"resuming: {event.done} of {event.total} samples were kept in "
                              f"{keep} by an interrupted run")
            progress.set(done=event.done)
        elif event.kind == "samples":
            size = event.last - event.first
            if size == 1:
                progress.step(f"sample #{event.first} done in {event.seconds:.1f} s",
                              done=event.done)
                return
            before = event.done - size
            for k in range(event.first, event.last):  # a line per sample, each saying its batch
                progress.step(f"sample #{k} done (batch #{event.first}-#{event.last - 1}, "
                              f"{event.seconds:.1f} s)", done=before + k - event.first + 1)
        elif event.kind == "check":
            progress.note(event.message)
        elif event.kind == "rejected":
            then = "drawing another" if event.draw + 1 < chunked.MAX_DRAWS else "giving up"
            progress.note(f"sample #{event.first}: draw {event.draw} rejected ({event.message});"
                          f" {then}")

    try:
        # the Task itself: a user task without a dedicated generator gets the generic one
        return generate_to_file(task, args.samples, args.seed, out=out, nx=args.nx,
                                options=options, sink=sink, restart=args.restart,
                                extra_attrs={"task_parameters": task.parameters},
                                tolerance=args.tolerance, check_samples=args.check_samples,
                                on_tolerance=args.on_tolerance)
    except (StalePartialWork, GeneratorUnavailable) as exc:
        fail(str(exc))
    except ToleranceNotMet as exc:
        fail(f"{task.name}: {exc}", code=1)
    except (TypeError, ValueError) as exc:
        fail(f"generator for {task.name!r} rejected the request: {exc}")


def _samples_kept(folder: Path) -> int:
    total = 0
    for p in folder.glob("samples-*.npz"):
        try:
            a, b = (int(v) for v in p.stem.split("-")[1:3])
        except ValueError:
            continue
        total += b - a
    return total


def _generated_summary(path: Path, task) -> list[str]:
    """What was written: shapes, and per field the range of the initial data and of all frames
    next to the range the task asked for (``generator.ranges`` is about the initial data)."""
    import json

    import h5py
    import numpy as np

    asked = task.generator.ranges if task.generator else {}
    with h5py.File(path, "r") as h5:
        lines = [f"wrote {path}: " + ", ".join(f"{k} {list(h5[k].shape)}" for k in h5.keys())]
        for name, key in task.data.fields.items():
            if key not in h5 or h5[key].ndim < 3 or task.steady:
                continue
            data = h5[key][()]
            first, every = data[:, 0], data
            line = (f"  {name}: initial data in [{first.min():.4g}, {first.max():.4g}]"
                    + (f" (generator.ranges asks [{asked[name][0]:g}, {asked[name][1]:g}])"
                       if name in asked else "")
                    + f"; all frames in [{every.min():.4g}, {every.max():.4g}]")
            if not np.all(np.isfinite(data)):
                line += "; NOT FINITE somewhere"
            lines.append(line)
        rejected = h5.attrs.get("rejected_draws")
        from pdesharp.data.stated_error import read_estimate

        estimate = read_estimate(h5.attrs)
    if estimate is not None:
        lines.append("  " + estimate.sentence())
        if estimate.met is False:
            lines.append(f"  WARNING: the reference error is above the tolerance "
                         f"{estimate.tolerance:.0e}; scores below ~{estimate.estimate:.1e} "
                         "measure agreement with its errors, not with the PDE")
    if rejected is not None:
        n = len(json.loads(rejected))
        lines.append(f"  {n} random draw(s) were rejected (their integration failed) and "
                     "replaced; see the file's rejected_draws attribute")
    return lines


def run_generate(args) -> int:
    import sys

    from pdesharp.data.generate import generated_path
    from pdesharp.data.generate.chunked import partial_dir

    task = task_or_exit(args.task)
    if args.samples < 1:
        fail(f"--samples must be at least 1, got {args.samples}")
    options = {}
    if args.darcy_low is not None:
        if task.name != "darcy":
            fail("--darcy-low applies to the darcy task only")
        options["low"] = args.darcy_low
    out = Path(args.out).expanduser() if args.out else generated_path(
        data_dir(args.data_dir), task.name, args.seed, args.samples)
    if out.exists() and not args.overwrite:
        fail(f"{out} exists; pass --overwrite to replace it (or choose --out)")
    console = _console()
    keep = partial_dir(out)
    try:
        with Progress(f"data generate {task.name}", unit="samples",
                      total=args.samples) as progress:
            path = _generate_with_progress(task, args, out, options, keep, progress)
    except KeyboardInterrupt:
        kept = _samples_kept(keep)
        if kept:
            print(f"interrupted: {kept} of {args.samples} samples are kept in {keep}; run the "
                  "same command again to continue (--restart discards them)", file=sys.stderr)
        else:
            print("interrupted before the first sample was finished; nothing was kept",
                  file=sys.stderr)
        return 130
    for line in _generated_summary(path, task):
        console.print(line, markup=False)
    console.print(f"use it with: --dev-data {path}  (or --test-data)", markup=False)
    return 0


_OF = re.compile(r"(\d+)(?:-(\d+))? of (\d+)")


def _audit_step(shown, message: str) -> None:
    """An audit stage's message as a progress step with k of N: the message names the samples
    being computed ("...: samples 3-4 of 20", "sample 3 of 20"), so k is those before them."""
    m = _OF.search(message)
    counts = {"done": int(m.group(1)) - 1, "total": int(m.group(3))} if m else {}
    shown.step(message, stage=message, **counts)


def run_audit(args) -> int:
    from pdesharp.audit import audit_with_cache
    from pdesharp.audit.present import summary_lines
    from pdesharp.data.paths import DataNotFound, resolve_split
    from pdesharp.data.reference import DataError

    task = task_or_exit(args.task)
    for flag in ("samples", "frames"):
        value = getattr(args, flag)
        if value is not None and value < (2 if flag == "frames" else 1):
            fail(f"--{flag} must be at least {2 if flag == 'frames' else 1}, got {value}")
    try:
        path = resolve_split(task, args.split, data_dir_override=args.data_dir,
                             explicit=args.data_file)
    except DataNotFound as exc:
        fail(str(exc))
    spec = getattr(task.data, args.split)
    selection = spec.samples if spec is not None and args.data_file is None else None
    from pdesharp.audit.solutions import AuditUnavailable, solver_for

    try:  # refuse before reading the data or creating a cache folder
        solver_for(task, path)
    except AuditUnavailable as exc:
        fail(f"cannot audit {args.task}: {exc}", code=1)
    console = _console()
    try:
        with Progress(f"data audit {task.name}", unit="samples") as shown:
            shown.set(stage=f"auditing {path.name}")
            result = audit_with_cache(task, path, samples=selection, limit=args.samples,
                                      frames=args.frames, force=args.force,
                                      store=not args.no_store,
                                      progress=lambda m: _audit_step(shown, m))
            if shown.total is not None:
                shown.step("done", done=shown.total)
    except (DataError, ValueError) as exc:
        fail(f"cannot audit {path}: {exc}")
    except MemoryError:
        fail(f"auditing {path} ran out of memory; try --samples K")
    for line in summary_lines(result.report):
        console.print(plain(line))
    if result.path is not None:
        console.print(plain(f"  stored: {result.path}"))
    if args.json:
        Path(args.json).expanduser().write_text(result.report.model_dump_json(indent=2))
        console.print(f"  wrote {args.json}")
    return 0 if result.report.status == "ok" else 1
