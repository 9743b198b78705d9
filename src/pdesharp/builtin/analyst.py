"""The built-in Analysis: classification, routes, operator decomposition and stability bounds,
all derived symbolically from the task's equation and evaluated on the data's bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from pdesharp.builtin.physics import diffusion_constant, law_facts, linear_symbol_source
from pdesharp.builtin.structure import BalanceLaw, EllipticProblem, structure
from pdesharp.records import Analysis, AnalysisStep, Classification, StabilityBound
from pdesharp.task import Task

DEFAULT_N = 1024


@dataclass
class DataBounds:
    """What the stability bounds are evaluated on: field ranges and grid sizes.

    ``fields`` maps unknown names to (min, max) of the initial conditions; ``n`` maps space axes
    to the number of grid cells. Missing entries are assumed ((-1, 1) and 1024) and the analysis
    says so.
    """

    fields: dict[str, tuple[float, float]] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_reference(cls, task: Task, data_dir=None, split: str = "dev", limit: int = 20,
                       explicit=None) -> "DataBounds":
        """Bounds of the initial frames (or coefficients) of a split's reference file."""
        from pdesharp.data.paths import resolve_split
        from pdesharp.data.reference import load_reference

        path = resolve_split(task, split, data_dir_override=data_dir, explicit=explicit)
        spec = getattr(task.data, split)
        ref = load_reference(task, path, samples=spec.samples if spec else None, limit=limit)
        fields, n = {}, {}
        for name, arr in ref.fields.items():
            first = arr if task.steady else arr[:, 0]
            fields[name] = (float(np.nanmin(first)), float(np.nanmax(first)))
            shape = first.shape[1:]
            for axis, size in zip(task.equation.space, shape):
                n[axis] = int(size)
        return cls(fields=fields, n=n)


class BuiltinAnalyst:
    """Analyst role filled by symbolic analysis (``source="builtin"``)."""

    name = "builtin"

    def __init__(self, data_bounds: DataBounds | None = None, data_dir=None, dev_data=None):
        self.data_bounds = data_bounds
        self.data_dir = data_dir
        self.dev_data = dev_data  # an explicit dev file wins over the data directory

    def bounds_for(self, task: Task) -> tuple[DataBounds, list[str]]:
        notes: list[str] = []
        b = self.data_bounds
        if b is None and (self.data_dir is not None or self.dev_data is not None):
            try:
                b = DataBounds.from_reference(task, self.data_dir, explicit=self.dev_data)
            except Exception as exc:  # no data: fall back to assumed bounds, and say so
                notes.append(f"could not read data bounds ({exc}); assumed defaults")
        b = b or DataBounds()
        fields = dict(b.fields)
        for u in task.equation.unknowns:
            if u not in fields:
                fields[u] = (-1.0, 1.0)
                notes.append(f"range of {u} assumed to be [-1, 1]")
        n = dict(b.n)
        for a in task.equation.space:
            if a not in n:
                n[a] = DEFAULT_N
                notes.append(f"grid size along {a} assumed to be {DEFAULT_N}")
        return DataBounds(fields=fields, n=n), notes

    async def analyse(self, task: Task) -> Analysis:
        return self.analyse_sync(task)

    def analyse_sync(self, task: Task) -> Analysis:
        struct = structure(task)
        bounds, notes = self.bounds_for(task)
        if isinstance(struct, EllipticProblem):
            return _elliptic_analysis(task, struct, bounds, notes)
        return _law_analysis(task, struct, bounds, notes)


def _linear(task: Task) -> bool:
    system = task.system
    exprs = [e.doit() for e in system.exprs]
    atoms = set()
    for e in exprs:
        for name in system.unknowns:
            f = system.function(name)
            atoms |= {d for d in e.atoms(sp.Derivative) if d.expr.has(f)}
            atoms.add(f)
    dummies = {a: sp.Dummy() for a in sorted(atoms, key=lambda a: -sp.count_ops(a) - len(str(a)))}
    for e in exprs:
        z = e
        for a, d in dummies.items():  # derivatives first, then the bare functions
            z = z.subs(a, d)
        ds = list(dummies.values())
        for a in ds:
            for b in ds:
                if sp.simplify(sp.diff(z, a, b)) != 0:
                    return False
    return True


def _space_order(task: Task) -> int:
    best = 0
    for e in task.system.exprs:
        for d in e.doit().atoms(sp.Derivative):
            best = max(best, sum(n for v, n in d.variable_count if v in task.system.coords))
    return best


