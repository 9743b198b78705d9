"""References for the example tasks of the equation forms users type (issue 19, items 5-7), by
methods that share no code with pdesharp's solver catalogue:

* closed forms: the KdV soliton, the BBM solitary wave, viscous Burgers and the viscous
  Hamilton-Jacobi (KPZ) equation through the Cole-Hopf transform (a heat solution phi > 0 in
  cosines), sine-Gordon breathers and kinks, damped heat and a heater switched on in a slab (sine
  series, the source's coefficients summed to 40000 modes), a plane-wave solution of
  anisotropic diffusion with a cross derivative;
* ``riemann``: the exact solution of Riemann problems for the Euler equations (the pressure
  in the star region by Newton's method, Toro's rarefaction fans), averaged over every output
  cell by Gauss-Legendre quadrature on 64 sub-cells (the discontinuities make point values a
  poor reference for cell averages); the primitive variables are those of the averaged
  conserved quantities;
* ``radau``: Cahn-Hilliard's right-hand side written out by hand below, Fourier
  differentiation matrices on a grid 3x finer than the output (every output point is a fine
  point), SciPy's Radau IIA with the analytic Jacobian (rtol 1e-10). Neumann walls are the
  even extension to a periodic box of twice the length (what u_x = u_xxx = 0 at the walls means).

Each file records its method in the ``method`` attribute.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def centres(n: int, lo: float, hi: float) -> np.ndarray:
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


def _out(fields: dict, t, x, method: str, y=None) -> dict:
    out = dict(fields)
    out.update({"t-coordinate": t, "x-coordinate": x, "_method": method})
    if y is not None:
        out["y-coordinate"] = y
    return out


# ---- closed forms ------------------------------------------------------------------------------

def kdv_soliton(n, samples, seed):
    """u_t + 6 u u_x + u_xxx = 0 on (0, 40) periodic: u = c/2 sech^2(sqrt(c)/2 (x - c t - x0)),
    summed over the periodic images (the tails are below 1e-12 there)."""
    L, x, t = 40.0, centres(n, 0.0, 40.0), np.linspace(0.0, 4.0, 21)
    rng = np.random.default_rng(seed)
    u = np.zeros((samples, t.size, n))
    for s in range(samples):
        c, x0 = rng.uniform(1.0, 2.0), rng.uniform(10.0, 20.0)
        for m in (-2, -1, 0, 1, 2):
            arg = 0.5 * np.sqrt(c) * (x[None] - c * t[:, None] - x0 + m * L)
            u[s] += 0.5 * c / np.cosh(arg) ** 2
    return _out({"tensor": u}, t, x, "exact: the KdV soliton (periodic images summed)")


def _heat_phi(rng, x, t, nu, length, wall: bool, modes=3, strength=0.8):
    """phi > 0 solving phi_t = nu phi_xx: 1 + sum a_m exp(-nu k^2 t) cos(k x + theta), with
    sum |a_m| = strength < 1; cosines of k = m pi / L between Neumann walls (theta = 0)."""
    a = rng.uniform(0.2, 1.0, modes)
    a *= strength / a.sum()
    phi = np.ones((t.size, x.size))
    dphi = np.zeros_like(phi)
    for m in range(1, modes + 1):
        k = (np.pi if wall else 2 * np.pi) * m / length
        th = 0.0 if wall else rng.uniform(0, 2 * np.pi)
        decay = a[m - 1] * np.exp(-nu * k**2 * t)[:, None]
        phi += decay * np.cos(k * x[None] + th)
        dphi += -decay * k * np.sin(k * x[None] + th)
    return phi, dphi


def burgers_cole_hopf(n, samples, seed, wall: bool):
    """u_t + u u_x = nu u_xx on (0, 1): u = -2 nu phi_x / phi (Cole-Hopf); periodic, or u = 0 at
    the walls (phi in cosines: phi_x = 0 there)."""
    nu, x, t = 0.02, centres(n, 0.0, 1.0), np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    for s in range(samples):
        phi, dphi = _heat_phi(rng, x, t, nu, 1.0, wall, strength=0.9)
        u[s] = -2 * nu * dphi / phi
    return _out({"tensor": u}, t, x, "exact: Cole-Hopf, u = -2 nu phi_x / phi")


def kpz_cole_hopf(n, samples, seed):
    """u_t = nu u_xx + lam/2 u_x^2 on (0, 1), u_x = 0 at the walls: u = (2 nu / lam) log phi."""
    nu, lam, x, t = 0.05, 1.0, centres(n, 0.0, 1.0), np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    for s in range(samples):
        phi, _ = _heat_phi(rng, x, t, nu, 1.0, True, strength=0.9)
        u[s] = 2 * nu / lam * np.log(phi)
    return _out({"tensor": u}, t, x, "exact: Cole-Hopf, u = (2 nu / lam) log phi")


def damped_heat(n, samples, seed):
    """tau (u_t - nu u_xx) + u = 0 on (0, 1), u = 0 at the walls: sine modes decaying at
    nu (m pi)^2 + 1/tau."""
    tau, nu, x, t = 0.5, 0.05, centres(n, 0.0, 1.0), np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(seed)
    u = np.zeros((samples, t.size, n))
    for s in range(samples):
        for m in range(1, 6):
            rate = nu * (m * np.pi) ** 2 + 1 / tau
            u[s] += rng.normal() / m * np.exp(-rate * t)[:, None] * np.sin(m * np.pi * x)[None]
    return _out({"tensor": u}, t, x, "exact: sine series")


def heater(n, samples, seed):
    """u_t = nu u_xx + q 1_(a, b)(x) on (0, 1), u = 0 at the walls: each sine mode relaxes to
    f_m / lambda_m, f_m = 2 q (cos(m pi a) - cos(m pi b)) / (m pi)."""
    nu, q, a, b = 0.05, 1.0, 0.25, 0.75
    x, t = centres(n, 0.0, 1.0), np.linspace(0.0, 1.0, 21)
    m = np.arange(1, 40001)
    lam = nu * (m * np.pi) ** 2
    f = 2 * q * (np.cos(m * np.pi * a) - np.cos(m * np.pi * b)) / (m * np.pi)
    S = np.sin(np.pi * np.outer(m, x))  # [modes, n]
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    for s in range(samples):
        u0 = np.zeros(m.size)
        u0[:5] = rng.normal(0, 0.1, 5) / np.arange(1, 6)
        coef = u0[None] * np.exp(-lam * t[:, None]) + (f / lam)[None] * (
            1 - np.exp(-lam * t[:, None]))
        u[s] = coef @ S
    return _out({"tensor": u}, t, x, "exact: sine series of the heater, 40000 modes")


def bbm_soliton(n, samples, seed, walls: bool):
    """u_t + u_x + u u_x - u_xxt = 0: u = 3 (c - 1) sech^2(sqrt((c - 1)/c) (x - c t - x0) / 2);
    on (-80, 80) periodic or (-60, 60) between walls u = 0 (the tails are below 1e-12 of the
    amplitude at the walls)."""
    half = 60.0 if walls else 80.0
    x, t = centres(n, -half, half), np.linspace(0.0, 10.0, 21)
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    for s in range(samples):
        c, x0 = rng.uniform(1.3, 2.0), rng.uniform(-15.0, -5.0)
        kappa = 0.5 * np.sqrt((c - 1) / c)
        u[s] = 3 * (c - 1) / np.cosh(kappa * (x[None] - c * t[:, None] - x0)) ** 2
    return _out({"tensor": u}, t, x, "exact: the BBM solitary wave")


def sine_gordon_breather(n, samples, seed):
    """u_t = v, v_t = u_xx - sin(u) on (-40, 40) periodic: the breather
    u = 4 atan(sqrt(1 - w^2)/w sin(w (t + t0)) / cosh(sqrt(1 - w^2)(x - x0))), v = u_t."""
    x, t = centres(n, -40.0, 40.0), np.linspace(0.0, 10.0, 21)
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    v = np.empty_like(u)
    for s in range(samples):
        w, t0, x0 = rng.uniform(0.5, 0.8), rng.uniform(0, 5), rng.uniform(-5, 5)
        g = np.sqrt(1 - w**2)
        T, X = t[:, None] + t0, x[None] - x0
        A = g / w * np.sin(w * T) / np.cosh(g * X)
        u[s] = 4 * np.arctan(A)
        v[s] = 4 / (1 + A**2) * g * np.cos(w * T) / np.cosh(g * X)
    return _out({"u": u, "v": v}, t, x, "exact: the sine-Gordon breather")


def sine_gordon_kink(n, samples, seed):
    """The same equations on (-20, 20) with u = 0 at x = -20 and u = 2 pi at x = 20: a kink
    u = 4 atan(exp(g (x - s t - x0))), g = 1/sqrt(1 - s^2), v = u_t (tails below 1e-6 at the
    walls over the run: the walls' data differ from the kink's by that much)."""
    x, t = centres(n, -20.0, 20.0), np.linspace(0.0, 5.0, 21)
    rng = np.random.default_rng(seed)
    u = np.empty((samples, t.size, n))
    v = np.empty_like(u)
    for s in range(samples):
        sp_, x0 = rng.uniform(-0.4, 0.4), rng.uniform(-2.0, 2.0)
        g = 1 / np.sqrt(1 - sp_**2)
        z = g * (x[None] - sp_ * t[:, None] - x0)
        u[s] = 4 * np.arctan(np.exp(z))
        v[s] = -sp_ * g * 2 / np.cosh(z)
    return _out({"u": u, "v": v}, t, x, "exact: the sine-Gordon kink")


def cross_diffusion(n, samples, seed):
    """u_t = a u_xx + b u_xy + c u_yy on (0, 1)^2, Dirichlet data of the exact solution
    P = sum_k exp(-(a kx^2 + b kx ky + c ky^2) t) cos(kx x + ky y + th) (the YAML's formula)."""
    a, b, c = 0.02, 0.015, 0.01
    waves = [(2.0, 3.0, 0.3, 1.0), (-4.0, 5.0, 1.1, 0.5), (7.0, 1.0, -0.4, 0.25)]
    x, t = centres(n, 0.0, 1.0), np.linspace(0.0, 2.0, 11)
    X, Y = np.meshgrid(x, x, indexing="ij")
    u = np.zeros((1, t.size, n, n))
    for kx, ky, th, amp in waves:
        rate = a * kx**2 + b * kx * ky + c * ky**2
        u[0] += amp * np.exp(-rate * t)[:, None, None] * np.cos(kx * X + ky * Y + th)[None]
    u = np.repeat(u, samples, axis=0)
    return _out({"tensor": u}, t, x, "exact: plane waves of anisotropic diffusion", y=x)


# ---- exact Riemann solutions -------------------------------------------------------------------

def _pressure_function(p, rho, pk, ck, gamma):
    """Toro's f_K(p) and its derivative: shock (p > p_K) or rarefaction branch."""
    if p > pk:
        A, B = 2 / ((gamma + 1) * rho), (gamma - 1) / (gamma + 1) * pk
        f = (p - pk) * np.sqrt(A / (p + B))
        df = np.sqrt(A / (B + p)) * (1 - (p - pk) / (2 * (B + p)))
    else:
        f = 2 * ck / (gamma - 1) * ((p / pk) ** ((gamma - 1) / (2 * gamma)) - 1)
        df = 1 / (rho * ck) * (p / pk) ** (-(gamma + 1) / (2 * gamma))
    return f, df


def riemann_exact(left, right, gamma, xi):
    """Exact (rho, v, p) at the similarity coordinates xi = (x - x0) / t."""
    rl, ul, pl = left
    rr, ur, pr = right
    cl, cr = np.sqrt(gamma * pl / rl), np.sqrt(gamma * pr / rr)
    p = max(1e-8, 0.5 * (pl + pr) - 0.125 * (ur - ul) * (rl + rr) * (cl + cr))
    for _ in range(100):
        fl, dfl = _pressure_function(p, rl, pl, cl, gamma)
        fr, dfr = _pressure_function(p, rr, pr, cr, gamma)
        step = (fl + fr + ur - ul) / (dfl + dfr)
        new = max(1e-10, p - step)
        if abs(new - p) < 1e-15 * (new + p):
            p = new
            break
        p = new
    fl, _ = _pressure_function(p, rl, pl, cl, gamma)
    fr, _ = _pressure_function(p, rr, pr, cr, gamma)
    u = 0.5 * (ul + ur) + 0.5 * (fr - fl)
    g1, g2 = (gamma - 1) / (gamma + 1), (gamma - 1) / (2 * gamma)
    out = np.empty((3, xi.size))
    for k, s in enumerate(xi):
        if s <= u:  # left of the contact
            if p > pl:
                rho_s = rl * (p / pl + g1) / (g1 * p / pl + 1)
                shock = ul - cl * np.sqrt((gamma + 1) / (2 * gamma) * p / pl + g2)
                out[:, k] = (rl, ul, pl) if s < shock else (rho_s, u, p)
            else:
                c_s = cl * (p / pl) ** g2
                head, tail = ul - cl, u - c_s
                if s < head:
                    out[:, k] = (rl, ul, pl)
                elif s > tail:
                    out[:, k] = (rl * (p / pl) ** (1 / gamma), u, p)
                else:
                    vel = 2 / (gamma + 1) * (cl + (gamma - 1) / 2 * ul + s)
                    c = 2 / (gamma + 1) * (cl + (gamma - 1) / 2 * (ul - s))
                    rho = rl * (c / cl) ** (2 / (gamma - 1))
                    out[:, k] = (rho, vel, pl * (c / cl) ** (2 * gamma / (gamma - 1)))
        else:
            if p > pr:
                rho_s = rr * (p / pr + g1) / (g1 * p / pr + 1)
                shock = ur + cr * np.sqrt((gamma + 1) / (2 * gamma) * p / pr + g2)
                out[:, k] = (rr, ur, pr) if s > shock else (rho_s, u, p)
            else:
                c_s = cr * (p / pr) ** g2
                head, tail = ur + cr, u + c_s
                if s > head:
                    out[:, k] = (rr, ur, pr)
                elif s < tail:
                    out[:, k] = (rr * (p / pr) ** (1 / gamma), u, p)
                else:
                    vel = 2 / (gamma + 1) * (-cr + (gamma - 1) / 2 * ur + s)
                    c = 2 / (gamma + 1) * (cr - (gamma - 1) / 2 * (ur - s))
                    rho = rr * (c / cr) ** (2 / (gamma - 1))
                    out[:, k] = (rho, vel, pr * (c / cr) ** (2 * gamma / (gamma - 1)))
    return out


RIEMANN_PROBLEMS = [  # (left, right): Sod, Lax, then random ones
    ((1.0, 0.0, 1.0), (0.125, 0.0, 0.1)),
    ((0.445, 0.698, 3.528), (0.5, 0.0, 0.571)),
]


def euler_riemann(n, samples, seed, gamma=1.4, t_end=0.15, x0=0.5, sub=64):
    """Riemann problems for the 1D Euler equations on (0, 1), the jump at x0 = 0.5 (a cell face
    for even N), Neumann walls (no wave reaches them by t_end): the exact solution's cell
    averages (conserved quantities, Gauss-Legendre on ``sub`` sub-cells of 4 points)."""
    x, t = centres(n, 0.0, 1.0), np.linspace(0.0, t_end, 11)
    h = 1.0 / n
    gl, gw = np.polynomial.legendre.leggauss(4)
    offs = (np.arange(sub)[:, None] + 0.5 + 0.5 * gl[None]) / sub - 0.5  # in units of h
    wts = np.repeat(gw[None] / 2, sub, axis=0).ravel() / sub
    pts = (x[:, None] + h * offs.ravel()[None])  # [n, sub*4]
    rng = np.random.default_rng(seed)
    problems = list(RIEMANN_PROBLEMS) if seed == 0 else []
    while len(problems) < samples:
        rl, rr = rng.uniform(0.2, 1.5, 2)
        pl, pr = rng.uniform(0.1, 2.0, 2)
        ul, ur = rng.uniform(-0.3, 0.3, 2)
        problems.append(((rl, ul, pl), (rr, ur, pr)))
    rho = np.empty((samples, t.size, n))
    vel, pre = np.empty_like(rho), np.empty_like(rho)
    for s, (left, right) in enumerate(problems[:samples]):
        for k, tk in enumerate(t):
            if tk == 0.0:
                W = np.where(pts < x0, np.array(left)[:, None, None], np.array(right)[:, None, None])
            else:
                W = riemann_exact(left, right, gamma, (pts.ravel() - x0) / tk).reshape(3, n, -1)
            r, u, p = W
            mass = (r * wts).sum(-1)
            mom = (r * u * wts).sum(-1)
            energy = ((p / (gamma - 1) + 0.5 * r * u**2) * wts).sum(-1)
            rho[s, k], vel[s, k] = mass, mom / mass
            pre[s, k] = (gamma - 1) * (energy - 0.5 * mom**2 / mass)
    return _out({"rho": rho, "v": vel, "p": pre}, t, x,
                "exact Riemann solutions, cell averages of the conserved quantities (64 x 4"
                " Gauss-Legendre points per cell)")


# ---- Cahn-Hilliard: Fourier differentiation matrices + Radau ------------------------------------

def _fourier_matrix(nf, length, order):
    """The order-th Fourier differentiation matrix on nf equispaced points of a periodic box."""
    k = 2 * np.pi * np.fft.fftfreq(nf, d=length / nf)
    sym = (1j * k) ** order
    if order % 2 and nf % 2 == 0:
        sym[nf // 2] = 0.0
    eye = np.eye(nf)
    return np.real(np.fft.ifft(sym[:, None] * np.fft.fft(eye, axis=0), axis=0))


def cahn_hilliard(n, samples, seed, walls: bool, eps=0.05, t_end=0.02, fine=3):
    """u_t = (u^3 - u - eps^2 u_xx)_xx on (0, 1): periodic, or Neumann walls through the even
    extension to (-1, 1). Fourier matrices on fine x the output grid, Radau (rtol 1e-10)."""
    x, t = centres(n, 0.0, 1.0), np.linspace(0.0, t_end, 11)
    nf = fine * n * (2 if walls else 1)
    length = 2.0 if walls else 1.0
    lo = -1.0 if walls else 0.0
    xf = centres(nf, lo, lo + length)
    pick = (np.arange(n) * fine + fine // 2) + (fine * n if walls else 0)
    D2, D4 = _fourier_matrix(nf, length, 2), _fourier_matrix(nf, length, 4)

    def rhs(_, u):
        return D2 @ (u**3 - u) - eps**2 * (D4 @ u)

    def jac(_, u):
        return D2 * (3 * u**2 - 1)[None] - eps**2 * D4

    rng = np.random.default_rng(seed)
    out = np.empty((samples, t.size, n))
    for s in range(samples):
        u0 = np.zeros_like(xf)
        for m in range(1, 6):
            arg = (np.pi if walls else 2 * np.pi) * m * xf
            ph = 0.0 if walls else rng.uniform(0, 2 * np.pi)
            u0 += rng.normal(0, 0.3) / m * np.cos(arg + ph)
        sol = solve_ivp(rhs, (0, t_end), u0, method="Radau", jac=jac, t_eval=t, rtol=1e-10,
                        atol=1e-12)
        if not sol.success:
            raise RuntimeError(f"Cahn-Hilliard reference failed: {sol.message}")
        out[s] = sol.y[pick].T
    how = "even extension to (-1, 1), " if walls else ""
    return _out({"tensor": out}, t, x, f"Cahn-Hilliard: {how}Fourier differentiation matrices on"
                f" a {fine}x grid, SciPy Radau rtol 1e-10 with the analytic Jacobian")


TERMS_KINDS = {
    # name: (kind, function(n, samples, seed), default n)
    "kdv_soliton1d": ("exact", kdv_soliton, 256),
    "burgers_nonconservative1d": ("exact", lambda n, s, seed: burgers_cole_hopf(
        n, s, seed, False), 128),
    "burgers_nonconservative_walls1d": ("exact", lambda n, s, seed: burgers_cole_hopf(
        n, s, seed, True), 128),
    "kpz_neumann1d": ("exact", kpz_cole_hopf, 64),
    "damped_heat_walls1d": ("exact", damped_heat, 64),
    "heater_piecewise1d": ("exact", heater, 64),
    "bbm_soliton1d": ("exact", lambda n, s, seed: bbm_soliton(n, s, seed, False), 256),
    "bbm_walls1d": ("exact", lambda n, s, seed: bbm_soliton(n, s, seed, True), 192),
    "sine_gordon_breather1d": ("exact", sine_gordon_breather, 128),
    "sine_gordon_kink1d": ("exact", sine_gordon_kink, 128),
    "cross_diffusion2d": ("exact", cross_diffusion, 24),
    "sod1d": ("riemann", euler_riemann, 256),
    "cahn_hilliard1d": ("radau", lambda n, s, seed: cahn_hilliard(n, s, seed, False), 64),
    "cahn_hilliard_neumann1d": ("radau", lambda n, s, seed: cahn_hilliard(n, s, seed, True), 64),
}
