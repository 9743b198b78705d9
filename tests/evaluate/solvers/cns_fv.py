"""1D compressible Navier-Stokes (PDEBench form: density-weighted viscosity) by a finite-volume
scheme: MUSCL (minmod) reconstruction of primitive variables, Rusanov flux, central viscous
fluxes, SSP-RK2, dt from the acoustic CFL (0.4) and the explicit viscous limit. Periodic."""
import numpy as np

GAMMA = 5.0 / 3.0


def _minmod(a, b):
    return np.where(a * b > 0, np.sign(a) * np.minimum(np.abs(a), np.abs(b)), 0.0)


def _primitive(U):
    rho = U[0]
    v = U[1] / rho
    p = (GAMMA - 1.0) * (U[2] - 0.5 * rho * v * v)
    return rho, v, p


def _euler_flux(rho, v, p):
    E = p / (GAMMA - 1.0) + 0.5 * rho * v * v
    return np.stack([rho * v, rho * v * v + p, (E + p) * v])


def _rhs(U, dx, visc):
    W = np.stack(_primitive(U))
    slope = _minmod(W - np.roll(W, 1, -1), np.roll(W, -1, -1) - W)
    WL = W + 0.5 * slope                      # left state at face i+1/2
    WR = np.roll(W - 0.5 * slope, -1, -1)     # right state at face i+1/2
    WL[0] = np.maximum(WL[0], 1e-8)
    WR[0] = np.maximum(WR[0], 1e-8)
    WL[2] = np.maximum(WL[2], 1e-8)
    WR[2] = np.maximum(WR[2], 1e-8)

    def cons(w):
        return np.stack([w[0], w[0] * w[1], w[2] / (GAMMA - 1.0) + 0.5 * w[0] * w[1] ** 2])

    smax = np.maximum(np.abs(WL[1]) + np.sqrt(GAMMA * WL[2] / WL[0]),
                      np.abs(WR[1]) + np.sqrt(GAMMA * WR[2] / WR[0]))
    F = 0.5 * (_euler_flux(*WL) + _euler_flux(*WR)) - 0.5 * smax * (cons(WR) - cons(WL))
    rho, v, _ = W
    rho_face = 0.5 * (rho + np.roll(rho, -1, -1))
    dv = (np.roll(v, -1, -1) - v) / dx
    dv2 = (np.roll(v * v, -1, -1) - v * v) / dx
    F[1] -= visc * rho_face * dv
    F[2] -= 0.5 * visc * rho_face * dv2
    return -(F - np.roll(F, 1, -1)) / dx


def solver(Vx0, density0, pressure0, t_coordinate, eta, zeta):
    v0 = np.asarray(Vx0, dtype=np.float64)
    rho0 = np.asarray(density0, dtype=np.float64)
    p0 = np.asarray(pressure0, dtype=np.float64)
    n = v0.shape[-1]
    dx = 2.0 / n  # domain [-1, 1]
    visc = zeta + 4.0 * eta / 3.0
    U = np.stack([rho0, rho0 * v0, p0 / (GAMMA - 1.0) + 0.5 * rho0 * v0**2])
    T = len(t_coordinate)
    out = np.empty((3, v0.shape[0], T, n))
    out[0, :, 0], out[1, :, 0], out[2, :, 0] = v0, rho0, p0
    for j in range(1, T):
        t, t_end = float(t_coordinate[j - 1]), float(t_coordinate[j])
        while t < t_end - 1e-12:
            rho, v, p = _primitive(U)
            c = np.sqrt(GAMMA * np.maximum(p, 1e-8) / np.maximum(rho, 1e-8))
            dt = min(0.4 * dx / np.max(np.abs(v) + c), 0.4 * dx * dx / (2.0 * visc), t_end - t)
            U1 = U + dt * _rhs(U, dx, visc)
            U = 0.5 * U + 0.5 * (U1 + dt * _rhs(U1, dx, visc))
            t += dt
        rho, v, p = _primitive(U)
        out[0, :, j], out[1, :, j], out[2, :, j] = v, rho, p
    return out[0], out[1], out[2]
