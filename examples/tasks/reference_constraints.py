"""References for the example tasks with constraints (issue 26, item 1), by methods that share
no code with pdesharp's solver catalogue or its generators: right-hand sides written out by
hand below, Fourier pseudo-spectral differentiation on a grid ``FINE`` (3) times finer than the
output (every output cell centre is a fine point: the output is a plain sample), 2/3
dealiasing, SciPy's DOP853 (rtol 1e-11), restarted at every frame.

* ``ns_vorticity2d``: the vorticity equation with the streamfunction from lap psi = -w;
* ``ns_velocity2d``: the velocity form with a pressure, computed through a *different*
  formulation: the vorticity of the initial velocity is evolved as above, then u = dy(psi),
  v = -dx(psi) and the pressure from lap p = -(u_x**2 + 2 u_y v_x + v_y**2) (zero mean);
* ``keller_segel2d``: Keller-Segel between Neumann walls, on the even extension of the square
  to a periodic box of twice the side (what dn = 0 at the walls means for smooth solutions),
  with lap c - c + u = 0 solved per mode.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

FINE = 3


def _k(n, length):
    return 2 * np.pi * np.fft.fftfreq(n, length / n)


def _setup(nf, length):
    k = _k(nf, length)
    KX, KY = np.meshgrid(k, k, indexing="ij")
    m = np.abs(np.fft.fftfreq(nf, 1.0 / nf))
    keep = (3 * m[:, None] < nf) & (3 * m[None, :] < nf)
    return KX, KY, KX**2 + KY**2, keep


def _d(h, K):
    return np.real(np.fft.ifft2(1j * K * h))


def _frames(rhs, y0, t, shape):
    out, y = [y0.reshape(shape)], y0.ravel()
    for a, b in zip(t[:-1], t[1:]):
        sol = solve_ivp(rhs, (a, b), y, method="DOP853", rtol=1e-11, atol=1e-13)
        assert sol.status == 0, sol.message
        y = sol.y[:, -1]
        out.append(y.reshape(shape))
    return np.array(out)


def _random_stream(rng, X, Y, modes=4):
    psi = np.zeros_like(X)
    for mx in range(-modes, modes + 1):
        for my in range(0, modes + 1):
            if my == 0 and mx <= 0:
                continue
            a, b = rng.standard_normal(2) / (mx * mx + my * my) ** 1.5
            th = 2 * np.pi * (mx * X + my * Y)
            psi += a * np.cos(th) + b * np.sin(th)
    return psi


def _vorticity_run(w0, nu, t, nf):
    KX, KY, K2, keep = _setup(nf, 1.0)
    inv = np.where(K2 > 0, 1.0 / np.where(K2 > 0, K2, 1.0), 0.0)

    def rhs(_, y):
        wh = np.fft.fft2(y.reshape(nf, nf)) * keep
        ph = wh * inv
        jac = _d(ph, KY) * _d(wh, KX) - _d(ph, KX) * _d(wh, KY)
        return np.real(np.fft.ifft2(-np.fft.fft2(jac) * keep - nu * K2 * wh)).ravel()

    return _frames(rhs, w0, t, (nf, nf)), (KX, KY, K2, inv, keep)


def ns_vorticity(n, samples, seed):
    nu, nf = 1e-3, FINE * n
    t = np.linspace(0.0, 1.0, 11)
    xf = (np.arange(nf) + 0.5) / nf
    X, Y = np.meshgrid(xf, xf, indexing="ij")
    rng = np.random.default_rng(seed)
    W, P = [], []
    for _ in range(samples):
        psi = _random_stream(rng, X, Y)
        w0 = -np.real(np.fft.ifft2(-_setup(nf, 1.0)[2] * np.fft.fft2(psi)))
        w0 /= np.abs(w0).max()
        w, (_, _, _, inv, keep) = _vorticity_run(w0, nu, t, nf)
        W.append(w[:, 1::FINE, 1::FINE])
        P.append(np.real(np.fft.ifft2(np.fft.fft2(w, axes=(1, 2)) * keep * inv,
                                      axes=(1, 2)))[:, 1::FINE, 1::FINE])
    x = (np.arange(n) + 0.5) / n
    return {"w": np.array(W), "psi": np.array(P), "t-coordinate": t, "x-coordinate": x,
            "y-coordinate": x, "_method": "vorticity form, Fourier 3x grid, 2/3 rule, DOP853 rtol"
                                          " 1e-11 (examples/tasks/reference_constraints.py)"}


def ns_velocity(n, samples, seed):
    nu, nf = 1e-2, FINE * n
    t = np.linspace(0.0, 1.0, 11)
    xf = (np.arange(nf) + 0.5) / nf
    X, Y = np.meshgrid(xf, xf, indexing="ij")
    rng = np.random.default_rng(seed)
    U, V, P = [], [], []
    for _ in range(samples):
        KX, KY, K2, keep = _setup(nf, 1.0)
        ph = np.fft.fft2(_random_stream(rng, X, Y))
        scale = max(np.abs(_d(ph, KY)).max(), np.abs(_d(ph, KX)).max())
        w0 = np.real(np.fft.ifft2(K2 * ph)) / scale  # w = -lap psi
        w, (KX, KY, K2, inv, keep) = _vorticity_run(w0, nu, t, nf)
        u_, v_, p_ = [], [], []
        for wk in w:
            psh = np.fft.fft2(wk) * keep * inv
            u, v = _d(psh, KY), -_d(psh, KX)
            uh, vh = np.fft.fft2(u), np.fft.fft2(v)
            src = _d(uh, KX) ** 2 + 2 * _d(uh, KY) * _d(vh, KX) + _d(vh, KY) ** 2
            p = np.real(np.fft.ifft2(np.fft.fft2(src) * inv))  # lap p = -src, zero mean
            u_.append(u[1::FINE, 1::FINE])
            v_.append(v[1::FINE, 1::FINE])
            p_.append(p[1::FINE, 1::FINE])
        U.append(u_)
        V.append(v_)
        P.append(p_)
    x = (np.arange(n) + 0.5) / n
    return {"u": np.array(U), "v": np.array(V), "p": np.array(P), "t-coordinate": t,
            "x-coordinate": x, "y-coordinate": x,
            "_method": "vorticity form on a Fourier 3x grid (DOP853 rtol 1e-11), velocity from"
                       " the streamfunction, pressure from its Poisson equation"}


def keller_segel(n, samples, seed):
    D, chi, nf = 0.1, 1.0, FINE * n
    t = np.linspace(0.0, 0.5, 11)
    ne = 2 * nf  # the even extension to (-1, 1)
    xe = -1.0 + (np.arange(ne) + 0.5) / nf
    X, Y = np.meshgrid(xe, xe, indexing="ij")
    KX, KY, K2, keep = _setup(ne, 2.0)
    rng = np.random.default_rng(seed)
    U, C = [], []
    for _ in range(samples):
        u0 = np.zeros_like(X)
        for mx in range(0, 5):
            for my in range(0, 5):
                if mx + my:
                    u0 += rng.standard_normal() / (mx * mx + my * my) * np.cos(
                        np.pi * mx * X) * np.cos(np.pi * my * Y)
        u0 = 1.0 + 0.5 * u0 / np.abs(u0).max()

        def rhs(_, y):
            uh = np.fft.fft2(y.reshape(ne, ne)) * keep
            ch = uh / (1.0 + K2)
            u = np.real(np.fft.ifft2(uh))
            flux_x, flux_y = u * _d(ch, KX), u * _d(ch, KY)
            div = _d(np.fft.fft2(flux_x), KX) + _d(np.fft.fft2(flux_y), KY)
            return np.real(np.fft.ifft2(-D * K2 * uh - chi * np.fft.fft2(div) * keep)).ravel()

        u = _frames(rhs, u0, t, (ne, ne))
        c = np.real(np.fft.ifft2(np.fft.fft2(u, axes=(1, 2)) * keep / (1.0 + K2), axes=(1, 2)))
        sl = slice(nf + 1, None, FINE)  # the output cell centres of (0, 1)
        U.append(u[:, sl, sl])
        C.append(c[:, sl, sl])
    x = (np.arange(n) + 0.5) / n
    return {"u": np.array(U), "c": np.array(C), "t-coordinate": t, "x-coordinate": x,
            "y-coordinate": x, "_method": "even extension to a periodic box, Fourier 3x grid,"
                                          " 2/3 rule, DOP853 rtol 1e-11"}


CONSTRAINT_KINDS = {
    # name: (kind, function(n, samples, seed), default n)
    "ns_vorticity2d": ("dop853", ns_vorticity, 32),
    "ns_velocity2d": ("dop853", ns_velocity, 32),
    "keller_segel2d": ("dop853", keller_segel, 32),
}


# ---- steady systems (issue 26, item 2): closed forms ------------------------------------------

def stokes(n, samples, seed):
    """The manufactured Stokes solution of stokes2d.yaml at the cell centres (p has zero mean)."""
    x = (np.arange(n) + 0.5) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    u = np.pi * np.sin(np.pi * X) ** 2 * np.sin(2 * np.pi * Y)
    v = -np.pi * np.sin(2 * np.pi * X) * np.sin(np.pi * Y) ** 2
    p = np.cos(np.pi * X) * np.cos(np.pi * Y)
    rep = lambda a: np.repeat(a[None], samples, axis=0)  # noqa: E731
    return {"u": rep(u), "v": rep(v), "p": rep(p), "x-coordinate": x, "y-coordinate": x,
            "_method": "closed form (manufactured solution)"}


def timoshenko(n, samples, seed, EI=1.0, kGA=10.0, q=1.0):
    """Clamped-free Timoshenko beam under a uniform load q: shear gamma = q (1 - x) / kGA,
    theta = q (1 - (1 - x)^3) / (6 EI), w = int_0^x (theta + gamma)."""
    x = np.linspace(0.0, 1.0, n)
    theta = q * (1 - (1 - x) ** 3) / (6 * EI)
    w = q / (6 * EI) * (x + ((1 - x) ** 4 - 1) / 4) + q / kGA * (x - x**2 / 2)
    rep = lambda a: np.repeat(a[None], samples, axis=0)  # noqa: E731
    return {"w": rep(w), "theta": rep(theta), "x-coordinate": x,
            "_method": "closed form (a polynomial)"}


CONSTRAINT_KINDS.update({
    "stokes2d": ("exact", stokes, 32),
    "timoshenko_beam1d": ("exact", timoshenko, 65),
})
