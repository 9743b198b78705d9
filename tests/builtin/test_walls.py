"""Walls and node grids in time-dependent problems (issue 19, items 1, 2, 7 and 8): the sine/cosine
bases, the wall pseudo-spectral and method-of-lines families, finite volumes with 2D walls, node
grids, and the 2D spectral output sampled at the data points. Reference data come from
examples/tasks/reference_walls.py (closed forms, Chebyshev collocation with Radau, a 3x finer
Fourier run); the generated solvers run in-process here (our own code), the sandboxed path is in
test_default_path."""

from __future__ import annotations

import numpy as np
import pytest

from pdesharp.builtin import BuiltinAnalyst, DataBounds
from pdesharp.builtin.author import design_facts, problem, render
from pdesharp.builtin.families import candidate_designs, family
from pdesharp.builtin.families.bases import wall_bases
from pdesharp.builtin.families.mol_block import MOL_BLOCK
from pdesharp.builtin.structure import structure
from pdesharp.builtin.support import support
from pdesharp.task import load_task

from builtin_helpers import EXAMPLES, nrmse, read_h5, run_solver
from test_families import make


def _problem(name, ref):
    task = load_task(EXAMPLES / f"{name}.yaml")
    fields = {u: (float(ref[k][:, 0].min()), float(ref[k][:, 0].max()))
              for u, k in task.data.fields.items()}
    first = ref[task.data.fields[task.equation.unknowns[0]]]
    n = {a: first.shape[2 + i] for i, a in enumerate(task.equation.space)}
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields=fields, n=n)).analyse_sync(task)
    return task, problem(task, design_facts(analysis))


def _score(name, example_data, fam, samples=2, **axes):
    ref = read_h5(example_data / name / "dev.hdf5", samples=samples)
    task, p = _problem(name, ref)
    pred, r = run_solver(render(task, family(fam).design(**axes), p), task, ref,
                         ref["t-coordinate"])
    assert pred.shape == r.shape
    return nrmse(pred, r)


# ---- the bases: parities from the conditions and the couplings ----------------------------

def test_tm_cavity_parities_follow_the_curl_couplings():
    law = structure(load_task(EXAMPLES / "tm_cavity2d.yaml"))
    bx, by = wall_bases(law)
    assert (bx.kind, by.kind) == ("integer", "integer")
    # Ez vanishes on every wall; Hx = 0 on the x walls, Hy = 0 on the y walls; the rest is the
    # parity dx / dy give them (no condition stated for Hy at x walls nor Hx at y walls)
    assert bx.parity == ("sin", "sin", "cos") and by.parity == ("sin", "cos", "sin")


@pytest.mark.parametrize("equation,boundary,expected", [
    ("dt(u) - dx(u, 2)", "x = 0: u = 0; x = 1: dx(u) = 0", ("half", ("sin",))),
    ("dt(u) - dx(u, 2)", "neumann: dx(u) = 0", ("integer", ("cos",))),
    ("dt(u) - dx(u, 2) - u + u**3", "dirichlet: u = 0", ("integer", ("sin",))),
    ("dt(u) + dx(u) - dx(u, 2)", "dirichlet: u = 0", None),  # an odd self-coupling
    ("dt(u) - dx(u, 2)", "robin: dn(u) + u = 0", None),  # transcendental wavenumbers
    ("dt(u) - dx(u, 2)", "dirichlet: u = sin(t)", None),  # inhomogeneous data
    # (one end stated and the other free is refused now: test_user_input.py, issue 26)
])
def test_wall_bases_exist_only_where_the_walls_admit_them(equation, boundary, expected):
    law = structure(make(equation, {}, boundary))
    got = wall_bases(law)
    if expected is None:
        assert got is None
    else:
        assert (got[0].kind, got[0].parity) == expected


# ---- exact propagators between walls ------------------------------------------------------

