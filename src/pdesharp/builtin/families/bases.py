"""Eigenbases of the derivatives in a box with walls: Fourier modes on periodic axes, sines and
cosines between homogeneous Dirichlet and Neumann walls, one basis per unknown and axis.

Between walls, ``sin(k x)`` vanishes at a Dirichlet end and ``cos(k x)`` has a zero derivative at
a Neumann end; with the same condition at both ends the wavenumbers are ``k = m pi / L``
("integer" axis), with different conditions ``k = (m + 1/2) pi / L`` ("half" axis, the quarter-
wave modes of DST-IV / DCT-IV). A derivative maps a sine to a cosine of the same k, so a system
whose derivative terms couple unknowns (Maxwell's TM equations: Ez vanishes on the walls, dx(Ez)
drives Hy) has a common eigenbasis when each unknown gets the parity its couplings require:
``parity_i = parity_j`` flipped once per odd derivative order of a term of equation i in w_j.
:func:`wall_bases` assigns the parities from the stated conditions and propagates them along the
couplings (an unknown with no condition on an axis takes the parity its couplings give, a zero
gradient if nothing couples it); a conflict (an odd derivative of an unknown in its own equation,
a nonlinear flux, a condition that contradicts the couplings) means no such basis.

The emitted block ``BASES`` builds, per axis and parity, the transform of values at the grid's
free points (cell centres; interior nodes, the Dirichlet ends excluded) to coefficients, and
evaluation matrices at any points, as dense matrices: a mode index ``m`` means the same
wavenumber for both parities of an axis, so derivative couplings are diagonal in ``m``. Dense
transforms cost O(N) per point and axis (fine for the few hundred points per axis of the tasks
here; the periodic-only families keep the FFT).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from pdesharp.builtin.balance_law import BalanceLaw
from pdesharp.builtin.parity import propagate


@dataclass(frozen=True)
class AxisBasis:
    kind: str  # "fourier" | "integer" | "half"
    parity: tuple[str, ...]  # per unknown: "sin" | "cos" ("" on a Fourier axis)


def _linear_part(expr, syms: list) -> sp.Expr:
    """The terms of ``expr`` linear in ``syms`` with coefficients free of them (all of ``expr``
    when it is linear)."""
    expr = sp.expand(expr)
    if not any(sp.diff(expr, x).has(*syms) for x in syms):
        return expr
    return sp.Add(*[t for t in sp.Add.make_args(expr)
                    if t.has(*syms) and not any(sp.diff(t, x).has(*syms) for x in syms)])


def _edges(law: BalanceLaw) -> list[tuple[int, int, tuple[int, ...]]]:
    """(i, j, orders): equation i depends on the orders-th derivative of w_j (any dependence)."""
    out = []
    dim = law.dim
    for a in range(dim):
        e = tuple(int(b == a) for b in range(dim))
        e2 = tuple(2 * int(b == a) for b in range(dim))
        for i in range(law.nvar):
            for j, w in enumerate(law.prims):
                if law.flux[a][i].has(w):
                    out.append((i, j, e))
                # a nonlinear viscous term (Zakharov's dx(a**2 + b**2, 2)) is even or odd as a
                # whole, not by the parity of each factor: parity_compatible judges it
                visc = _linear_part(law.viscous[a][i], list(law.prims) + list(law.grads[a]))
                if visc.has(law.grads[a][j]):
                    out.append((i, j, e2))
                if visc.has(w):
                    out.append((i, j, e))
    for i in range(law.nvar):
        source = _linear_part(law.source[i], list(law.prims))  # a product n*b: as a whole
        for j, w in enumerate(law.prims):
            if source.has(w) or law.q[i].has(w):
                out.append((i, j, (0,) * dim))
        for _, j, orders in law.high[i]:
            out.append((i, j, tuple(orders)))
    if not law.flux_form:
        # terms kept as written: their linear constant-coefficient part couples parities as a
        # derivative does; the nonlinear rest only through the values it uses (a nonlinear
        # derivative term such as u*dx(u)**2 is even or odd as a whole: parity_compatible)
        from pdesharp.builtin.families.jet_form import jet_split

        split = jet_split(law)
        if split is not None:
            for orders, m in split.terms + split.mass:
                out += [(i, j, tuple(orders)) for i in range(law.nvar) for j in range(law.nvar)
                        if m[i, j] != 0]
            out += [(i, j, (0,) * dim) for i, e in enumerate(split.rest)
                    for j, w in enumerate(law.prims) if e.has(w)]
    return out


def wall_bases(law: BalanceLaw) -> list[AxisBasis] | None:
    """Per axis, the kind and each unknown's parity; None when the walls or the couplings admit
    no common sine/cosine eigenbasis (inhomogeneous or Robin conditions, a condition on one end
    only, odd self-couplings). Computed once per law (asked per design while ranking)."""
    if not isinstance(law, BalanceLaw):
        return None
    return law.derive("wall_bases", _wall_bases)


def _wall_bases(law: BalanceLaw) -> list[AxisBasis] | None:
    bc = law.boundary
    edges = _edges(law)
    out = []
    for a, coord in enumerate(law.coords):
        name = str(coord)
        if name in bc.periodic:
            out.append(AxisBasis("fourier", ("",) * law.nvar))
            continue
        ends: list[tuple[str | None, str | None]] = []
        for u in law.names:
            sides = []
            for s in (0, 1):
                c = bc.condition(u, name, s)
                if c is None:
                    sides.append(None)
                elif c.g != 0:
                    return None  # inhomogeneous data: no eigenbasis (a lift would be needed)
                elif c.b == 0:
                    sides.append("D")
                elif c.a == 0:
                    sides.append("N")
                else:
                    return None  # Robin: the wavenumbers solve a transcendental equation
            if (sides[0] is None) != (sides[1] is None):
                return None  # one end stated, the other free: no symmetric extension
            ends.append(tuple(sides))
        kinds = {"integer" if lo == hi else "half" for lo, hi in ends if lo is not None}
        if len(kinds) > 1:
            return None
        parity: list[str | None] = [None if lo is None else ("sin" if lo == "D" else "cos")
                                    for lo, _ in ends]
        # propagate along the couplings: parity_i = parity_j xor (odd order along this axis)
        if propagate(parity, edges, a) is not None:
            return None
        # an unknown nothing determines keeps a zero gradient at the walls (the outflow default)
        parity = [p or "cos" for p in parity]
        for i, j, orders in edges:  # the default may still conflict (an odd self-coupling)
            if (parity[i] != parity[j]) != (orders[a] % 2 == 1):
                return None
        out.append(AxisBasis(kinds.pop() if kinds else "integer", tuple(parity)))
    return out


def has_walls(bases: list[AxisBasis] | None) -> bool:
    return bases is not None and any(b.kind != "fourier" for b in bases)


_COMPAT_CACHE: dict[str, bool] = {}


def parity_compatible(law: BalanceLaw, bases: list[AxisBasis], exprs: list, domain) -> bool:
    """Does the odd/even extension across every wall carry ``exprs`` (one per equation: the
    terms evaluated in physical space) into themselves? Then the extended solution stays smooth
    and the sine/cosine series converge spectrally; otherwise only algebraically (a kink at the
    wall). Checked at random points (a prediction for ranking, not a proof):
    expr_i(sigma w, 2 wall - x) = sigma_i expr_i(w, x) at both walls of every wall axis, sigma =
    -1 for the unknowns odd about that wall; ``domain`` is [(lo, hi)] per axis."""
    key = repr((exprs, bases, domain, law.prims, law.coords))
    if key not in _COMPAT_CACHE:
        _COMPAT_CACHE[key] = _compatible(law, bases, exprs, domain)
    return _COMPAT_CACHE[key]


def _compatible(law, bases, exprs, domain) -> bool:
    import numpy as np

    from pdesharp.equation import array_function

    rng = np.random.default_rng(0)
    # the derivatives the terms use (jets): d^o w_j is odd about a wall when w_j is, flipped
    # once more per odd order along the wall's axis
    jets = law.jets.used(exprs) if law.jets is not None else []
    args = list(law.prims) + list(law.coords) + [law.t] + list(law.params) + [
        s for _, _, s in jets]
    pts = [rng.uniform(-1.0, 1.0, 16) for _ in args]
    for a, b in enumerate(bases):
        if b.kind == "fourier":
            continue
        for wall in (0, 1):
            end = float(domain[a][wall])
            # odd about this wall: sine parities at the low wall; at the high wall of a
            # quarter-wave axis the parities swap (sin((m + 1/2) pi x) is even about x = L)
            odd = [(p == "sin") != (b.kind == "half" and wall == 1) for p in b.parity]
            moved = list(pts)
            for j, o in enumerate(odd):
                if o:
                    moved[j] = -pts[j]
            base = len(args) - len(jets)
            for m, (j, orders, _) in enumerate(jets):
                if odd[j] != (orders[a] % 2 == 1):
                    moved[base + m] = -pts[base + m]
            k = len(law.prims) + a
            moved[k] = 2 * end - pts[k]
            for i, e in enumerate(exprs):
                if e == 0:
                    continue
                try:
                    fn = array_function(args, e)
                    with np.errstate(all="ignore"):
                        lhs = np.asarray(fn(*moved), dtype=complex) * np.ones(16)
                        rhs = np.asarray(fn(*pts), dtype=complex) * np.ones(16)
                except Exception:  # an expression NumPy cannot evaluate: assume not
                    return False
                sign = -1.0 if odd[i] else 1.0
                if not np.allclose(lhs, sign * rhs, rtol=1e-9, atol=1e-12):
                    return False
    return True


def basis_title(bases: list[AxisBasis], names: list[str]) -> str:
    """'sine x cosine', 'sine/cosine x Fourier'...: the basis per axis, for a title."""
    parts = []
    for b in bases:
        if b.kind == "fourier":
            parts.append("Fourier")
        else:
            ps = set(b.parity)
            word = "sine/cosine" if len(ps) > 1 else {"sin": "sine", "cos": "cosine"}[ps.pop()]
            parts.append(word + (" (quarter-wave)" if b.kind == "half" else ""))
    return " x ".join(parts)


def emit_bases(bases: list[AxisBasis]) -> str:
    """The constants the BASES block reads."""
    kinds = [b.kind for b in bases]
    parity = [[b.parity[i] for b in bases] for i in range(len(bases[0].parity))]
    return (f"AXIS_KIND = {kinds!r}  # per space axis: fourier | integer | half\n"
            f"PARITY = {parity!r}  # per unknown and axis: sin | cos ('' on Fourier axes)\n")


BASES = '''
# ---- block: sine / cosine / Fourier bases per unknown and axis (dense transforms) ----


def _axis_points(a, n, nodes):
    """Coordinates of n points along axis a: cell centres, or nodes with both ends (on a
    periodic axis the repeated last node is not among the n: _evolve drops it)."""
    lo, hi = DOMAIN[a]
    if nodes and AXIS_KIND[a] == "fourier":
        return lo + np.arange(n) * (hi - lo) / n
    if nodes:
        return np.linspace(lo, hi, n)
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


def _axis_modes(a, n, nodes):
    """Mode numbers m (one index set for both parities) and wavenumbers k of an axis whose grid
    has n points."""
    lo, hi = DOMAIN[a]
    length = hi - lo
    if AXIS_KIND[a] == "fourier":
        m = np.fft.fftfreq(n, 1.0 / n).round().astype(int)
        return m, 2.0 * np.pi * m / length
    if AXIS_KIND[a] == "integer":
        size = n if nodes else n + 1
        m = np.arange(size)
        return m, np.pi * m / length
    size = n - 1 if nodes else n
    m = np.arange(size)
    return m, np.pi * (m + 0.5) / length


def _basis_matrix(a, parity, x, k):
    lo = DOMAIN[a][0]
    arg = np.outer(x - lo, k)
    if AXIS_KIND[a] == "fourier":
        return np.exp(1j * arg)
    return np.sin(arg) if parity == "sin" else np.cos(arg)


def _free(a, parity, x, m, nodes):
    """The points whose values are unknowns and the modes present for this parity."""
    n = len(x)
    pts = np.ones(n, bool)
    modes = np.ones(len(m), bool)
    kind = AXIS_KIND[a]
    if kind == "fourier":
        return pts, modes
    if nodes:
        if parity == "sin":
            pts[0] = False  # u = 0 there
        if (kind == "integer" and parity == "sin") or (kind == "half" and parity == "cos"):
            pts[-1] = False
    if kind == "integer":
        if parity == "sin":
            modes[0] = False  # sin(0 x) = 0
        if parity == "cos" and not nodes:
            modes[-1] = False  # cos(n pi x_j) = 0 at every cell centre
        if parity == "sin" and nodes:
            modes[-1] = False  # sin((n-1) pi j/(n-1)) = 0 at every node
    return pts, modes


def _transforms(a, parity, n, nodes, n_modes=None):
    """(forward [M, n], evaluate [n, M]) for a grid of n points on axis a; forward solves for the
    present modes from the free points (other rows zero), evaluate sums every mode. With
    n_modes, coefficients live on the first n_modes modes of a finer internal index set."""
    x = _axis_points(a, n, nodes)
    m, k = _axis_modes(a, n, nodes)
    pts, modes = _free(a, parity, x, m, nodes)
    phi = _basis_matrix(a, parity, x, k)
    fwd = np.zeros((len(m), n), dtype=phi.dtype)
    sub = phi[np.ix_(pts, modes)]
    fwd[np.ix_(modes, pts)] = np.linalg.inv(sub)
    return fwd, phi, m, k


def _apply(mat, v, axis):
    """mat applied along ``axis`` of v: [M, n] times v[..., n, ...], as one BLAS product (a
    complex array against a real matrix: its real and imaginary parts, not a mixed-type loop)."""
    v = np.moveaxis(v, axis, -1)
    shape = v.shape
    flat = np.ascontiguousarray(v).reshape(-1, shape[-1])
    if np.iscomplexobj(flat) and not np.iscomplexobj(mat):
        out = flat.real @ mat.T + 1j * (flat.imag @ mat.T)
    else:
        out = flat @ mat.T
    return np.moveaxis(out.reshape(shape[:-1] + (mat.shape[0],)), -1, axis)


def _deriv_symbol(a, k, order, parity):
    """Coefficient of d^order of a mode of wavenumber k (the result has the flipped parity for
    an odd order): (ik)^order on Fourier axes, k^order with the sign of the sine/cosine rule."""
    if AXIS_KIND[a] == "fourier":
        return (1j * k) ** order
    if order % 2 == 0:
        return (-1.0) ** (order // 2) * k**order
    sign = (-1.0) ** ((order - 1) // 2)
    return (sign if parity == "sin" else -sign) * k**order


def _centre_weights(n, parity):
    """(forward, evaluate) scalings of the type-II/III DCT (cos) or DST (sin) of n cell centres
    to the dense transforms' coefficients: the end mode (0 for cosines, n for sines) is halved
    forward and doubled back."""
    w, half = np.full(n, 1.0 / n), np.full(n, 0.5)
    end = 0 if parity == "cos" else -1
    w[end], half[end] = 0.5 / n, 1.0
    return w, half


def _fast(a, parity, n):
    """O(n log n) (forward, evaluate) along an array axis for n cell centres: scipy.fft's DCT/DST
    of types II/III (integer axes) and IV (quarter-wave axes), the FFT on Fourier axes, scaled to
    the dense transforms' coefficients (tests compare them)."""
    import scipy.fft as sf

    kind = AXIS_KIND[a]

    def shaped(v, ax, ndim):
        s = [1] * ndim
        s[ax] = len(v)
        return np.reshape(v, s)

    def padded(y, ax, first):
        """y with one zero mode added along ax, after (first = 0) or before (first = 1) it (an
        assignment into zeros: np.pad's bookkeeping cost more than the transform)."""
        out = np.zeros(y.shape[:ax] + (n + 1,) + y.shape[ax + 1:], dtype=y.dtype)
        out[(slice(None),) * ax + (slice(first, first + n),)] = y
        return out

    if kind == "fourier":
        ph = np.exp(1j * np.pi * np.fft.fftfreq(n, 1.0 / n) / n)  # the half-cell offset
        return (lambda u, ax: np.fft.fft(u, axis=ax) / (n * shaped(ph, ax, u.ndim)),
                lambda c, ax: np.fft.ifft(c * shaped(ph, ax, c.ndim), axis=ax) * n)
    if kind == "half":
        tr = sf.dct if parity == "cos" else sf.dst
        return (lambda u, ax: tr(u, type=4, axis=ax) / n, lambda c, ax: tr(c, type=4, axis=ax) / 2)
    w, half = _centre_weights(n, parity)
    if parity == "cos":  # modes 0..n-1 of the n + 1 (cos(n pi x) vanishes at every centre)
        def fwd(u, ax):
            return padded(sf.dct(u, type=2, axis=ax) * shaped(w, ax, u.ndim), ax, 0)

        def ev(c, ax):
            x = c[(slice(None),) * ax + (slice(0, n),)] * shaped(half, ax, c.ndim)
            return sf.dct(x, type=3, axis=ax)
        return fwd, ev

    def fwd(u, ax):  # sines: modes 1..n of the n + 1 (sin 0 = 0)
        return padded(sf.dst(u, type=2, axis=ax) * shaped(w, ax, u.ndim), ax, 1)

    def ev(c, ax):
        x = c[(slice(None),) * ax + (slice(1, n + 1),)] * shaped(half, ax, c.ndim)
        return sf.dst(x, type=3, axis=ax)
    return fwd, ev


