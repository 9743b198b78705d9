"""Chebyshev-Gauss-Lobatto collocation on an interval and on a box (tensor product).

:class:`ChebyshevGrid` is one axis: the points (both ends included, increasing), the
differentiation matrix and barycentric interpolation. :class:`ChebyshevBox` is the tensor grid
of one or two axes with the interface of :class:`~.generic_symbolic.SpectralGrid` that a
compiled system uses (``dim``, ``shape``, ``coords``, ``full``, ``derivative``, ``dealias``):
fields are ``[B, n_x]`` or ``[B, n_x, n_y]`` (``indexing="ij"``), and a derivative along axis a
is the axis' matrix applied along array axis a + 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class ChebyshevGrid:
    """Chebyshev-Gauss-Lobatto points on [lo, hi] (increasing) with their differentiation
    matrix; in 1D also the interface of :class:`~.generic_symbolic.SpectralGrid`."""

    def __init__(self, lo: float, hi: float, m: int):
        self.lo, self.hi = float(lo), float(hi)
        xi = -np.cos(np.pi * np.arange(m + 1) / m)
        self.x = self.lo + (self.hi - self.lo) * (xi + 1.0) / 2.0
        w = (-1.0) ** np.arange(m + 1)
        w[0] *= 0.5
        w[-1] *= 0.5
        self.weights = w
        diff = self.x[:, None] - self.x[None, :]
        np.fill_diagonal(diff, 1.0)
        D = (w[None, :] / w[:, None]) / diff
        np.fill_diagonal(D, 0.0)
        np.fill_diagonal(D, -D.sum(axis=1))
        self.D = D

    dim = 1

    @property
    def shape(self) -> tuple[int]:
        return (self.x.size,)

    def coords(self) -> list[np.ndarray]:
        return [self.x.reshape(1, -1)]

    def full(self, value) -> np.ndarray:
        arr = np.asarray(value, dtype=float)
        if arr.ndim < 2:
            arr = arr.reshape((1,) * (2 - arr.ndim) + arr.shape)
        return np.broadcast_to(arr, arr.shape[:1] + self.shape)

    def derivative(self, value, orders: tuple[int, ...]) -> np.ndarray:
        out = self.full(value)
        for _ in range(orders[0]):
            out = out @ self.D.T
        return out

    def dealias(self, value) -> np.ndarray:
        return self.full(value)

    def interpolation(self, points: np.ndarray) -> np.ndarray:
        """Matrix P with P @ u = the collocation polynomial at ``points`` (barycentric form)."""
        points = np.asarray(points, dtype=float)
        diff = points[:, None] - self.x[None, :]
        exact = np.isclose(diff, 0.0, atol=1e-14 * max(1.0, abs(self.hi)))
        diff[exact] = 1.0
        P = self.weights[None, :] / diff
        P /= P.sum(axis=1, keepdims=True)
        rows = exact.any(axis=1)
        P[rows] = exact[rows].astype(float)
        return P


def along(matrix: np.ndarray, values: np.ndarray, axis: int) -> np.ndarray:
    """``matrix`` applied along array axis ``axis`` of ``values``."""
    return np.moveaxis(np.tensordot(matrix, values, axes=([1], [axis])), 0, axis)


class ChebyshevBox:
    """The tensor product of :class:`ChebyshevGrid` axes (a 1-axis box is an interval)."""

    def __init__(self, axes: Sequence[ChebyshevGrid]):
        self.axes = list(axes)
        self._powers: dict[tuple[int, int], np.ndarray] = {}
        self._coords: list[np.ndarray] = []

    @property
    def dim(self) -> int:
        return len(self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(g.x.size for g in self.axes)

    @property
    def points(self) -> list[np.ndarray]:
        return [g.x for g in self.axes]

    def coords(self) -> list[np.ndarray]:
        """Coordinate arrays broadcastable against ``[B, *shape]``."""
        if not self._coords:
            for a, g in enumerate(self.axes):
                shape = [1] * (self.dim + 1)
                shape[a + 1] = g.x.size
                self._coords.append(g.x.reshape(shape))
        return list(self._coords)

    def full(self, value) -> np.ndarray:
        arr = np.asarray(value, dtype=float)
        if arr.ndim < self.dim + 1:
            arr = arr.reshape((1,) * (self.dim + 1 - arr.ndim) + arr.shape)
        return np.broadcast_to(arr, arr.shape[:1] + self.shape)

    def matrix(self, axis: int, order: int) -> np.ndarray:
        """The differentiation matrix of ``order`` along ``axis`` (cached)."""
        key = (axis, order)
        if key not in self._powers:
            self._powers[key] = np.linalg.matrix_power(self.axes[axis].D, order)
        return self._powers[key]

    def derivative(self, value, orders: tuple[int, ...]) -> np.ndarray:
        out = self.full(value)
        last = self.dim - 1
        for a, n in enumerate(orders):
            if n:  # matmul, not tensordot: this runs ~1e5 times in a stiff 1D integration
                M = self.matrix(a, n)
                out = out @ M.T if a == last else (M @ out if a == last - 1 else
                                                   along(M, out, a + 1))
        return out

    def dealias(self, value) -> np.ndarray:
        return self.full(value)

    def interpolate(self, values: np.ndarray, points: Sequence[np.ndarray]) -> np.ndarray:
        """The collocation polynomial of ``values`` [..., *shape] at the tensor grid ``points``
        (one array per axis): [..., *len(points)]. Exact for the polynomial."""
        out = np.asarray(values)
        first = out.ndim - self.dim
        for a, (g, p) in enumerate(zip(self.axes, points)):
            out = along(g.interpolation(p), out, first + a)
        return out