def test_tm_cavity_exact_propagator_matches_the_cavity_modes(example_data):
    # linear, constant coefficients, parity-consistent: exact to round-off (measured 1.5e-14)
    assert _score("tm_cavity2d", example_data, "exact") < 1e-11


# ---- wall pseudo-spectral: cosine series for Neumann walls, matrix ETDRK4 for dispersion ---

def test_allen_cahn_with_neumann_walls_reaches_the_reference_with_a_cosine_series(example_data):
    # issue 19 item 8: finite volumes stopped at 2e-5 (6.3e-5 on this example); the cosine
    # series is spectral here (u - u**3 maps the even extension into itself) and ETDRK4 is
    # fourth order: measured 3.9e-8 at CFL 0.1, 3.6e-10 at 0.025 (the Chebyshev reference's own
    # difference from 8 more points is 3e-12)
    coarse = _score("allen_cahn_neumann1d", example_data, "wall_spectral", CFL=0.1)
    fine = _score("allen_cahn_neumann1d", example_data, "wall_spectral", CFL=0.025)
    assert coarse < 1e-6 and fine < 1e-8 and fine < coarse / 20


def test_gross_pitaevskii_with_walls_gets_the_sine_series_and_matrix_exponentials(example_data):
    # issue 19 item 7: finite volumes stalled at 3.8e-3 (6.5e-2 in the issue); sine modes with
    # the Schroedinger block [[0, -k^2/2], [k^2/2, 0]] exact per mode: measured 9.6e-8
    ref = read_h5(example_data / "gross_pitaevskii1d" / "dev.hdf5", samples=1)
    task, p = _problem("gross_pitaevskii1d", ref)
    assert candidate_designs(p)[0].family == "wall_spectral"
    assert _score("gross_pitaevskii1d", example_data, "wall_spectral", samples=1, CFL=0.025) < 1e-6


# ---- method of lines: any walls, node grids -----------------------------------------------

def test_method_of_lines_converges_with_order_and_grid_on_node_data(example_data):
    # time-dependent Dirichlet data on a node grid (both ends): the judges' ORDER and REFINE
    # moves must pay off. Measured: order 2: 8.4e-5, order 4: 5.1e-7, order 6: 1.5e-7 (step
    # 0.003), order 4 on a 2x grid: 1.2e-7
    e2 = _score("heat_nodes1d", example_data, "mol", ORDER=2, DT_MAX=0.003)
    e4 = _score("heat_nodes1d", example_data, "mol", ORDER=4, DT_MAX=0.003)
    e4r = _score("heat_nodes1d", example_data, "mol", ORDER=4, REFINE=2, DT_MAX=0.003)
    assert e4 < e2 / 20 and e4r < e4 / 2 and e4 < 2e-6


def test_method_of_lines_with_robin_walls_in_2d(example_data):
    # dn(u) + h u = 0 on every side of a square, Fisher-KPP source; Chebyshev reference (its
    # own error estimate 2e-10); order 4 at N = 16: measured 2.6e-5
    assert _score("fisher_robin2d", example_data, "mol", DT_MAX=0.025) < 2e-4


def test_2d_heat_with_time_dependent_dirichlet_data_on_nodes(example_data):
    # every 2D heat case of the benchmark was refused; exact solution; 17^2 nodes with
    # sine modes up to m = 4 (8 nodes per wavelength). Measured: order 2: 3.3e-3; order 6 on a
    # 2x internal grid (the data nodes are internal nodes): 7.3e-6
    e2 = _score("heat_dirichlet2d", example_data, "mol", ORDER=2, DT_MAX=0.005)
    e6 = _score("heat_dirichlet2d", example_data, "mol", ORDER=6, REFINE=2, DT_MAX=0.005)
    assert e6 < 3e-5 and e6 < e2 / 100


