"""Bench: accuracy and cost of the generic spectral generator against exact solutions.

Viscous Burgers (Cole–Hopf exact solution, nu = 0.05 on (0, 2π), t ∈ [0, 1], 11 frames) at
several output grids, both time integrators, 4 samples per batch; prints max relative error,
integrator work and wall time measured in this run. Read the errors, not the times, on a shared
machine.

    python bench/generic_accuracy.py [--nx 32 64 128]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pdesharp.data.generate.generic import simulate_task
from pdesharp.task import task_from_dict

NU = 0.05


def burgers_task():
    return task_from_dict({
        "name": "burgers_cole_hopf", "title": "bench", "description": "bench",
        "equation": {"unknowns": ["u"], "equations": ["dt(u) + dx(u**2/2) - nu*dx(u, 2)"]},
        "parameters": {"nu": NU}, "domain": {"x": [0.0, 2 * np.pi]}, "boundary": "periodic",
        "time_span": [0.0, 1.0], "n_frames": 11,
        "solver": {"args": [{"name": "t", "kind": "time"}], "returns": ["u"], "template": "-"},
        "data": {"fields": {"u": "tensor"}},
    })


def cole_hopf(x, t, a):
    """u = -2ν φ_x/φ with φ = a + e^{-νt} cos x (φ_t = ν φ_xx); a > 1 sets the steepness."""
    e = np.exp(-NU * t)
    return 2 * NU * e * np.sin(x) / (a + e * np.cos(x))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nx", type=int, nargs="+", default=[32, 64, 128])
    args = ap.parse_args()
    task = burgers_task()
    a = np.array([1.1, 1.2, 1.5, 2.0])  # four samples of different steepness
    t = np.linspace(0.0, 1.0, 11)
    print(f"{'nx':>5} {'method':>8} {'max rel err':>12} {'work':>22} {'seconds':>8}")
    for nx in args.nx:
        x = (np.arange(nx) + 0.5) * 2 * np.pi / nx
        u0 = cole_hopf(x[None], 0.0, a[:, None])
        exact = np.stack([cole_hopf(x[None], s, a[:, None]) for s in t], axis=1)
        for method in ("dop853", "etdrk4"):
            info: dict = {}
            t0 = time.perf_counter()
            u = simulate_task(task, {"u": u0}, t, method=method, info=info)["u"]
            wall = time.perf_counter() - t0
            err = np.abs(u - exact).max() / np.abs(exact).max()
            work = (f"{info['rhs_evaluations']} rhs evals" if method == "dop853"
                    else f"{info['steps_per_frame']} steps/frame")
            print(f"{nx:>5} {method:>8} {err:>12.2e} {work:>22} {wall:>8.2f}")


if __name__ == "__main__":
    main()
