"""3D boxes (issue 26, item 3): `pdesharp data generate` makes 3D data where the built-in
analyst solves them (periodic axes, homogeneous Dirichlet/Neumann walls: Fourier and
sine/cosine modes), checked against exact solutions; `tasks check` and `data generate` refuse
the same 3D tasks in one line."""

from __future__ import annotations

import numpy as np
import pytest

from pdesharp.builtin.support import support
from pdesharp.data.generate.constrained import simulate_constrained
from pdesharp.data.generate.generic import check_task, generate_task
from pdesharp.data.generate.generic_symbolic import UnsupportedTask

from generic_tasks import make_task

SPACE = ("x", "y", "z")
# band-limited exact solutions: the series is exact in space and the linear part exact in time
# (ETDRK4) or DOP853 at rtol 1e-12; 1e-9 is round-off of 3D FFTs (~N^3 eps summed) with margin
TOL = 1e-9


def _mesh(n):
    c = (np.arange(n) + 0.5) / n
    return np.meshgrid(c, c, c, indexing="ij")


@pytest.mark.parametrize("boundary,basis", [("periodic", np.cos), ("dirichlet: u = 0", np.sin)])
def test_3d_heat_is_exact(boundary, basis):
    nu = 0.05
    task = make_task(["dt(u) = nu*(dx(u, 2) + dy(u, 2) + dz(u, 2))"], ["u"], {"nu": nu},
                     space=SPACE, boundary=boundary)
    k = np.pi * (2 if basis is np.cos else 1)
    times = np.array([0.0, 0.2])
    out = simulate_constrained(
        task, {"u": lambda X, Y, Z: basis(k * X) * basis(k * Y) * basis(2 * k * Z)}, times, 8)
    X, Y, Z = _mesh(8)
    exact = basis(k * X) * basis(k * Y) * basis(2 * k * Z) * np.exp(-6 * nu * k**2 * 0.2)
    assert np.abs(out["u"][0, -1] - exact).max() < TOL


def test_3d_random_data_have_the_task_layout():
    task = make_task(["dt(u) + u*dx(u) = 0.05*(dx(u, 2) + dy(u, 2) + dz(u, 2))"], ["u"],
                     space=SPACE, n_frames=3, time_span=(0.0, 0.05))
    out = generate_task(task, 1, seed=2, nx=8)
    assert out["u"].shape == (1, 3, 8, 8, 8)
    assert {"x-coordinate", "y-coordinate", "z-coordinate", "t-coordinate"} <= set(out)
    # scaled to max |u| = 1 on a fixed reference grid (8 points per mode and axis: within a few
    # per cent); the 8^3 output points sample the field more coarsely, so only from below
    assert 0.5 < np.abs(out["u"][:, 0]).max() < 1.05


def test_3d_robin_walls_are_refused_by_both_commands():
    task = make_task(["dt(u) = dx(u, 2) + dy(u, 2) + dz(u, 2) + u*(1 - u)"], ["u"],
                     space=SPACE, boundary="robin: dn(u) + u = 0")
    got = support(task)
    assert not got.supported and "3D" in got.reason and "\n" not in got.reason
    with pytest.raises(UnsupportedTask, match="homogeneous Dirichlet or Neumann"):
        check_task(task)
