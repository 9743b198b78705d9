"""Converged references for the side-by-side bench: one ETDRK4 pseudo-spectral engine, independent
of both pdesharp's solvers and the libraries compared.

Every case of the suite is a semilinear system ``dt w_i = L_i w_i + N_i(w)`` with a constant
diagonal linear part and a local nonlinearity (an x-derivative of u^2 at most), on a periodic box
or on a box with Neumann walls. A Neumann box is solved as the periodic box of twice its size with
the even reflection of the data: the reflected field is an exact solution of the periodic problem
(every term here commutes with the reflection), and it is smooth when the data's cosine series is.

The engine works on an ``REFINE`` times finer grid than the data (zero-padded Fourier
interpolation of the initial data, treated as samples at x0 + j h: every case is autonomous and
translation invariant, so the offset of the cell centres does not matter), with the 2/3 rule on
that grid, so the data's modes are all kept. ETDRK4 (Cox-Matthews) with the Kassam-Trefethen
contour coefficients, ``substeps`` equal steps per output interval. The output is the fine
solution's values at the data points (every REFINE-th fine point), as the libraries and
pdesharp's winners give theirs: not its Fourier series cut to the data's modes, which differs
from the point values by the modes above the data's Nyquist (3.6e-4 on APEBench Gray-Scott).

Its error, in two parts (:func:`converged`), each measured per sample as an nRMSE-style ratio
of norms: in time, bounded by the distance to the same run with half the steps (ETDRK4: the
coarser run's error is about 16x the finer one's, so this distance over-estimates the finer
run's error by ~15x); in space, estimated by the distance to the same run (same steps) on a grid
one data spacing finer per REFINE (``refine + 1``): the spectral error falls by orders of
magnitude per step of refinement on a resolved run, so that distance is the coarser run's own
spatial error. (Until 2026-11-30 the spatial part was the spectral tail, the norm of the upper
half of the kept modes: an upper estimate so loose that it was 2e6x the measured error on
Swift-Hohenberg and 1e4x on Gray-Scott.)
"""

from __future__ import annotations

import numpy as np


def _wavenumbers(shape, lengths):
    ks = []
    for a, (n, length) in enumerate(zip(shape, lengths)):
        m = np.fft.rfftfreq(n, 1.0 / n) if a == len(shape) - 1 else np.fft.fftfreq(n, 1.0 / n)
        ks.append((2.0 * np.pi / length * m).reshape((-1,) + (1,) * (len(shape) - a - 1)))
    return ks


def _mask(shape, rule=3):
    """The modes |m_a| < n_a / rule on every axis (rule 3: Orszag's 2/3 rule)."""
    keep = True
    for a, n in enumerate(shape):
        m = np.fft.rfftfreq(n, 1.0 / n) if a == len(shape) - 1 else np.fft.fftfreq(n, 1.0 / n)
        keep = keep & (rule * np.abs(m) < n).reshape((-1,) + (1,) * (len(shape) - a - 1))
    return keep


