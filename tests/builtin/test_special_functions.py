"""Equations with special functions and Min/Max: the generated solvers evaluate them elementwise
(scipy.special ufuncs, nested np.maximum), a compiled design whose kernels Numba cannot type
falls back to its NumPy path, and a function with no NumPy/SciPy equivalent is refused by name
before any design is written."""

from __future__ import annotations

import numpy as np
import pytest
from builtin_helpers import run_solver
from scipy.integrate import solve_ivp
from scipy.special import erf
from test_families import make

from pdesharp.builtin.author import problem, render
from pdesharp.builtin.families import family
from pdesharp.builtin.structure import UnsupportedTask, structure

N = 64
X = (np.arange(N) + 0.5) / N
NU = 0.02
EQUATION = "dt(u) - nu*dx(u, 2) - erf(u) + Max(u, 0)**2 - sin(2*pi*x)/10"


def reference(u0, t):
    """Method of lines written here, independently of the catalogue: the exact Fourier
    second derivative on the periodic grid, the source with scipy's erf, DOP853 at rtol 1e-11."""
    k = 2 * np.pi * np.fft.rfftfreq(N, 1.0 / N)

    def rhs(_, u):
        uxx = np.fft.irfft(-(k ** 2) * np.fft.rfft(u), n=N)
        return NU * uxx + erf(u) - np.maximum(u, 0.0) ** 2 + np.sin(2 * np.pi * X) / 10

    sol = solve_ivp(rhs, (t[0], t[-1]), u0, t_eval=t, method="DOP853", rtol=1e-11, atol=1e-13)
    return sol.y.T


def test_special_function_and_max_source_against_an_independent_solution():
    task = make(EQUATION, {"nu": NU}, time_span=(0.0, 0.25), frames=6)
    assert "np.pi" in render(task, family("fv").design())
    u0 = 0.4 * np.sin(2 * np.pi * X) + 0.1 * np.cos(4 * np.pi * X)
    t = np.linspace(0.0, 0.25, 6)
    d = family("split").design(SYMBOL="spectral", SPLIT_DT=0.0025)
    code = render(task, d)
    assert "import scipy.special" in code and "scipy.special.erf(" in code
    assert "functools" not in code and "math." not in code and "scipy.constants" not in code
    ref = np.zeros((1, 6, N))
    ref[0, 0] = u0
    pred, _ = run_solver(code, task, {"tensor": ref}, t)
    exact = reference(u0, t)
    # spectral diffusion is exact; the error left is Strang's O(dt^2) at dt = 2.5e-3 and the
    # RK4 sub-steps of the source (no closed form): well below 1e-5 of the solution's size
    assert np.all(np.isfinite(pred))
    assert np.abs(exact[-1] - exact[0]).max() > 0.02  # the source did something
    assert np.abs(pred[0, :, :, 0] - exact).max() < 1e-5 * np.abs(exact).max()


def test_a_compiled_design_numba_cannot_type_runs_its_numpy_path(capsys):
    """scipy.special.erf has no Numba typing: the solver says so, sets KERNEL_USED = "numpy"
    and returns exactly what the NumPy rendering of the same design returns."""
    task = make("dt(u) + dx(u**2/2) - nu*dx(u, 2) - erf(u)", {"nu": NU}, time_span=(0.0, 0.1),
                frames=3)
    d = family("fv").design(RECONSTRUCTION="muscl", LIMITER="mc", INTEGRATOR="rk2mid")
    p = problem(task)
    u0 = 0.5 + 0.3 * np.sin(2 * np.pi * X)
    t = np.linspace(0.0, 0.1, 3)
    ref = np.zeros((1, 3, N))
    ref[0, 0] = u0
    out = {}
    for k in ("numba", "numpy"):
        ns: dict = {}
        out[k], _ = run_solver(render(task, d.with_(KERNEL=k), p), task, {"tensor": ref}, t,
                               ns=ns)
        assert ns["KERNEL_USED"] == "numpy", k
    assert "compiled kernels unavailable, NumPy path instead" in capsys.readouterr().out
    assert np.array_equal(out["numba"], out["numpy"])
    assert np.abs(out["numpy"][0, -1] - out["numpy"][0, 0]).max() > 1e-3


@pytest.mark.parametrize("term,name", [("zeta(2 + u**2)", "zeta"),
                                       ("dirichlet_eta(2 + u**2)", "dirichlet_eta")])
def test_a_function_without_a_numpy_equivalent_is_refused_by_name(term, name):
    task = make(f"dt(u) - nu*dx(u, 2) - {term}", {"nu": NU})
    with pytest.raises(UnsupportedTask, match=rf"the function {name}\(\.\.\.\) in the equation"):
        structure(task)


def test_the_data_generator_evaluates_special_functions_on_arrays():
    """`pdesharp data generate` for a user task with erf and Max (the generic generator's
    lambdify used math.erf, which takes no arrays: the request was rejected)."""
    from pdesharp.data.generate.generic import simulate_task

    task = make(EQUATION, {"nu": NU}, time_span=(0.0, 0.25), frames=6)
    u0 = 0.4 * np.sin(2 * np.pi * X) + 0.1 * np.cos(4 * np.pi * X)
    t = np.linspace(0.0, 0.25, 6)
    got = simulate_task(task, {"u": u0[None]}, t)["u"][0]
    exact = reference(u0, t)
    # both are spectral method-of-lines solutions on the same grid at tight tolerances; the
    # generator's own dealiasing/integrator choices leave differences far below 1e-6
    assert np.abs(got - exact).max() < 1e-6 * np.abs(exact).max()
