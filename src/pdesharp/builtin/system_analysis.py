"""The built-in analysis records of the systems read whole rather than term by term: systems
with constraints (:mod:`.constraint`) and steady systems (:mod:`.steady_system`). The readers
know the mathematics; the record also names the schemes the catalogue offers for it, so it sits
above the families (which are built on the readers' structures)."""

from __future__ import annotations

import sympy as sp

from pdesharp.builtin.constraint import ConstrainedLaw
from pdesharp.builtin.design import Problem
from pdesharp.builtin.families import candidate_designs, family
from pdesharp.builtin.refusal import UnsupportedTask
from pdesharp.builtin.steady_system import SteadySystem
from pdesharp.records import Analysis, AnalysisStep, Classification
from pdesharp.task import Task


def constrained_analysis(task: Task, law: ConstrainedLaw, notes: list[str]):
    """The five analysis steps for a system with constraints (the built-in Analysis record)."""
    j = law.jets
    ell = "; ".join(f"{law.constrained[k]}: A {law.constrained[k]} = {j.notation(f)}"
                    for k, f in enumerate(law.elliptic_rhs))
    lin = all(sp.sympify(e).is_polynomial(*j.table) and sp.Poly(e, *j.table).total_degree() <= 1
              for e in law.rest + law.elliptic_rhs if e != 0)
    bases = ", ".join(f"{c}: {'Fourier' if k == 'fourier' else 'sine/cosine'}"
                      for c, k in zip(law.coords, law.kinds))
    cls = Classification(time_order=1, space_order=max(
        [sum(o) for o, _ in law.lin + law.elliptic + law.grad + law.div] + [j.order(law.rest)]),
        linear=lin, pde_type="mixed", boundary=task.boundary)
    route = "numerical"
    steps = [
        AnalysisStep(name="classification", text=(
            f"A {law.dim}D system of {law.n_evolved} evolution equation(s) for"
            f" {law.evolved} with {law.kind()} constraint(s) for {law.constrained}"
            " (equations without a time derivative: a differential-algebraic system of index"
            f" {2 if law.n_pressure else 1}); boundary: {task.boundary}."),
            facts={"evolved": law.evolved, "constrained": law.constrained}),
        AnalysisStep(name="analytical", applies=False, text=(
            "No closed form in general: the constrained unknowns depend on the evolved ones"
            " through the inverse of a differential operator, and the rate is nonlinear.")),
        AnalysisStep(name="transformation", applies=True, text=(
            "The constraints are eliminated per mode: the elliptic ones are solved,"
            f" psi = A(k)^-1 F ({ell or 'none'}); a constraint D w = 0 on the evolved unknowns"
            " is kept by projecting the rate, dt w = P (L w + N) with P = I - G (D G)^-1 D, and"
            " the multiplier (pressure) follows as -(D G)^-1 D (L w + N). The singular mode of"
            " a periodic or Neumann operator (a mean) is set to zero."
            if law.n_pressure or law.n_elliptic else "None.")),
        AnalysisStep(name="decomposition", applies=True, text=(
            f"Linear constant-coefficient part of dt w: {[(o, str(m.tolist())) for o, m in law.lin]}"
            f" (exact per mode); explicit remainder: {[j.notation(e) for e in law.rest]};"
            f" bases {bases}.")),
        AnalysisStep(name="stability", text=(
            "The linear part is integrated exactly; the explicit remainder bounds the step,"
            " dt <= CFL / max_k r(k), measured from the state at every output interval (an"
            " advection speed |u| weighs |k|, a constrained unknown's derivatives |k|^o"
            " |A(k)^-1|)."), facts={"design_facts": {"route": route}, "assumptions": notes}),
    ]
    p = Problem(task=task, struct=law, facts={"route": route})
    schemes = [family(d.family).title(d, p) for d in candidate_designs(p)]
    if not schemes:
        raise UnsupportedTask(
            "a projection constraint whose linear part differs between the unknowns it"
            " constrains (the projection would not commute with it)", hint="llm")
    return Analysis(classification=cls, route=route, steps=steps, stability=[],
                    recommended_schemes=schemes,
                    key_facts=[f"type: {law.kind()} constraints, route {route}", *law.notes,
                               *notes], source="builtin")


def steady_system_analysis(task: Task, law: SteadySystem, notes: list[str]):
    """The analysis record of a steady system (no time stepping: a collocation solve)."""
    order = law.jets.order(law.residual)
    coupled = [c.text for c in law.boundary.conditions if c.others]
    one_end = law.one_end()
    cls = Classification(time_order=None, space_order=order, linear=law.linear,
                         pde_type="elliptic", boundary=task.boundary)
    text = (f"A steady system of {len(law.names)} equations for {law.names} in {law.dim}D, order"
            f" {order}, {'linear' if law.linear else 'nonlinear'}; boundary: {task.boundary}.")
    if coupled:
        text += f" Conditions coupling unknowns at a wall: {coupled}."
    if one_end:
        text += (f" Conditions at one end only ({', '.join(one_end)}): a marching direction,"
                 " the equation holds at the other end.")
    steps = [
        AnalysisStep(name="classification", text=text, facts={"unknowns": law.names}),
        AnalysisStep(name="analytical", applies=False, text="No closed form in general."),
        AnalysisStep(name="transformation", applies=False, text="None: the system is solved as"
                     " written, every derivative a collocation matrix."),
        AnalysisStep(name="decomposition", applies=False, text="Residuals: " + "; ".join(
            law.jets.notation(e) for e in law.residual) + "."),
        AnalysisStep(name="stability", text=(
            "No time stepping: Newton's method on the collocation equations (one step if"
            " linear), each side's conditions in place of the equation of the unknown they"
            " belong to on its points." + (" " + " ".join(law.notes) if law.notes else "")),
            facts={"design_facts": {"route": "numerical"}, "assumptions": notes}),
    ]
    p = Problem(task=task, struct=law, facts={"route": "numerical"})
    return Analysis(classification=cls, route="numerical", steps=steps, stability=[],
                    recommended_schemes=[family(d.family).title(d, p)
                                         for d in candidate_designs(p)],
                    key_facts=["type: steady system, route numerical", *law.notes, *notes],
                    source="builtin")
