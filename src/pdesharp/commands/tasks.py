"""``pdesharp tasks``: list the built-in and example tasks, show one spec, check whether the
built-in analyst supports a task, or write a new task file (``tasks new``)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from pdesharp.commands._common import add_data_arguments, fail, task_or_exit
from pdesharp.task import TaskError, builtin_task_names, load_task
from pdesharp.untrusted import plain, task_name, terminal

NEW_TASK = """\
# A pdesharp task in the short form: the mathematics only. What is left out is derived by fixed
# rules (docs/tasks.md, "The short form"): the solver's arguments and stub, the data layout and
# file names, the description the models read. `pdesharp tasks show {file}` prints it all.
name: {name}

# The PDE, as `lhs = rhs` (or `F`, meaning F = 0). dt(u), dx(u), dy(u) are derivatives and
# dx(u, 2) a second derivative; ** is a power. The unknowns are the names inside dt(...).
equation: dt(u) = nu*dx(u, 2) + u - u**3

# The numbers the equation uses; the solver receives each as an argument of the same name.
parameters: {{nu: 0.01}}

# One range per space axis (x; x and y for a 2D task). Points are cell centres.
domain: {{x: [0, 1]}}

# `periodic`, or one clause per side such as "x = 0: u = 1; x = 1: dx(u) + u = 0".
boundary: periodic

time_span: [0, 1]
n_frames: 21                 # frames stored, t = 0 included (default 101)

# How the initial data are drawn: prose for the models ...
initial_condition: Smooth random functions with values between -0.5 and 0.5.
# ... and the settings of `pdesharp data generate` (random trigonometric polynomials).
generator:
  modes: 4                   # highest wavenumber
  ranges: {{u: [-0.5, 0.5]}}   # the initial data's range (min -> -0.5, max -> 0.5)
"""


def register(sub) -> None:
    p = sub.add_parser("tasks", help="list the built-in and example tasks, show one spec, check"
                                     " whether the built-in analyst (no model) supports a task,"
                                     " or write a new task file")
    p.add_argument("action", nargs="?", choices=["list", "show", "check", "new"], default="list")
    p.add_argument("name", nargs="?", help="task name or YAML path (with 'show' and 'check'); "
                                           "the new task's name (with 'new', default my_pde)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="new: the file to write (default: NAME.yaml here; never overwritten)")
    add_data_arguments(p)  # check: the data's field ranges make the stability bounds concrete
    p.set_defaults(func=run)


def run(args) -> int:
    console = Console()
    if args.action == "new":
        return new(args.name or "my_pde", args.out)
    if args.action == "check":
        if not args.name:
            console.print("usage: pdesharp tasks check NAME_OR_FILE")
            return 2
        try:
            task = load_task(args.name)
        except TaskError as exc:
            if getattr(exc, "inexpressible", False):  # a verdict, as a refusal is
                print(terminal(exc))
                return 1
            task_or_exit(args.name)  # the validation errors, as every command says them
        return check(task, args.data_dir, args.dev_data)
    if args.action == "show":
        if not args.name:
            console.print("usage: pdesharp tasks show NAME")
            return 2
        print(task_or_exit(args.name).to_yaml())
        return 0
    return listing(console)


def listing(console: Console) -> int:
    from pdesharp.examples import example_names, examples_dir

    table = Table(title="built-in tasks (CodePDE's set-ups)")
    table.add_column("name", no_wrap=True)  # what the user types: never cut
    for col in ("title", "solver signature", "parameters"):
        table.add_column(col)
    for name in builtin_task_names():
        t = load_task(name)
        params = ", ".join(f"{k}={v:g}" for k, v in t.parameters.items())
        table.add_row(*map(plain, (name, t.title, t.solver.signature, params)))
    console.print(table)
    names = example_names()
    if not names:
        console.print("example tasks: none in this installation (they ship with the source, "
                      "examples/tasks/; set $PDESHARP_EXAMPLES to a folder of them)")
        return 0
    table = Table(title=plain(f"example tasks ({examples_dir()}); no published data: "
                              "`pdesharp data generate NAME` makes some"))
    table.add_column("name", no_wrap=True)
    for col in ("title", "solver signature"):
        table.add_column(col)
    for name in names:
        try:
            t = load_task(name)
        except TaskError as exc:  # an example that does not load is listed with the reason
            table.add_row(*map(plain, (name, f"(does not load: {str(exc).splitlines()[0]})", "")))
            continue
        table.add_row(*map(plain, (name, t.title.replace(" (example task)", ""),
                                   t.solver.signature)))
    console.print(table)
    console.print("Use a name anywhere a task is expected (`pdesharp tasks show heat2d`); "
                  "`pdesharp tasks new` writes a task file of your own.")
    return 0


def new(name: str, out: str | None) -> int:
    """Write the commented minimal task ``NAME.yaml`` (or ``out``); never overwrites."""
    try:
        task_name(name)
    except ValueError as exc:
        fail(str(exc))
    path = Path(out).expanduser() if out else Path(f"{name}.yaml")
    if path.exists():
        fail(f"{path} exists; choose another name or --out FILE")
    text = NEW_TASK.format(name=name, file=path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x") as fh:
            fh.write(text)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror}")
    print(f"wrote {path}: edit the equation, parameters, domain, boundary and time span, then")
    print(f"  pdesharp tasks check {path}        # can the built-in analyst solve it?")
    print(f"  pdesharp data generate {path} --samples 8 --seed 1 --out {name}_dev.hdf5")
    print(f"  pdesharp solve {path} --dev-data {name}_dev.hdf5")
    return 0


def check(task, data_dir=None, dev_data=None) -> int:
    """Say before a run whether the built-in analyst supports ``task``, and why not."""
    from pdesharp.builtin.support import beyond_any_solver, support
    from pdesharp.data.paths import data_dir as default_data_dir
    from pdesharp.untrusted import one_line

    name = one_line(task.name, 60)  # the task file's text: one clean line
    got = support(task, data_dir=data_dir or default_data_dir(), dev_data=dev_data)
    reason = terminal(got.reason)
    if not got.supported and beyond_any_solver(got.reason):  # no solver can: one line
        print(reason if reason.startswith(f"{name}: ") else f"{name}: {reason}")
        return 1
    if not got.supported:
        print(f"{name}: not supported by the built-in analyst.\n  {reason}")
        return 1
    print(f"{name}: supported by the built-in analyst ({got.kind}, route {got.route}).")
    print(f"  scheme families: {', '.join(got.families)}")
    print("  first designs Genesis would write:")
    for d in got.designs:
        print(f"    - {d}")
    for n in got.notes:
        print(f"  note: {n}")
    print(f"  reference data: {_generator_word(task)}")
    return 0


def _generator_word(task) -> str:
    """Whether `pdesharp data generate` can make the task's reference data, and why not."""
    from pdesharp.data.generate import GENERATORS
    from pdesharp.untrusted import one_line

    if task.name in GENERATORS:
        return f"`pdesharp data generate {task.name}` makes them (its own generator)"
    from pdesharp.data.generate.generic import verdict

    why = verdict(task)
    if why is None:
        return "`pdesharp data generate TASK.yaml` makes them (generic spectral generator)"
    return f"`pdesharp data generate` cannot make them: {one_line(why, 400)}"
