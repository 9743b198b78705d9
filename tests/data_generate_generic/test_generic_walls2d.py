"""The Chebyshev generator on rectangles with walls (issue 20, item 4): exact solutions with
time-dependent Dirichlet, Neumann and Robin data; the shipped 2D walled examples' independent
reference script; wall-compatible initial data; node grids; the CLI end to end."""

from __future__ import annotations

import importlib.util
import math

import h5py
import numpy as np
import pytest
import sympy as sp
import yaml

from pdesharp.cli import main
from pdesharp.data.generate.generic import generate_task, simulate_task
from pdesharp.data.generate.generic_bounded import integrate_walls, make_box
from pdesharp.data.generate.generic_bounded_ic import IncompatibleRange
from pdesharp.data.generate.walls import WallConditions
from pdesharp.examples import example_path
from pdesharp.grid import axis_points
from pdesharp.task import load_task

from generic_tasks import make_task

NU = 0.05
X, Y, T = sp.symbols("x y t", real=True)
# P solves u_t = nu (u_xx + u_yy) (as in the heat_dirichlet2d example); Q is a decaying mode of
# the box [0, 1] x [-0.5, 1] with zero normal derivative on every wall
P = X**2 + Y**2 + 4 * NU * T + sp.exp(-8 * NU * T) * sp.cos(2 * X) * sp.cos(2 * Y + sp.Rational(1, 2))
LY = sp.Rational(3, 2)
Q = sp.exp(-NU * sp.pi**2 * (1 + 4 / LY**2) * T) * sp.cos(sp.pi * X) * sp.cos(2 * sp.pi * (Y + sp.Rational(1, 2)) / LY)
DOMAIN = {"x": [0.0, 1.0], "y": [-0.5, 1.0]}


def _heat(boundary: str, grid: str = "nodes"):
    return make_task(["dt(u) - nu*(dx(u, 2) + dy(u, 2))"], ["u"], {"nu": NU}, space=("x", "y"),
                     domain=DOMAIN, boundary=boundary, time_span=(0.2, 0.7), n_frames=6,
                     grid=grid)


def _text(expr) -> str:
    return sp.sstr(expr.subs(sp.Symbol("nu"), NU) if expr.has(sp.Symbol("nu")) else expr)


def _run_exact(task, exact, m=22):
    """Integrate from the exact solution at t0 (at the collocation points) and return the largest
    error over the frames at the output points (9 x 9 nodes or cell centres)."""
    box = make_box(task, 9, m)
    f = sp.lambdify((X, Y, T), exact, "numpy")
    XX, YY = np.meshgrid(*box.points, indexing="ij")
    t_out = np.linspace(0.2, 0.7, 6)
    u0 = np.broadcast_to(f(XX, YY, t_out[0]), box.shape)[None, None].copy()
    frames, info = integrate_walls(task, u0, t_out, box, rtol=1e-10)
    pts = [axis_points(*DOMAIN[a], 9, task.grid) for a in "xy"]
    got = box.interpolate(frames[0, :, 0], pts)
    PX, PY = np.meshgrid(*pts, indexing="ij")
    want = np.stack([np.broadcast_to(f(PX, PY, t), PX.shape) for t in t_out])
    return float(np.abs(got - want).max()), info


def test_time_dependent_dirichlet_data_on_four_walls_match_the_exact_solution():
    # u = P + a sine mode; the data on each wall are P there (P varies along the wall and in time)
    S = sp.exp(-NU * sp.pi**2 * (1 + 1 / LY**2) * T) * sp.sin(sp.pi * X) * sp.sin(sp.pi * (Y + sp.Rational(1, 2)) / LY)
    task = _heat(f"dirichlet: u = {_text(P)}")
    err, info = _run_exact(task, P + S)
    # 23 points per axis resolve these analytic fields to ~1e-12; Radau at rtol 1e-10 over 5
    # frames leaves ~1e-9 on values of size 3: 1e-7 is well above both, far below any real bug
    # (a wrong wall value or a wrong axis scaling gives errors of 1e-3 or more)
    assert err < 1e-7, err
    assert info["collocation_points"] == [23, 23]