def test_wall_closures_keep_the_discrete_diffusion_stable():
    # no eigenvalue of the second-difference operator with a positive real part, for every
    # closure (Dirichlet, Neumann, Robin, none), order and grid: growth would be spurious
    ns = {"np": np}
    for nodes in (False, True):
        for order in (2, 4, 6):
            for cond in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (2.0, 1.0, 0.0), None):
                ns.update(ORDER=order, REFINE=1, NODES=nodes, DOMAIN=[(0.0, 1.0)], DIM=1,
                          PERIODIC_AXES=[False], NVAR=1, DIFFUSES=[[True]])
                exec(MOL_BLOCK, ns)
                ax = ns["_axis"](0, 40)
                lo = cond if cond is None or cond[1] == 0 else (cond[0], -cond[1], 0.0)
                D2 = ns["_operators"](0, ax, [[lo, cond]])[0]["D2"].toarray()
                assert np.linalg.eigvals(D2).real.max() < 1e-8, (nodes, order, cond)


@pytest.mark.parametrize("scheme,order", [("ars222", 2), ("ars443", 3)])
def test_imex_tableaux_have_their_order(scheme, order):
    # y' = -50 y (implicit) + cos(t) (explicit), y(0) = 1: the error falls as dt^order
    ns = {"np": np}
    exec(MOL_BLOCK.split("def _fornberg")[0], ns)
    c, AE, bE, AI, bI = ns["_TABLEAUX"][scheme]
    lam = -50.0

    def run(n):
        y, h = 1.0, 1.0 / n
        for m in range(n):
            t = m * h
            KE, KI = [], []
            for i in range(len(c)):
                r = y + h * sum(AE[i][j] * KE[j] + AI[i][j] * KI[j] for j in range(i))
                yi = r / (1 - h * AI[i][i] * lam)
                KI.append(lam * yi)
                KE.append(np.cos(t + c[i] * h))
            y += h * sum(bE[j] * KE[j] + bI[j] * KI[j] for j in range(len(c)))
        return y

    exact = np.exp(lam) + (np.sin(1.0) - lam * np.cos(1.0) + lam * np.exp(lam)) / (1 + lam**2)
    errs = [abs(run(n) - exact) for n in (100, 200, 400)]
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(rates > order - 0.3), (errs, rates)


# ---- node grids on periodic boxes, in every periodic family ---------------------------------

@pytest.mark.parametrize("fam,axes,tol", [
    ("exact", {}, 1e-12),  # exact propagator (measured 1e-15)
    ("fv", {"RECONSTRUCTION": "weno5"}, 1e-2),  # second/fifth order at N = 64 (2.7e-3)
])
def test_periodic_node_grid_keeps_its_repeated_end(fam, axes, tol, example_data):
    ref = read_h5(example_data / "advection_diffusion_nodes1d" / "dev.hdf5", samples=2)
    task, p = _problem("advection_diffusion_nodes1d", ref)
    pred, r = run_solver(render(task, family(fam).design(**axes), p), task, ref,
                         ref["t-coordinate"])
    assert np.array_equal(pred[:, :, 0], pred[:, :, -1])  # x = 0 and x = 1 are one point
    assert nrmse(pred, r) < tol


# ---- 2D spectral output: the values at the points, not a truncated field --------------------

def test_2d_spectral_refinement_pays_off_at_the_data_points(example_data):
    # issue 19 item 8: a 2x and a 4x internal grid both scored 4.4e-4 on this example (the
    # truncation of the converged field to the data's 16 modes); sampled at the data points:
    # measured 2.3e-6 and 1.1e-9
    e2 = _score("shear_advection2d", example_data, "spectral", REFINE=2, CFL=0.1)
    e4 = _score("shear_advection2d", example_data, "spectral", REFINE=4, CFL=0.1)
    assert e2 < 1e-5 and e4 < e2 / 100


# ---- tasks check: what was refused is supported, and by which families ----------------------

