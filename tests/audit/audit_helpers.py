"""Synthetic reference files with a known, injected error, for the audit's tests.

The clean solutions are computed here independently of the audit: advection from the generator's
own initial-condition formula evaluated at the translated points, the heat equation and the
constant-coefficient Darcy problem from their Fourier series.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from pdesharp.data.generate.initial import init_multi
from pdesharp.task import Task, task_from_dict


def nrmse(pred: np.ndarray, ref: np.ndarray) -> float:
    """CodePDE's formula, written out here (not imported from the code under test)."""
    axes = tuple(range(1, ref.ndim))
    per = np.sqrt(np.mean((pred - ref) ** 2, axis=axes)) / np.sqrt(np.mean(ref ** 2, axis=axes))
    return float(per.mean())


def advection_exact(n: int, n_samples: int, seed: int, times: np.ndarray, beta: float = 0.1,
                    shift: np.ndarray | None = None) -> np.ndarray:
    """PDEBench-style initial data (jump of the periodic continuation included) translated
    exactly: the generator's formula evaluated at x − β(t + shift). [B, T, N]."""
    x = (np.arange(n) + 0.5) / n
    shift = np.zeros(len(times)) if shift is None else shift
    out = np.empty((n_samples, len(times), n))
    for k, t in enumerate(times):
        y = np.mod(x - beta * (t + shift[k]), 1.0)
        # the formula's wavenumbers use x[-1] - x[0] of the array passed: keep both ends
        points = np.concatenate([[x[0]], y, [x[-1]]])
        out[:, k] = init_multi(points, n_samples, seed, dtype=np.float64)[:, 1:-1]
    return out


def write_1d(path: Path, u: np.ndarray, times: np.ndarray, key: str = "tensor") -> Path:
    n = u.shape[-1]
    with h5py.File(path, "w") as h5:
        h5.create_dataset(key, data=u.astype(np.float32))
        h5.create_dataset("t-coordinate", data=times.astype(np.float32))
        h5.create_dataset("x-coordinate", data=((np.arange(n) + 0.5) / n).astype(np.float32))
    return path


def user_task(equation: str, parameters: dict, *, name: str = "user_audit_test",
              n_frames: int = 11, t_end: float = 0.5) -> Task:
    spec = {
        "name": name, "title": "audit test task", "description": "a user task for the audit",
        "equation": {"unknowns": ["u"], "equations": [equation]},
        "parameters": parameters, "domain": {"x": [0.0, 1.0]}, "boundary": "periodic",
        "time_span": [0.0, t_end], "n_frames": n_frames,
        "solver": {"args": [{"name": "u0", "kind": "initial", "field": "u"},
                            {"name": "t", "kind": "time"}],
                   "returns": ["u"], "template": "def solver(u0, t): ..."},
        "data": {"fields": {"u": "tensor"}},
    }
    return task_from_dict(spec, "audit test spec")


def heat_exact(n: int, times: np.ndarray, nu: float) -> np.ndarray:
    """Two samples of u_t = ν u_xx from sums of sines: [2, T, N]."""
    x = (np.arange(n) + 0.5) / n
    modes = [[(1, 0.7, 0.3), (3, 0.4, 1.1), (0, 0.5, 0.0)], [(2, 1.0, 2.0), (5, 0.2, 0.4)]]
    out = np.zeros((2, len(times), n))
    for b, terms in enumerate(modes):
        for m, amp, phase in terms:
            k = 2 * np.pi * m
            decay = np.exp(-nu * k * k * times)[:, None]
            out[b] += amp * decay * (np.cos(k * x + phase)[None] if m else 1.0)
    return out
