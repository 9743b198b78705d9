"""The generator of systems with constraints (pdesharp.data.generate.constrained) against exact
solutions: incompressible Taylor-Green flow (projection, periodic), forced vorticity in a box
with free-slip walls (elliptic constraint, sine series) and forced Keller-Segel between Neumann
walls (elliptic constraint, cosine series). The forcings are computed here with SymPy from the
chosen solutions, so the references are closed forms, not output of the code under test."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from pdesharp.data.generate.constrained import (generate_constrained, law_of,
                                                simulate_constrained)
from pdesharp.data.generate.generic_symbolic import UnsupportedTask

from generic_tasks import make_task

x, y, t = sp.symbols("x y t", real=True)
# Each reference is a band-limited closed form: the series is exact in space, DOP853 at rtol
# 1e-12 leaves ~1e-10 of the fields' size; 1e-8 of it is a margin for round-off in the
# per-mode solves (condition ~ k_max^2 of the Laplacian on these grids, times eps)
TOL = 1e-8


def _grid(n):
    c = (np.arange(n) + 0.5) / n
    return np.meshgrid(c, c, indexing="ij")


def test_taylor_green_projection_is_exact():
    nu = 0.01
    task = make_task(["dt(u) + u*dx(u) + v*dy(u) = -dx(p) + nu*(dx(u, 2) + dy(u, 2))",
                      "dt(v) + u*dx(v) + v*dy(v) = -dy(p) + nu*(dx(v, 2) + dy(v, 2))",
                      "dx(u) + dy(v) = 0"], ["u", "v", "p"], {"nu": nu}, space=("x", "y"))
    times = np.linspace(0.0, 0.5, 3)
    out = simulate_constrained(task, {
        "u": lambda X, Y: np.sin(2 * np.pi * X) * np.cos(2 * np.pi * Y),
        "v": lambda X, Y: -np.cos(2 * np.pi * X) * np.sin(2 * np.pi * Y)}, times, 16,
        oversample=2)
    X, Y = _grid(16)
    for k, s in enumerate(times):
        F = np.exp(-8 * np.pi**2 * nu * s)
        assert np.abs(out["u"][0, k] - np.sin(2 * np.pi * X) * np.cos(2 * np.pi * Y) * F).max() < TOL
        p = (np.cos(4 * np.pi * X) + np.cos(4 * np.pi * Y)) / 4 * F**2  # zero mean
        assert np.abs(out["p"][0, k] - p).max() < TOL


def _forced(w, psi, nu):
    """The forcing that makes (w, psi) solve dt(w) + J(psi, w) = nu*lap(w) + f."""
    J = sp.diff(psi, y) * sp.diff(w, x) - sp.diff(psi, x) * sp.diff(w, y)
    return sp.simplify(sp.diff(w, t) + J - nu * (sp.diff(w, x, 2) + sp.diff(w, y, 2)))


def test_forced_vorticity_between_free_slip_walls_is_exact():
    nu = 0.01
    modes = [(1, 2, 1.0), (3, 1, 0.5)]  # different |k|: the Jacobian does not vanish
    w = sp.exp(-t) * sum(a * sp.sin(m * sp.pi * x) * sp.sin(n * sp.pi * y) for m, n, a in modes)
    psi = sp.exp(-t) * sum(a * sp.sin(m * sp.pi * x) * sp.sin(n * sp.pi * y)
                           / ((m**2 + n**2) * sp.pi**2) for m, n, a in modes)
    f = _forced(w, psi, nu)
    task = make_task([f"dt(w) + dy(psi)*dx(w) - dx(psi)*dy(w) = nu*(dx(w,2)+dy(w,2)) + {f}",
                      "dx(psi,2) + dy(psi,2) = -w"], ["w", "psi"], {"nu": nu},
                     space=("x", "y"), boundary="dirichlet: w = 0, psi = 0")
    assert law_of(task).parity[:2] == [("sin", "sin"), ("sin", "sin")]
    times = np.linspace(0.0, 0.4, 3)
    w0 = sp.lambdify((x, y), w.subs(t, 0), "numpy")
    out = simulate_constrained(task, {"w": w0}, times, 16, oversample=2)
    X, Y = _grid(16)
    for k, s in enumerate(times):
        assert np.abs(out["w"][0, k] - sp.lambdify((x, y), w.subs(t, s))(X, Y)).max() < TOL
        assert np.abs(out["psi"][0, k] - sp.lambdify((x, y), psi.subs(t, s))(X, Y)).max() < TOL


def test_forced_keller_segel_between_neumann_walls_is_exact():
    D, chi = 0.1, 1.0
    u = 1 + sp.exp(-t) * sp.cos(sp.pi * x) / 2
    c = 1 + sp.exp(-t) * sp.cos(sp.pi * x) / (2 * (1 + sp.pi**2))
    f = sp.simplify(sp.diff(u, t) - D * sp.diff(u, x, 2) + chi * sp.diff(u * sp.diff(c, x), x))
    task = make_task([f"dt(u) = D*dx(u, 2) - chi*dx(u*dx(c)) + {f}", "dx(c, 2) - c + u = 0"],
                     ["u", "c"], {"D": D, "chi": chi},
                     boundary="neumann: dx(u) = 0, dx(c) = 0")
    times = np.linspace(0.0, 0.5, 3)
    out = simulate_constrained(task, {"u": sp.lambdify(x, u.subs(t, 0))}, times, 32)
    xc = (np.arange(32) + 0.5) / 32
    for k, s in enumerate(times):
        assert np.abs(out["u"][0, k] - sp.lambdify(x, u.subs(t, s))(xc)).max() < TOL
        assert np.abs(out["c"][0, k] - sp.lambdify(x, c.subs(t, s))(xc)).max() < TOL


def test_random_draws_keep_the_constraint_and_the_walls():
    """Generated samples stay divergence-free (checked spectrally here: with oversample 1 the
    internal modes are those of the output grid, so the check is exact) and are scaled
    jointly (max |(u, v)| = 1 at t = 0)."""
    task = make_task(["dt(u) + u*dx(u) + v*dy(u) = -dx(p) + nu*(dx(u, 2) + dy(u, 2))",
                      "dt(v) + u*dx(v) + v*dy(v) = -dy(p) + nu*(dx(v, 2) + dy(v, 2))",
                      "dx(u) + dy(v) = 0"], ["u", "v", "p"], {"nu": 0.05}, space=("x", "y"),
                     n_frames=3, time_span=(0.0, 0.1))
    out = generate_constrained(task, 2, seed=3, nx=16, oversample=1)
    k = 2 * np.pi * np.fft.fftfreq(16, 1 / 16)
    div = (np.fft.ifft(1j * k[:, None] * np.fft.fft(out["u"], axis=2), axis=2)
           + np.fft.ifft(1j * k[None, :] * np.fft.fft(out["v"], axis=3), axis=3)).real
    assert np.abs(div).max() < 1e-9 * np.abs(out["u"]).max() * 16
    # the joint scale is measured on a 128-point reference grid per axis; the 16 output points
    # sample the 4-mode field more coarsely, so its maximum there is at most 1 and close to it
    top = max(np.abs(out["u"][:, 0]).max(), np.abs(out["v"][:, 0]).max())
    assert 0.9 < top <= 1.0 + 1e-9


def test_refusals_name_the_reason():
    # an explicit x breaks the odd extension across a Dirichlet wall
    task = make_task(["dt(w) = dx(w, 2) + x*dx(psi)", "dx(psi, 2) = -w"], ["w", "psi"],
                     boundary="dirichlet: w = 0, psi = 0")
    with pytest.raises(UnsupportedTask, match="odd/even extension"):
        law_of(task)
    # a Robin wall has no sine/cosine basis
    task = make_task(["dt(w) = dx(w, 2) + dx(psi)", "dx(psi, 2) = -w"], ["w", "psi"],
                     boundary="robin: dn(w) + w = 0; dirichlet: psi = 0")
    with pytest.raises(UnsupportedTask, match="homogeneous Dirichlet or Neumann"):
        law_of(task)
