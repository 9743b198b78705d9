"""Turn a task's symbolic equations into a numerical right-hand side u_t = F(u, t).

Each equation i is read as ``Σ_k c_k dt(e_k) + rest_i = 0``. With q-derivatives expanded by the
chain rule, ``dt(e_k) = Σ_j ∂e_k/∂u_j · dt(u_j)``, the system is ``M(u) u_t = −rest`` with the
"mass matrix" M_ij = Σ_k c_k ∂e_k/∂u_j. For ``dt(u)`` M is the identity; for conserved variables
(``dt(rho*v)``) it depends on the unknowns. M is inverted symbolically once (it is small: one row
per equation), so ``u_t = −M⁻¹ rest`` is a closed-form expression in the unknowns and in the
numerically evaluated ``rest_i``.

``rest_i`` is compiled into a tree of NumPy functions: every outermost ``Derivative`` node becomes
a placeholder argument whose value is the spectral derivative (:class:`SpectralGrid`) of its own,
recursively compiled, inner expression; everything else is ``sympy.lambdify``'d. So fluxes such as
``dx(u**2/2)`` are differentiated as written (conservation form), not expanded.

The constant-coefficient, diagonal linear part of u_t (diffusion, dispersion, linear damping) is
also extracted when M is constant: the exponential integrator treats it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from pdesharp.equation import array_function
from pdesharp.task import Task


class UnsupportedTask(ValueError):
    """The generic generator cannot handle this task; the message names the reason."""


# --------------------------------------------------------------------------------------------
@dataclass
class SpectralGrid:
    """A periodic tensor-product grid with Fourier derivatives and the 2/3 dealiasing mask.

    Fields are arrays ``[..., N_x]`` (1D) or ``[..., N_x, N_y]`` (2D, ``indexing="ij"``).
    ``points[a]`` are the sample positions along axis a, uniformly spaced by L_a/N_a (any offset:
    spectral derivatives do not depend on it).
    """

    points: tuple[np.ndarray, ...]
    lengths: tuple[float, ...]
    k: tuple[np.ndarray, ...] = field(init=False)
    mask: np.ndarray = field(init=False)
    # mask * symbol(orders) per orders: the same product every right-hand side recomputed
    _filters: dict = field(init=False, default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        d = self.dim
        n = self.shape
        ks, keep = [], []
        for a, (na, la) in enumerate(zip(n, self.lengths)):
            last = a == d - 1
            m = np.fft.rfftfreq(na, 1.0 / na) if last else np.fft.fftfreq(na, 1.0 / na)
            shape = [1] * d
            shape[a] = m.size
            ks.append((2.0 * np.pi / la * m).reshape(shape))
            # Orszag's 2/3 rule: products of two kept modes alias only onto discarded ones.
            keep.append((3 * np.abs(m) < na).reshape(shape))
        self.k = tuple(ks)
        mask = keep[0]
        for kp in keep[1:]:
            mask = mask & kp
        self.mask = mask

    @property
    def dim(self) -> int:
        return len(self.points)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(p.size for p in self.points)

    @property
    def axes(self) -> tuple[int, ...]:
        return tuple(range(-self.dim, 0))

    def coords(self) -> list[np.ndarray]:
        """Coordinate arrays broadcastable against ``[B, *shape]``."""
        out = []
        for a, p in enumerate(self.points):
            shape = [1] * (self.dim + 1)
            shape[a + 1] = p.size
            out.append(p.reshape(shape))
        return out

    def fft(self, arr: np.ndarray) -> np.ndarray:
        # in 1D rfftn is rfft on the last axis (the same transform, bit for bit) behind a
        # layer of argument handling that cost as much as the transform on these grid sizes
        if self.dim == 1:
            return np.fft.rfft(arr, axis=-1)
        return np.fft.rfftn(arr, axes=self.axes)

    def ifft(self, arr: np.ndarray) -> np.ndarray:
        if self.dim == 1:
            return np.fft.irfft(arr, n=self.shape[0], axis=-1)
        return np.fft.irfftn(arr, s=self.shape, axes=self.axes)

    def symbol(self, orders: tuple[int, ...]) -> np.ndarray:
        """Fourier symbol Π (i k_a)^{n_a} of the derivative with orders n_a per axis."""
        out: Any = 1.0
        for ka, na in zip(self.k, orders):
            if na:
                out = out * (1j * ka) ** na
        return np.asarray(out)

    def full(self, value: Any) -> np.ndarray:
        """``value`` broadcast to at least the grid shape (constants become constant fields)."""
        arr = np.asarray(value, dtype=float)
        if arr.ndim < self.dim + 1:
            arr = arr.reshape((1,) * (self.dim + 1 - arr.ndim) + arr.shape)
        return np.broadcast_to(arr, arr.shape[:1] + self.shape)

    def _filter(self, orders: tuple[int, ...]) -> np.ndarray:
        key = tuple(orders)
        filt = self._filters.get(key)
        if filt is None:
            filt = self._filters[key] = self.mask * self.symbol(key)
        return filt

    def derivative(self, value: Any, orders: tuple[int, ...]) -> np.ndarray:
        return self.ifft(self.fft(self.full(value)) * self._filter(orders))

    def derivatives(self, value: Any, orders: list[tuple[int, ...]]) -> list[np.ndarray]:
        """:meth:`derivative` for several orders of one value: one forward transform."""
        spec = self.fft(self.full(value))
        return [self.ifft(spec * self._filter(o)) for o in orders]

    def dealias(self, value: Any) -> np.ndarray:
        return self.ifft(self.fft(self.full(value)) * self.mask)


# --------------------------------------------------------------------------------------------
def _outer_derivatives(expr: sp.Basic) -> list[sp.Derivative]:
    """Derivative nodes of ``expr`` not nested inside another Derivative, in a stable order."""
    found: list[sp.Derivative] = []

    def walk(e: sp.Basic) -> None:
        if isinstance(e, sp.Derivative):
            if e not in found:
                found.append(e)
            return
        for a in e.args:
            walk(a)

    walk(expr)
    return found


class _Compiled:
    """One level of the derivative tree: a lambdified body plus its derivative placeholders."""

    def __init__(self, expr: sp.Expr, ctx: "_Context") -> None:
        derivs = _outer_derivatives(expr)
        holders = [sp.Dummy(f"D{i}") for i in range(len(derivs))]
        body = expr.xreplace(dict(zip(derivs, holders))).xreplace(ctx.func_to_symbol)
        stray = body.atoms(sp.core.function.AppliedUndef)
        if stray:
            raise UnsupportedTask(
                f"the generic generator cannot evaluate {sorted(map(str, stray))}: coefficient "
                "fields (functions of space given as solver inputs) are not supported")
        # derivatives of one inner expression (u_x, u_y, u_xx, u_yy of u) share its evaluation
        # and, on a Fourier grid, its transform
        inner: dict[sp.Expr, list[tuple[int, tuple[int, ...]]]] = {}
        for i, d in enumerate(derivs):
            inner.setdefault(d.expr, []).append((i, ctx.orders(d)))
        self.children = [(_Compiled(e, ctx), uses) for e, uses in inner.items()]
        self.n_derivs = len(derivs)
        self.fn = array_function(ctx.arg_symbols + holders, body)

    def __call__(self, env: list[Any], grid: SpectralGrid) -> Any:
        vals: list[Any] = [None] * self.n_derivs
        for child, uses in self.children:
            value = child(env, grid)
            if len(uses) > 1 and isinstance(grid, SpectralGrid):
                got = grid.derivatives(value, [orders for _, orders in uses])
            else:
                got = [grid.derivative(value, orders) for _, orders in uses]
            for (i, _), v in zip(uses, got):
                vals[i] = v
        return self.fn(*env, *vals)


@dataclass
class _Context:
    unknowns: tuple[str, ...]
    func_to_symbol: dict[sp.Expr, sp.Symbol]
    coords: tuple[sp.Symbol, ...]
    t: sp.Symbol

    @property
    def arg_symbols(self) -> list[sp.Symbol]:
        return [self.func_to_symbol[f] for f in self.func_to_symbol] + list(self.coords) + [self.t]

    def orders(self, d: sp.Derivative) -> tuple[int, ...]:
        counts = [0] * len(self.coords)
        for var, n in d.variable_count:
            if var == self.t:
                raise UnsupportedTask(
                    f"the time derivative in {d} is not of the form dt(q) + rest: the generic "
                    "generator needs each dt(...) to appear linearly, outside space derivatives")
            if var not in self.coords:
                raise UnsupportedTask(f"derivative with respect to {var} in {d}")
            counts[self.coords.index(var)] += int(n)
        return tuple(counts)


# --------------------------------------------------------------------------------------------
@dataclass
class CompiledSystem:
    """u_t = F(u, t) for a task, ready for numerical evaluation on a :class:`SpectralGrid`.

    ``linear[i]`` lists ``(coefficient, orders)`` of the constant-coefficient terms
    ``c ∂^orders u_i`` of u_t,i (empty when the mass matrix is not constant).
    """

    unknowns: tuple[str, ...]
    dim: int
    rest: list[_Compiled]
    ut_fn: Any
    mass_is_identity: bool
    linear: list[list[tuple[float, tuple[int, ...]]]]
    ut_exprs: list[sp.Expr]
    introduced: tuple[str, ...] = ()  # velocities of second-order equations (start at zero)

    def rhs(self, fields: list[np.ndarray], t: float, grid: SpectralGrid,
            dealias: bool = True) -> list[np.ndarray]:
        env = [*fields, *grid.coords(), t]
        rest = [node(env, grid) for node in self.rest]
        ut = self.ut_fn(*env, *rest)
        shape = fields[0].shape
        out = []
        for v in ut:
            v = np.broadcast_to(np.asarray(v, dtype=float), shape)
            out.append(grid.dealias(v) if dealias else v)
        return out

    def linear_symbols(self, grid: SpectralGrid) -> np.ndarray:
        """Fourier symbols L̂_i(k) of the linear parts, shape ``[n_unknowns, *rfft shape]``."""
        kshape = grid.mask.shape
        out = np.zeros((len(self.unknowns),) + kshape, dtype=complex)
        for i, terms in enumerate(self.linear):
            for coeff, orders in terms:
                out[i] += coeff * np.broadcast_to(grid.symbol(orders), kshape)
        return out * grid.mask


def check_supported(task: Task, bounded: bool = False) -> None:
    """Raise :class:`UnsupportedTask` naming why the generic generator cannot make ``task``.

    ``bounded=True`` checks for the Chebyshev generator of 1D and 2D problems with Dirichlet,
    Neumann or Robin conditions on every wall (:mod:`.generic_bounded`) instead of the Fourier
    one."""
    eq = task.equation
    if task.steady:
        raise UnsupportedTask(
            f"task {task.name!r} is steady (equation.time is null): the spectral generators handle "
            "time-dependent problems only (steady problems given by formulas: "
            "pdesharp.data.generate.steady; the darcy task has its own generator)")
    periodic = task.boundary.strip().lower().startswith("periodic")
    if bounded:
        from pdesharp.boundary import BoundaryError, require_complete, task_boundary

        try:
            spec = task_boundary(task)
            require_complete(spec, task.system)
        except BoundaryError as exc:
            raise UnsupportedTask(f"task {task.name!r}: the boundary {task.boundary!r} cannot be"
                                  f" read: {exc}") from None
        if spec.periodic:
            raise UnsupportedTask(
                f"task {task.name!r} has boundary {task.boundary!r}: periodic in "
                f"{', '.join(spec.periodic)} with walls on other axes; the generic generators "
                "handle all-periodic boxes (Fourier) or walls on every axis (Chebyshev), "
                "not a mixture")
    elif not periodic or _has_walls(task):
        raise UnsupportedTask(
            f"task {task.name!r} has boundary {task.boundary!r}: the Fourier spectral generator "
            "supports periodic boundaries only (tasks with walls use the Chebyshev one)")
    if len(eq.space) not in (1, 2):
        raise UnsupportedTask(
            f"task {task.name!r} has {len(eq.space)} space axes; supported: 1 or 2")
    if eq.coefficients:
        raise UnsupportedTask(
            f"task {task.name!r} has coefficient fields {eq.coefficients}: not supported by the "
            "generic generator (it would have to invent them)")
    if len(eq.equations) != len(eq.unknowns):
        raise UnsupportedTask(
            f"task {task.name!r} has {len(eq.equations)} equations for {len(eq.unknowns)} unknowns")
    _refuse_what_spectral_cannot_follow(task, bounded)


def _refuse_what_spectral_cannot_follow(task: Task, bounded: bool) -> None:
    """Problems the spectral generators accept and then fail on every draw, refused up front:
    shocks between walls (a nonlinear flux and no second derivative anywhere: the smooth draws
    steepen into discontinuities) and third or higher derivatives between walls (the Chebyshev generator
    needs more conditions per end than a task states)."""
    from pdesharp.boundary import derivative_orders

    system = task.system
    orders = derivative_orders(system)
    funcs = [system.function(u) for u in system.unknowns]
    # (between walls only: on a periodic box a smooth window before the shock forms is a fair
    # request, and the draws say when it is not)
    if bounded and max(orders.values(), default=0) == 1:
        for e in system.exprs:
            for term in sp.Add.make_args(sp.expand(e.doit())):
                d = [f for f in sp.Mul.make_args(term) if isinstance(f, sp.Derivative)
                     and set(f.variables) <= set(system.coords)]
                rest = term / d[0] if d else None
                if rest is not None and rest.has(*funcs):
                    raise UnsupportedTask(
                        f"task {task.name!r}: a nonlinear flux and no viscosity (no second"
                        " derivative): its solutions form shocks, which the spectral generators"
                        " cannot follow; supply reference data made by a shock-capturing scheme"
                        " or an exact solution (--dev-data; examples/tasks/make_reference.py"
                        " shows both)")
    if bounded:
        high = sorted({(u, a, k) for (u, a), k in orders.items() if k >= 3})
        if high:
            u, a, k = high[0]
            raise UnsupportedTask(
                f"task {task.name!r}: d{a}({u}, {k}) between walls: the Chebyshev generator needs"
                f" {(k + 1) // 2} conditions per end and a task states one; supply reference data"
                " (e.g. by the even or odd extension to a periodic box, as"
                " examples/tasks/make_reference.py does)")


def _has_walls(task: Task) -> bool:
    """A boundary such as "periodic in x; y = 0: u = 0" starts with "periodic" but has walls."""
    from pdesharp.boundary import BoundaryError, task_boundary

    try:
        return not task_boundary(task).all_periodic
    except BoundaryError:
        return False


def compile_system(task: Task, bounded: bool = False) -> CompiledSystem:
    """Compile ``task``'s equations into u_t = −M(u)⁻¹ rest(u); raises :class:`UnsupportedTask`.

    Second time derivatives are first rewritten as a first-order system
    (:mod:`pdesharp.time_order`); the velocities it introduces are listed in ``introduced``."""
    from pdesharp.time_order import TimeOrderError, reduce_time_order

    check_supported(task, bounded=bounded)
    try:
        reduction = reduce_time_order(task.system)
    except TimeOrderError as exc:
        raise UnsupportedTask(f"task {task.name!r}: {exc}") from None
    system = reduction.system
    t = system.t
    coords = system.coords
    funcs = [system.function(n) for n in system.unknowns]
    usyms = [sp.Symbol(f"_u_{n}", real=True) for n in system.unknowns]
    values = {sp.Symbol(k, real=True): sp.Float(v) for k, v in task.constants.items()}
    ctx = _Context(system.unknowns, dict(zip(funcs, usyms)), coords, t)
    n = len(funcs)

    mass = sp.zeros(n, n)
    rests: list[sp.Expr] = []
    for i, expr in enumerate(system.exprs):
        expr = expr.xreplace(values)
        rest = sp.Integer(0)
        terms = sp.Add.make_args(sp.expand(expr, deep=False, mul=True, multinomial=False))
        for term in terms:
            factors = sp.Mul.make_args(term)
            tder = [f for f in factors if isinstance(f, sp.Derivative) and f.has(t)
                    and t in f.variables]
            if not tder:
                if any(isinstance(d, sp.Derivative) and t in d.variables
                       for d in term.atoms(sp.Derivative)):
                    raise UnsupportedTask(
                        f"equation {i + 1} ({sp.sstr(system.exprs[i])!r}): a "
                        f"time derivative appears inside another expression in {term}; write the "
                        "equation as Σ c·dt(q) + rest")
                rest += term
                continue
            d = tder[0]
            coeff = sp.Mul(*[f for f in factors if f is not d])
            if len(tder) == 1 and d.variables == (t,) and d.expr.has(sp.Derivative):
                raise UnsupportedTask(
                    f"equation {i + 1}: the time derivative of a space derivative (a"
                    " Sobolev-type term such as BBM's dt(u - dx(u, 2))): the generic generators"
                    " need dt(q) with q free of space derivatives; supply reference data"
                    " (--dev-data; examples/tasks/make_reference.py makes the example's)")
            if len(tder) > 1 or d.variables != (t,) or coeff.has(sp.Derivative) \
                    or d.expr.has(sp.Derivative):
                raise UnsupportedTask(
                    f"equation {i + 1}: the term {term} is not c·dt(q) with q and c free of "
                    "derivatives (higher or mixed time derivatives are not supported)")
            q = d.expr.xreplace(ctx.func_to_symbol)
            c = coeff.xreplace(ctx.func_to_symbol)
            for j, us in enumerate(usyms):
                mass[i, j] += c * sp.diff(q, us)
        if all(sp.simplify(mass[i, j]) == 0 for j in range(n)):
            raise UnsupportedTask(
                f"equation {i + 1} of task {task.name!r} has no time derivative: the generic "
                "generator needs every equation in the form dt(q) + rest = 0 (no constraints)")
        rests.append(rest)

    mass = mass.applyfunc(sp.simplify)
    identity = mass == sp.eye(n)
    rsyms = [sp.Dummy(f"R{i}") for i in range(n)]
    rvec = sp.Matrix(rsyms)
    if identity:
        ut = [-r for r in rsyms]
    else:
        det = sp.simplify(mass.det())
        if det == 0:
            raise UnsupportedTask(
                f"task {task.name!r}: the time-derivative part of the system is singular "
                f"(mass matrix {mass.tolist()} has zero determinant), so u_t is not determined")
        ut = [sp.cancel(e) for e in mass.LUsolve(-rvec)]
    ut_fn = array_function(ctx.arg_symbols + rsyms, ut)
    rest_nodes = [_Compiled(r, ctx) for r in rests]
    linear = _linear_parts(mass, rests, funcs, ctx) if not mass.free_symbols \
        else [[] for _ in funcs]
    return CompiledSystem(unknowns=system.unknowns, dim=len(coords), rest=rest_nodes,
                          ut_fn=ut_fn, mass_is_identity=identity, linear=linear, ut_exprs=ut,
                          introduced=reduction.introduced)


def _linear_parts(mass: sp.Matrix, rests: list[sp.Expr], funcs: list[sp.Expr],
                  ctx: _Context) -> list[list[tuple[float, tuple[int, ...]]]]:
    """Constant-coefficient terms c·∂^n u_i of u_t,i = −(M⁻¹ rest)_i (M constant)."""
    minv = mass.inv()
    out: list[list[tuple[float, tuple[int, ...]]]] = []
    dep = (ctx.t, *ctx.coords, *funcs)
    for i, fi in enumerate(funcs):
        combined = sum((minv[i, j] * rests[j] for j in range(len(funcs))), sp.Integer(0))
        expr = sp.expand(-combined.doit())
        terms: dict[tuple[int, ...], float] = {}
        for term in sp.Add.make_args(expr):
            c, rest = term.as_independent(*dep, as_Add=False)
            if not c.is_number:
                continue
            if rest == fi:
                orders = (0,) * len(ctx.coords)
            elif isinstance(rest, sp.Derivative) and rest.expr == fi:
                orders = ctx.orders(rest)
            else:
                continue
            terms[orders] = terms.get(orders, 0.0) + float(c)
        out.append([(c, o) for o, c in terms.items() if c != 0.0])
    return out
