"""``generator.ranges`` between walls: the initial data satisfy every kind of boundary condition
at t0 and stay in the requested range, for many seeds; a range the conditions contradict is an
error that says so. (Issue 20: with walls the ranges used to be ignored, [-0.8, 0.8] gave
[-7.26, 5.32].)"""

from __future__ import annotations

import numpy as np
import pytest

from generic_tasks import make_task
from pdesharp.cli import main
from pdesharp.data.generate.generic_bounded import ChebyshevGrid, _Boundary, wall_initial_data
from pdesharp.data.generate.generic_bounded_ic import IncompatibleRange

NX = 40
POINTS = (np.arange(NX) + 0.5) / NX

# (boundary, range): Dirichlet (constant, time-dependent), Neumann (zero, non-zero), Robin
# (homogeneous, with data), mixed, one side without a condition (outflow), on [0, 1] and on a
# shifted, longer interval
KINDS = [
    ("dirichlet: u = 0", (-0.8, 0.8)),
    ("x = lo: u = 1 + sin(2*pi*t)/2; x = hi: dx(u) = 0", (0.5, 1.5)),
    ("neumann: dx(u) = 0", (-0.8, 0.8)),
    ("x = lo: dx(u) = 0.5; x = hi: dx(u) = -0.5", (0.0, 1.0)),
    ("robin: dn(u) + 2*u = 0", (-0.8, 0.8)),
    ("x = lo: dx(u) = 0; x = hi: dx(u) + h*u = h", (0.1, 0.9)),
    ("x = lo: u = 0.2", (0.1, 0.9)),
    ("x = lo: u - dx(u) = 1; x = hi: u = 0.3", (0.0, 2.0)),
]


def _data(boundary, rng, seed, *, domain=(0.0, 1.0), t0=0.25, unknowns=("u",)):
    task = make_task(["dt(u) - 0.1*dx(u, 2)"], list(unknowns), {"h": 1.0}, boundary=boundary,
                     domain={"x": list(domain)}, time_span=(t0, t0 + 1.0),
                     generator={"modes": 4, "ranges": {"u": list(rng)} if rng else {}})
    lo, hi = domain
    grid = ChebyshevGrid(lo, hi, 64)
    points = lo + POINTS * (hi - lo)
    fields = wall_initial_data(task, ["u"], (), grid, points, 6, seed)
    return task, grid, points, fields["u"]


@pytest.mark.parametrize("boundary,rng", KINDS)
@pytest.mark.parametrize("domain", [(0.0, 1.0), (-2.0, 3.0)])
def test_initial_data_meet_the_walls_and_stay_in_range(boundary, rng, domain):
    for seed in (0, 1, 3, 7):
        task, grid, points, (nodes, at_points) = _data(boundary, rng, seed, domain=domain)
        span = rng[1] - rng[0]
        # F's extrema are measured on a 32-points-per-mode grid: within 0.5 % of the span
        for values in (nodes, at_points):
            assert values.min() >= rng[0] - 0.005 * span and values.max() <= rng[1] + 0.005 * span
        bc = _Boundary(task, ["u"])
        du = nodes @ grid.D.T
        t0 = task.time_span[0]
        for side, end in ((0, 0), (1, -1)):
            cond = bc.conds[0][side]
            if cond is None:
                continue
            a, b, g = cond
            # the Chebyshev derivative of a degree-64 polynomial part: round-off 1e-9
            assert np.abs(a * nodes[:, end] + b * du[:, end] - float(g(t0))).max() < 1e-8
        # the same function at the collocation points and at the output points
        P = grid.interpolation(points)
        assert np.abs(nodes @ P.T - at_points).max() < 1e-6


def test_without_a_range_the_default_scale_is_kept_between_walls():
    # max |u| = 1 for the random function; the wall profiles keep u between it and the walls'
    # values (the old cubic correction reached -1.92 on heat_dirichlet1d)
    for seed in range(6):
        _, _, _, (nodes, at_points) = _data("dirichlet: u = 0", None, seed)
        assert np.abs(nodes).max() <= 1.005 and np.abs(at_points).max() <= 1.005


def test_a_side_without_a_condition_keeps_the_random_function():
    _, _, _, (nodes, _) = _data("x = 0: u = 0.2", (0.1, 0.9), 0)
    _, _, _, (free, _) = _data("x = 0: u = 0.2; x = 1: u = 0.5", (0.1, 0.9), 0)
    assert np.allclose(nodes[:, 0], 0.2)
    assert not np.allclose(nodes[:, -1], 0.5) and np.allclose(free[:, -1], 0.5)


def test_a_wall_value_outside_the_range_is_a_clear_error():
    with pytest.raises(IncompatibleRange, match=r"boundary value 2 .* outside generator.ranges"):
        _data("x = 0: u = 2; x = 1: u = 0.5", (0.0, 1.0), 0)
    with pytest.raises(IncompatibleRange, match="needs a slope at the wall"):
        _data("neumann: dx(u) = 50", (0.0, 1.0), 0)


def test_the_cli_refuses_a_contradictory_range_and_writes_nothing(tmp_path, capsys):
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\nequation: dt(u) = 0.1*dx(u, 2)\ndomain: {x: [0, 1]}\n"
                    "boundary: 'x = 0: u = 2; x = 1: u = 0'\ntime_span: [0, 1]\n"
                    "generator: {ranges: {u: [0, 1]}}\n")
    with pytest.raises(SystemExit) as exc:
        main(["data", "generate", str(spec), "--samples", "1", "--seed", "0", "--nx", "16",
              "--out", str(tmp_path / "bad.hdf5")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "u at x = 0 (low wall): the boundary value 2" in err and "widen the range" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]