def _sample_box(law: BalanceLaw, bounds: DataBounds, n: int = 400) -> dict:
    rng = np.random.default_rng(0)
    pts = {}
    for w in law.prims:
        lo, hi = bounds.fields[w.name]
        corners = np.array([lo, hi, 0.5 * (lo + hi)])
        if lo <= 0.0 <= hi:
            corners = np.append(corners, 0.0)
        pts[w.name] = np.concatenate([corners, rng.uniform(lo, hi, n)])
    # corners of a box need every combination; a random shuffle of the listed values covers them
    m = max(len(v) for v in pts.values())
    grids = np.meshgrid(*[v[:4] for v in pts.values()], indexing="ij")
    out = {}
    for (k, v), g in zip(pts.items(), grids):
        out[k] = np.concatenate([g.ravel(), np.resize(v, m)])
    return out


def _max_abs(exprs, law: BalanceLaw, task: Task, pts: dict) -> float:
    subs = {p: task.constants[p.name] for p in law.params}
    best = 0.0
    for e in exprs:
        fn = sp.lambdify(law.prims, sp.sympify(e).subs(subs), "numpy")
        with np.errstate(all="ignore"):
            val = np.abs(np.asarray(fn(*[pts[w.name] for w in law.prims]), dtype=complex))
        val = val[np.isfinite(val)]
        if val.size:
            best = max(best, float(np.max(val)))
    return best


def _law_analysis(task: Task, law: BalanceLaw, bounds: DataBounds, notes: list[str]) -> Analysis:
    facts = law_facts(law)
    (x0, x1), = [task.domain[a] for a in task.equation.space]
    n = bounds.n[task.equation.space[0]]
    dx = (x1 - x0) / n
    pts = _sample_box(law, bounds)
    linear = _linear(task)
    order = _space_order(task)
    viscous_eqs = sum(v != 0 for v in law.viscous)
    if order == 2 and viscous_eqs == law.nvar:
        pde_type = "parabolic"
    elif order == 2:
        pde_type = "mixed"  # some equations diffuse, others are purely hyperbolic (e.g. mass)
    elif law.has_flux:
        pde_type = "hyperbolic"
    else:
        pde_type = "other"  # an ODE at every point
    cls = Classification(time_order=1, space_order=order, linear=linear, pde_type=pde_type,
                         boundary=task.boundary)
    steps = [AnalysisStep(name="classification", text=(
        f"First order in time, order {order} in space, {'linear' if linear else 'nonlinear'},"
        f" {pde_type}; a {law.nvar}-component balance law dt(q) + dx(F) = dx(V) + S on a periodic"
        " domain."), facts={"nvar": law.nvar})]

    symbol = linear_symbol_source(law) is not None
    steps.append(AnalysisStep(name="analytical", applies=symbol, text=(
        "Linear with constant coefficients on a periodic domain: each Fourier mode evolves as"
        " exp(L(k) t), an exact propagator with no time-step error." if symbol else
        "No closed-form solution: the problem is nonlinear or has variable coefficients.")))
    steps.append(AnalysisStep(name="transformation", applies=False, text=(
        "No change of variables is used: the catalogue works on the conservative form.")))

    D = diffusion_constant(law)
    terms = {"flux": [sp.sstr(f) for f in law.flux], "viscous": [sp.sstr(v) for v in law.viscous],
             "source": [sp.sstr(s) for s in law.source], "conserved": [sp.sstr(q) for q in law.q]}
    ode = facts.ode_solution
    dec_text = (f"Flux F = {terms['flux']}, viscous flux V = {terms['viscous']}, source S ="
                f" {terms['source']}.")
    if ode is not None:
        dec_text += (f" The local source ODE dq/dt = S(q) has the closed form q(tau) = {sp.sstr(ode)}"
                     " (written to stay finite for large tau), so a splitting can step it exactly.")
    split_ok = D is not None and (law.has_source or law.has_flux)
    steps.append(AnalysisStep(name="decomposition", applies=split_ok, text=dec_text, facts={
        **terms, "source_exact": sp.sstr(ode) if ode is not None else None,
        "diffusion_constant": sp.sstr(D) if D is not None else None}))

    stab: list[StabilityBound] = []
    prm = {p: task.constants[p.name] for p in law.params}
    dt_adv = dt_diff = dt_src = math.inf
    lam_max = 0.0
    if law.has_flux:
        lam = facts.eigenvalues or [facts.jacobian[i, i] for i in range(law.nvar)]
        lam_max = _max_abs(lam, law, task, pts)
        dt_adv = dx / lam_max if lam_max > 0 else math.inf
        lam_txt = ", ".join(sp.sstr(e) for e in lam)
        stab.append(StabilityBound(
            scheme="explicit advective (finite volume, Rusanov/HLL flux)",
            expression=f"dx/Max({', '.join(f'Abs({sp.sstr(e)})' for e in lam)})",
            value=dt_adv, note=(f"Courant number 1 with eigenvalues of dF/dU: {lam_txt};"
                                f" max |lambda| = {lam_max:.4g} on the data bounds, dx = {dx:.4g}."
                                " The designs run at CFL 0.25-0.5 of it.")))
    d_max = 0.0
    if law.has_viscous:
        dif = facts.diffusivity or [facts.diffusion_matrix[i, i] for i in range(law.nvar)]
        d_max = _max_abs(dif, law, task, pts)
        dt_diff = dx * dx / (2.0 * d_max) if d_max > 0 else math.inf
        stab.append(StabilityBound(
            scheme="explicit diffusion (central, forward Euler)",
            expression=f"dx**2/(2*Max({', '.join(f'Abs({sp.sstr(e)})' for e in dif)}))",
            value=dt_diff, note=f"max diffusivity {d_max:.4g} on the data bounds."))
    if law.has_source:
        sj = [facts.source_jacobian[i, i] for i in range(law.nvar)]
        r = _max_abs(sj, law, task, pts)
        dt_src = 1.0 / r if r > 0 else math.inf
        stab.append(StabilityBound(
            scheme="explicit source (forward Euler)",
            expression=f"1/Max({', '.join(f'Abs({sp.sstr(e)})' for e in sj)})", value=dt_src,
            note=f"max |dS/dq| = {r:.4g} on the data bounds."))
    stiffness = dt_adv / dt_diff if math.isfinite(dt_adv) and dt_diff > 0 else (
        (task.time_span[1] - task.time_span[0]) / 100 / dt_diff if math.isfinite(dt_diff) else 0.0)
    design_facts = {
        "linear_symbol": symbol, "diffusion_constant": D is not None,
        "source_exact": ode is not None, "stiffness": float(stiffness),
        "viscous_stiffness": float(dt_adv / dt_diff) if math.isfinite(dt_diff) else 0.0,
        "cell_peclet": float(lam_max * dx / d_max) if d_max > 0 else math.inf,
        "dt_output": (task.time_span[1] - task.time_span[0]) / max((task.n_frames or 101) - 1, 1),
        "has_flux": law.has_flux,
        "dx": dx, "dt_advective": dt_adv, "dt_diffusive": dt_diff, "dt_source": dt_src,
    }
    stab_text = "; ".join(f"{b.scheme}: dt <= {b.expression} = {b.value:.3g}" for b in stab)
    if stiffness > 20:
        stab_text += (f". The explicit diffusion step is {stiffness:.0f}x below the natural step:"
                      " treat diffusion exactly (Fourier) or implicitly.")
    steps.append(AnalysisStep(name="stability", text=stab_text or "no explicit step bound",
                              facts={"design_facts": design_facts, "assumptions": notes}))
    route = "analytical" if symbol else ("hybrid" if split_ok and (stiffness > 20 or ode is not None)
                                         else "numerical")
    from pdesharp.builtin.designs import candidate_designs

    schemes = [d.title for d in candidate_designs(law, design_facts)]
    key = [f"type: {pde_type}, {'linear' if linear else 'nonlinear'}, route {route}"]
    key += [f"{b.scheme}: dt <= {b.value:.3g}" for b in stab]
    if ode is not None:
        key.append(f"exact source step: {sp.sstr(ode)}")
    key += notes
    return Analysis(classification=cls, route=route, steps=steps, stability=stab,
                    recommended_schemes=schemes, key_facts=key, source="builtin")


