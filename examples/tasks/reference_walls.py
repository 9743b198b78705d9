"""References for the walled and node-grid example tasks (issue 19), by methods that share no
code with pdesharp's solver catalogue:

* closed forms (heat with time-dependent Dirichlet data, TM cavity modes, periodic
  advection-diffusion), written out with NumPy;
* ``chebyshev``: tensor Chebyshev-Gauss-Lobatto collocation in 1D or 2D with SciPy's Radau IIA
  (rtol 1e-10), the right-hand sides written out by hand below. Only the interior values are
  integrated; at every evaluation the wall values are solved from the conditions
  ``a*u + b*du/dn_axis = g`` line by line (a 2x2 system per line and axis). Frames are evaluated
  at the output points by barycentric interpolation. Initial data are analytic functions that
  satisfy the conditions, evaluated at the collocation points and at the output points;
* ``fourier``: 2D Fourier pseudo-spectral on a grid 3x finer (every output cell centre is a fine
  point) with DOP853 (rtol 1e-11).

Each file records its method and, for the collocation runs, the largest difference from a run
with 8 more points per axis (the reference's own error estimate, in ``self_check``).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def points(n: int, grid: str, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    if grid == "nodes":
        return np.linspace(lo, hi, n)
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


# ---- closed forms ------------------------------------------------------------------------------

def heat_dirichlet2d(n, samples, seed, grid="nodes"):
    """u_t = nu lap u on (0,1)^2, u = P on the walls with the heat solution
    P = x^2 + y^2 + 4 nu t + exp(-2 nu a^2 t) cos(a x) cos(a y + 1/2)... (see the YAML);
    u = P + sum_mn c_mn exp(-nu pi^2 (m^2 + n^2) t) sin(m pi x) sin(n pi y)."""
    nu, a = 0.05, 2.0
    x, t = points(n, grid), np.linspace(0.0, 0.5, 11)
    X, Y = np.meshgrid(x, x, indexing="ij")
    T = t[:, None, None]
    P = X**2 + Y**2 + 4 * nu * T + np.exp(-2 * nu * a**2 * T) * np.cos(a * X) * np.cos(a * Y + 0.5)
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n, n))
    for s in range(samples):
        u[s] = P
        for m in range(1, 5):
            for k in range(1, 5):
                c = rng.normal() / (m * k)
                u[s] += c * np.exp(-nu * np.pi**2 * (m**2 + k**2) * T) * np.sin(m * np.pi * X) \
                    * np.sin(k * np.pi * Y)
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x, "y-coordinate": x,
            "_method": "exact: a heat solution matching the wall data plus decaying sine modes"}


def heat_nodes1d(n, samples, seed):
    """u_t = nu u_xx on (0,1), nodes; u = P on the walls with P = exp(-nu a^2 t) cos(a x + 0.3)
    + x; u = P + sum_m c_m exp(-nu m^2 pi^2 t) sin(m pi x)."""
    nu, a = 0.1, 3.0
    x, t = points(n, "nodes"), np.linspace(0.0, 1.0, 21)
    P = np.exp(-nu * a**2 * t)[:, None] * np.cos(a * x + 0.3)[None] + x[None]
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    for s in range(samples):
        u[s] = P
        for m in range(1, 7):
            u[s] += rng.normal() / m * np.exp(-nu * (m * np.pi) ** 2 * t)[:, None] \
                * np.sin(m * np.pi * x)[None]
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x,
            "_method": "exact: a heat solution matching the wall data plus decaying sine modes"}


def advection_diffusion_nodes1d(n, samples, seed):
    """u_t + a u_x = D u_xx on the periodic (0, 1), stored on nodes (both ends, equal values)."""
    a, D = 1.0, 0.01
    x, t = points(n, "nodes"), np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(seed)
    u = np.zeros((samples, t.size, n))
    for s in range(samples):
        for m in range(1, 6):
            c, d = rng.normal(size=2) / m
            k = 2 * np.pi * m
            decay = np.exp(-D * k**2 * t)[:, None]
            th = k * (x[None] - a * t[:, None])
            u[s] += decay * (c * np.cos(th) + d * np.sin(th))
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x,
            "_method": "exact: translated and decayed Fourier modes"}


def tm_cavity2d(n, samples, seed):
    """Ez_t = c (Hy_x - Hx_y), Hx_t = -c Ez_y, Hy_t = c Ez_x in a PEC unit square: cavity modes
    Ez = [a cos wt + b sin wt] sin(m pi x) sin(k pi y), w = c pi sqrt(m^2 + k^2)."""
    c = 1.0
    x, t = points(n, "cell_centres"), np.linspace(0.0, 1.0, 21)
    X, Y = np.meshgrid(x, x, indexing="ij")
    T = t[:, None, None]
    rng = np.random.default_rng(seed)
    Ez, Hx, Hy = (np.zeros((samples, t.size, n, n)) for _ in range(3))
    for s in range(samples):
        for m in range(1, 4):
            for k in range(1, 4):
                a, b = rng.normal(size=2) / (m + k)
                w = c * np.pi * np.hypot(m, k)
                sx, cx = np.sin(m * np.pi * X), np.cos(m * np.pi * X)
                sy, cy = np.sin(k * np.pi * Y), np.cos(k * np.pi * Y)
                Ez[s] += (a * np.cos(w * T) + b * np.sin(w * T)) * sx * sy
                q = a * np.sin(w * T) - b * np.cos(w * T)
                Hx[s] += -c * k * np.pi / w * q * sx * cy
                Hy[s] += c * m * np.pi / w * q * cx * sy
    return {"Ez": Ez, "Hx": Hx, "Hy": Hy, "t-coordinate": t, "x-coordinate": x,
            "y-coordinate": x, "_method": "exact: PEC cavity modes"}


# ---- Chebyshev collocation + Radau -------------------------------------------------------------

def chebyshev(lo: float, hi: float, m: int):
    """Gauss-Lobatto points on [lo, hi] (increasing), differentiation matrix, barycentric weights."""
    xi = -np.cos(np.pi * np.arange(m + 1) / m)
    x = lo + (hi - lo) * (xi + 1) / 2
    w = (-1.0) ** np.arange(m + 1)
    w[[0, -1]] *= 0.5
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    D = (w[None, :] / w[:, None]) / diff
    np.fill_diagonal(D, 0.0)
    np.fill_diagonal(D, -D.sum(axis=1))
    return x, D, w


def barycentric(x, w, xo):
    """Matrix E [len(xo), len(x)] evaluating the interpolating polynomial at xo."""
    d = xo[:, None] - x[None, :]
    hit = np.isclose(d, 0.0, atol=1e-14)
    d[hit] = 1.0
    E = w[None, :] / d
    E /= E.sum(axis=1, keepdims=True)
    rows = hit.any(axis=1)
    E[rows] = hit[rows].astype(float)
    return E


class Collocation:
    """Tensor Chebyshev grid on a box with wall conditions per unknown, axis and side:
    ``bc[name][(axis, side)] = (a, b, g)``, a*u + b*du/d(axis) = g(t, s), s the coordinate along
    the side (2D) or nothing (1D)."""

    def __init__(self, domain, m, names, bc):
        self.dim = len(domain)
        self.grids = [chebyshev(lo, hi, m) for lo, hi in domain]
        self.names, self.bc = names, bc
        self.shape = (m + 1,) * self.dim
        self.inner = tuple(slice(1, -1) for _ in range(self.dim))

    def d(self, u, axis, order=1):
        D = self.grids[axis][1]
        for _ in range(order):
            u = np.moveaxis(np.tensordot(D, np.moveaxis(u, axis, 0), axes=1), 0, axis)
        return u

    def fill(self, inner: dict, t: float) -> dict:
        """Full fields from interior values: wall values solved from the conditions."""
        out = {}
        for name in self.names:
            u = np.zeros(self.shape)
            u[self.inner] = inner[name]
            for axis in range(self.dim):
                x, D, _ = self.grids[axis]
                v = np.moveaxis(u, axis, 0)  # a view: [m + 1, (other)]
                other = self.grids[1 - axis][0] if self.dim == 2 else None
                (a0, b0, g0), (a1, b1, g1) = self.bc[name][(axis, 0)], self.bc[name][(axis, 1)]
                g0 = g0(t, other) if self.dim == 2 else g0(t)
                g1 = g1(t, other) if self.dim == 2 else g1(t)
                r0 = g0 - b0 * np.tensordot(D[0, 1:-1], v[1:-1], axes=1)
                r1 = g1 - b1 * np.tensordot(D[-1, 1:-1], v[1:-1], axes=1)
                M = np.array([[a0 + b0 * D[0, 0], b0 * D[0, -1]], [b1 * D[-1, 0], a1 + b1 * D[-1, -1]]])
                sol = np.linalg.solve(M, np.stack([np.broadcast_to(r0, v.shape[1:]).ravel(),
                                                   np.broadcast_to(r1, v.shape[1:]).ravel()]))
                v[0], v[-1] = sol[0].reshape(v.shape[1:]), sol[1].reshape(v.shape[1:])
            out[name] = u
        return out

    def run(self, rhs, init: dict, t_out, out_points):
        """Integrate and evaluate every frame at the output points (one array per axis)."""
        X = np.meshgrid(*[g[0] for g in self.grids], indexing="ij")
        size = int(np.prod([s - 2 for s in self.shape]))
        y0 = np.concatenate([init[n](*X)[self.inner].ravel() for n in self.names])

        def f(t, y):
            inner = {n: y[k * size:(k + 1) * size].reshape([s - 2 for s in self.shape])
                     for k, n in enumerate(self.names)}
            full = self.fill(inner, t)
            du = rhs(t, full, X, self)
            return np.concatenate([du[n][self.inner].ravel() for n in self.names])

        sol = solve_ivp(f, (t_out[0], t_out[-1]), y0, method="Radau", t_eval=t_out, rtol=1e-10,
                        atol=1e-12)
        if not sol.success:
            raise RuntimeError(f"reference integration failed: {sol.message}")
        E = [barycentric(g[0], g[2], p) for g, p in zip(self.grids, out_points)]
        frames = {n: [] for n in self.names}
        for j, tj in enumerate(t_out):
            inner = {n: sol.y[k * size:(k + 1) * size, j].reshape([s - 2 for s in self.shape])
                     for k, n in enumerate(self.names)}
            full = self.fill(inner, tj)
            for n in self.names:
                v = full[n]
                for axis, Ea in enumerate(E):
                    v = np.moveaxis(np.tensordot(Ea, np.moveaxis(v, axis, 0), axes=1), 0, axis)
                frames[n].append(v)
        return {n: np.array(v) for n, v in frames.items()}


def _robin_profile(rng, h, modes=3):
    """A random smooth X(x) on [0, 1] with -X'(0) + h X(0) = 0 and X'(1) + h X(1) = 0 (a trig
    polynomial plus c0 + c1 x solved from the two conditions)."""
    a = rng.normal(size=modes) / np.arange(1, modes + 1)
    f = lambda x: 1.0 + sum(a[k] * np.cos((k + 1) * np.pi * x + k) for k in range(modes))  # noqa
    df = lambda x: -sum(a[k] * (k + 1) * np.pi * np.sin((k + 1) * np.pi * x + k)  # noqa
                        for k in range(modes))
    M = np.array([[h, -1.0], [h, 1.0 + h]])
    c0, c1 = np.linalg.solve(M, [df(0.0) - h * f(0.0), -df(1.0) - h * f(1.0)])
    return lambda x: f(x) + c0 + c1 * x


def _cheb_run(names, domain, bc, rhs, init, t, out, m):
    box = Collocation(domain, m, names, bc)
    return box.run(rhs, init, t, out)


def _chebyshev_kind(case, n, samples, seed, m):
    """Run ``case`` (a dict: names, domain, bc, rhs, t, grid, keys, draw) per sample, and once
    more with m + 8 points for the self check."""
    rng = np.random.default_rng(seed)
    out_pts = [points(n, case["grid"], lo, hi) for lo, hi in case["domain"]]
    frames = {k: [] for k in case["keys"]}
    check = 0.0
    for s in range(samples):
        init = case["draw"](rng)
        got = _cheb_run(case["names"], case["domain"], case["bc"], case["rhs"], init, case["t"],
                        out_pts, m)
        if s == 0:
            fine = _cheb_run(case["names"], case["domain"], case["bc"], case["rhs"], init,
                             case["t"], out_pts, m + 8)
            check = max(float(np.max(np.abs(fine[u] - got[u]))) for u in case["names"])
        for u, key in zip(case["names"], case["keys"]):
            frames[key].append(got[u])
    arrays = {k: np.array(v) for k, v in frames.items()}
    arrays["t-coordinate"] = case["t"]
    for axis, p in zip("xyz", out_pts):
        arrays[f"{axis}-coordinate"] = p
    arrays["_method"] = (f"Chebyshev-Gauss-Lobatto collocation, {m + 1} points per axis, Radau IIA"
                         f" rtol 1e-10; max difference from {m + 9} points: {check:.2e}")
    arrays["_self_check"] = check
    return arrays


def _zero_walls(names, dim, kind):
    a, b = (1.0, 0.0) if kind == "dirichlet" else (0.0, 1.0)
    zero = (lambda t, s=None: 0.0)
    return {u: {(ax, sd): (a, b, zero) for ax in range(dim) for sd in (0, 1)} for u in names}


def allen_cahn_neumann(dim, n, samples, seed, eps=0.05, t_end=1.0, frames=11, m=None):
    """u_t = eps^2 lap u + u - u^3, zero normal derivative on every wall."""
    def rhs(t, f, X, box):
        u = f["u"]
        lap = sum(box.d(u, a, 2) for a in range(box.dim))
        return {"u": eps**2 * lap + u - u**3}

    def draw(rng):
        c = {(i, j): rng.normal() / (1 + i + j) for i in range(4) for j in range(4 if dim == 2 else 1)}
        amp = 0.8 / max(1.0, sum(abs(v) for v in c.values()))
        return {"u": lambda *X: amp * sum(v * np.cos(i * np.pi * X[0])
                                          * (np.cos(j * np.pi * X[1]) if dim == 2 else 1.0)
                                          for (i, j), v in c.items())}

    case = dict(names=["u"], keys=["tensor"], domain=[(0.0, 1.0)] * dim,
                bc=_zero_walls(["u"], dim, "neumann"), rhs=rhs,
                t=np.linspace(0.0, t_end, frames), grid="cell_centres", draw=draw)
    return _chebyshev_kind(case, n, samples, seed, m or (64 if dim == 1 else 36))


def fisher_robin2d(n, samples, seed, D=0.02, r=1.0, h=2.0):
    """u_t = D lap u + r u (1 - u), dn(u) + h u = 0 on every wall (-u_x + h u = 0 at x = 0)."""
    def rhs(t, f, X, box):
        u = f["u"]
        return {"u": D * (box.d(u, 0, 2) + box.d(u, 1, 2)) + r * u * (1 - u)}

    zero = (lambda t, s=None: 0.0)
    bc = {"u": {(ax, 0): (h, -1.0, zero) for ax in range(2)}
          | {(ax, 1): (h, 1.0, zero) for ax in range(2)}}

    # the first Robin eigenfunction cos(k (x - 1/2)), k tan(k/2) = h, is positive on [0, 1]
    lo_k, hi_k = 1e-6, np.pi - 1e-9
    for _ in range(200):
        mid = 0.5 * (lo_k + hi_k)
        lo_k, hi_k = (mid, hi_k) if mid * np.tan(mid / 2) < h else (lo_k, mid)
    phi = lambda x: np.cos(lo_k * (x - 0.5))  # noqa: E731

    def draw(rng):
        X, Y = _robin_profile(rng, h), _robin_profile(rng, h)
        grid = np.linspace(0.0, 1.0, 201)
        scale = np.max(np.abs(X(grid))) * np.max(np.abs(Y(grid)))
        A, B = rng.uniform(0.4, 0.6), rng.uniform(0.1, 0.15) / scale  # u0 stays in (0, 1)
        return {"u": lambda x, y: A * phi(x) * phi(y) + B * X(x) * Y(y)}

    case = dict(names=["u"], keys=["tensor"], domain=[(0.0, 1.0)] * 2, bc=bc, rhs=rhs,
                t=np.linspace(0.0, 1.0, 11), grid="cell_centres", draw=draw)
    return _chebyshev_kind(case, n, samples, seed, 28)


def gross_pitaevskii(dim, n, samples, seed, V0=5.0, g=1.0, t_end=0.2, frames=11, m=None):
    """psi = u + i v, i psi_t = -lap(psi)/2 + V psi + g |psi|^2 psi, psi = 0 on the walls,
    V = V0 sum_a cos(2 pi x_a)."""
    def rhs(t, f, X, box):
        u, v = f["u"], f["v"]
        lap = lambda w: sum(box.d(w, a, 2) for a in range(box.dim))  # noqa: E731
        V = V0 * sum(np.cos(2 * np.pi * Xa) for Xa in X)
        rho = u**2 + v**2
        return {"u": -0.5 * lap(v) + V * v + g * rho * v, "v": 0.5 * lap(u) - V * u - g * rho * u}

    def draw(rng):
        modes = [(i, j) for i in range(1, 4) for j in (range(1, 4) if dim == 2 else [0])]
        cu = {k: rng.normal() / sum(k) for k in modes}
        cv = {k: rng.normal() / sum(k) for k in modes}

        def field(c):
            return lambda *X: sum(v * np.sin(i * np.pi * X[0])
                                  * (np.sin(j * np.pi * X[1]) if dim == 2 else 1.0)
                                  for (i, j), v in c.items())
        return {"u": field(cu), "v": field(cv)}

    case = dict(names=["u", "v"], keys=["u", "v"], domain=[(0.0, 1.0)] * dim,
                bc=_zero_walls(["u", "v"], dim, "dirichlet"), rhs=rhs,
                t=np.linspace(0.0, t_end, frames), grid="cell_centres", draw=draw)
    return _chebyshev_kind(case, n, samples, seed, m or (48 if dim == 1 else 28))


# ---- 2D Fourier pseudo-spectral + DOP853 -------------------------------------------------------

def shear_advection2d(n, samples, seed, D=0.005, b=0.5, fine=3):
    """u_t + (1 + sin(2 pi y)/2) u_x + b u_y = D lap u on the periodic unit square."""
    nf = n * fine
    xf = (np.arange(nf) + 0.5) / nf
    X, Y = np.meshgrid(xf, xf, indexing="ij")
    k = 2 * np.pi * np.fft.fftfreq(nf, 1.0 / nf)
    KX, KY = np.meshgrid(k, k, indexing="ij")
    keep = (np.abs(np.fft.fftfreq(nf, 1.0 / nf))[:, None] < nf / 3) \
        & (np.abs(np.fft.fftfreq(nf, 1.0 / nf))[None, :] < nf / 3)
    a = 1 + np.sin(2 * np.pi * Y) / 2
    t = np.linspace(0.0, 1.0, 11)
    pick = np.arange(n) * fine + fine // 2

    def rhs(_, y):
        uh = np.fft.fft2(y.reshape(nf, nf)) * keep
        ux = np.real(np.fft.ifft2(1j * KX * uh))
        uy = np.real(np.fft.ifft2(1j * KY * uh))
        lap = np.real(np.fft.ifft2(-(KX**2 + KY**2) * uh))
        return (-a * ux - b * uy + D * lap).ravel()

    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n, n))
    for s in range(samples):
        u0 = np.zeros((nf, nf))
        for mx in range(-3, 4):
            for my in range(0, 4):
                if my == 0 and mx <= 0:
                    continue
                c, d = rng.normal(size=2) / np.hypot(mx, my)
                th = 2 * np.pi * (mx * X + my * Y)
                u0 += c * np.cos(th) + d * np.sin(th)
        sol = solve_ivp(rhs, (0.0, t[-1]), u0.ravel(), method="DOP853", t_eval=t, rtol=1e-11,
                        atol=1e-13)
        if not sol.success:
            raise RuntimeError(sol.message)
        u[s] = sol.y.T.reshape(t.size, nf, nf)[:, pick][:, :, pick]
    x = (np.arange(n) + 0.5) / n
    return {"tensor": u, "t-coordinate": t, "x-coordinate": x, "y-coordinate": x,
            "_method": f"Fourier pseudo-spectral on a {fine}x finer grid, 2/3 rule, DOP853 rtol 1e-11"}


WALL_KINDS = {
    # name: (kind, function(n, samples, seed), default n)
    "heat_dirichlet2d": ("exact", heat_dirichlet2d, 33),
    "heat_nodes1d": ("exact", heat_nodes1d, 65),
    "advection_diffusion_nodes1d": ("exact", advection_diffusion_nodes1d, 65),
    "tm_cavity2d": ("exact", tm_cavity2d, 32),
    "allen_cahn_neumann1d": ("chebyshev", lambda n, s, seed: allen_cahn_neumann(1, n, s, seed), 64),
    "allen_cahn_neumann2d": ("chebyshev", lambda n, s, seed: allen_cahn_neumann(
        2, n, s, seed, eps=0.05, t_end=0.5), 32),
    "fisher_robin2d": ("chebyshev", fisher_robin2d, 32),
    "gross_pitaevskii1d": ("chebyshev", lambda n, s, seed: gross_pitaevskii(1, n, s, seed), 64),
    "gross_pitaevskii2d": ("chebyshev", lambda n, s, seed: gross_pitaevskii(
        2, n, s, seed, t_end=0.1), 32),
    "shear_advection2d": ("fourier", shear_advection2d, 16),
}
