"""``pdesharp report RUN_OR_BENCH_DIR [--out FILE.html]``: a self-contained HTML report."""

from __future__ import annotations

from pdesharp.commands._common import fail


def register(sub) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report of a run, bench or suite folder")
    p.add_argument("folder", help="a run folder (run.sqlite) or a bench folder (bench.json)")
    p.add_argument("--out", default=None, help="HTML file to write (default <folder>/report.html)")
    p.add_argument("--no-plot", action="store_true",
                   help="do not draw the winner's solution/reference/error figure (drawing it "
                        "may run the winner once more on dev data; that run is not counted)")
    p.add_argument("--data-dir", default=None, help="reference data folder for the figure")
    p.add_argument("--max-samples", type=int, default=None,
                   help="dev samples to load for the figure (default: up to the plotted one)")
    p.set_defaults(func=run)


def run(args) -> int:
    from pathlib import Path

    from pdesharp.report.html import ReportError, is_suite_folder, write_report
    from pdesharp.suite.run import SuiteRunError, rewrite_page

    folder = Path(args.folder).expanduser()
    try:
        if is_suite_folder(folder):  # the suite's own page (pdesharp suite report)
            path = rewrite_page(folder, args.out)
        else:
            path = write_report(folder, args.out, plot=not args.no_plot,
                                data_dir=args.data_dir, max_samples=args.max_samples)
    except (ReportError, SuiteRunError, FileNotFoundError) as exc:
        fail(str(exc))
    print(f"report written to {path}")
    return 0