@pytest.mark.parametrize("name,families", [
    ("heat_dirichlet2d", {"mol"}),
    ("tm_cavity2d", {"exact", "mol", "fv"}),
    ("allen_cahn_neumann2d", {"wall_spectral", "mol", "fv"}),
    ("gross_pitaevskii2d", {"wall_spectral", "mol", "fv"}),
    ("fisher_robin2d", {"mol", "fv"}),
    ("advection_diffusion_nodes1d", {"exact", "fv"}),
])
def test_tasks_check_supports_walls_in_2d_and_node_grids(name, families):
    got = support(load_task(EXAMPLES / f"{name}.yaml"))
    assert got.supported, got.reason
    assert families <= set(got.families), got.families


# ---- node grids on periodic boxes in the pseudo-spectral, splitting and FV families ----------

@pytest.mark.parametrize("equation,params", [
    ("dt(u) + dx(u**2/2) - nu*dx(u, 2)", {"nu": 0.02}),  # pseudo-spectral and FV
    ("dt(u) - D*dx(u, 2) - u + u**3", {"D": 0.001}),  # splitting, pseudo-spectral and FV
])
def test_periodic_node_grids_in_the_fourier_families(equation, params):
    # the node grid x_i = i/64 (65 nodes, the last repeating the first) is the cell-centre grid
    # of the shifted box (-1/128, 1 - 1/128): the generic generator's run there is the reference.
    # Tolerances: the best spectral/splitting design per family (measured 3e-12 .. 2e-7), and
    # second-order finite volumes (2.4e-3 .. 3.2e-5)
    from pdesharp.data.generate.generic import simulate_task
    from pdesharp.task import task_from_dict

    nodes = make(equation, params, grid="nodes")
    spec = make(equation, params).model_dump(mode="json")
    spec["domain"] = {"x": [-1 / 128, 1 - 1 / 128]}
    x = np.arange(64) / 64
    u0 = 0.5 * np.sin(2 * np.pi * x) + 0.2 * np.cos(4 * np.pi * x)
    t = np.linspace(0, 0.25, 6)
    ref = simulate_task(task_from_dict(spec), {"u": u0[None]}, t)["u"]
    ref = np.concatenate([ref, ref[..., :1]], -1)
    p = problem(nodes)
    best: dict[str, float] = {}
    for d in candidate_designs(p):
        if d.family in best and d.family == "fv":
            continue  # one finite-volume design is enough
        pred, _ = run_solver(render(nodes, d, p), nodes, {"tensor": ref}, t)
        assert np.array_equal(pred[:, :, 0], pred[:, :, -1])
        best[d.family] = min(best.get(d.family, np.inf), nrmse(pred[..., 0], ref))
    assert {"spectral", "fv"} <= set(best), best
    assert all(v < 1e-6 for f, v in best.items() if f in ("spectral", "split")), best
    assert best["fv"] < 5e-3, best


# ---- three dimensions, where the bases make it cheap -------------------------------------------

def test_3d_box_with_walls_gets_the_sine_and_cosine_families():
    n = 10
    x = (np.arange(n) + 0.5) / n
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    t = np.linspace(0.0, 0.5, 4)
    heat = make("dt(u) - nu*(dx(u, 2) + dy(u, 2) + dz(u, 2))", {"nu": 0.05}, "dirichlet: u = 0",
                space=("x", "y", "z"), time_span=(0.0, 0.5), frames=4)
    u = np.zeros((1, 4, n, n, n))
    for a, b, c, amp in ((1, 1, 1, 1.0), (2, 1, 3, 0.3)):
        decay = np.exp(-0.05 * np.pi**2 * (a * a + b * b + c * c) * t)[:, None, None, None]
        u[0] += amp * decay * (np.sin(a * np.pi * X) * np.sin(b * np.pi * Y)
                               * np.sin(c * np.pi * Z))[None]
    p = problem(heat)
    best = candidate_designs(p)[0]
    assert best.family == "exact"
    pred, r = run_solver(render(heat, best, p), heat, {"tensor": u}, t)
    assert nrmse(pred, r) < 1e-12  # exact sine modes (measured 4e-16)
    ac = make("dt(u) - 0.01*(dx(u, 2) + dy(u, 2) + dz(u, 2)) - u + u**3", {}, "neumann: dn(u) = 0",
              space=("x", "y", "z"))
    assert candidate_designs(problem(ac))[0].family == "wall_spectral"