def test_neumann_walls_and_mixed_robin_data_match_the_exact_solution():
    # zero normal derivative everywhere: u = Q + 0.3
    err, _ = _run_exact(_heat("neumann: dn(u) = 0", grid="cell_centres"), Q + 0.3)
    assert err < 1e-7, err  # as above: spectral space error, Radau rtol 1e-10
    # each side of another kind, with the data that make u = P + Q exact (time-dependent, and
    # varying along the side): Neumann at x = 0, Robin at x = 1, Dirichlet at y = -0.5, Robin
    # with the outward normal at y = 1
    u = P + Q
    ux, uy = sp.diff(u, X), sp.diff(u, Y)
    g = {"x0": ux.subs(X, 0), "x1": (ux + 2 * u).subs(X, 1), "y0": u.subs(Y, -0.5),
         "y1": (uy + u).subs(Y, 1)}
    boundary = (f"x = 0: dx(u) = {_text(g['x0'])}; x = 1: dx(u) + 2*u = {_text(g['x1'])}; "
                f"y = -0.5: u = {_text(g['y0'])}; y = 1: dn(u) + u = {_text(g['y1'])}")
    err, _ = _run_exact(_heat(boundary), u)
    assert err < 1e-7, err


def test_generated_initial_data_meet_the_walls_and_later_frames_carry_the_data():
    task = _heat(f"dirichlet: u = {_text(P)}")
    # degree 16: the walls are imposed exactly whatever the resolution
    out = generate_task(task, 2, seed=3, nx=13, n_frames=3, rtol=1e-9, collocation=16)
    u, t = out["tensor"] if "tensor" in out else out["u"], out["t-coordinate"]
    x, y = out["x-coordinate"], out["y-coordinate"]
    assert u.shape == (2, 3, 13, 13) and x[0] == 0.0 and x[-1] == 1.0 and y[0] == -0.5
    f = sp.lambdify((X, Y, T), P, "numpy")
    for j, tj in enumerate(t):  # nodes include the walls: the stored wall values are the data
        for wall, (xx, yy) in {"x=0": (x[0], y), "x=1": (x[-1], y), "y=-0.5": (x, y[0]),
                               "y=1": (x, y[-1])}.items():
            index = {"x=0": (slice(None), j, 0), "x=1": (slice(None), j, -1),
                     "y=-0.5": (slice(None), j, slice(None), 0),
                     "y=1": (slice(None), j, slice(None), -1)}[wall]
            # frame 0 is the blended initial function itself; later ones the polynomial
            assert np.abs(u[index] - f(xx, yy, tj)).max() < 1e-8, (wall, j)
    assert not np.allclose(u[0], u[1])  # two different random samples


def test_neumann_robin_initial_data_meet_the_conditions_within_the_range():
    task = make_task(["dt(u) - 0.02*(dx(u, 2) + dy(u, 2))"], ["u"], space=("x", "y"),
                     boundary="x = 0: dx(u) = 0; x = 1: dx(u) + 2*u = 0; y = 0: u = 0.4; "
                              "y = 1: dn(u) = 0",
                     generator={"modes": 3, "ranges": {"u": [0.1, 0.9]}})
    from pdesharp.data.generate.generic_bounded import wall_initial_data

    box = make_box(task, 12)
    pts = [axis_points(0.0, 1.0, 12, "cell_centres")] * 2
    with pytest.raises(IncompatibleRange, match="could not be built"):
        # Dirichlet 0.4 on y = 0 against the Robin wall x = 1 (u_x = -2u, not 0): the corner
        # cannot hold both with u = 0.4 and a zero slope along y, and the generator says so
        wall_initial_data(task, ["u"], (), box, pts, 2, 0)
    task = make_task(["dt(u) - 0.02*(dx(u, 2) + dy(u, 2))"], ["u"], space=("x", "y"),
                     boundary="x = 0: dx(u) = 0; x = 1: dx(u) + 2*u = 0; y = 0: u = 0; "
                              "y = 1: dn(u) = 0",
                     generator={"modes": 3, "ranges": {"u": [-0.9, 0.9]}})
    fine = make_box(task, 12, 64)  # resolves the analytic initial function to round-off
    nodes, at_points = wall_initial_data(task, ["u"], (), fine, pts, 3, 0)["u"]
    # every condition at t0, with Chebyshev derivatives of degree 64 (round-off ~1e-11)
    assert WallConditions(task, ["u"]).residual(nodes, 0, 0.0, fine) < 1e-8
    # F's extrema are measured on a reference grid: within 0.5 % of the span
    assert -0.9 - 0.009 <= at_points.min() and at_points.max() <= 0.9 + 0.009
    # the same function at the collocation and at the output points
    assert np.abs(fine.interpolate(nodes, pts) - at_points).max() < 1e-9