def _fast_whole(parity, shape):
    """(forward, evaluate) over every space axis at once, for integer axes of one parity: one
    n-D DCT/DST of types II/III (scipy.fft's dctn/dstn), the same coefficients as _fast axis by
    axis (tests compare them) at up to 1.7x its speed on 256^2 (the strided passes along the
    first axis cost more than the transform); None for any other axes."""
    import scipy.fft as sf

    if any(AXIS_KIND[a] != "integer" for a in range(len(shape))) or len(set(parity)) != 1:
        return None
    cos = parity[0] == "cos"
    tr, first = (sf.dctn, 0) if cos else (sf.dstn, 1)
    w, half = np.ones([1] * (len(shape) + 1)), np.ones([1] * (len(shape) + 1))
    for a, n in enumerate(shape):
        wa, ha = _centre_weights(n, parity[0])
        s = [1] * (len(shape) + 1)
        s[1 + a] = n
        w, half = w * wa.reshape(s), half * ha.reshape(s)
    axes = tuple(range(1, len(shape) + 1))
    cut = (slice(None),) + tuple(slice(first, first + n) for n in shape)

    def fwd(u):
        out = np.zeros(u.shape[:1] + tuple(n + 1 for n in shape), dtype=u.dtype)
        out[cut] = tr(u, type=2, axes=axes) * w
        return out

    def ev(c):
        return tr(c[cut] * half, type=3, axes=axes)
    return fwd, ev


