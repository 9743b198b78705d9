"""Exact, manufactured and generator references for the example tasks (see make_reference.py).

Nothing here uses pdesharp's built-in solver catalogue: the closed forms are written out with
NumPy, the steady forcings are derived with SymPy from a random exact solution, and the
``generator`` kind calls pdesharp's generic data generator (Fourier spectral / Chebyshev).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sympy as sp

HERE = Path(__file__).resolve().parent

from reference_steady import STEADY  # noqa: E402 (a sibling module of this script)


def _centres(n: int, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


def _trig(rng, m_max: int):
    """Random coefficients of sum_m a_m sin(2 pi m s) + b_m cos(2 pi m s), m = 1..m_max."""
    a, b = rng.normal(size=m_max) / np.arange(1, m_max + 1), rng.normal(size=m_max) / np.arange(1, m_max + 1)
    return lambda s: sum(a[m] * np.sin(2 * np.pi * (m + 1) * s) + b[m] * np.cos(2 * np.pi * (m + 1) * s)
                         for m in range(m_max))


def wave1d(n, samples, seed):
    c, x, t = 0.5, _centres(n), np.linspace(0.0, 2.0, 21)
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    for s in range(samples):
        f = _trig(rng, 4)
        u[s] = 0.5 * (f(x[None] - c * t[:, None]) + f(x[None] + c * t[:, None]))  # d'Alembert, at rest
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x, "_method": "exact d'Alembert solution"}


def wave_system1d(n, samples, seed):
    c, x, t = 1.0, _centres(n), np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(seed)
    u, v = np.empty((samples, t.size, n)), np.empty((samples, t.size, n))
    for s in range(samples):
        fu, fv = _trig(rng, 4), _trig(rng, 4)
        plus = fu(x[None] + c * t[:, None]) + fv(x[None] + c * t[:, None])  # u + v moves left
        minus = fu(x[None] - c * t[:, None]) - fv(x[None] - c * t[:, None])  # u - v moves right
        u[s], v[s] = 0.5 * (plus + minus), 0.5 * (plus - minus)
    return {"u": u, "v": v, "t-coordinate": t, "x-coordinate": x,
            "_method": "exact solution by Riemann invariants"}


def _modes2d(rng, m_max):
    out = []
    for mx in range(-m_max, m_max + 1):
        for my in range(0, m_max + 1):
            if my == 0 and mx <= 0:
                continue
            w = 1.0 / np.hypot(mx, my)
            out.append((mx, my, rng.normal() * w, rng.normal() * w))
    return out


def heat2d(n, samples, seed):
    nu, x, t = 0.01, _centres(n), np.linspace(0.0, 1.0, 11)
    X, Y = np.meshgrid(x, x, indexing="ij")
    rng = np.random.default_rng(seed)
    u = np.zeros((samples, t.size, n, n))
    for s in range(samples):
        for mx, my, a, b in _modes2d(rng, 4):
            th = 2 * np.pi * (mx * X + my * Y)
            decay = np.exp(-nu * 4 * np.pi**2 * (mx**2 + my**2) * t)
            u[s] += decay[:, None, None] * (a * np.cos(th) + b * np.sin(th))[None]
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x, "y-coordinate": x,
            "_method": "exact: each Fourier mode decays as exp(-nu |k|^2 t)"}


def heat_dirichlet1d(n, samples, seed):
    nu, x, t = 0.05, _centres(n), np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(seed)
    u = np.zeros((samples, t.size, n))
    for s in range(samples):
        for m in range(1, 6):
            a = rng.normal() / m
            u[s] += a * np.exp(-nu * (m * np.pi) ** 2 * t)[:, None] * np.sin(m * np.pi * x)[None]
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x, "_method": "exact sine series"}


def advection_diffusion2d(n, samples, seed):
    a, b, D, F, w = 1.0, 0.5, 0.01, 0.5, 2 * np.pi
    x, t = _centres(n), np.linspace(0.0, 1.0, 11)
    X, Y = np.meshgrid(x, x, indexing="ij")
    rng = np.random.default_rng(seed)
    u = np.zeros((samples, t.size, n, n))
    # forced part: Im(z(t) exp(2 pi i x)), z' = lam z + F cos(w t), z(0) = 0 (Duhamel, exact)
    lam = -1j * 2 * np.pi * a - D * 4 * np.pi**2
    z = F / 2 * ((np.exp(1j * w * t) - np.exp(lam * t)) / (1j * w - lam)
                 + (np.exp(-1j * w * t) - np.exp(lam * t)) / (-1j * w - lam))
    forced = np.imag(z[:, None, None] * np.exp(2j * np.pi * X)[None])
    for s in range(samples):
        for mx, my, ca, cb in _modes2d(rng, 3):
            th = 2 * np.pi * (mx * (X[None] - a * t[:, None, None]) + my * (Y[None] - b * t[:, None, None]))
            decay = np.exp(-D * 4 * np.pi**2 * (mx**2 + my**2) * t)[:, None, None]
            u[s] += decay * (ca * np.cos(th) + cb * np.sin(th))
        u[s] += forced
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x, "y-coordinate": x,
            "_method": "exact: translated and decayed Fourier modes plus Duhamel's integral"}


def poisson1d(n, samples, seed):
    """-((1 + x^2) u')' + kappa u = f, u(0) = 1, u'(1) + u(1) = 0."""
    xs, kappa = sp.Symbol("x"), 2.0
    x = _centres(n)
    rng = np.random.default_rng(seed)
    f_out, u_out = np.empty((samples, n)), np.empty((samples, n))
    for s in range(samples):
        c = rng.normal(size=3)
        v = sum(c[m] * sp.sin((m + 1) * sp.pi * xs) for m in range(3)) + rng.normal() * xs**2
        alpha = -(1 + v.subs(xs, 1) + sp.diff(v, xs).subs(xs, 1)) / 2
        u = 1 + v + alpha * xs  # u(0) = 1 and u'(1) + u(1) = 0 by construction
        f = -sp.diff((1 + xs**2) * sp.diff(u, xs), xs) + kappa * u
        u_out[s] = sp.lambdify(xs, u, "numpy")(x)
        f_out[s] = sp.lambdify(xs, f, "numpy")(x)
    return {"f": f_out, "sol": u_out, "x-coordinate": x,
            "_method": "manufactured: exact u, f = -((1 + x^2) u')' + kappa u (SymPy)"}


def steady2d(n, samples, seed):
    """-div(kappa K grad u) + c0 u = f; u = 0 at x = 0, 1; u_y = 0 at y = 0; u_y + u = 0 at y = 1."""
    xs, ys = sp.symbols("x y")
    kappa, c0 = 0.5, 1.0
    K = kappa * (1 + sp.sin(sp.pi * xs) * sp.sin(sp.pi * ys) / 2)
    x = _centres(n)
    X, Y = np.meshgrid(x, x, indexing="ij")
    rng = np.random.default_rng(seed)
    f_out, u_out = np.empty((samples, n, n)), np.empty((samples, n, n))
    for s in range(samples):
        u = 0
        for m in range(1, 4):
            beta, gamma = rng.normal(size=2) / m
            alpha = -3 * beta - 4 * gamma  # P'(0) = 0 and P'(1) + P(1) = 0
            u += sp.sin(m * sp.pi * xs) * (alpha + beta * ys**2 + gamma * ys**3)
        f = -sp.diff(K * sp.diff(u, xs), xs) - sp.diff(K * sp.diff(u, ys), ys) + c0 * u
        u_out[s] = sp.lambdify((xs, ys), u, "numpy")(X, Y)
        f_out[s] = sp.lambdify((xs, ys), f, "numpy")(X, Y)
    return {"f": f_out, "sol": u_out, "x-coordinate": x, "y-coordinate": x,
            "_method": "manufactured: exact u (sin(m pi x) times cubics in y), f from SymPy"}


def _generated(name, n, samples, seed):
    from pdesharp.data.generate.generic import generate_task
    from pdesharp.task import load_task

    task = load_task(HERE / f"{name}.yaml")
    info: dict = {}
    out = generate_task(task, samples, seed, nx=n, info=info)
    out["_method"] = f"pdesharp generic data generator: {info.get('method')}"
    return out


KINDS = {
    # name: (kind, function, default n)
    "wave1d": ("exact", wave1d, 128),
    "wave_system1d": ("exact", wave_system1d, 128),
    "heat2d": ("exact", heat2d, 32),
    "heat_dirichlet1d": ("exact", heat_dirichlet1d, 64),
    "advection_diffusion2d": ("exact", advection_diffusion2d, 32),
    "poisson1d": ("manufactured", poisson1d, 128),
    "steady2d": ("manufactured", steady2d, 32),
    "kuramoto_sivashinsky1d": ("generator", None, 128),
    "burgers_inflow1d": ("generator", None, 128),
    "fisher_robin1d": ("generator", None, 128),
    "burgers2d": ("generator", None, 32),
    "allen_cahn2d": ("generator", None, 32),
}


def make(name: str, n: int | None, samples: int, seed: int) -> dict:
    if name in STEADY:  # one problem per formula task; dev (seed 0) and test on different N
        fn, dev_n, test_n = STEADY[name]
        return fn(n or (dev_n if seed == 0 else test_n), samples, seed)
    kind, fn, default_n = KINDS[name]
    n = n or default_n
    if kind == "generator":
        return _generated(name, n, samples, seed)
    return fn(n, samples, seed)