# ---- the examples' independent reference script -------------------------------------------------

def _reference_module():
    spec = importlib.util.spec_from_file_location(
        "reference_walls", example_path("fisher_robin2d").parent / "reference_walls.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # the reference script's own Radau runs: 20-40 s for three of the four
@pytest.mark.parametrize("name,call,frames,degree", [
    # the script's own degree (28), interpolated to this generator's degree-20 points
    ("fisher_robin2d", lambda ref, n: ref.fisher_robin2d(n, 1, 4), 6, 20),
    # closed form: degree 16 resolves the cavity's modes to 1.7e-8 of the field's size (degree
    # 20: 3e-12, at three times the CPU), 60x below the bound; a wrong wall or sign gives O(1)
    ("tm_cavity2d", lambda ref, n: ref.tm_cavity2d(n, 1, 4), 6, 16),
    # the same degree on both sides (12, quicker): the same points, two implementations, so
    # their agreement does not depend on the resolution (1.6e-10 at 12, 1.7e-9 at 16; the
    # degree-12 Radau runs take 60 % of the CPU of degree 16's). To t = 0.02 (was 0.04: the
    # reference's Radau 7.8 -> 4.4 s at load ~4): the fields already change by 1.2x their size
    # (1.5x at 0.04), so a wrong sign or wall is still O(1); agreement 2.6e-10 of the size
    ("gross_pitaevskii2d", lambda ref, n: ref.gross_pitaevskii(2, n, 1, 4, t_end=0.02, frames=3, m=12), 3, 12),
    ("allen_cahn_neumann2d", lambda ref, n: ref.allen_cahn_neumann(2, n, 1, 4, m=16), 4, 16),
])
def test_the_walled_examples_agree_with_their_reference_script(name, call, frames, degree,
                                                               monkeypatch):
    """The reference script (its own collocation and Radau, or closed forms) evaluated at this
    generator's collocation points: its frame 0 is evolved by the generator and compared."""
    ref = _reference_module()
    task = load_task(example_path(name))
    box = make_box(task, 24, degree)
    cheb = box.points[0]
    monkeypatch.setattr(ref, "points", lambda n, grid, lo=0.0, hi=1.0: lo + (hi - lo) * cheb)
    if hasattr(ref, "_cheb_run"):  # skip the reference's own self check (a second, finer run)
        first = ref._cheb_run
        runs: list = []

        def once(*args):
            if not runs:
                runs.append(first(*args))
            return runs[0]
        monkeypatch.setattr(ref, "_cheb_run", once)
    data = call(ref, cheb.size)
    unknowns = task.equation.unknowns
    keys = [task.data.fields[u] for u in unknowns]
    t_out = np.asarray(data["t-coordinate"])[:frames]
    u0 = np.stack([data[k][:, 0] for k in keys], axis=1)
    got, _ = integrate_walls(task, u0, t_out, box, rtol=1e-10)
    scale = max(float(np.abs(data[k]).max()) for k in keys)
    err = max(float(np.abs(got[:, :, j] - data[k][:, :frames]).max()) for j, k in enumerate(keys))
    # both spectral (analytic data) with Radau at rtol 1e-10 (the script: atol 1e-12): they
    # agree to ~1e-8 of the field's size; 1e-6 leaves room for the reference's own error
    # (recorded by the script as ~1e-9) and fails on any wrong sign, axis or wall condition
    assert err < 1e-6 * scale, (name, err, scale)


# ---- node grids and the CLI ---------------------------------------------------------------------

def test_periodic_node_grids_store_the_end_node_once_and_match_the_exact_solution():
    task = load_task(example_path("advection_diffusion_nodes1d"))
    x = axis_points(0.0, 1.0, 17, "nodes")
    k = 2 * math.pi * 2
    u0 = np.cos(k * x)[None] + 0.5 * np.sin(2 * math.pi * x)[None]
    t_out = np.linspace(0.0, 1.0, 5)
    out = simulate_task(task, {"u": u0}, t_out)["u"]
    a, D = task.parameters["a"], task.parameters["D"]
    exact = [np.exp(-D * k**2 * t) * np.cos(k * (x - a * t))
             + 0.5 * np.exp(-D * (2 * math.pi) ** 2 * t) * np.sin(2 * math.pi * (x - a * t))
             for t in t_out]
    # modes 1 and 2 on 16 distinct nodes (oversampled 4x): spectral, DOP853 rtol 1e-12
    assert np.abs(out[0] - np.array(exact)).max() < 1e-9
    assert np.array_equal(out[0, 1:, 0], out[0, 1:, -1])  # x = 0 and x = 1: one point
    assert np.array_equal(out[0, 0], u0[0])  # frame 0 is the input as given


def test_data_generate_cli_makes_a_2d_walled_example(tmp_path, capsys):
    # the shipped example with initial data of 2 modes per axis (a degree-24 grid: quicker)
    spec = yaml.safe_load(example_path("heat_dirichlet2d").read_text())
    spec["generator"] = {"modes": 2}
    spec["data"].pop("dev", None)
    spec["data"].pop("test", None)
    task_file = tmp_path / "heat_dirichlet2d.yaml"
    task_file.write_text(yaml.safe_dump(spec))
    path = tmp_path / "heat.hdf5"
    # no reference-error estimate (a finer run of the sample; tests/data_generate_generic/
    # test_reference_error.py covers it): the walls and the grid are what this checks
    rc = main(["data", "generate", str(task_file), "--samples", "1", "--seed", "5", "--nx", "13",
               "--check-samples", "0", "--out", str(path)])
    assert rc in (0, None), capsys.readouterr()
    with h5py.File(path, "r") as h5:
        u = h5["tensor"][...]
        assert u.shape == (1, 11, 13, 13) and np.all(np.isfinite(u))
        assert "Chebyshev" in str(h5.attrs.get("scheme_name", ""))
        x = h5["x-coordinate"][...]
        assert x[0] == 0.0 and x[-1] == 1.0  # the task's node grid
    # the walls carry the task's Dirichlet data at every stored time (float32 storage)
    t = np.linspace(0.0, 0.5, 11)[:, None]
    wall = t * 0 + 4 * 0.05 * t + x[None] ** 2 + np.exp(-8 * 0.05 * t) * np.cos(2 * x[None]) \
        * math.cos(0.5)
    assert np.abs(u[:, :, :, 0] - wall).max() < 1e-5
    assert not (tmp_path / "heat.hdf5.partial").exists()


def test_wall_values_of_a_batch_are_those_of_each_state():
    """Radau's Jacobian columns are filled as one batch [K, n_u, *shape] (integrate_walls'
    vectorized right-hand side): each state gets exactly the wall values it gets alone, with
    time-dependent Dirichlet data and Robin and Neumann walls in both directions. Tolerance:
    the same 2x2 solves per wall line in both paths, so agreement to a few ulps of the values
    (O(1) here); 1e-13 leaves a margin of ~100 ulps for a BLAS that sums in another order."""
    task = make_task(["dt(u) - 0.02*(dx(u, 2) + dy(u, 2))"], ["u"], space=("x", "y"),
                     boundary="x = 0: dx(u) = 0; x = 1: dx(u) + 2*u = sin(t); y = 0: u = t; "
                              "y = 1: dn(u) = 0")
    box = make_box(task, 9, 12)
    bc = WallConditions(task, ["u"])
    batch = np.random.default_rng(0).uniform(-1.0, 1.0, (5, 1) + box.shape)
    alone = batch.copy()
    for u in alone:
        bc.fill(u, 0.3, box)
    bc.fill(batch, 0.3, box)
    assert np.abs(batch - alone).max() < 1e-13
    assert np.abs(batch[:, 0, 1:-1, 0] - 0.3).max() < 1e-13  # the Dirichlet side y = 0: u = t