def _elliptic_analysis(task: Task, prob: EllipticProblem, bounds: DataBounds, notes) -> Analysis:
    linear = True
    cls = Classification(time_order=None, space_order=2, linear=linear, pde_type="elliptic",
                         boundary=task.boundary)
    k_txt = ", ".join(sp.sstr(k) for k in prob.conductivity)
    steps = [
        AnalysisStep(name="classification", text=(
            f"Steady, second order, linear, elliptic (divergence form with conductivities {k_txt});"
            " Dirichlet boundary."), facts={}),
        AnalysisStep(name="analytical", applies=False, text=(
            "Variable coefficients: no closed form; the five-point system is solved directly.")),
        AnalysisStep(name="transformation", applies=False, text="None needed."),
        AnalysisStep(name="decomposition", applies=False, text=(
            f"Operator -div(K grad u) with K = ({k_txt}), reaction {sp.sstr(prob.reaction)},"
            f" forcing {sp.sstr(prob.forcing)}."), facts={"forcing": sp.sstr(prob.forcing)}),
        AnalysisStep(name="stability", text=(
            "No time stepping. With K > 0 the five-point matrix is symmetric positive definite"
            " (an M-matrix with arithmetic or harmonic face means), so a sparse direct or CG solve"
            " is stable."), facts={"design_facts": {}, "assumptions": notes}),
    ]
    from pdesharp.builtin.designs import candidate_designs

    return Analysis(classification=cls, route="numerical", steps=steps, stability=[],
                    recommended_schemes=[d.title for d in candidate_designs(prob, {})],
                    key_facts=["type: elliptic, linear, route numerical", *notes], source="builtin")
