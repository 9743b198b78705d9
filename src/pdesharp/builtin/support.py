"""Does the built-in analyst cover a task, and with what? Answered before any run
(``pdesharp tasks check FILE``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pdesharp.task import Task


BUDGET = 30.0  # seconds for a verdict (honest tasks take one to three, CNS included)


@dataclass
class Support:
    supported: bool
    reason: str = ""  # why not (the UnsupportedTask message: the construct and a rewrite)
    kind: str = ""  # "balance law" or "elliptic problem"
    route: str = ""
    families: list[str] = field(default_factory=list)
    designs: list[str] = field(default_factory=list)  # Genesis' first designs, best first
    notes: list[str] = field(default_factory=list)  # rewrites and assumptions the analysis made


def support(task: Task, data_dir=None, dev_data=None, n_designs: int = 3) -> Support:
    """Structure, route and first designs of ``task``, or why the catalogue does not cover it.
    A verdict always: an unexpected failure of the analysis on some input is a refusal that
    says so in one line, never a traceback (and never a run started on a task the analyst
    cannot write a solver for: the first designs are rendered here)."""
    from pdesharp.clock import TimeUp, time_limit
    from pdesharp.untrusted import one_line

    try:
        with time_limit(BUDGET, quiet=False):
            return _support(task, data_dir, dev_data, n_designs)
    except TimeUp:
        from pdesharp.builtin.refusal import UnsupportedTask

        return Support(supported=False, reason=str(UnsupportedTask(
            f"this equation in the time the analysis has ({BUDGET:g} s): its symbolic reading"
            " (SymPy on the terms as written) did not finish", hint="llm")))
    except RecursionError:
        return Support(supported=False, reason=_failed("an equation nested too deeply"))
    except Exception as exc:  # a defect of the analysis on this input: a verdict, not a crash
        return Support(supported=False, reason=_failed(
            f"{type(exc).__name__}: {one_line(str(exc), 200)}"))


ILL_POSED = "An ill-posed initial-value problem"  # wellposed.py's verdict starts so


def beyond_any_solver(reason: str) -> bool:
    """A verdict about the task itself, not about the built-in analyst: a construct no task
    file can express, or an ill-posed problem (``tasks check`` says it alone, in one line)."""
    from pdesharp.expressible import PREAMBLE

    return PREAMBLE in reason or reason.startswith(ILL_POSED)


def _why_no_family(p) -> str:
    """The construct that leaves no family, when it is the usual one: derivatives of order 3
    and more between walls that no sine/cosine basis carries (a third derivative needs more
    conditions than one per unknown and wall; the method of lines stops at second order)."""
    from pdesharp.builtin.families.bases import wall_bases
    from pdesharp.builtin.families.jet_form import jet_split
    from pdesharp.builtin.refusal import UnsupportedTask

    law = p.struct
    if p.dim == 3 and not p.steady:
        from pdesharp.builtin.refusal import UnsupportedTask

        return str(UnsupportedTask(
            "this 3D box: in three dimensions the catalogue has its Fourier and sine/cosine"
            " families only (periodic axes, homogeneous Dirichlet or Neumann walls); the method"
            " of lines and the finite volumes cover 1D and 2D", hint="llm"))
    if p.steady or law.periodic:
        return ""
    split = jet_split(law)
    if split is None:
        return ""
    orders = [o for o, _ in split.terms] + [o for _, o, _ in split.jets]
    top = max(orders, key=sum, default=None)
    if top is None or sum(top) < 3 or wall_bases(law) is not None:
        return ""
    a = next(c for c, o in zip(law.coords, top) if o)
    return str(UnsupportedTask(
        f"a derivative of order {sum(top)} (along {a}) between walls with these conditions:"
        " the catalogue takes derivatives of order 3 and more in Fourier modes (periodic axes)"
        " or in sine/cosine modes between homogeneous Dirichlet or Neumann walls whose parity"
        " every term keeps (no odd derivative of an unknown in its own equation); the method"
        " of lines takes derivatives up to order 2",
        hint="periodic boundaries, or homogeneous Dirichlet/Neumann walls"))


def _failed(what: str) -> str:
    from pdesharp.builtin.refusal import UnsupportedTask

    return str(UnsupportedTask(f"this equation: its analysis failed ({what}; a defect of"
                               " pdesharp's built-in analyst, please report it with the task)"))


def _support(task: Task, data_dir, dev_data, n_designs: int) -> Support:
    from pdesharp.builtin.analyst import BuiltinAnalyst
    from pdesharp.builtin.author import design_facts, problem, render
    from pdesharp.builtin.code_names import aliases, code_task, rename_text
    from pdesharp.builtin.families import applicable, candidate_designs, family
    from pdesharp.builtin.refusal import UnsupportedTask
    from pdesharp.builtin.structure import (ConstrainedLaw, EllipticProblem, SteadySystem,
                                            structure)

    try:
        struct = structure(code_task(task))
        analysis = BuiltinAnalyst(data_dir=data_dir, dev_data=dev_data).analyse_sync(task)
    except UnsupportedTask as exc:  # said in the user's names, not the code's (V0 for V0_)
        back = {code: user for user, code in aliases(task).items()}
        return Support(supported=False, reason=rename_text(str(exc), back))
    p = problem(task, design_facts(analysis))
    designs = candidate_designs(p)
    if not designs:
        law = p.struct
        if not task.steady and not law.periodic and task.grid == "nodes":
            return Support(supported=False, reason=str(UnsupportedTask(
                "walls on a node grid for a solution that may not stay smooth (a nonlinear flux"
                " with little or no viscosity): the finite-volume family needs cell centres, the"
                " method of lines a resolved solution", hint="use grid: cell_centres")))
        return Support(supported=False, reason=_why_no_family(p) or (
            "no scheme family of the catalogue applies to this structure; use a language model,"
            " e.g. `pdesharp solve TASK --model openai:gpt-4o`"))
    for d in designs[:n_designs]:
        render(task, d, p)  # a design the author cannot write is a failure found now
    notes = list(analysis.key_facts[1:])
    return Support(
        supported=True,
        kind="elliptic problem" if isinstance(struct, EllipticProblem) else (
            "system with constraints" if isinstance(struct, ConstrainedLaw) else
            "steady system" if isinstance(struct, SteadySystem) else "balance law"),
        route=analysis.route, families=[f.name for f in applicable(p)],
        designs=[family(d.family).title(d, p) for d in designs[:n_designs]], notes=notes)
