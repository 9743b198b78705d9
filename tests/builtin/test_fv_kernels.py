"""The finite-volume family's compiled (Numba) path against its NumPy path, same design.

Both paths evaluate the same formulas in the same order, so they must agree to round-off: the
tolerance, 1e-10 relative to the solution's size, leaves room for the different linear algebra
of the implicit viscous step (a banded LU with Woodbury corners in NumPy, a block Thomas
elimination when compiled) amplified over a few hundred steps, and is still far below any
discretisation error (which is 1e-4 or more on these 48-cell grids). Grids are small and each
rendered solver is compiled once: Numba's compilation (~2-3 s per solver) is most of the time.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
from builtin_helpers import run_solver
from test_families import make

from pdesharp.builtin.author import problem, render
from pdesharp.builtin.families import family
from pdesharp.builtin.families.fv_kernels import kernel_for
from pdesharp.task import load_task

N = 48
X = (np.arange(N) + 0.5) / N
REL = 1e-10


def _solve(code: str, task, u0: dict, t):
    """Run a rendered solver in-process; returns (outputs, the kernel it actually used, its
    globals)."""
    ns: dict = {}
    ref = {task.data.fields[f]: v[:, None] for f, v in u0.items()}
    pred, _ = run_solver(code, task, ref, t, ns=ns)
    return pred, ns["KERNEL_USED"], ns


def _both(task, design, u0, t):
    p = problem(task)
    got = {k: _solve(render(task, design.with_(KERNEL=k), p), task, u0, t)
           for k in ("numba", "numpy")}
    assert got["numba"][1] == "numba" and got["numpy"][1] == "numpy"
    return got["numba"][0], got["numpy"][0], got["numba"][2]


def test_compiled_scalar_law_with_flux_viscosity_and_a_source_in_x_and_t():
    # nonlinear flux (MUSCL van Leer + HLL), explicit viscous terms, a source depending on x and
    # t, RK4: every branch of the compiled right-hand side and the step rule with all three bounds
    task = make("dt(u) + dx(u**2/2) - nu*dx(u, 2) - r*sin(2*pi*x)*(1 + t)*u", {"nu": 0.01, "r": 1.5},
                time_span=(0.0, 0.2), frames=5)
    d = family("fv").design(RECONSTRUCTION="muscl", LIMITER="van_leer", RIEMANN="hll",
                            INTEGRATOR="rk4", CFL=0.4)
    u0 = np.stack([np.sin(2 * np.pi * X) + 0.5, 0.3 + np.cos(4 * np.pi * X) ** 2])
    nb, npy, ns = _both(task, d, {"u": u0}, np.linspace(0.0, 0.2, 5))
    assert np.all(np.isfinite(npy)) and np.abs(npy[:, -1] - npy[:, 0]).max() > 0.05  # it moved
    assert np.abs(nb - npy).max() <= REL * np.abs(npy).max()
    # a state that is not finite is reported as NaN by the compiled path too, not an exception
    bad = u0.copy()
    bad[0, 3] = np.nan
    out = ns["solver"](bad, np.linspace(0.0, 0.2, 5), 0.01, 1.5)
    assert ns["KERNEL_USED"] == "numba" and np.all(np.isnan(out[:, 1:]))


def test_compiled_euler_system_with_the_implicit_viscous_step():
    # compressible Navier-Stokes (3 unknowns, parameters in the conserved map): WENO5 + Rusanov
    # + SSP-RK3 with the viscous part split off and solved by TR-BDF2, on a 2x internal grid
    task = load_task("cns1d")
    d = family("fv").design(RECONSTRUCTION="weno5", RIEMANN="rusanov", INTEGRATOR="ssprk3",
                            CFL=0.4, VISCOUS="trbdf2", REFINE=2)
    x = np.linspace(-1.0, 1.0, N, endpoint=False) + 1.0 / N
    rho = np.stack([1.0 + 0.2 * np.sin(np.pi * x), 1.0 + 0.1 * np.cos(np.pi * x)])
    u0 = {"rho": rho, "v": 0.3 * np.sin(np.pi * x) * np.ones((2, 1)),
          "p": 1.0 + 0.1 * np.cos(2 * np.pi * x) * np.ones((2, 1))}
    t = np.linspace(0.0, 0.05, 3)
    nb, npy, _ = _both(task, d, u0, t)
    assert np.all(np.isfinite(npy)) and np.abs(npy[:, -1] - npy[:, 0]).max() > 1e-3
    assert np.abs(nb - npy).max() <= REL * np.abs(npy).max()


def test_numba_solver_falls_back_to_numpy_where_numba_cannot_be_imported(tmp_path):
    """A solver rendered with KERNEL = "numba" runs where `import numba` fails (a
    sys.modules['numba'] = None shim) and gives the NumPy path's result exactly."""
    task = make("dt(u) + dx(u**2/2) - nu*dx(u, 2)", {"nu": 0.02}, time_span=(0.0, 0.1), frames=3)
    d = family("fv").design(RECONSTRUCTION="muscl", LIMITER="mc", INTEGRATOR="rk2mid")
    p = problem(task)
    for k in ("numba", "numpy"):
        (tmp_path / f"{k}.py").write_text(render(task, d.with_(KERNEL=k), p))
    script = textwrap.dedent(f"""
        import sys
        sys.modules["numba"] = None  # import numba raises ImportError
        import numpy as np
        out = {{}}
        for k in ("numba", "numpy"):
            ns = {{}}
            exec(open(r"{tmp_path}/" + k + ".py").read(), ns)
            u0 = np.sin(2 * np.pi * (np.arange({N}) + 0.5) / {N})[None] + 0.5
            out[k] = ns["solver"](u0, np.linspace(0.0, 0.1, 3), 0.02)
            assert ns["USE_NUMBA"] is False and ns["KERNEL_USED"] == "numpy", k
        assert np.array_equal(out["numba"], out["numpy"])
        assert np.abs(out["numpy"][:, -1] - out["numpy"][:, 0]).max() > 1e-3
        print("fallback ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "fallback ok" in proc.stdout


def test_kernel_axis_only_where_the_compiled_path_exists():
    fam = family("fv")
    periodic = make("dt(u) + dx(u**2/2)", {}, time_span=(0.0, 1.0))
    walls = make("dt(u) + dx(u**2/2)", {}, "dirichlet: u = 0")
    square = make("dt(u) + dx(u**2/2) + dy(u**2/2)", {}, space=("x", "y"))
    assert "KERNEL" in fam.relevant(problem(periodic))
    for task in (walls, square):  # NumPy only: the solver does not even import numba
        code = render(task, fam.design(), problem(task))
        assert 'KERNEL = "numpy"  # fixed for this problem' in code
        assert "import numba" not in code and "USE_NUMBA = False" in code
    # where there is a compiled path, Genesis leaves the choice to the solver's first call
    assert kernel_for(problem(periodic)) == "auto"


def test_auto_kernel_compiles_only_when_the_first_calls_work_pays_for_it():
    """KERNEL = "auto": the solver predicts its work at the first call (cells x batch x stages
    to the last output time) and imports/compiles numba only when that saves more than the
    compilation costs. Small work: NumPy, numba never imported (checked in a fresh interpreter,
    where nothing else imported it). Large work (a long time span): the compiled path, and its
    result agrees with the NumPy path's to round-off (REL)."""
    task = make("dt(u) + dx(u**2/2)", {}, time_span=(0.0, 0.1), frames=3)
    code = render(task, family("fv").design(KERNEL="auto", CFL=0.4), problem(task))
    assert 'KERNEL = "auto"' in code
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        ns = {{}}
        exec(compile({code!r}, "solver.py", "exec"), ns)
        x = (np.arange({N}) + 0.5) / {N}
        u0 = np.stack([np.sin(2 * np.pi * x) + 0.5] * 2)
        out = ns["solver"](u0, np.linspace(0.0, 0.1, 3))
        assert np.all(np.isfinite(out)) and np.abs(out[:, -1] - out[:, 0]).max() > 1e-3
        # ~30 steps x 2 stages x 96 cells: far below a compilation's worth
        assert ns["KERNEL_USED"] == "numpy" and ns["numba"] is None, ns["KERNEL_USED"]
        assert "numba" not in sys.modules
        print("small ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "small ok" in proc.stdout

    # the same solver, with a batch and a horizon whose predicted work (~4e9 cell-stages x 150 ns)
    # exceeds the compilation: the decision alone is asked (running it would take minutes)
    ns: dict = {}
    exec(compile(code, "solver.py", "exec"), ns)
    u0 = np.tile(np.sin(2 * np.pi * X) + 0.5, (2000, 1))
    state, grid = ns["_init_state"]([u0], {})
    grid["t_end"] = 100.0
    assert ns["_auto_kernel"](state, 0.0, grid, {}) == "numba"
    assert ns["KERNEL_USED"] == "numba" and ns["USE_NUMBA"] is True
    # every kernel is now a numba dispatcher, and the compiled path runs and agrees with NumPy
    assert all(hasattr(ns[name], "py_func") for name in ns["_KERNELS"])
    u_small = np.stack([np.sin(2 * np.pi * X) + 0.5, 0.3 + np.cos(4 * np.pi * X) ** 2])
    t = np.linspace(0.0, 0.1, 3)
    compiled = ns["solver"](u_small, t)  # once on, the compiled path stays on
    numpy_path, used, _ = _solve(render(task, family("fv").design(KERNEL="numpy", CFL=0.4),
                                        problem(task)), task, {"u": u_small}, t)
    assert used == "numpy" and np.abs(numpy_path[:, -1] - numpy_path[:, 0]).max() > 1e-3
    compiled = np.asarray(compiled).reshape(numpy_path.shape)
    assert np.abs(compiled - numpy_path).max() <= REL * np.abs(numpy_path).max()
