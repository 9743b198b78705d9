"""References for the examples of issue 26 item 6 (dispersive and nonlinear problems between
walls) and item 5 (APEBench's point values on nodes), by methods that share no code with
pdesharp's solver catalogue:

* ``chebyshev``: Chebyshev-Gauss-Lobatto collocation with SciPy's Radau IIA (rtol 1e-10) and
  the right-hand sides written out by hand below (:class:`reference_walls.Collocation` where
  every unknown has a wall condition; :func:`_line_run` where some have none, the
  upper-convected Maxwell stresses, integrated at the wall points too); frames evaluated at
  the output points by barycentric interpolation; the largest difference from a run with 8
  more points stored as ``self_check``;
* ``fourier``: Fourier pseudo-spectral differentiation on a grid ``fine`` times finer than the
  data's (every data point is a fine point, so a frame is a plain sample), 2/3 rule, SciPy's
  DOP853 (rtol 1e-11): the point values of a periodic solution whose fronts the data grid
  alone does not resolve.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy.integrate import solve_ivp

from reference_walls import _chebyshev_kind, barycentric, chebyshev, points


def _sines(rng, length, modes, amp, even=False):
    """A random trigonometric polynomial on (0, length): sines (zero at the walls) or, with
    ``even``, cosines (zero slope at the walls), amplitudes ~ amp / m."""
    c = rng.normal(size=modes) * amp / np.arange(1, modes + 1)
    trig = np.cos if even else np.sin
    return lambda x: sum(c[m] * trig((m + 1) * np.pi * x / length) for m in range(modes))


def zakharov_walls(n, samples, seed, length=10.0, t_end=2.0, frames=11, m=96):
    """E = a + i b, i E_t + E_xx = n E, n_tt = n_xx + (|E|^2)_xx on (0, length): E = 0 and
    n_x = 0 on the walls (the even extension of n is what (|E|^2)_xx keeps), n starts at rest
    (m = n_t = 0, also with m_x = 0 on the walls)."""
    def rhs(t, f, X, box):
        a, b, dn, m_ = f["a"], f["b"], f["n"], f["m"]
        d2 = lambda w: box.d(w, 0, 2)  # noqa: E731
        return {"a": -d2(b) + dn * b, "b": d2(a) - dn * a, "n": m_,
                "m": d2(dn) + d2(a**2 + b**2)}

    def draw(rng):
        return {"a": _sines(rng, length, 4, 0.8), "b": _sines(rng, length, 4, 0.8),
                "n": _sines(rng, length, 4, 0.5, even=True), "m": lambda x: 0.0 * x}

    zero = (lambda t, s=None: 0.0)
    dirichlet, neumann = (1.0, 0.0, zero), (0.0, 1.0, zero)
    bc = {u: {(0, 0): kind, (0, 1): kind} for u, kind in
          (("a", dirichlet), ("b", dirichlet), ("n", neumann), ("m", neumann))}
    case = dict(names=["a", "b", "n", "m"], keys=["a", "b", "n", "m"],
                domain=[(0.0, length)], bc=bc, rhs=rhs, t=np.linspace(0.0, t_end, frames),
                grid="cell_centres", draw=draw)
    out = _chebyshev_kind(case, n, samples, seed, m)
    out.pop("m")  # the task's unknowns are a, b, n (n_t is the solver's own)
    return out


def gross_pitaevskii_trap(n, samples, seed, g=2.0, length=8.0, t_end=2.0, frames=11, m=128):
    """psi = u + i v, i psi_t = -psi_xx/2 + x^2/2 psi + g |psi|^2 psi on (-length, length),
    psi = 0 on the walls; a displaced Gaussian with a phase gradient (its tails at the walls
    are below 1e-12)."""
    def rhs(t, f, X, box):
        u, v = f["u"], f["v"]
        V = 0.5 * X[0] ** 2
        rho = u**2 + v**2
        return {"u": -0.5 * box.d(v, 0, 2) + V * v + g * rho * v,
                "v": 0.5 * box.d(u, 0, 2) - V * u - g * rho * u}

    def draw(rng):
        A, x0 = rng.uniform(0.8, 1.2), rng.uniform(-2.0, 2.0)
        s, k0 = rng.uniform(0.7, 1.2), rng.uniform(-1.0, 1.0)
        env = lambda x: A * np.exp(-((x - x0) ** 2) / (2 * s**2))  # noqa: E731
        return {"u": lambda x: env(x) * np.cos(k0 * x), "v": lambda x: env(x) * np.sin(k0 * x)}

    def jac(t, f, X, box):  # d(rhs)/d(u, v) at the interior points, for Radau's Newton
        u, v = f["u"][1:-1], f["v"][1:-1]
        D2 = box.d(np.eye(X[0].size), 0, 2)[1:-1, 1:-1]
        V = np.diag(0.5 * X[0][1:-1] ** 2)
        return np.block([[np.diag(2 * g * u * v), -0.5 * D2 + V + np.diag(g * (u**2 + 3 * v**2))],
                         [0.5 * D2 - V - np.diag(g * (3 * u**2 + v**2)), np.diag(-2 * g * u * v)]])

    case = dict(names=["u", "v"], zero={"u", "v"}, domain=[(-length, length)], rhs=rhs,
                jac=jac, draw=draw, t=np.linspace(0.0, t_end, frames), grid="cell_centres")
    return _line_kind(case, n, samples, seed, m)


def _line_run(case, init, m, out_pts):
    """One 1D Chebyshev run: the unknowns in ``case["zero"]`` vanish at both walls (interior
    values integrated), the others are integrated at every point, the walls included (no
    condition: hyperbolic stresses); Radau IIA, with ``case["jac"]`` the Jacobian of the
    interior right-hand side when given (a finite-difference one costs a right-hand side per
    unknown)."""
    y, D, w = chebyshev(*case["domain"][0], m)
    names, zero = case["names"], case["zero"]
    powers = {k: np.linalg.matrix_power(D, k) for k in (1, 2)}
    box = SimpleNamespace(d=lambda f, axis, order=1: powers[order] @ f)
    sizes = [m - 1 if nm in zero else m + 1 for nm in names]
    cuts = np.cumsum(sizes)[:-1]

    def full(z):
        return {nm: np.concatenate([[0.0], p, [0.0]]) if nm in zero else p
                for nm, p in zip(names, np.split(z, cuts))}

    def cut(f):
        return np.concatenate([f[nm][1:-1] if nm in zero else f[nm] for nm in names])

    def f(t, z):
        return cut(case["rhs"](t, full(z), [y], box))

    z0 = cut({nm: init[nm](y) for nm in names})
    extra = {"jac": lambda t, z: case["jac"](t, full(z), [y], box)} if "jac" in case else {}
    sol = solve_ivp(f, (case["t"][0], case["t"][-1]), z0, method="Radau", t_eval=case["t"],
                    rtol=1e-10, atol=1e-12, **extra)
    if not sol.success:
        raise RuntimeError(f"reference integration failed: {sol.message}")
    E = barycentric(y, w, out_pts)
    frames = [full(sol.y[:, j]) for j in range(len(case["t"]))]
    return {nm: np.array([E @ fr[nm] for fr in frames]) for nm in names}


def _line_kind(case, n, samples, seed, m):
    """:func:`_line_run` per sample, and once more with m + 8 points (the self check)."""
    rng = np.random.default_rng(seed)
    out_pts = points(n, case["grid"], *case["domain"][0])
    runs, check = [], 0.0
    for s in range(samples):
        init = case["draw"](rng)
        runs.append(_line_run(case, init, m, out_pts))
        if s == 0:
            fine = _line_run(case, init, m + 8, out_pts)
            check = max(float(np.max(np.abs(fine[k] - runs[0][k]))) for k in case["names"])
    out = {k: np.array([r[k] for r in runs]) for k in case["names"]}
    out.update({"t-coordinate": case["t"], f"{case.get('axis', 'x')}-coordinate": out_pts,
                "_self_check": check,
                "_method": f"Chebyshev-Gauss-Lobatto collocation, {m + 1} points, Radau IIA rtol"
                           f" 1e-10; max difference from {m + 9} points: {check:.2e}"})
    return out


def ucm_startup(n, samples, seed, Re=1.0, We=0.5, G0=2.0, tau=0.5, t_end=2.0, frames=11,
                m=64):
    """Re u_t = G(t) + s_y, We s_t + s = u_y, We N_t + N = 2 We s u_y on (0, 1), u = 0 on the
    walls, G(t) = G0 (1 - exp(-(t/tau)^4)). The stresses have no wall condition: they are
    integrated at the wall points too."""
    def rhs(t, f, X, box):
        u, s_, N = f["u"], f["s"], f["N"]
        uy = box.d(u, 0)
        G = G0 * (1.0 - np.exp(-((t / tau) ** 4)))
        return {"u": (G + box.d(s_, 0)) / Re, "s": (uy - s_) / We, "N": 2 * s_ * uy - N / We}

    def draw(rng):
        cu, cs = rng.normal(size=3) * 0.3, rng.normal(size=3) * 0.3
        return {"u": lambda y: sum(cu[k] * np.sin((k + 1) * np.pi * y) for k in range(3)),
                "s": lambda y: sum(cs[k] * np.cos((k + 1) * np.pi * y) for k in range(3)),
                "N": lambda y: 0.0 * y}

    case = dict(names=["u", "s", "N"], zero={"u"}, domain=[(0.0, 1.0)], rhs=rhs, draw=draw,
                t=np.linspace(0.0, t_end, frames), grid="cell_centres", axis="y")
    return _line_kind(case, n, samples, seed, m)


def apebench_burgers(n, samples, seed, c=-0.009375, nu=2.9296875e-05, t_end=50.0, frames=51,
                     fine=8):
    """u_t + c/2 (u^2)_x = nu u_xx on the periodic (0, 1), stored at x_i = i/n (exponax's
    points); initial data as APEBench draws them (wavenumbers 1-5, zero mean, max |u| = 1)."""
    nf = n * fine
    xf = np.arange(nf) / nf
    k = 2 * np.pi * np.fft.rfftfreq(nf, 1.0 / nf)
    keep = (np.arange(k.size) <= nf // 3).astype(float)

    def rhs(_, u):
        uh = np.fft.rfft(u)
        flux = np.fft.rfft(u * u) * keep
        return np.fft.irfft(-0.5 * c * 1j * k * flux - nu * k**2 * uh * keep, n=nf)

    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, t_end, frames)
    u = np.empty((samples, frames, n))
    for s in range(samples):
        u0 = sum(rng.normal() * np.cos(2 * np.pi * m * xf) + rng.normal() * np.sin(2 * np.pi * m * xf)
                 for m in range(1, 6))
        u0 /= np.max(np.abs(u0[::fine]))  # on the data points, as exponax scales
        sol = solve_ivp(rhs, (0.0, t_end), u0, method="DOP853", t_eval=t, rtol=1e-11, atol=1e-13)
        if not sol.success:
            raise RuntimeError(sol.message)
        u[s] = sol.y.T[:, ::fine]
    return {"tensor": u, "t-coordinate": t, "x-coordinate": np.arange(n) / n,
            "_method": f"Fourier pseudo-spectral on a {fine}x finer grid, 2/3 rule, DOP853 rtol"
                       " 1e-11, sampled at the nodes"}


WAVE_KINDS = {
    # name: (kind, function(n, samples, seed), default n)
    "zakharov_walls1d": ("chebyshev", zakharov_walls, 128),
    "apebench_burgers1d": ("fourier", apebench_burgers, 160),
    "gross_pitaevskii_trap1d": ("chebyshev", gross_pitaevskii_trap, 128),
    "ucm_startup1d": ("chebyshev", ucm_startup, 128),
}