def _resample(vh, old, new):
    """rfftn coefficients on grid ``old`` moved to grid ``new`` (zero padding or truncation),
    scaled so that the inverse transform gives point values on the new grid."""
    out = np.zeros(vh.shape[:-len(old)] + tuple(new[:-1]) + (new[-1] // 2 + 1,), dtype=complex)
    src, dst = [], []
    for a, (no, nn) in enumerate(zip(old, new)):
        last = a == len(old) - 1
        m = np.arange(no // 2 + 1) if last else np.fft.fftfreq(no, 1.0 / no).astype(int)
        keep = np.nonzero(2 * np.abs(m) < min(no, nn))[0]
        src.append(keep)
        dst.append(m[keep] if last else m[keep] % nn)
    out[(Ellipsis,) + np.ix_(*dst)] = vh[(Ellipsis,) + np.ix_(*src)] * (np.prod(new) / np.prod(old))
    return out


def reflect(w, dims):
    """Even reflection of cell-centre data [..., N1(, N2)] across the upper wall of each axis."""
    for a in range(dims):
        w = np.concatenate([w, np.flip(w, axis=w.ndim - dims + a)], axis=w.ndim - dims + a)
    return w


def etdrk4(w0, times, lengths, symbol, nonlinear, refine=3, substeps=64, walls=False):
    """Solve from ``w0`` [var, B, N...] (float64) to every time of ``times``; returns
    [var, B, T, N...] at the data points. ``symbol(ks)`` gives the linear symbols [var, *kshape]
    (ks: the angular wavenumbers per axis); ``nonlinear(W, ks, dealiased_spectrum)`` gives N(w)
    in physical space from the fields W [var, B, ...] (and their spectrum, for derivatives)."""
    w0 = np.asarray(w0, dtype=np.float64)
    dims = len(lengths)
    lengths = tuple(2.0 * v for v in lengths) if walls else tuple(lengths)
    data = reflect(w0, dims) if walls else w0
    dshape = data.shape[2:]
    shape = tuple(refine * n for n in dshape)
    axes = tuple(range(2, 2 + dims))
    ks = _wavenumbers(shape, lengths)
    mask = _mask(shape)
    L = np.asarray(symbol(ks), dtype=complex)[:, None]  # [var, 1, *kshape]
    vh = _resample(np.fft.rfftn(data, axes=axes), dshape, shape)
    out = np.empty(w0.shape[:2] + (len(times),) + w0.shape[2:])
    out[:, :, 0] = w0

    def N(v):
        vm = v * mask
        W = np.fft.irfftn(vm, s=shape, axes=axes)
        return np.fft.rfftn(nonlinear(W, ks, vm), axes=axes) * mask

    coef = {}

    def coefficients(h):
        if h not in coef:
            z = L * h
            r = np.exp(2j * np.pi * (np.arange(32) + 0.5) / 32)
            lr = z[..., None] + r
            coef[h] = (np.exp(z), np.exp(z / 2), h * np.mean((np.exp(lr / 2) - 1) / lr, axis=-1),
                       h * np.mean((-4 - lr + np.exp(lr) * (4 - 3 * lr + lr**2)) / lr**3, axis=-1),
                       h * np.mean((2 + lr + np.exp(lr) * (lr - 2)) / lr**3, axis=-1),
                       h * np.mean((-4 - 3 * lr - lr**2 + np.exp(lr) * (4 - lr)) / lr**3, axis=-1))
        return coef[h]

    for j in range(1, len(times)):
        h = float(times[j] - times[j - 1]) / substeps
        e, e2, q, f1, f2, f3 = coefficients(round(h, 15))
        for _ in range(substeps):
            nv = N(vh)
            a = e2 * vh + q * nv
            na = N(a)
            b = e2 * vh + q * na
            nb = N(b)
            c = e2 * a + q * (2 * nb - nv)
            nc = N(c)
            vh = e * vh + f1 * nv + 2 * f2 * (na + nb) + f3 * nc
        W = np.fft.irfftn(vh, s=shape, axes=axes)  # the data point j is the fine point r j
        out[:, :, j] = W[(slice(None), slice(None))
                         + tuple(slice(0, refine * n, refine) for n in w0.shape[2:])]
    return out


def distance(a, b) -> np.ndarray:
    """Per sample, ||a - b|| / ||a|| over every variable, frame and point ([var, B, T, N...]):
    CodePDE's nRMSE of ``b`` against ``a``."""
    axes = (0,) + tuple(range(2, a.ndim))
    return np.sqrt(np.sum((a - b) ** 2, axis=axes) / np.sum(a**2, axis=axes))


def converged(w0, times, lengths, symbol, nonlinear, refine=3, substeps=64, walls=False):
    """The reference and its error (module docstring): (solution, time bound, spatial estimate),
    the two errors per sample [B]."""
    fine = etdrk4(w0, times, lengths, symbol, nonlinear, refine, substeps, walls)
    half = etdrk4(w0, times, lengths, symbol, nonlinear, refine, max(substeps // 2, 1), walls)
    return fine, distance(fine, half), spatial(fine, times, lengths, symbol, nonlinear, refine,
                                               substeps, walls)


def spatial(ref, times, lengths, symbol, nonlinear, refine, substeps, walls=False) -> np.ndarray:
    """The spatial error of the run ``ref`` [var, B, T, N...] made with ``refine``, per sample:
    its distance to the run on the ``refine + 1`` grid from the same initial data (its frame 0)
    with the same steps (module docstring)."""
    finer = etdrk4(ref[:, :, 0], times, lengths, symbol, nonlinear, refine + 1, substeps, walls)
    return distance(finer, ref)


def upsample(w0, r, walls):
    """Initial data [var, B, N...] on an r times finer grid by its trigonometric (periodic) or
    cosine (walls) interpolant, and where the data points sit in it: (fine, offset) with the data
    point j at fine index offset + r j. With walls the fine grid is the cell centres of r N
    cells (r odd, so the data's centres are among them)."""
    w0 = np.asarray(w0, dtype=np.float64)
    if r == 1:
        return w0, 0
    dims = w0.ndim - 2
    axes = tuple(range(2, 2 + dims))
    data = reflect(w0, dims) if walls else w0
    dshape = data.shape[2:]
    shape = tuple(r * n for n in dshape)
    fine = np.fft.irfftn(_resample(np.fft.rfftn(data, axes=axes), dshape, shape), s=shape,
                         axes=axes)
    if not walls:
        return fine, 0
    if r % 2 == 0:
        raise ValueError("with walls the refinement must be odd")
    shift = (r - 1) // 2
    fine = np.roll(fine, shift, axis=axes)
    return fine[(slice(None), slice(None)) + tuple(slice(0, r * n) for n in w0.shape[2:])], shift
