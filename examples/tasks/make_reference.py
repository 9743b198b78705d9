"""Reference data for the example tasks, by methods independent of pdesharp's built-in solvers.

Four kinds, chosen per example (``KINDS``):

* ``dop853``: the PDE's right-hand side written out by hand below, Fourier pseudo-spectral
  differentiation (2/3 dealiasing) on a grid ``FINE`` times finer than the output grid, SciPy's
  adaptive DOP853 with tight tolerances. ``FINE`` is odd, so every output cell centre is a fine
  grid point and the output is a plain sample (no interpolation).
* ``exact``: closed-form solutions (d'Alembert, Riemann invariants, Fourier and sine series,
  Duhamel's integral for a forcing), written out below with NumPy.
* ``manufactured``: steady problems: a random exact solution satisfying the boundary conditions
  is drawn and the forcing f computed from it symbolically (SymPy), so ``sol`` is exact; the
  steady examples whose forcing is a formula (``reference_steady.py``) have one closed-form
  solution, checked against the formulas their YAML states, at N = 50 (dev) and 64 (test).
* the walled and node-grid examples of issue 19 (``reference_walls.py``): closed forms,
  Chebyshev collocation with Radau IIA, or 2D Fourier pseudo-spectral with DOP853.
* the examples of the equation forms users type and of shocks (``reference_terms.py``): closed
  forms (solitons, Cole-Hopf, breathers, sine series), exact Riemann solutions averaged over the
  cells, Fourier differentiation matrices with Radau IIA.
* the dispersive and nonlinear examples between walls of issue 26 and APEBench-style point
  values on nodes (``reference_waves.py``): Chebyshev collocation with Radau IIA, Fourier on a
  finer grid with DOP853.
* the examples with constraints of issue 26 (``reference_constraints.py``): hand-written
  Fourier right-hand sides (vorticity form; velocity and pressure recovered from it; Neumann
  walls by even extension) with DOP853.
* ``generator``: pdesharp's generic data generator (``pdesharp data generate``: Fourier spectral
  on a 4x grid with DOP853/ETDRK4, or Chebyshev collocation with Radau for walls), which shares
  no code with the built-in analyst's solver catalogue.

Files use the PDEBench/CodePDE layout (``tensor`` or the fields' keys, ``t-coordinate``,
``x-coordinate``; ``f``/``sol`` for steady tasks), float64.

    python examples/tasks/make_reference.py buckley_leverett1d --out DATA_DIR [--n 128 --samples 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import h5py
import numpy as np
from scipy.integrate import solve_ivp

FINE = 5


def _ddx(u, k, keep, order=1):
    return np.fft.irfft((1j * k) ** order * np.fft.rfft(u) * keep, n=u.size)


def _spectral(nf, length):
    k = 2 * np.pi * np.fft.rfftfreq(nf, d=length / nf)
    keep = (np.arange(k.size) <= nf // 3).astype(float)
    return k, keep


def _modes(rng, x, length, n_modes, amp):
    out = np.zeros_like(x)
    for m in range(1, n_modes + 1):
        out += rng.uniform(0, amp) * np.sin(2 * np.pi * m * x / length + rng.uniform(0, 2 * np.pi))
    return out


# ---- the example PDEs, right-hand sides written out by hand ----------------------------------

def buckley_leverett(prm, k, keep):
    M, nu = prm["M"], prm["nu"]

    def rhs(t, u):
        f = u**2 / (u**2 + M * (1 - u) ** 2)
        return -_ddx(f, k, keep) + nu * _ddx(u, k, keep, 2)
    return rhs


def cubic_damped(prm, k, keep):
    nu, kappa = prm["nu"], prm["kappa"]

    def rhs(t, u):
        return -_ddx(u**3 / 3, k, keep) + nu * _ddx(u, k, keep, 2) - kappa * u
    return rhs


def advection_diffusion(prm, k, keep):
    a, D = prm["a"], prm["D"]

    def rhs(t, u):
        return -a * _ddx(u, k, keep) + D * _ddx(u, k, keep, 2)
    return rhs


def isothermal_euler(prm, k, keep):
    c, mu = prm["c"], prm["mu"]

    def rhs(t, y):
        rho, m = np.split(y, 2)
        v = m / rho
        drho = -_ddx(m, k, keep)
        dm = -_ddx(m * v + c**2 * rho, k, keep) + mu * _ddx(v, k, keep, 2)
        return np.concatenate([drho, dm])
    return rhs


def forced_burgers(prm, k, keep, x):
    nu, A, B = prm["nu"], prm["A"], prm["B"]
    fx = A * np.sin(2 * np.pi * x)

    def rhs(t, u):
        return -_ddx(u**2 / 2, k, keep) + nu * _ddx(u, k, keep, 2) + fx + B * np.sin(2 * np.pi * t)
    return rhs


EXAMPLES = {
    # name: (rhs factory, parameters, length, t_end, frames, fields)
    "buckley_leverett1d": (buckley_leverett, {"M": 0.5, "nu": 0.02}, 1.0, 0.5, 26, ["tensor"]),
    "cubic_damped1d": (cubic_damped, {"nu": 0.01, "kappa": 0.5}, 1.0, 0.5, 26, ["tensor"]),
    "advection_diffusion1d": (advection_diffusion, {"a": 1.0, "D": 0.005}, 2.0, 1.0, 21, ["tensor"]),
    "isothermal_euler1d": (isothermal_euler, {"c": 1.0, "mu": 0.01}, 1.0, 0.5, 26, ["density", "Vx"]),
    "forced_burgers1d": (forced_burgers, {"nu": 0.02, "A": 0.5, "B": 0.3}, 1.0, 0.5, 26, ["tensor"]),
}


def initial(name, rng, x, length):
    if name == "buckley_leverett1d":
        return [0.5 + _modes(rng, x, length, 3, 0.15)]
    if name == "isothermal_euler1d":
        return [1.0 + _modes(rng, x, length, 2, 0.1), _modes(rng, x, length, 1, 0.1)]
    return [rng.uniform(-0.2, 0.2) + _modes(rng, x, length, 3, 0.3)]


def generate(name: str, n: int = 128, samples: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    factory, prm, length, t_end, frames, keys = EXAMPLES[name]
    nf = n * FINE
    xf = (np.arange(nf) + 0.5) * length / nf
    pick = np.arange(n) * FINE + FINE // 2  # fine points that coincide with output centres
    k, keep = _spectral(nf, length)
    rhs = factory(prm, k, keep, xf) if name == "forced_burgers1d" else factory(prm, k, keep)
    t = np.linspace(0.0, t_end, frames)
    rng = np.random.default_rng(seed)
    out = {key: np.empty((samples, frames, n)) for key in keys}
    for s in range(samples):
        u0 = initial(name, rng, xf, length)
        if name == "isothermal_euler1d":
            y0 = np.concatenate([u0[0], u0[0] * u0[1]])
        else:
            y0 = u0[0]
        sol = solve_ivp(rhs, (0.0, t_end), y0, method="DOP853", t_eval=t, rtol=1e-10, atol=1e-12)
        if not sol.success:
            raise RuntimeError(f"{name}: reference integration failed: {sol.message}")
        if name == "isothermal_euler1d":
            rho, m = np.split(sol.y, 2)
            fields = [rho, m / rho]
        else:
            fields = [sol.y]
        for key, f in zip(keys, fields):
            out[key][s] = f[pick].T
    out["t-coordinate"] = t
    out["x-coordinate"] = (np.arange(n) + 0.5) * length / n
    return out


def write(path: Path, arrays: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as h5:
        method = arrays.pop("_method", f"Fourier pseudo-spectral on a {FINE}x finer grid, 2/3"
                                      " dealiasing, SciPy DOP853 rtol 1e-10")
        check = arrays.pop("_self_check", None)
        if check is not None:  # the collocation reference's own error estimate
            h5.attrs["self_check"] = check
        for key, arr in arrays.items():
            h5.create_dataset(key, data=arr)
        h5.attrs["method"] = method


def main() -> None:
    from reference_kinds import KINDS, STEADY, make  # exact, manufactured, generator references
    from reference_terms import TERMS_KINDS  # the forms users type, shocks (issue 19)
    from reference_walls import WALL_KINDS  # walled and node-grid examples (issue 19)
    from reference_constraints import CONSTRAINT_KINDS  # constraints (issue 26)
    from reference_waves import WAVE_KINDS  # dispersive problems between walls (issue 26)

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="+", choices=sorted(EXAMPLES) + sorted(KINDS) + sorted(STEADY)
                    + sorted(WALL_KINDS) + sorted(TERMS_KINDS) + sorted(CONSTRAINT_KINDS)
                    + sorted(WAVE_KINDS))
    ap.add_argument("--out", required=True, help="data directory (files go to <out>/<name>/dev.hdf5)")
    ap.add_argument("--n", type=int, default=None, help="grid points per axis (default per example)")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--splits", nargs="+", default=["dev", "test"], choices=["dev", "test"])
    args = ap.parse_args()
    for name in args.names:
        for split, seed in (("dev", 0), ("test", 1)):
            if split not in args.splits:
                continue
            if name in EXAMPLES:
                arrays = generate(name, args.n or 128, args.samples, seed)
            elif name in {**WALL_KINDS, **TERMS_KINDS, **CONSTRAINT_KINDS, **WAVE_KINDS}:
                _, fn, default_n = {**WALL_KINDS, **TERMS_KINDS, **CONSTRAINT_KINDS,
                                    **WAVE_KINDS}[name]
                arrays = fn(args.n or default_n, args.samples, seed)
            else:
                arrays = make(name, args.n, args.samples, seed)
            write(Path(args.out) / name / f"{split}.hdf5", arrays)
            print(f"wrote {Path(args.out) / name / f'{split}.hdf5'}")


if __name__ == "__main__":
    main()