class _Space:
    """The transforms of every (unknown, axis) on one grid: dense matrices, or with ``fast`` on
    a cell-centre grid the FFT-based ones (an internal grid's transforms run every stage), over
    all axes at once where one n-D transform does it (_fast_whole)."""

    def __init__(self, shape, nodes, nvar, fast=False):
        self.shape, self.nodes, self.dim = tuple(shape), nodes, len(shape)
        self.fwd, self.ev, self.m, self.k, self.fast = {}, {}, [], [], {}
        self.use_fast = fast and not nodes
        self.whole = {}  # parities over the axes -> _fast_whole's pair, or None
        for a, n in enumerate(shape):
            for p in sorted({PARITY[i][a] for i in range(nvar)}):
                self._add(a, p)
            m, k = _axis_modes(a, n, nodes)
            self.m.append(m)
            self.k.append(k)
        self.complex = "fourier" in AXIS_KIND
        self.mshape = tuple(len(m) for m in self.m)

    def forward(self, u, i):
        """Coefficients [B, *mshape] of unknown i's values u [B, *shape]."""
        out = u.astype(complex if self.complex else float)
        whole = self._whole(PARITY[i])
        if whole is not None:
            return whole[0](out)
        for a in range(self.dim):
            key = (a, PARITY[i][a])
            out = self.fast[key][0](out, 1 + a) if key in self.fast else \
                _apply(self.fwd[key], out, 1 + a)
        return out

    def _whole(self, parities):
        key = tuple(parities)
        if key not in self.whole:
            self.whole[key] = _fast_whole(key, self.shape) if self.use_fast else None
        return self.whole[key]

    def _add(self, a, p):
        if self.use_fast:
            self.fast[a, p] = _fast(a, p, self.shape[a])
        else:
            f, e, _, _ = _transforms(a, p, self.shape[a], self.nodes)
            self.fwd[a, p], self.ev[a, p] = f, e

    def evaluate(self, c, i):
        return self.evaluate_as(c, PARITY[i])

    def evaluate_as(self, c, parities):
        """Values of coefficients c [B, *mshape] in the given parity per axis (a derivative's:
        an odd order flips its unknown's)."""
        whole = self._whole(parities)
        if whole is not None:
            return whole[1](c)
        out = c
        for a in range(self.dim):
            key = (a, parities[a])
            if key not in self.fast and key not in self.ev:
                self._add(*key)
            out = self.fast[key][1](out, 1 + a) if key in self.fast else \
                _apply(self.ev[key], out, 1 + a)
        return out.real if np.iscomplexobj(out) else out


def _evaluation(a, parity, x, k):
    """Matrix [len(x), len(k)] evaluating modes of wavenumbers k at the points x."""
    return _basis_matrix(a, parity, np.asarray(x, dtype=float), k)


def _embed(c, src, dst):
    """Coefficients c [B, *src.mshape] placed on the mode set of dst (same mode numbers; modes
    the destination lacks are dropped)."""
    out = np.zeros(c.shape[:1] + dst.mshape, dtype=c.dtype)
    src_idx, dst_idx = [], []
    for a in range(dst.dim):
        pos = {int(v): j for j, v in enumerate(dst.m[a])}
        keep = [j for j, v in enumerate(src.m[a]) if int(v) in pos]
        src_idx.append(np.array(keep, dtype=int))
        dst_idx.append(np.array([pos[int(src.m[a][j])] for j in keep], dtype=int))
    out[(slice(None),) + np.ix_(*dst_idx)] = c[(slice(None),) + np.ix_(*src_idx)]
    return out
'''
