"""The built-in Analysis: classification, routes, operator decomposition and stability bounds,
all derived symbolically from the task's equation and evaluated on the data's bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from pdesharp.builtin import written_terms
from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.code_names import code_task
from pdesharp.builtin.constraint import ConstrainedLaw
from pdesharp.builtin.design import Problem
from pdesharp.builtin.elliptic_problem import EllipticProblem
from pdesharp.builtin.families import candidate_designs, family
from pdesharp.builtin.families.exact import basis, linear_system
from pdesharp.builtin.physics import law_facts
from pdesharp.builtin.steady_system import SteadySystem
from pdesharp.builtin.structure import structure
from pdesharp.builtin.system_analysis import constrained_analysis, steady_system_analysis
from pdesharp.builtin.wellposed import refuse_if_ill_posed
from pdesharp.equation import array_function
from pdesharp.records import Analysis, AnalysisStep, Classification, StabilityBound
from pdesharp.task import Task

DEFAULT_N = 1024


@dataclass
class DataBounds:
    """What the stability bounds are evaluated on: field ranges and grid sizes.

    ``fields`` maps unknown names to (min, max) of the initial conditions; ``n`` maps space axes
    to the number of grid points. Missing entries are assumed ((-1, 1) and 1024) and the analysis
    says so. ``source`` says what the ranges were computed from (the analysis text quotes it).
    """

    fields: dict[str, tuple[float, float]] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)
    source: str = "the given field ranges"

    @classmethod
    def from_reference(cls, task: Task, data_dir=None, split: str = "dev", limit: int = 20,
                       explicit=None) -> "DataBounds":
        """Ranges of the solver's inputs in a split's reference file: the initial frames of a
        time-dependent task. A steady task's stored fields are the reference solution, which no
        analysis may quote: only their grid size is read (no ranges; the elliptic analysis
        needs none)."""
        from pdesharp.data.paths import resolve_split
        from pdesharp.data.reference import load_reference

        path = resolve_split(task, split, data_dir_override=data_dir, explicit=explicit)
        spec = getattr(task.data, split)
        ref = load_reference(task, path, samples=spec.samples if spec else None, limit=limit)
        fields, n = {}, {}
        for name, arr in ref.fields.items():
            for axis, size in zip(task.equation.space, arr.shape[1 if task.steady else 2:]):
                n[axis] = int(size)
            if not task.steady:  # frame 0: the initial condition, an input of the solver
                first = arr[:, 0]
                fields[name] = (float(np.nanmin(first)), float(np.nanmax(first)))
        return cls(fields=fields, n=n, source=f"the range of the initial conditions in the {split}"
                                              " data (the solver's inputs)")


class BuiltinAnalyst:
    """Analyst role filled by symbolic analysis (``source="builtin"``)."""

    name = "builtin"

    def __init__(self, data_bounds: DataBounds | None = None, data_dir=None, dev_data=None):
        self.data_bounds = data_bounds
        self.data_dir = data_dir
        self.dev_data = dev_data  # an explicit dev file wins over the data directory

    def bounds_for(self, task: Task, names) -> tuple[DataBounds, list[str]]:
        notes: list[str] = []
        b = self.data_bounds
        if b is None and (self.data_dir is not None or self.dev_data is not None):
            try:
                b = DataBounds.from_reference(task, self.data_dir, explicit=self.dev_data)
            except Exception as exc:  # no data: fall back to assumed bounds, and say so
                notes.append(f"could not read data bounds ({exc}); assumed defaults")
        b = b or DataBounds()
        fields = dict(b.fields)
        given = task.generator.ranges if task.generator else {}
        for u in names if not task.steady else ():  # a steady analysis uses no field range
            if u in fields:
                continue
            if u in given:  # the task's own statement of its data's range
                fields[u] = tuple(map(float, given[u]))
                notes.append(f"range of {u} from the task's generator.ranges: "
                             f"[{fields[u][0]:g}, {fields[u][1]:g}]")
            else:
                fields[u] = (-1.0, 1.0)
                notes.append(f"range of {u} assumed to be [-1, 1]")
        n = dict(b.n)
        for a in task.equation.space:
            if a not in n:
                n[a] = DEFAULT_N
                notes.append(f"grid size along {a} assumed to be {DEFAULT_N}")
        return DataBounds(fields=fields, n=n, source=b.source), notes

    async def analyse(self, task: Task) -> Analysis:
        return self.analyse_sync(task)

    def analyse_sync(self, task: Task) -> Analysis:
        task = code_task(task)  # the names generated code can use (builtin.code_names)
        struct = structure(task)
        names = [struct.name] if isinstance(struct, EllipticProblem) else struct.names
        bounds, notes = self.bounds_for(task, names)
        # a function of the task and the bounds alone: `tasks check`/the run's support check and
        # the run's analysis step ask the same, once each (a copy: callers may edit theirs)
        key = repr((task.model_dump_json(), bounds, notes))
        if key not in _ANALYSES:
            if len(_ANALYSES) >= 64:  # a long process (a suite of cases) keeps the recent ones
                _ANALYSES.pop(next(iter(_ANALYSES)))
            _ANALYSES[key] = _analysis(task, struct, bounds, notes)
        return _ANALYSES[key].model_copy(deep=True)


_ANALYSES: dict[str, Analysis] = {}


def _analysis(task: Task, struct, bounds: DataBounds, notes: list[str]) -> Analysis:
    if isinstance(struct, ConstrainedLaw):
        return constrained_analysis(task, struct, notes)
    if isinstance(struct, SteadySystem):
        return steady_system_analysis(task, struct, notes)
    if isinstance(struct, EllipticProblem):
        return _elliptic_analysis(task, struct, bounds, notes)
    return _law_analysis(task, struct, bounds, notes)


def _space_order(task: Task) -> int:
    best = 0
    for e in task.system.exprs:
        for d in e.doit().atoms(sp.Derivative):
            best = max(best, sum(int(n) for v, n in d.variable_count if v in task.system.coords))
    return best


def _linear(law: BalanceLaw) -> bool:
    exprs = [e for row in law.flux + law.viscous for e in row] + law.source + law.q + law.extra
    syms = list(law.prims) + [g for row in law.grads for g in row]
    if law.has_extra:  # every derivative the terms kept as written use
        syms += [s for *_, s in law.jets.used(law.extra) if s not in syms]
    # linear: a polynomial of degree <= 1 in the unknowns and their derivatives (coefficients
    # in x, t, parameters); no simplify of second derivatives, which takes minutes on large terms
    for e in map(sp.sympify, exprs):
        if not e.is_polynomial(*syms) or any(sp.diff(e, a).has(*syms) for a in syms):
            return False
    return True


def _samples(law: BalanceLaw, task: Task, bounds: DataBounds, n: int = 400) -> dict:
    """Points in the box of field ranges (corners included), the domain and the time span."""
    rng = np.random.default_rng(0)
    pts = {}
    for w in law.prims:
        lo, hi = bounds.fields[w.name]
        corners = np.array([lo, hi, 0.5 * (lo + hi)] + ([0.0] if lo <= 0.0 <= hi else []))
        pts[w] = np.concatenate([corners, rng.uniform(lo, hi, n)])
    m = max(len(v) for v in pts.values())
    grids = np.meshgrid(*[v[:4] for v in pts.values()], indexing="ij")
    out = {k: np.concatenate([g.ravel(), np.resize(v, m)]) for (k, v), g in zip(pts.items(), grids)}
    size = len(next(iter(out.values())))
    for c, a in zip(law.coords, task.equation.space):
        lo, hi = task.domain[a]
        out[c] = rng.uniform(lo, hi, size)
    t0, t1 = task.time_span
    out[law.t] = rng.uniform(t0, t1, size)
    return out


def _max_abs(exprs, law: BalanceLaw, task: Task, pts: dict) -> float:
    subs = {p: task.constants[p.name] for p in law.params}
    args = list(pts)
    best = 0.0
    for e in exprs:
        # (a complex infinity, cbrt(u)' at u = 0, prints as nothing NumPy knows: inf instead)
        fn = array_function(args, sp.sympify(e).subs(subs).xreplace({sp.zoo: sp.oo}))
        with np.errstate(all="ignore"):
            val = np.abs(np.asarray(fn(*[pts[a] for a in args]), dtype=complex)) * np.ones(
                len(next(iter(pts.values()))))
        val = val[np.isfinite(val)]
        if val.size:
            best = max(best, float(np.max(val)))
    return best


def _coupled_rate(law: BalanceLaw, facts, task: Task, pts: dict, h) -> float:
    """max |eig(dS/dU - sum_a 4 B_a / h_a^2)| over the sample points, B_a = dV_a/dU_a: the
    spectral radius of the semi-discrete operator at the highest grid wavenumber."""
    subs = {p: task.constants[p.name] for p in law.params}
    mat = facts.source_jacobian - sum((4 * facts.diffusion_matrix[a] / h[a] ** 2
                                       for a in range(law.dim)), sp.zeros(law.nvar, law.nvar))
    args = list(pts)
    n = len(next(iter(pts.values())))
    vals = np.zeros((law.nvar, law.nvar, n), dtype=complex)
    # entry by entry: a matrix lambdified whole mixes numbers and arrays (cos(u) beside 0), which
    # NumPy cannot stack ("setting an array element with a sequence")
    for r in range(law.nvar):
        for c in range(law.nvar):
            fn = array_function(args, mat[r, c].subs(subs).xreplace({sp.zoo: sp.oo}))
            with np.errstate(all="ignore"):
                vals[r, c] = np.broadcast_to(np.asarray(fn(*[pts[a] for a in args]),
                                                        dtype=complex), (n,))
    vals[~np.isfinite(vals)] = 0.0
    eig = np.linalg.eigvals(np.moveaxis(vals, (0, 1), (-2, -1)))
    eig = eig[np.isfinite(eig)]
    return float(np.max(np.abs(eig))) if eig.size else 0.0


def _boundary_text(law: BalanceLaw) -> str:
    if law.periodic:
        return "periodic in " + ", ".join(str(c) for c in law.coords)
    return "; ".join(c.describe() for c in law.boundary.conditions) + (
        "; " + ", ".join(f"no condition for {u} at the {'low' if s == 0 else 'high'} end of {a}"
                         " (outflow: zero gradient)" for u, a, s in law.boundary.missing(law.names))
        if law.boundary.missing(law.names) else "")


def _law_analysis(task: Task, law: BalanceLaw, bounds: DataBounds, notes: list[str]) -> Analysis:
    facts = law_facts(law)
    axes = task.equation.space
    cells = {a: bounds.n[a] - (task.grid == "nodes") for a in axes}  # node grids: n - 1 gaps
    h = [(task.domain[a][1] - task.domain[a][0]) / max(cells[a], 1) for a in axes]
    pts = _samples(law, task, bounds)
    linear = _linear(law)
    order = _space_order(task)
    viscous_rows = sum(any(v[i] != 0 for v in law.viscous) for i in range(law.nvar))
    diffusing = law.has_viscous and any(
        any(e != 0 for e in (facts.diffusivity[a] or [])) for a in range(law.dim))
    if law.has_high:
        pde_type = "dispersive"
    elif order == 2 and law.has_viscous and not diffusing:
        pde_type = "hyperbolic"  # second derivatives that only couple the unknowns: waves
    elif order == 2 and viscous_rows == law.nvar:
        pde_type = "parabolic"
    elif order == 2:
        pde_type = "mixed"  # some equations diffuse, others are purely hyperbolic (e.g. mass)
    elif law.has_flux:
        pde_type = "hyperbolic"
    else:
        pde_type = "other"  # an ODE at every point
    pde_type = written_terms.pde_type(law) or pde_type
    cls = Classification(time_order=law.time_order, space_order=order, linear=linear,
                         pde_type=pde_type, boundary=task.boundary)
    dims = f"{law.dim}D" if law.dim > 1 else "one space dimension"
    steps = [AnalysisStep(name="classification", text=(
        f"Order {law.time_order} in time, order {order} in space, "
        f"{'linear' if linear else 'nonlinear'}, {pde_type}; a {law.nvar}-component balance law"
        f" dt(q) + div F = div V + S in {dims}; boundary: {_boundary_text(law)}."),
        facts={"nvar": law.nvar, "dim": law.dim, "periodic": law.periodic})]
    system = linear_system(law)
    where = {"fourier": "on a periodic box: each Fourier mode",
             "walls": "between homogeneous Dirichlet/Neumann walls: each sine/cosine mode (the"
                      " eigenbasis, with the parity per unknown that its derivative couplings"
                      " require)"}
    steps.append(AnalysisStep(name="analytical", applies=system is not None, text=(
        f"Linear with constant coefficients {where.get(basis(law), '')} evolves by the matrix"
        " exponential exp(L(k) t) (Duhamel's integral for the forcing), an exact propagator with"
        " no time-step error." if system is not None else
        "No closed-form propagator: " + (
            "the boundary conditions have no common sine/cosine eigenbasis of the operator"
            " (inhomogeneous or Robin walls, a condition at one end only, or an odd derivative"
            " of an unknown in its own equation)." if basis(law) is None or
            (not law.periodic and _linear(law)) else
            "the problem is nonlinear or has variable coefficients."))))
    steps.append(AnalysisStep(name="transformation", applies=bool(law.introduced or law.notes),
                              text=" ".join(law.notes) if law.notes else
                              "No change of variables is used: the catalogue works on the"
                              " conservative form."))
    D = law.scalar_diffusion()
    terms = {"flux": [[sp.sstr(f) for f in row] for row in law.flux],
             "viscous": [[sp.sstr(v) for v in row] for row in law.viscous],
             "source": [sp.sstr(s) for s in law.source], "conserved": [sp.sstr(q) for q in law.q],
             "high_order": [[f"{sp.sstr(c)}*d^{o}({law.names[j]})" for c, j, o in row]
                            for row in law.high]}
    ode = facts.ode_solution
    dec_text = (f"Flux F = {terms['flux']}, viscous flux V = {terms['viscous']}, source S ="
                f" {terms['source']}.")
    if law.has_high:
        dec_text += (f" Linear constant-coefficient terms of order >= 3 or mixed:"
                     f" {terms['high_order']} (exact in Fourier or sine/cosine modes).")
    dec_text += written_terms.describe(law)
    if law.depends_on_space() or law.depends_on_time():
        dec_text += " Terms depend explicitly on " + ", ".join(
            ([", ".join(str(c) for c in law.coords)] if law.depends_on_space() else [])
            + (["t"] if law.depends_on_time() else [])) + "."
    if ode is not None:
        dec_text += (f" The local source ODE dq/dt = S(q) has the closed form q(tau) = {sp.sstr(ode)}"
                     " (written to stay finite for large tau), so a splitting can step it exactly.")
    split_ok = D is not None and (law.has_source or law.has_flux) and law.periodic
    steps.append(AnalysisStep(name="decomposition", applies=split_ok, text=dec_text, facts={
        **terms, "source_exact": sp.sstr(ode) if ode is not None else None,
        "diffusion_constant": sp.sstr(D) if D is not None else None}))

    stab: list[StabilityBound] = []
    dt_adv = dt_diff = dt_src = math.inf
    lam_max, d_max = [0.0] * law.dim, [0.0] * law.dim
    hs = ", ".join(f"h_{a} = {v:.4g}" for a, v in zip(axes, h))
    if law.has_flux:
        rate, speeds = 0.0, []
        for a in range(law.dim):
            lam = facts.eigenvalues[a] or [facts.jacobian[a][i, i] for i in range(law.nvar)]
            lam_max[a] = _max_abs(lam, law, task, pts)
            rate += lam_max[a] / h[a]
            # the largest speed along the axis (an eigenvalue may itself contain a '/')
            speeds.append(f"Max({', '.join(f'Abs({sp.sstr(e)})' for e in lam)})")
        dt_adv = 1.0 / rate if rate > 0 else math.inf
        stab.append(StabilityBound(
            scheme="explicit advective (finite volume, Rusanov/HLL flux)",
            expression=(f"1/({' + '.join(f'{m}/d{x}' for m, x in zip(speeds, axes))})"
                        if law.dim > 1 else f"d{axes[0]}/{speeds[0]}"), value=dt_adv,
            note=(f"Courant number 1 with the eigenvalues of dF/dU; max |lambda| = "
                  f"{', '.join(f'{v:.4g}' for v in lam_max)} on {bounds.source}, {hs}."
                  " The designs run at CFL 0.25-0.5 of it.")))
    dt_wave = math.inf
    if law.has_viscous:
        rate, exprs = 0.0, []
        for a in range(law.dim):
            dif = facts.diffusivity[a] or [facts.diffusion_matrix[a][i, i] for i in range(law.nvar)]
            d_max[a] = _max_abs(dif, law, task, pts)
            rate += 2.0 * d_max[a] / h[a] ** 2
            exprs.append(f"2*Max({', '.join(f'Abs({sp.sstr(e)})' for e in dif)})/d{axes[a]}**2")
        dt_diff = 1.0 / rate if rate > 0 else math.inf
        if rate > 0:
            stab.append(StabilityBound(
                scheme="explicit diffusion (central, forward Euler)",
                expression=f"1/({' + '.join(exprs)})", value=dt_diff,
                note=f"max diffusivity {', '.join(f'{v:.4g}' for v in d_max)} on {bounds.source}."))
        else:  # second derivatives that couple unknowns without diffusing (u_tt = c^2 u_xx)
            dt_wave = 1.0 / max(_coupled_rate(law, facts, task, pts, h), 1e-300)
            stab.append(StabilityBound(
                scheme="explicit central second differences (wave-like coupling, RK)",
                expression="1/max|eig(dS/dU - sum_a 4 dV_a/dU_a / h_a**2)|", value=dt_wave,
                note="the second-order terms do not diffuse (their matrix has only zero"
                     " eigenvalues): they couple the unknowns into waves, whose speed bounds the"
                     " step of an explicit Runge-Kutta scheme (imaginary-axis stability)."))
    if law.has_source:
        sj = [facts.source_jacobian[i, i] for i in range(law.nvar)]
        r = _max_abs(sj, law, task, pts)
        dt_src = 1.0 / r if r > 0 else math.inf
    if law.has_source and math.isfinite(dt_src):
        stab.append(StabilityBound(
            scheme="explicit source (forward Euler)",
            expression=f"1/Max({', '.join(f'Abs({sp.sstr(e)})' for e in sj)})", value=dt_src,
            note=f"max |dS/dq| = {r:.4g} on {bounds.source}."))
    values = {p: task.constants[p.name] for p in law.params}
    refuse_if_ill_posed(law, task, values, h, pts)
    dt_terms = math.inf
    if law.has_extra:
        dt_terms, jet = written_terms.explicit_step(law, values, h, pts)
        written_terms.refuse_if_too_stiff(law, task, dt_terms, jet)
        if math.isfinite(dt_terms):
            stab.append(StabilityBound(
                scheme="explicit terms kept as written (their linear part implicit or exact)",
                expression="1/max r(k) over the modes with r(k) > |Re L(k)|/2", value=dt_terms,
                note=f"r(k) = sum over derivatives of max|dN/d(derivative)| |k|^order at states"
                     f" in {bounds.source} with zero derivatives, L the linear"
                     f" constant-coefficient part; {jet} sets it."))
    span = task.time_span[1] - task.time_span[0]
    stiffness = dt_adv / dt_diff if math.isfinite(dt_adv) and dt_diff > 0 else (
        span / 100 / dt_diff if math.isfinite(dt_diff) else 0.0)
    peclet = max((lam_max[a] * h[a] / d_max[a] for a in range(law.dim) if d_max[a] > 0),
                 default=math.inf)
    design_facts = {
        "linear_symbol": system is not None, "diffusion_constant": D is not None,
        "source_exact": ode is not None, "stiffness": float(stiffness),
        "viscous_stiffness": float(dt_adv / dt_diff) if math.isfinite(dt_diff) and
        math.isfinite(dt_adv) else (float(stiffness) if not law.has_flux else 0.0),
        "cell_peclet": float(peclet), "dt_output": span / max((task.n_frames or 101) - 1, 1),
        "has_flux": law.has_flux, "dx": h[0], "h": h,
        "dt_advective": dt_adv, "dt_diffusive": dt_diff, "dt_source": dt_src,
        "dt_wave": dt_wave, "dt_terms": dt_terms,
    }
    stab_text = "; ".join(f"{b.scheme}: dt <= {b.expression} = {b.value:.3g}" for b in stab)
    if stiffness > 20:
        stab_text += (f". The explicit diffusion step is {stiffness:.0f}x below the natural step:"
                      " treat diffusion exactly (Fourier) or implicitly (TR-BDF2), not by"
                      " sub-cycling.")
    steps.append(AnalysisStep(name="stability", text=stab_text or "no explicit step bound",
                              facts={"design_facts": design_facts, "assumptions": notes}))
    route = "analytical" if system is not None else (
        "transformation" if law.introduced or law.time_order > 1 else
        ("hybrid" if split_ok and (stiffness > 20 or ode is not None) else "numerical"))
    design_facts["route"] = route  # Genesis follows the route (families.candidate_designs)
    p = Problem(task=task, struct=law, facts=design_facts)
    schemes = [family(d.family).title(d, p) for d in candidate_designs(p)]
    key = [f"type: {pde_type}, {'linear' if linear else 'nonlinear'}, route {route}"]
    key += [f"{b.scheme}: dt <= {b.value:.3g}" for b in stab]
    if ode is not None:
        key.append(f"exact source step: {sp.sstr(ode)}")
    key += list(law.notes) + notes
    return Analysis(classification=cls, route=route, steps=steps, stability=stab,
                    recommended_schemes=schemes, key_facts=key, source="builtin")


def _elliptic_analysis(task: Task, prob: EllipticProblem, bounds: DataBounds, notes) -> Analysis:
    cls = Classification(time_order=None, space_order=2, linear=prob.linear, pde_type="elliptic",
                         boundary=task.boundary)
    k_txt = ", ".join(sp.sstr(k) for k in prob.K)
    bc = "; ".join(c.describe() for c in prob.boundary.conditions)
    h = [(task.domain[a][1] - task.domain[a][0]) / bounds.n[a] for a in task.equation.space]
    n = [int(bounds.n[a]) for a in task.equation.space]
    peclet = 0.0
    if prob.has_convection:
        peclet = math.inf if any(k == 0 for k in prob.K) else 1.0  # refined below when numeric
        try:
            vals = {p: task.constants[p.name] for p in prob.params}
            b = [abs(float(sp.sympify(e).subs(vals))) for e in prob.b]
            k = [abs(float(sp.sympify(e + n).subs(vals))) for e, n in zip(prob.K, prob.N)]
            peclet = max(bi * hi / ki if ki > 0 else math.inf for bi, hi, ki in zip(b, h, k))
        except (TypeError, ValueError):  # coefficients vary in space: keep the rough estimate
            pass
    steps = [
        AnalysisStep(name="classification", text=(
            f"Steady, second order, {'linear' if prob.linear else 'semilinear'}, elliptic in"
            f" {prob.dim}D (conductivities {k_txt}); boundary: {bc}."), facts={}),
        AnalysisStep(name="analytical", applies=False, text=(
            "Variable coefficients or data fields: no closed form; a discrete system is solved."
            + (" Every coefficient and the forcing are formulas, so the solution can be computed"
               " on any points: spectral (Chebyshev) collocation, exact to round-off for an"
               " analytic solution, and finite volumes on grids finer than the output's."
               if not prob.uses_fields else
               " Coefficient fields are data at the output points: a finer internal grid"
               " interpolates them, and their own interpolation error bounds the accuracy.")),
            facts={"formulas_only": not prob.uses_fields}),
        AnalysisStep(name="transformation", applies=False, text="None needed."),
        AnalysisStep(name="decomposition", applies=False, text=(
            f"Operator -div(K grad u) - N u'' + b.grad u + r(u) with K = ({k_txt}),"
            f" N = {[sp.sstr(n) for n in prob.N]}, b = {[sp.sstr(b) for b in prob.b]},"
            f" reaction r = {sp.sstr(prob.reaction)}, forcing f = {sp.sstr(prob.forcing)}."),
            facts={"forcing": sp.sstr(prob.forcing)}),
        AnalysisStep(name="stability", text=(
            "No time stepping. With K > 0 the stencil matrix is an M-matrix (central convection"
            " keeps it one while the cell Peclet number stays below 2), so a sparse direct solve"
            " is stable" + ("" if prob.linear else "; Newton's method for the nonlinear reaction")
            + ". Accuracy: the stencil's error on the output grid is O(h^2); a finer internal"
            " grid and Richardson extrapolation (order 4 for a smooth solution)"
            + (", or Chebyshev collocation," if not prob.uses_fields else "")
            + " go beyond it." + (f" Cell Peclet number {peclet:.3g} on the output grid: a"
                                  " boundary layer of width ~h or thinner." if peclet >= 1 else "")),
            facts={"design_facts": {"cell_peclet": peclet, "h": h, "n": n},
                   "assumptions": notes}),
    ]
    p = Problem(task=task, struct=prob, facts={"cell_peclet": peclet, "h": h, "n": n})
    return Analysis(classification=cls, route="numerical", steps=steps, stability=[],
                    recommended_schemes=[family(d.family).title(d, p) for d in candidate_designs(p)],
                    key_facts=[f"type: elliptic, {'linear' if prob.linear else 'nonlinear'},"
                               " route numerical", *notes], source="builtin")