def test_walls_on_a_node_grid_for_a_shock_are_refused_with_the_rewrite():
    # inviscid Burgers with an inflow wall on nodes: no cell-centre finite volumes, no smooth
    # solution for the method of lines; tasks check says so in one line with the rewrite
    got = support(make("dt(u) + dx(u**2/2)", {}, "x = 0: u = 1", grid="nodes"))
    assert not got.supported
    assert "walls on a node grid" in got.reason and "grid: cell_centres" in got.reason


@pytest.mark.parametrize("grid", ["cell_centres", "nodes"])
def test_a_channel_periodic_in_x_with_walls_in_y(grid):
    # Fourier x sine modes: exact (measured 3.6e-16); the method of lines with a periodic axis
    # and a walled one, order 4 at 24 points (measured 1.9e-5 .. 2.6e-5)
    task = make("dt(u) - nu*(dx(u, 2) + dy(u, 2))", {"nu": 0.05},
                "periodic in x; y = 0: u = 0; y = 1: u = 0", grid=grid, space=("x", "y"),
                time_span=(0.0, 0.5), frames=6)
    n = 24
    x = (np.arange(n) + 0.5) / n if grid == "cell_centres" else np.linspace(0.0, 1.0, n)
    X, Y = np.meshgrid(x, x, indexing="ij")
    t = np.linspace(0.0, 0.5, 6)
    u = np.zeros((1, 6, n, n))
    for a, b, c in ((1, 1, 1.0), (2, 3, 0.4)):
        decay = np.exp(-0.05 * np.pi**2 * (4 * a * a + b * b) * t)[:, None, None]
        u[0] += c * decay * (np.cos(2 * a * np.pi * X + 0.3) * np.sin(b * np.pi * Y))[None]
    p = problem(task)
    best = {}
    for d in candidate_designs(p):
        if d.family in ("exact", "mol") and d.family not in best:
            pred, r = run_solver(render(task, d, p), task, {"tensor": u}, t)
            best[d.family] = nrmse(pred, r)
    assert best["exact"] < 1e-12 and best["mol"] < 1e-4, best


@pytest.mark.parametrize("kinds,parities", [
    (["integer"], [["cos"]]), (["integer"], [["sin"]]), (["half"], [["cos"]]),
    (["half"], [["sin"]]), (["fourier"], [[""]]), (["integer", "fourier"], [["sin", ""], ["cos", ""]]),
])
def test_fast_sine_cosine_transforms_agree_with_the_dense_ones(kinds, parities):
    # the internal grid's DCT/DST/FFT transforms against the dense basis matrices (the
    # definition): round-off agreement on odd and even sizes, and forward then back is identity
    from pdesharp.builtin.families.bases import BASES

    ns = {"np": np, "AXIS_KIND": kinds, "PARITY": parities,
          "DOMAIN": [(0.0, 2.0), (-1.0, 1.0)][:len(kinds)]}
    exec(BASES, ns)
    shape = (7, 6)[:len(kinds)]
    dense = ns["_Space"](shape, False, len(parities))
    fast = ns["_Space"](shape, False, len(parities), fast=True)
    rng = np.random.default_rng(0)
    for i in range(len(parities)):
        u = rng.normal(size=(3,) + shape)
        c = rng.normal(size=(3,) + dense.mshape) + (
            1j * rng.normal(size=(3,) + dense.mshape) if dense.complex else 0)
        assert np.allclose(dense.forward(u, i), fast.forward(u, i), atol=1e-13)
        assert np.allclose(dense.evaluate(c, i), fast.evaluate(c, i), atol=1e-13)
        assert np.allclose(fast.evaluate(fast.forward(u, i), i), u, atol=1e-13)
