"""The solver code of the method-of-lines family (:mod:`.mol`): grids and stencils with the
walls eliminated, the implicit operator, the IMEX Runge-Kutta step."""

MOL_BLOCK = '''
# ---- block: method of lines, finite differences with the walls eliminated, IMEX RK ----
import scipy.sparse as _sparse
from scipy.sparse.linalg import splu as _splu

# Ascher-Ruuth-Spiteri IMEX tableaux: (c, explicit A, explicit b, implicit A, implicit b)
_G = 1.0 - 1.0 / np.sqrt(2.0)
_D = 1.0 - 1.0 / (2.0 * _G)
_TABLEAUX = {
    "ars222": ([0.0, _G, 1.0],
               [[0, 0, 0], [_G, 0, 0], [_D, 1 - _D, 0]], [_D, 1 - _D, 0],
               [[0, 0, 0], [0, _G, 0], [0, 1 - _G, _G]], [0, 1 - _G, _G]),
    "ars443": ([0.0, 0.5, 2 / 3, 0.5, 1.0],
               [[0, 0, 0, 0, 0], [0.5, 0, 0, 0, 0], [11 / 18, 1 / 18, 0, 0, 0],
                [5 / 6, -5 / 6, 0.5, 0, 0], [0.25, 1.75, 0.75, -1.75, 0]],
               [0.25, 1.75, 0.75, -1.75, 0],
               [[0, 0, 0, 0, 0], [0, 0.5, 0, 0, 0], [0, 1 / 6, 0.5, 0, 0],
                [0, -0.5, 0.5, 0.5, 0], [0, 1.5, -1.5, 0.5, 0.5]],
               [0, 1.5, -1.5, 0.5, 0.5]),
}


def _fornberg(z, x, m):
    """c[k, j]: weight of the value at x[j] in the k-th derivative at z, k <= m (Fornberg)."""
    n = len(x)
    c = np.zeros((m + 1, n))
    c1, c4 = 1.0, x[0] - z
    c[0, 0] = 1.0
    for i in range(1, n):
        mn = min(i, m)
        c2, c5, c4 = 1.0, c4, x[i] - z
        for j in range(i):
            c3 = x[i] - x[j]
            c2 *= c3
            if j == i - 1:
                for k in range(mn, 0, -1):
                    c[k, i] = c1 * (k * c[k - 1, i - 1] - c5 * c[k, i - 1]) / c2
                c[0, i] = -c1 * c5 * c[0, i - 1] / c2
            for k in range(mn, 0, -1):
                c[k, j] = (c4 * c[k, j] - k * c[k - 1, j]) / c3
            c[0, j] = c4 * c[0, j] / c3
        c1 = c2
    return c


def _ratio():
    """The refinement: odd on cell centres, so that every data centre is an internal centre."""
    r = max(int(REFINE), 1)
    return r if NODES or r % 2 else r + 1


def _axis(a, n_data):
    """Internal points of axis a: free (unknown) points, the extended points (walls added) and
    where the data points sit among them."""
    lo, hi = DOMAIN[a]
    r = _ratio()
    if PERIODIC_AXES[a]:  # n_data distinct points (a node grid's repeated end already dropped)
        n = n_data * r
        off = 0.0 if NODES else 0.5
        x = lo + (np.arange(n) + off) * (hi - lo) / n
        src = lo + (np.arange(n_data) + off) * (hi - lo) / n_data
        return {"periodic": True, "free": x, "ext": x, "h": (hi - lo) / n, "src": src,
                "data": np.arange(n_data) * r + (0 if NODES else r // 2)}
    if NODES:
        n = r * (n_data - 1) + 1
        ext = np.linspace(lo, hi, n)
        src = np.linspace(lo, hi, n_data)
        data = np.arange(n_data) * r
        h = (hi - lo) / (n - 1)
    else:
        n = r * n_data
        free = lo + (np.arange(n) + 0.5) * (hi - lo) / n
        ext = np.concatenate([[lo], free, [hi]])
        src = lo + (np.arange(n_data) + 0.5) * (hi - lo) / n_data
        data = np.arange(n_data) * r + r // 2 + 1
        h = (hi - lo) / n
    return {"periodic": False, "free": ext[1:-1], "ext": ext, "h": h, "src": src, "data": data}


def _interpolation(ax):
    """Matrix [free, data points]: local Lagrange interpolation of degree ORDER + 1."""
    src, x = ax["src"], ax["free"]
    q = min(ORDER + 2, len(src))
    P = np.zeros((len(x), len(src)))
    for i, xi in enumerate(x):
        hit = np.nonzero(np.isclose(src, xi, rtol=0.0, atol=1e-12 * (1 + abs(xi))))[0]
        if hit.size:
            P[i, hit[0]] = 1.0
            continue
        if ax["periodic"]:
            length = ax["h"] * len(x)
            d = (src - xi + length / 2) % length - length / 2
            idx = np.argsort(np.abs(d))[:q]
            P[i, idx] = _fornberg(0.0, d[idx], 0)[0]
        else:
            start = min(max(int(np.searchsorted(src, xi)) - q // 2, 0), len(src) - q)
            idx = np.arange(start, start + q)
            P[i, idx] = _fornberg(xi, src[idx], 0)[0]
    return P


def _closure(cond, xw, near):
    """(alpha, beta): the wall value is alpha . v[near points] + beta * g."""
    if cond is None:  # no condition (outflow): extrapolation of degree ORDER
        return _fornberg(xw, near, 0)[0], 0.0
    a, b, _ = cond
    if b == 0:
        return np.zeros(len(near)), 1.0 / a
    d = _fornberg(xw, np.concatenate([[xw], near]), 1)[1]
    den = a + b * d[0]
    return -b * d[1:] / den, 1.0 / den


def _stencils(ext, k, periodic):
    """Dense [K, K + 2] (walls included) or circulant [K, K] k-th derivative matrix."""
    p = ORDER
    n = len(ext)
    if periodic:
        h = ext[1] - ext[0]
        offs = np.arange(-(p // 2), p // 2 + 1)
        w = _fornberg(0.0, offs * h, k)[k]
        D = np.zeros((n, n))
        for i in range(n):
            D[i, (i + offs) % n] += w
        return D
    K = n - 2
    D = np.zeros((K, n))
    for e in range(1, K + 1):
        lo, hi = e - p // 2, e + p // 2
        if lo <= 0 or hi >= n - 1:  # the stencil reaches a wall: one point wider, anchored there
            width = min(p + 1 + (k == 2), n)
            lo = 0 if lo <= 0 else n - width
            hi = lo + width - 1
        idx = np.arange(lo, hi + 1)
        D[e - 1, idx] = _fornberg(ext[e], ext[idx], k)[k]
    return D


def _operators(a, ax, conds):
    """Per unknown: D1, D2 on the free points (walls folded in), their wall columns, and the
    extension (alpha, beta) per side. A diffusing unknown with no condition on a side gets a
    zero gradient there (extrapolating its wall value would make the discrete diffusion grow a
    spurious mode); a non-diffusing one (an outflow) is extrapolated."""
    out = []
    for j, sides in enumerate(conds):
        sides = [(0.0, 1.0, 0.0) if c is None and DIFFUSES[j][a] else c for c in sides]
        if ax["periodic"]:
            D1, D2 = (_sparse.csr_matrix(_stencils(ax["ext"], k, True)) for k in (1, 2))
            out.append({"D1": D1, "D2": D2})
            continue
        ext, free = ax["ext"], ax["free"]
        K = len(free)
        q = min(ORDER + 1, K)
        ext_rows = []
        for s, cond in enumerate(sides):
            idx = np.arange(q) if s == 0 else np.arange(K - q, K)
            alpha, beta = _closure(cond, ext[0] if s == 0 else ext[-1], free[idx])
            full = np.zeros(K)
            full[idx] = alpha
            ext_rows.append((full, beta))
        op = {"ext": ext_rows}
        for k in (1, 2):
            D = _stencils(ext, k, False)
            inner = D[:, 1:-1] + np.outer(D[:, 0], ext_rows[0][0]) + np.outer(D[:, -1], ext_rows[1][0])
            op[f"D{k}"] = _sparse.csr_matrix(inner)
            op[f"c{k}"] = (D[:, 0] * ext_rows[0][1], D[:, -1] * ext_rows[1][1])
        out.append(op)
    return out


def _along(M, v, axis):
    """Sparse M applied along array axis ``axis`` of v."""
    v = np.moveaxis(v, axis, 0)
    shape = v.shape
    out = M @ v.reshape(shape[0], -1)
    return np.moveaxis(out.reshape((M.shape[0],) + shape[1:]), 0, axis)


def _side(col, g, a, grid):
    """col (along axis a) times the wall data g (a number, or an array along the other axis)."""
    if DIM == 1:
        return col * float(np.asarray(g))
    g = np.broadcast_to(np.asarray(g, dtype=float), (len(grid["axes"][1 - a]["free"]),))
    return np.multiply.outer(col, g) if a == 0 else np.multiply.outer(g, col)


def _wall_data(t, grid, prm, ext_other=False):
    """g per axis, unknown and side at time t, along the other axis' free (or extended) points."""
    key = (t, ext_other)
    if key in grid["gcache"]:
        return grid["gcache"][key]
    out = []
    for a, ax in enumerate(grid["axes"]):
        if ax["periodic"]:
            out.append(None)
            continue
        S = None
        if DIM == 2:
            other = grid["axes"][1 - a]
            S = other["ext"] if ext_other and not other["periodic"] else other["free"]
        rows = []
        for sides in boundary_conditions(t, prm, a, S):
            rows.append([0.0 if c is None else c[2] for c in sides])  # (no condition: g = 0)
        out.append(rows)
    if len(grid["gcache"]) > 64:
        grid["gcache"].clear()
    grid["gcache"][key] = out
    return out


def _derivative(v, j, a, k, t, grid, prm):
    """k-th derivative (k = 1, 2) of unknown j's free values v [B, *K] along axis a."""
    op = grid["ops"][a][j]
    out = _along(op[f"D{k}"], v, 1 + a)
    if not grid["axes"][a]["periodic"]:
        g = _wall_data(t, grid, prm)[a][j]
        lo, hi = op[f"c{k}"]
        out = out + _side(lo, g[0], a, grid) + _side(hi, g[1], a, grid)
    return out


def _all_derivatives(U, t, grid, prm):
    G = [[_derivative(U[j], j, a, 1, t, grid, prm) for j in range(NVAR)] for a in range(DIM)]
    S = [[_derivative(U[j], j, a, 2, t, grid, prm) for j in range(NVAR)] for a in range(DIM)]
    return G, S, _extra_jets(U, t, grid, prm)


def _full_stencil(grid, a, k):
    """The k-th derivative along axis a on an array extended along a (walls included)."""
    key = ("full", a, k)
    if key not in grid["ops_full"]:
        ax = grid["axes"][a]
        grid["ops_full"][key] = _sparse.csr_matrix(_stencils(ax["ext"], k, ax["periodic"]))
    return grid["ops_full"][key]


def _extra_jets(U, t, grid, prm):
    """The derivatives EXTRA_JETS lists (cross derivatives), axis by axis on the extended grid:
    walls and corners from the closures, so d/dy of dx(u) sees dx(u) at the walls too."""
    if not EXTRA_JETS:
        return []
    E = _extend(U, t, grid, prm)
    out = []
    for j, orders in EXTRA_JETS:
        v = E[j]
        for a, o in enumerate(orders):
            if o:
                v = _along(_full_stencil(grid, a, o), v, 1 + a)
        for a, o in enumerate(orders):  # axes left extended: keep the free points
            if not o and not grid["axes"][a]["periodic"]:
                v = np.take(v, np.arange(1, v.shape[1 + a] - 1), axis=1 + a)
        out.append(v)
    return out


def _operator_apply(U, t, grid, prm, terms):
    out = np.zeros_like(U)
    for i, j, kind, a, coef in terms:
        out[i] += coef * (U[j] if kind == 0 else _derivative(U[j], j, a, kind, t, grid, prm))
    return out


def _linear(U, t, grid, prm):
    """The implicit part A U + b(t), wall data included (less the mass operator's data rate)."""
    return _operator_apply(U, t, grid, prm, grid["terms"]) - _mass_rate(U, t, grid, prm)


def _explicit(U, t, grid, prm):
    if not grid["has_explicit"]:
        return np.zeros_like(U)
    G, S, J = _all_derivatives(U, t, grid, prm)
    return _mass_solve(grid, np.array(explicit_rhs(list(U), G, S, J, grid["X"], t, prm)))


def _matrix(grid, terms):
    """The homogeneous part of linear terms (i, j, kind, axis, coefficient), one sparse block
    per (i, j): A of the implicit terms, or the mass operator's part beyond the identity."""
    sizes = [len(ax["free"]) for ax in grid["axes"]]
    N = int(np.prod(sizes))
    eye = [_sparse.identity(n, format="csr") for n in sizes]
    blocks = [[None] * NVAR for _ in range(NVAR)]
    for i, j, kind, a, coef in terms:
        if kind == 0:
            op = _sparse.identity(N, format="csr")
        else:
            op = grid["ops"][a][j][f"D{kind}"]
            for b in range(DIM):  # the Kronecker product along axis a, C order
                if b != a:
                    op = _sparse.kron(op, eye[b]) if b > a else _sparse.kron(eye[b], op)
        term = _sparse.diags(np.broadcast_to(coef, sizes).ravel()) @ op
        blocks[i][j] = term if blocks[i][j] is None else blocks[i][j] + term
    for i in range(NVAR):
        if blocks[i][i] is None:
            blocks[i][i] = _sparse.csr_matrix((N, N))
    return _sparse.bmat(blocks, format="csc")


def _lu_solve(lu, R):
    B = R.shape[1]
    flat = np.moveaxis(R, 1, 0).reshape(B, -1).T
    Z = lu.solve(np.ascontiguousarray(flat))
    return np.moveaxis(Z.T.reshape((B, NVAR) + R.shape[2:]), 0, 1)


def _solve(grid, h, gamma, R):
    """(M - h gamma A) Z = M R for R [NVAR, B, *K] (M = I without a Sobolev-type term)."""
    key = round(h * gamma, 14)
    lu = grid["lu"].get(key)
    if lu is None:
        if len(grid["lu"]) > 8:
            grid["lu"].clear()
        M = grid["M"] if grid["M"] is not None else _sparse.identity(grid["A"].shape[0])
        lu = _splu((M - h * gamma * grid["A"]).tocsc())
        grid["lu"][key] = lu
    return _lu_solve(lu, _mass_apply(grid, R))


def _mass_apply(grid, R):
    if grid["M"] is None:
        return R
    B = R.shape[1]
    flat = np.moveaxis(R, 1, 0).reshape(B, -1).T
    return np.moveaxis((grid["M"] @ flat).T.reshape((B, NVAR) + R.shape[2:]), 0, 1)


def _mass_solve(grid, R):
    """M^-1 R (R itself without a Sobolev-type term)."""
    if grid["M"] is None:
        return R
    if grid.get("M_lu") is None:
        grid["M_lu"] = _splu(grid["M"].tocsc())
    return _lu_solve(grid["M_lu"], R)


def _mass_rate(U, t, grid, prm):
    """d/dt of the mass operator's affine part (the wall data it folds in), by a central
    difference in t: zero for data constant in time."""
    if grid["M"] is None or not grid["mass_terms"]:
        return 0.0
    dt = 1e-6 * max(1.0, abs(t))
    zero = np.zeros_like(U)
    plus = _operator_apply(zero, t + dt, grid, prm, grid["mass_terms"])
    minus = _operator_apply(zero, t - dt, grid, prm, grid["mass_terms"])
    return (plus - minus) / (2 * dt)


def _imex_step(U, t, h, grid, prm):
    c, AE, bE, AI, bI = _TABLEAUX[INTEGRATOR]
    KE, KI = [], []
    for i in range(len(c)):
        R = U.copy()
        for j in range(i):
            if AE[i][j]:
                R = R + h * AE[i][j] * KE[j]
            if AI[i][j]:
                R = R + h * AI[i][j] * KI[j]
        ti = t + c[i] * h
        if AI[i][i] and grid["implicit"]:
            # (M - h g A) Ui = M R + h g b(ti); then M^-1 (A Ui + b(ti)) = (Ui - R) / (h g)
            b = _linear(np.zeros_like(U), ti, grid, prm)
            Ui = _solve(grid, h, AI[i][i], R + h * AI[i][i] * _mass_solve(grid, b))
            KI.append((Ui - R) / (h * AI[i][i]))
        else:
            Ui = R
            KI.append(_mass_solve(grid, _linear(Ui, ti, grid, prm)) if grid["implicit"]
                      else np.zeros_like(U))
        last = i == len(c) - 1 and not bE[i]
        KE.append(np.zeros_like(U) if last else _explicit(Ui, ti, grid, prm))
    out = U.copy()
    for j in range(len(c)):
        if bE[j]:
            out = out + h * bE[j] * KE[j]
        if bI[j]:
            out = out + h * bI[j] * KI[j]
    return out


def _init_state(W0, prm):
    data_shape = W0[0].shape[1:]
    axes = [_axis(a, n) for a, n in enumerate(data_shape)]
    conds = [[[None, None]] * NVAR if ax["periodic"] else boundary_conditions(
        0.0, prm, a, axes[1 - a]["free"] if DIM == 2 else None) for a, ax in enumerate(axes)]
    grid = {"axes": axes, "lu": {}, "gcache": {}, "ops_full": {}}
    grid["ops"] = [_operators(a, ax, conds[a]) for a, ax in enumerate(axes)]
    grid["X"] = tuple(ax["free"].reshape((-1,) + (1,) * (len(axes) - a - 1))
                      for a, ax in enumerate(axes))
    grid["h"] = [ax["h"] for ax in axes]
    grid["terms"] = [(i, j, kind, a, np.asarray(coef, dtype=float))
                     for i, j, kind, a, coef in implicit_terms(grid["X"], prm)]
    grid["implicit"] = bool(grid["terms"])
    grid["A"] = _matrix(grid, grid["terms"]) if grid["implicit"] else None
    # the Sobolev-type operator: M = I + sum C d^orders, orders along one axis, at most 2
    grid["mass_terms"] = [(i, j, sum(o), next(a for a, v in enumerate(o) if v), float(m[i][j]))
                          for o, m in mass_terms(prm) for i in range(NVAR) for j in range(NVAR)
                          if m[i][j]]
    grid["M"] = None
    if grid["mass_terms"]:
        n = int(np.prod([len(ax["free"]) for ax in axes])) * NVAR
        grid["M"] = (_sparse.identity(n) + _matrix(grid, grid["mass_terms"])).tocsc()
        if grid["A"] is None:
            grid["A"] = _sparse.csc_matrix((n, n))
        grid["implicit"] = True  # every stage solves with M
    grid["has_explicit"] = HAS_EXPLICIT
    P = [_interpolation(ax) for ax in axes]
    U = []
    for w in W0:
        v = np.asarray(w, dtype=float)
        for a, Pa in enumerate(P):
            v = _along(_sparse.csr_matrix(Pa), v, 1 + a)
        U.append(v)
    return np.array(U), grid


def _extend(U, t, grid, prm):
    """Every unknown on the extended grid: the wall values from the closures (in 2D the
    second axis' walls use the first axis' extended values: the corners come from them)."""
    out = U
    for a, ax in enumerate(grid["axes"]):
        if ax["periodic"]:
            continue
        g = _wall_data(t, grid, prm, ext_other=a == 1)[a]
        parts = []
        for j in range(NVAR):
            v = np.moveaxis(out[j], 1 + a, -1)
            (alo, blo), (ahi, bhi) = grid["ops"][a][j]["ext"]
            lo = v @ alo + blo * np.asarray(g[j][0], dtype=float)
            hi = v @ ahi + bhi * np.asarray(g[j][1], dtype=float)
            lo, hi = np.broadcast_to(lo, v.shape[:-1]), np.broadcast_to(hi, v.shape[:-1])
            parts.append(np.moveaxis(np.concatenate([lo[..., None], v, hi[..., None]], -1), -1,
                                     1 + a))
        out = np.array(parts)
    return out


def _output(U, grid, prm):
    E = _extend(U, grid["t"], grid, prm)
    idx = tuple(ax["data"] for ax in grid["axes"])
    return [E[j][(slice(None),) + np.ix_(*idx)] for j in range(NVAR)]


def _steps(span, dt):
    """ceil(span / dt) rounded up to three significant binary digits: few distinct steps,
    so few LU factorisations."""
    n = max(int(np.ceil(span / dt)), 1)
    shift = max(n.bit_length() - 3, 0)
    return -(-n >> shift) << shift


def _stable_dt(U, t, grid, prm):
    if not grid["has_explicit"]:
        return DT_MAX
    G, S, J = _all_derivatives(U, t, grid, prm)
    r = explicit_rates(list(U), G, S, J, grid["X"], t, prm)
    rate = r[2 * DIM]
    for a in range(DIM):
        rate += r[2 * a] * C1[ORDER] / grid["h"][a] + r[2 * a + 1] * C2[ORDER] / grid["h"][a] ** 2
    for m, (j, orders) in enumerate(EXTRA_JETS):
        c = 1.0
        for a, o in enumerate(orders):
            c *= (C1[ORDER] if o == 1 else C2[ORDER]) / grid["h"][a] ** o if o else 1.0
        rate += r[2 * DIM + 1 + m] * c
    return min(DT_MAX, CFL / rate) if rate > 0 else DT_MAX


def _advance_to(U, t0, t1, grid, prm):
    span = t1 - t0
    dt = _stable_dt(U, t0, grid, prm)
    if not np.all(np.isfinite(U)) or not dt > 0:
        grid["t"] = t1
        return np.full_like(U, np.nan)
    n = 1 if not np.isfinite(dt) or dt >= span else _steps(span, dt)
    if n > 2**20:
        grid["t"] = t1
        return np.full_like(U, np.nan)  # the step collapsed: the solution is blowing up
    h = span / n
    for m in range(n):
        U = _imex_step(U, t0 + m * h, h, grid, prm)
    grid["t"] = t1
    return U
'''
