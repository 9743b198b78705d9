"""The faster paths of the catalogue's solvers (issue 27) compute what the plain ones compute:
the exact family's all-frames-at-once propagation against its frame loop, and the spectral
family's streamlined ETDRK4 still fourth order. In-process (our own generated code)."""

from __future__ import annotations

import os
import re

import numpy as np

from pdesharp.builtin.author import problem, render
from pdesharp.builtin.families import family
from pdesharp.builtin.families.bases import BASES as BASES_CODE
from pdesharp.task import task_from_dict


def _task(equation, boundary="periodic", space=("x",), span=(0.0, 0.5), frames=6,
          parameters=None):
    return task_from_dict({
        "name": "speed_paths", "title": "speed paths", "description": "test",
        "equation": {"unknowns": ["u"], "equations": [equation], "space": list(space),
                     "time": "t", "coefficients": [], "constants": {}},
        "parameters": parameters or {}, "domain": {a: [0.0, 1.0] for a in space},
        "grid": "cell_centres",
        "boundary": boundary, "time_span": list(span), "n_frames": frames,
        "solver": {"args": [{"name": "u0", "kind": "initial", "field": "u"},
                            {"name": "t", "kind": "time"}],
                   "returns": ["u"], "template": "def solver(): ..."},
        "data": {"fields": {"u": "tensor"}, "t_key": "t-coordinate"}})


# APEBench's Swift-Hohenberg (r = 0.7, k = 1): a cubic source, a 4th-order linear part
SH = ("dt(u) + 0.3*u + 2*(dx(u, 2) + dy(u, 2)) + dx(u, 4) + 2*dx(dy(u, 2), 2) + dy(u, 4)"
      " - u**2 + u**3")


def _namespace(task, fam, **axes):
    return _exec(render(task, family(fam).design(**axes), problem(task)))


def _exec(code):
    ns: dict = {}
    exec(compile(code, "<solver>", "exec"), ns)
    return ns


def _full(ns, vh, grid):
    """A spectral solver's state as full-size spectra (it may carry its kept block alone)."""
    return ns["_spectrum"](vh, grid) if grid["on_block"] else vh


def test_exact_family_all_frames_at_once_equals_the_frame_loop():
    # advection, diffusion and dispersion, uneven output times (a frame loop's steps differ)
    rng = np.random.default_rng(3)
    t = np.array([0.0, 0.013, 0.05, 0.051, 0.2, 0.5])
    for task, shape in ((_task("dt(u) + 0.7*dx(u) - 0.01*dx(u, 2) - 0.001*dx(u, 3)"), (3, 24)),
                        (_task("dt(u) - 0.05*(dx(u, 2) + dy(u, 2))", "neumann: dn(u) = 0",
                               ("x", "y")), (2, 12, 10))):
        ns = _namespace(task, "exact")
        u0 = rng.standard_normal(shape)
        fast = ns["_evolve"]([u0], t, {})[0]
        loop = ns["_evolve_frames"]([u0], t, {})[0]
        assert fast.shape == loop.shape == (shape[0], len(t)) + shape[1:]
        assert np.array_equal(fast[:, 0], u0)  # frame 0 is the input as given
        # both are exact up to round-off: a few hundred ulps of the field's scale (the frame
        # loop accumulates one rounding per frame and transform)
        scale = np.abs(loop).max()
        assert np.abs(fast - loop).max() <= 500 * np.finfo(float).eps * scale


def test_exact_family_plans_are_kept_across_calls_and_keyed_by_what_they_depend_on():
    # the next call reuses the grid, L(k) and the frames' propagators (no exponential computed
    # again) and computes exactly what a fresh module computes; another shape, other output
    # times or other parameter values get their own plan, never a kept one
    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 0.5, 6)
    for task, shape, other in ((_task("dt(u) + a*dx(u) - 0.01*dx(u, 2)", parameters={"a": 0.7}),
                                (3, 24), (2, 30)),
                               (_task("dt(u) - 0.05*(dx(u, 2) + dy(u, 2))", "neumann: dn(u) = 0",
                                      ("x", "y")), (2, 12, 10), (2, 8, 14))):
        prm = dict(task.parameters)
        u0, u1 = rng.standard_normal(shape), rng.standard_normal(other)
        ns = _namespace(task, "exact")
        first = ns["_evolve"]([u0], t, prm)[0]
        assert len(ns["_PLANS"]) == 1
        expm = ns["_expm"]
        ns["_expm"] = lambda A: (_ for _ in ()).throw(AssertionError("propagator recomputed"))
        again = ns["_evolve"]([u0], t, prm)[0]
        assert np.array_equal(again, first)
        assert np.array_equal(first, _namespace(task, "exact")["_evolve"]([u0], t, prm)[0])
        ns["_expm"] = expm
        # interleaved: another shape, then other times, then other parameter values
        for u, tt, pp in ((u1, t, prm), (u0, t[:4] * 1.5, prm),
                          (u0, t, {"a": -0.3} if prm else prm)):
            got = ns["_evolve"]([u], tt, pp)[0]
            want = _namespace(task, "exact")["_evolve"]([u], tt, pp)[0]
            assert np.array_equal(got, want)
        assert np.array_equal(ns["_evolve"]([u0], t, prm)[0], first)


def test_spectral_etdrk4_stays_fourth_order():
    # a flux and a cubic source (both transformed every stage), errors against a 32x finer
    # step: every stage of the streamlined step and its coefficients take part (a wrong stage
    # weight leaves first or second order)
    task = _task("dt(u) + 0.05*dx(u**2) + u**3", span=(0.0, 0.4), frames=3)
    x = (np.arange(32) + 0.5) / 32
    u0 = np.array([1.0 + 0.5 * np.cos(2 * np.pi * x), 0.8 + 0.3 * np.sin(4 * np.pi * x)])
    t = np.linspace(0.0, 0.4, 3)
    fine = _namespace(task, "spectral", CFL=0.0125, REFINE=2)["solver"](u0, t)
    errs = [np.abs(_namespace(task, "spectral", CFL=c, REFINE=2)["solver"](u0, t) - fine).max()
            for c in (0.4, 0.2)]
    # halving the step divides a fourth-order error by ~16; second order would give ~4
    assert errs[1] > 0 and 9.0 < errs[0] / errs[1] < 30.0, errs


def test_split_family_on_spectra_equals_the_frame_loop():
    # reaction-diffusion with an exact logistic step: Strang and its Richardson extrapolation,
    # 1D and 2D, several steps per frame and uneven frames; the same splitting, so only
    # round-off apart (transforms in a different order)
    t = np.array([0.0, 0.01, 0.03, 0.031, 0.08])
    rng = np.random.default_rng(5)
    for task, shape in ((_task("dt(u) - 0.01*dx(u, 2) - 5*u*(1 - u)"), (3, 40)),
                        (_task("dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) - 5*u*(1 - u)",
                               space=("x", "y")), (2, 16, 12))):
        u0 = 0.5 + 0.4 * np.tanh(rng.standard_normal(shape))
        for axes in ({"SYMBOL": "spectral", "SPLIT_DT": 0.004},
                     {"SYMBOL": "fd2", "SPLIT_DT": 0.004, "SPLITTING": "richardson"}):
            ns = _namespace(task, "split", **axes)
            assert ns["SOURCE_EXACT"] and not ns["HAS_FLUX"]  # the spectral path is the one run
            for dense_max in (ns["DENSE_MAX"], 0):  # 1D: dense products, then FFTs
                ns["DENSE_MAX"] = dense_max
                fast = ns["_evolve"]([u0], t, {})[0]
                loop = ns["_evolve_frames"]([u0], t, {})[0]
                assert np.array_equal(fast[:, 0], u0)
                assert np.abs(fast - loop).max() <= 1e-13, axes


def test_split_family_merges_the_source_half_steps_between_equal_frames():
    # equal frames: the half steps at a frame's end and the next one's start are one exact
    # source step, and the frames' closing half steps one call on the stack: the same Strang
    # splitting as the frame loop (round-off apart), with n source calls a frame, not n + 1
    t = np.linspace(0.0, 0.08, 6)
    rng = np.random.default_rng(7)
    for task, shape in ((_task("dt(u) - 0.01*dx(u, 2) - 5*u*(1 - u)"), (3, 40)),
                        (_task("dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) - 5*u*(1 - u)",
                               space=("x", "y")), (2, 16, 12))):
        u0 = 0.5 + 0.4 * np.tanh(rng.standard_normal(shape))
        for split_dt, n in ((np.inf, 1), (0.004, 4)):
            ns = _namespace(task, "split", SYMBOL="spectral", SPLIT_DT=split_dt)
            calls = []
            exact = ns["source_exact"]
            ns["source_exact"] = lambda q, tau, X, prm: calls.append(q.shape) or exact(
                q, tau, X, prm)
            fast = ns["_evolve"]([u0], t, {})[0]
            assert len(calls) == 5 * n + 1 and calls[-1] == (5,) + shape  # [T - 1, B, N...]
            loop = ns["_evolve_frames"]([u0], t, {})[0]
            assert len(calls) - (5 * n + 1) == 5 * (n + 1)  # the frame loop: n + 1 a frame
            assert fast.shape == loop.shape and np.array_equal(fast[:, 0], u0)
            # a few roundings of the logistic flow and the propagator: 1e-13 of O(1) values
            assert np.abs(fast - loop).max() <= 1e-13, (split_dt, shape)


def test_split_dense_diffusion_equals_the_fft_path_where_it_applies():
    # on small 1D grids the exact diffusion is a product with the dense circulant propagator:
    # the FFT path's operator, so the same numbers up to round-off; taken only where the
    # generated rule says (1D, N <= 256, B N^2 <= DENSE_MAX: not for a large batch or grid,
    # never in 2D)
    eps = np.finfo(float).eps
    rng = np.random.default_rng(9)
    t = np.array([0.0, 0.01, 0.03, 0.031, 0.08])
    task = _task("dt(u) - 0.01*dx(u, 2) - 5*u*(1 - u)")
    assert "\nDENSE_MAX = 2**18\n" in render(task, family("split").design(), problem(task))
    for sym, splitting in (("spectral", "strang"), ("fd2", "richardson")):
        ns = _namespace(task, "split", SYMBOL=sym, SPLIT_DT=0.004, SPLITTING=splitting)
        rule = ns["DENSE_MAX"]
        for n in (48, 45):  # even and odd grids (only the even one has a Nyquist mode)
            u0 = 0.5 + 0.4 * np.tanh(rng.standard_normal((5, n)))
            ns["DENSE_MAX"] = rule
            U, grid = ns["_init_state"]([u0], {})
            ns["DENSE_MAX"] = 0
            _, fft = ns["_init_state"]([u0], {})
            assert grid["dense"] and not fft["dense"]
            # one application: the product rounds each output by at most N eps sum_i |u_i H_ij|
            # <= N eps max|u| ||H||_1, the kernel and the FFT path by eps log2(N) times as much
            # at most; 10x margin
            for tau in (1e-4, 0.004, 0.1):
                H = ns["_propagator"](tau, grid, {})
                assert H.shape == (n, n)
                one = 10 * eps * n * np.log2(n) * np.abs(H).sum(axis=0).max() * np.abs(U).max()
                err = np.abs(ns["_diffuse"](U, tau, grid, {}) - ns["_diffuse"](U, tau, fft, {}))
                assert err.max() <= one, (sym, n, tau)
            # whole solves: at most 3 (steps + frames) applications (Richardson runs three
            # Strang steps per step), each error carried to the end by the logistic flow
            # (Lipschitz e^{r T}, r = 5) and Richardson's weights (4 + 1) / 3
            ns["DENSE_MAX"] = rule
            dense = ns["_evolve"]([u0], t, {})[0]
            ns["DENSE_MAX"] = 0
            plain = ns["_evolve"]([u0], t, {})[0]
            applications = 3 * (t[-1] / 0.004 + len(t))
            assert np.abs(dense - plain).max() <= applications * one * np.exp(5 * t[-1]) * 5 / 3
    ns["DENSE_MAX"] = rule
    assert ns["_init_state"]([np.zeros((8, 160))], {})[1]["dense"]  # APEBench's 1D size
    assert not ns["_init_state"]([np.zeros((8, 256))], {})[1]["dense"]  # 8 * 256^2 > 2^18
    assert not ns["_init_state"]([np.zeros((1, 512))], {})[1]["dense"]  # N > 256
    ns2 = _namespace(_task("dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) - 5*u*(1 - u)", space=("x", "y")),
                     "split")
    assert not ns2["_init_state"]([np.zeros((1, 8, 8))], {})[1]["dense"]


def _fft_roundoff(x, n_points):
    # a radix-2/3 FFT's error is at most a small multiple of eps log2(N) times the sum of the
    # input's magnitudes (each output is a sum of N terms); 10x covers pocketfft's constants
    return 10.0 * np.finfo(float).eps * max(np.log2(n_points), 1.0) * np.abs(x).sum(
        axis=tuple(range(-x.ndim + 2, 0)), keepdims=True).max()


def test_spectral_pruned_transforms_equal_the_plain_ones():
    # the stage transforms skip the columns the 2/3 mask drops: against numpy's full transforms
    # of the masked spectra, 1D and 2D, even and odd grids, with a flux (wavenumber factor on
    # the kept columns) and a source
    rng = np.random.default_rng(11)
    for task, shape in ((_task("dt(u) + 0.3*dx(u**2) - 0.01*dx(u, 2) + u**3"), (3, 30)),
                        (_task("dt(u) + 0.3*dx(u**2) + 0.2*dy(u**2) - 0.01*(dx(u, 2) + dy(u, 2))"
                               " + u**3", space=("x", "y")), (2, 12, 15))):
        ns = _namespace(task, "spectral")
        state, grid = ns["_init_state"]([rng.standard_normal(shape)], {})
        vh = _full(ns, state, grid)
        axes, s = grid["axes"], grid["shape"]
        plain = np.fft.irfftn(vh * grid["mask"], s=s, axes=axes)
        W = ns["_physical"](vh, grid)
        assert W.shape == plain.shape
        assert np.abs(W - plain).max() <= _fft_roundoff(vh, np.prod(s)) / np.prod(s)
        f = rng.standard_normal(plain.shape)
        got = ns["_spectrum"](ns["_forward_cut"](f, grid), grid)
        want = np.fft.rfftn(f, axes=axes) * grid["mask"]
        assert got.shape == want.shape and np.abs(got - want).max() <= _fft_roundoff(f, f.size)
        # the right-hand side built on them, against one built on numpy's full transforms
        N = ns["_nonlinear"](vh, 0.0, grid, {})
        ref = np.fft.rfftn(np.array(ns["source"](plain, grid["X"], 0.0, {})), axes=axes)
        for a, k in enumerate(grid["k"]):
            ref = ref - 1j * k * np.fft.rfftn(np.array(ns["flux"](plain, grid["X"], 0.0, {}, a)),
                                              axes=axes)
        ref = ref * grid["mask"]
        scale = np.abs(ref).max()
        assert np.abs(N - ref).max() <= 1e3 * np.finfo(float).eps * scale * np.log2(f.size)


def test_spectral_three_halves_grid_output_is_the_series_at_the_data_points():
    # REFINE = 1.5: the state's modes all lie below the data's Nyquist mode, so truncating the
    # spectrum to the data grid evaluates the internal series exactly at the data points;
    # against the series summed directly (after a few steps, so the dealiased modes the
    # nonlinear term feeds are populated)
    task = _task("dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) + u**3 - u", space=("x", "y"))
    ns = _namespace(task, "spectral", REFINE=1.5)
    rng = np.random.default_rng(4)
    data = (8, 10)
    vh, grid = ns["_init_state"]([rng.standard_normal((2,) + data)], {})
    assert grid["shape"] == (12, 15)
    for _ in range(3):
        vh = ns["_step"](vh, 0.0, 0.01, grid, {})
    out = np.array(ns["_output"](vh, grid, {}))
    F = np.fft.fftn(np.fft.irfftn(_full(ns, vh, grid), s=grid["shape"], axes=(2, 3)),
                    axes=(2, 3))
    E = [np.exp(2j * np.pi * np.outer(np.arange(nd) * (ni / nd), np.fft.fftfreq(ni, 1 / ni)) / ni)
         for ni, nd in zip(grid["shape"], data)]
    series = np.einsum("jm,vbmn,kn->vbjk", E[0], F, E[1]).real / np.prod(grid["shape"])
    assert out.shape == series.shape
    assert np.abs(out - series).max() <= 1e3 * np.finfo(float).eps * np.abs(series).max()
    # a faster search from the usual 2x grid proposes it (a speed move: an accuracy search's
    # judges never spend an evaluation on a grid that can only tie)
    fam = family("spectral")
    assert ("REFINE", 1.5) in [m[:2] for m in fam.speed_moves(fam.design(REFINE=2), problem(task))]
    assert not fam.speed_moves(fam.design(REFINE=1.5), problem(task))
    assert ("REFINE", 1.5) not in [m[:2] for m in fam.moves(fam.design(REFINE=2), problem(task),
                                                            "robust", False)]


def test_wall_spectral_coefficients_are_kept_across_calls():
    # the next batch reuses the ETDRK4 coefficient sets (as a compiled stepper would) and
    # computes exactly what a fresh module computes; the faster search proposes the 3/2 grid
    task = _task("dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) - u + u**3", "neumann: dn(u) = 0",
                 ("x", "y"), span=(0.0, 0.2), frames=3)
    fam = family("wall_spectral")
    rng = np.random.default_rng(8)
    u0 = 0.5 * rng.standard_normal((2, 10, 12))
    t = np.linspace(0.0, 0.2, 3)
    fresh = _namespace(task, "wall_spectral", REFINE=1.5)["solver"](u0, t)
    ns = _namespace(task, "wall_spectral", REFINE=1.5)
    first = ns["solver"](u0, t)
    assert ns["_PLANS"]

    def no_phi(z):
        raise AssertionError("coefficients recomputed")
    ns["_phi"] = no_phi
    again = ns["solver"](u0, t)
    assert np.array_equal(first, fresh) and np.array_equal(again, first)
    assert ("REFINE", 1.5) in [m[:2] for m in fam.speed_moves(fam.design(REFINE=2), problem(task))]


def test_spectral_transforms_take_the_thread_budget_on_large_calls_only(monkeypatch):
    # 2D transforms split a batch across the process's threads where a call covers
    # THREADED_POINTS points or more, and one thread below (where waking a second CPU per call
    # costs more than it saves); the evaluator's budget (OMP_NUM_THREADS = 1) is kept, and any
    # thread count computes the same numbers
    task = _task("dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) + u**3 - u", space=("x", "y"),
                 span=(0.0, 0.1), frames=3)
    u0 = np.random.default_rng(2).standard_normal((4, 12, 12))
    t = np.linspace(0.0, 0.1, 3)
    cpus = len(os.sched_getaffinity(0))
    out = {}
    for budget in ("1", "2"):
        monkeypatch.setenv("OMP_NUM_THREADS", budget)
        small = _namespace(task, "spectral")
        assert 4 * 12 * 12 < small["THREADED_POINTS"] <= 8 * 256 * 256
        vh, grid = small["_init_state"]([u0], {})
        small["_physical"](vh, grid)
        assert grid["cut"][3]["workers"] == 1  # 576 points a call: one thread
        large = _namespace(task, "spectral")
        vh, grid = large["_init_state"]([np.zeros((8, 256, 256))], {})
        large["_cut"](grid)
        assert grid["cut"][3]["workers"] == min(int(budget), cpus)
        forced = _namespace(task, "spectral")
        forced["THREADED_POINTS"] = 0  # the thread budget on this small batch too
        vh, grid = forced["_init_state"]([u0], {})
        assert forced["_cut"](grid)[3]["workers"] == min(int(budget), cpus)
        out[budget] = forced["solver"](u0, t)
    assert np.array_equal(out["1"], out["2"])


def test_wall_spectral_coupled_products_and_cosine_transforms_equal_the_plain_ones():
    # FitzHugh-Nagumo between walls: per-mode 2 x 2 exponentials (COUPLED); the broadcast
    # products against einsum's, and the cosine transforms' zero mode added by assignment
    # against np.pad's, on the whole solve
    task = task_from_dict({
        "name": "fhn_walls", "title": "fhn", "description": "test",
        "equation": {"unknowns": ["u", "w"], "space": ["x", "y"], "time": "t",
                     "equations": ["dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) - u + u**3/3 + w",
                                   "dt(w) - u/10"], "coefficients": [], "constants": {}},
        "parameters": {}, "domain": {"x": [0.0, 1.0], "y": [0.0, 1.0]}, "grid": "cell_centres",
        "boundary": "neumann: dn(u) = 0, dn(w) = 0", "time_span": [0.0, 0.2], "n_frames": 3,
        "solver": {"args": [{"name": "u0", "kind": "initial", "field": "u"},
                            {"name": "w0", "kind": "initial", "field": "w"},
                            {"name": "t", "kind": "time"}],
                   "returns": ["u", "w"], "template": "def solver(): ..."},
        "data": {"fields": {"u": "u", "w": "w"}, "t_key": "t-coordinate"}})
    ns = _namespace(task, "wall_spectral")
    assert ns["COUPLED"]
    rng = np.random.default_rng(6)
    u0, w0 = 0.5 * rng.standard_normal((2, 2, 10, 8))
    t = np.linspace(0.0, 0.2, 3)
    fast = ns["solver"](u0, w0, t)
    plain = _namespace(task, "wall_spectral")
    plain["_mul"] = lambda A, c: np.einsum("ijm,jbm->ibm", A[:, :, 0], c)  # _per_mode's layout
    from scipy.fft import dct

    for a in range(2):  # the cosine transforms with np.pad and np.take, as before
        n = (10, 8)[a]
        w = np.full(n, 1.0 / n)
        w[0] = 0.5 / n
        half = np.full(n, 0.5)
        half[0] = 1.0

        def shaped(v, ax, nd):
            s = [1] * nd
            s[ax] = len(v)
            return v.reshape(s)

        def fwd(u, ax, w=w, n=n):
            pad = [(0, 0)] * u.ndim
            pad[ax] = (0, 1)
            return np.pad(dct(u, type=2, axis=ax) * shaped(w, ax, u.ndim), pad)

        def ev(c, ax, half=half, n=n):
            return dct(np.take(c, np.arange(n), axis=ax) * shaped(half, ax, c.ndim), type=3,
                       axis=ax)
        plain[f"_plain_{a}"] = (fwd, ev)
    real_fast = plain["_fast"]
    plain["_fast"] = lambda a, parity, n: plain[f"_plain_{a}"] if parity == "cos" else \
        real_fast(a, parity, n)
    plain["_fast_whole"] = lambda parity, shape: None  # axis by axis, not one 2-D DCT
    slow = plain["solver"](u0, w0, t)
    for f, s in zip(fast, slow):
        # the same operations in the same order up to the products' summation: round-off
        assert np.abs(f - s).max() <= 100 * np.finfo(float).eps * np.abs(s).max()


def _plain_step(ns, vh, grid, h, prm):
    """One step of the textbook schemes on full-size spectra: numpy's transforms of the masked
    spectra, the physics' own source minus c w, full-size coefficients by the contour mean
    (written here, apart from the generated code's kept-block step)."""
    axes, s, mask = grid["axes"], grid["shape"], grid["mask"]
    c = grid["lin"][2].reshape((-1,) + (1,) * (len(s) + 1))

    def N(v):
        W = np.fft.irfftn(v * mask, s=s, axes=axes)
        return np.fft.rfftn(np.array(ns["source"](W, grid["X"], 0.0, prm)) - c * W,
                            axes=axes) * mask
    z = grid["L"] * h
    e, e2 = np.exp(z), np.exp(z / 2)
    if ns["INTEGRATOR"] != "etdrk4":
        a = N(vh)
        b = N(e2 * (vh + 0.5 * h * a))
        cc = N(e2 * vh + 0.5 * h * b)
        d = N(e * vh + h * e2 * cc)
        return e * vh + h / 6 * (e * a + 2 * e2 * (b + cc) + d)
    r = z[..., None] + np.exp(2j * np.pi * (np.arange(64) + 0.5) / 64)
    q = h * np.mean((np.exp(r / 2) - 1) / r, axis=-1)
    f1 = h * np.mean((-4 - r + np.exp(r) * (4 - 3 * r + r**2)) / r**3, axis=-1)
    f2 = h * np.mean((2 + r + np.exp(r) * (r - 2)) / r**3, axis=-1)
    f3 = h * np.mean((-4 - 3 * r - r**2 + np.exp(r) * (4 - r)) / r**3, axis=-1)
    nv = N(vh)
    a = e2 * vh + q * nv
    na = N(a)
    nb = N(e2 * vh + q * na)
    nc = N(e2 * a + q * (2 * nb - nv))
    return e * vh + f1 * nv + 2 * f2 * (na + nb) + f3 * nc


def test_spectral_kept_block_step_equals_the_full_size_step():
    # the stages run on the block of modes the dealiasing keeps (a quarter of the half-spectrum
    # under the 1/2 rule), with the source's explicit part written in Horner form: against the
    # full-size textbook step, 2D (odd and even sides) and 3D, both integrators, a cubic source
    # under either rule (the design's DEALIAS) and a quadratic one (2/3 rule)
    rng = np.random.default_rng(5)
    cases = ((SH, ("x", "y"), (2, 9, 8), 3, 4),  # the 1/2 rule, odd sides (27 x 24)
             (SH, ("x", "y"), (2, 10, 8), 2, 3),  # the 2/3 rule on a 2x grid
             ("dt(u) - 0.02*(dx(u, 2) + dy(u, 2)) - u*(1 - u)", ("x", "y"), (2, 12, 13), 1, 3),
             ("dt(u) - 0.02*(dx(u, 2) + dy(u, 2) + dz(u, 2)) - u + u**3", ("x", "y", "z"),
              (1, 5, 4, 6), 2, 4))
    for equation, space, shape, refine, rule in cases:
        task = _task(equation, space=space)
        code = render(task, family("spectral").design(REFINE=refine, DEALIAS=rule), problem(task))
        explicit = code[code.index("def explicit_source"):code.index("def linear_parts")]
        assert "**3" not in explicit  # Horner form, small powers as products
        for integ in ("etdrk4", "if_rk4"):
            ns = _namespace(task, "spectral", INTEGRATOR=integ, REFINE=refine, DEALIAS=rule)
            assert ns["DEALIAS_RULE"] == rule
            fast, grid = ns["_init_state"]([0.5 * rng.standard_normal(shape)], {})
            plain = vh = _full(ns, fast, grid)
            for _ in range(3):
                fast = ns["_step"](fast, 0.0, 0.01, grid, {})
                plain = _plain_step(ns, plain, grid, 0.01, {})
            fast = _full(ns, fast, grid)
            assert fast.shape == plain.shape
            # round-off of a few steps of transforms of O(1) fields; the kept block is exact
            # outside (the same exp(hL) vh), so any stage-weight or block slip is O(h) instead
            scale = np.abs(plain).max()
            assert np.abs(fast - plain).max() <= 1e3 * np.finfo(float).eps * scale * np.log2(
                vh.size)


def test_half_rule_removes_the_cubic_aliasing_the_two_thirds_rule_leaves():
    # u^3 of a field with modes |m| < n/r has modes |m| < 3n/r: on the n grid, those above
    # n/2 alias back onto m - n, among the kept modes for r = 3, never for r = 4 (1/2 rule).
    # Against the product on a 4x grid (no aliasing)
    from pdesharp.builtin.families.spectral import dealias_rule
    n = 24
    m = np.arange(n // 2 + 1)
    rng = np.random.default_rng(9)
    for rule, aliased in ((4, False), (3, True)):
        keep = rule * m < n
        coef = (rng.standard_normal(m.size) + 1j * rng.standard_normal(m.size)) * keep
        coef[0] = coef[0].real
        u = np.fft.irfft(coef, n)
        fine = np.fft.irfft(coef, 4 * n) * 4  # the same series at 4x the points
        exact = np.fft.rfft(fine**3)[:m.size] / 4
        err = np.abs(np.fft.rfft(u**3)[keep] - exact[keep]).max()
        assert (err > 1e-8 * np.abs(exact).max()) == aliased, (rule, err)
    for eq, rule in (("dt(u) - 0.01*dx(u, 2) - u + u**3", 4),
                     ("dt(u) + 0.5*dx(u**2) - 0.01*dx(u, 2)", 3),
                     ("dt(u) - 0.01*dx(u, 2) - sin(u)", 3),
                     ("dt(u) + dx(u**2) - 0.01*dx(u, 2) + u**5", 4)):
        assert dealias_rule(problem(_task(eq)).struct) == rule, eq


def test_dealiasing_rule_is_a_design_axis_for_cubic_terms_only():
    # cubic explicit terms (Swift-Hohenberg 2D): Genesis offers the 2x grid under both rules
    # (the tournament measures which pays) and never the 1/2 rule below a 2x grid (it would
    # drop data modes); quadratic terms and 1D (no time saved, 0.98x measured) only the 2/3
    # rule. The rule is named in the title and written in the header where it is a choice
    # (cubic terms, 1D too: a judge may edit it)
    from pdesharp.builtin.design_header import header
    fam = family("spectral")
    rules = {}
    for name, eq, space in (("cubic2d", SH, ("x", "y")),
                            ("quadratic2d", "dt(u) - 0.02*(dx(u, 2) + dy(u, 2)) - u*(1 - u)",
                             ("x", "y")),
                            ("cubic1d", "dt(u) - 0.01*dx(u, 2) - u + u**3", ("x",))):
        task = _task(eq, space=space)
        p = problem(task)
        cands = fam.candidates(p)
        rules[name] = {(d["REFINE"], fam.dealias(d, p)) for d in cands}
        # what a candidate asks for is what its solver computes (no 1/2 rule dropped silently)
        assert all(fam.dealias(d, p) == d["DEALIAS"] for d in cands), name
        for d in cands:
            code = render(task, d, p)
            want = "1/2 dealiasing" if fam.dealias(d, p) == 4 else "2/3 dealiasing"
            assert want in code.split("\n", 1)[0], (name, d)
            assert ("\nDEALIAS = " in header(code)) == name.startswith("cubic"), name
    assert {(2, 3), (2, 4)} <= rules["cubic2d"]
    assert all(r == 3 for _, r in rules["quadratic2d"] | rules["cubic1d"])
    assert {(1, 3), (2, 3)} <= rules["quadratic2d"]


def test_dealiasing_toggle_moves():
    # fastest-below: from a 2x grid under the 2/3 rule, the 1/2 rule is a speed move predicted
    # clearly faster (past the judges' 30% time margin, or they would not spend an evaluation
    # on it); under the accuracy strategy the way back. Below a 2x grid no toggle (the 1/2
    # rule would compute the 2/3 rule there: the same solver, the same key)
    fam = family("spectral")
    p = problem(_task(SH, space=("x", "y")))
    two_thirds, half = fam.design(REFINE=2), fam.design(REFINE=2, DEALIAS=4)
    toggle = [m for m in fam.speed_moves(two_thirds, p) if m[0] == "DEALIAS"]
    assert [m[1] for m in toggle] == [4]
    assert fam.cost(half, p) * 1.3 <= fam.cost(two_thirds, p)
    assert fam.key(half, p) != fam.key(two_thirds, p)
    assert [m[1] for m in fam.moves(half, p, "accuracy", False) if m[0] == "DEALIAS"] == [3]
    assert not [m for m in fam.speed_moves(half, p) if m[0] == "DEALIAS"]
    coarse = fam.design(REFINE=1)
    assert not [m for m in fam.speed_moves(coarse, p) if m[0] == "DEALIAS"]
    assert fam.key(coarse.with_(DEALIAS=4), p) == fam.key(coarse, p)
    # a quadratic problem: the rule is not a choice; 1D: no time to gain. No toggle
    for eq, space in (("dt(u) - 0.02*(dx(u, 2) + dy(u, 2)) - u*(1 - u)", ("x", "y")),
                      ("dt(u) - 0.01*dx(u, 2) - u + u**3", ("x",))):
        q = problem(_task(eq, space=space))
        assert not [m for m in fam.speed_moves(two_thirds, q) + fam.moves(
            two_thirds, q, "accuracy", False) if m[0] == "DEALIAS"], eq


def test_a_judge_seeking_speed_proposes_the_half_rule_and_one_seeking_accuracy_does_not():
    # the judges' path end to end: a 2x-grid Swift-Hohenberg solver under the 2/3 rule, below
    # the objective's bar (fastest-below:1e-6): among a robust judge's next proposals is the
    # DEALIAS line set to 4 (a patch that applies, titled with the new rule); under the
    # accuracy objective no judge proposes it (it is a speed move only)
    import asyncio

    from pdesharp.builtin import BuiltinJudge
    from pdesharp.builtin.design_header import read_design
    from pdesharp.records import Candidate, EvalResult
    from pdesharp.roles import PoolEntry, RoundInfo
    from pdesharp.synthesis.patch import apply_patch
    task = _task(SH, space=("x", "y"))
    code = render(task, family("spectral").design(REFINE=2))
    base = PoolEntry(candidate=Candidate(id="b", code=code, origin="genesis", title="b"),
                     result=EvalResult(status="ok", split="dev", feedback="nrmse", nrmse=5e-7,
                                       solver_seconds=1.0))
    seen = {}
    for objective, bar in (("fastest-below:1e-6", 1e-6), ("accuracy", None)):
        for name in ("judge-1", "judge-2", "judge-3"):
            judge = BuiltinJudge(name=name)
            judge.observe(RoundInfo(cycle=0, round=1, max_rounds=4, cycles=1, objective=objective,
                                    bar=bar, best_score=5e-7, executed=1))
            for _ in range(4):  # a judge never proposes a design twice: its next ones
                prop = asyncio.run(judge.propose(task, base, [base], "nrmse"))
                if prop.patch:
                    seen.setdefault(objective, []).append((prop.title, prop.patch))
    half = [patch for title, patch in seen["fastest-below:1e-6"] if title == "DEALIAS -> 4"]
    assert half, [t for t, _ in seen["fastest-below:1e-6"]]
    new = apply_patch(code, half[0])
    assert read_design(new) == family("spectral").design(REFINE=2, DEALIAS=4)
    assert "1/2 dealiasing" in new.split("\n", 1)[0]
    assert not [t for t, _ in seen.get("accuracy", []) if t.startswith("DEALIAS")]


def test_an_edited_dealias_line_is_what_the_solver_computes():
    # a judge's patch of DEALIAS (the built-in judges' constant_patch) changes the kept modes:
    # on the 16 x 16 internal grid (8 x 8 data, REFINE 2) |m| < 16/4 keeps 7 rows x 4 columns
    # of the half-spectrum, |m| < 16/3 11 x 6. With REFINE edited to 1 the 1/2 rule would drop
    # data modes: the solver computes the 2/3 rule, bit for bit the REFINE = 1 design's
    from pdesharp.builtin.design_header import constant_patch, read_design
    from pdesharp.synthesis.patch import apply_patch
    fam = family("spectral")
    task = _task(SH, space=("x", "y"), span=(0.0, 0.2), frames=3)
    p = problem(task)
    code = render(task, fam.design(REFINE=2), p)
    half = apply_patch(code, constant_patch(code, {"DEALIAS": 4}))
    assert read_design(half) == fam.design(REFINE=2, DEALIAS=4)
    u0 = 0.3 * np.random.default_rng(7).standard_normal((2, 8, 8))
    kept = {}
    for name, text in (("2/3", code), ("1/2", half)):
        ns = _exec(text)
        _, grid = ns["_init_state"]([u0], {})
        kept[name] = (int(grid["mask"].any(axis=1).sum()), int(grid["mask"].any(axis=0).sum()))
    assert kept == {"2/3": (11, 6), "1/2": (7, 4)}
    coarse = apply_patch(half, constant_patch(half, {"REFINE": 1}))
    ns = _exec(coarse)
    assert ns["DEALIAS"] == 4 and ns["DEALIAS_RULE"] == 3
    t = np.linspace(0.0, 0.2, 3)
    plain = _namespace(task, "spectral", REFINE=1)["solver"](u0, t)
    assert np.array_equal(ns["solver"](u0, t), plain)
    # and both rules solve the same PDE: the 2x grid keeps every data mode under either, so
    # the solutions differ only by the aliasing and by the content the cubic term puts into
    # the modes the 1/2 rule drops, which the unit box's k^4 damps hard (3e-12 here): far
    # below the field's size (1e-3 of it), yet above round-off (1e3 ulps of the field: the
    # rule did change the computation)
    a = _exec(code)["solver"](u0, t)
    b = _exec(half)["solver"](u0, t)
    scale = np.abs(a).max()
    assert 1e3 * np.finfo(float).eps * scale < np.abs(a - b).max() <= 1e-3 * scale


def test_a_solver_rendered_before_the_dealias_axis_still_reads_back():
    # files of earlier runs (resumed, or handed to a judge) computed the rule outside the
    # header: "DEALIAS = EXACT_DEALIAS if ...". That line is not an axis value: the design
    # reads back with the default rule instead of not at all (which would make the judges
    # treat the file as foreign); a header line that does not parse still rejects the file
    from pdesharp.builtin.design_header import read_design
    fam = family("spectral")
    task = _task(SH, space=("x", "y"))
    code = render(task, fam.design(REFINE=3, CFL=0.2), problem(task))
    old = re.sub(r"^DEALIAS = 3  #.*\n", "", code, flags=re.M).replace(
        "DEALIAS_RULE = DEALIAS if 3 <= DEALIAS <= 2 * REFINE else 3",
        "DEALIAS = EXACT_DEALIAS if 3 * REFINE >= 2 * EXACT_DEALIAS else 3")
    assert "DEALIAS = EXACT_DEALIAS" in old and "DEALIAS = 3  #" not in old
    assert read_design(old) == fam.design(REFINE=3, CFL=0.2)
    assert read_design(code.replace("CFL = 0.2  #", "CFL = 0.2x  #")) is None


def test_small_powers_print_as_products_where_asked():
    # u**3 as u*u*u (NumPy's u**3 calls pow): the same values, in any position
    import sympy as sp

    from pdesharp.builtin.physics import npcode
    u, v = sp.symbols("u v")
    x = np.linspace(-1.5, 2.0, 7)
    y = np.linspace(0.5, 1.5, 7)
    for e in (u**3, -u**4 + 2 * u**3, (u + v)**3, sp.sqrt(1 + u**4), 1 / (2 + u**3),
              (1 + u**3)**2, u**5, u**-3 + v**2):
        text = npcode(e, products=True)
        assert "**3" not in text and "**4" not in text
        got = eval(text, {"np": np, "u": x, "v": y})
        want = eval(npcode(e), {"np": np, "u": x, "v": y})
        # two products in place of one correctly rounded power: a few ulps of the value
        assert np.allclose(got, want, rtol=8 * np.finfo(float).eps, atol=0.0)


def test_generated_sources_and_remainders_print_cubes_as_products():
    # the physics functions (every family's source) and the wall-spectral remainder run on
    # whole arrays every stage: Allen-Cahn's u**3 there is a general power (~50x u*u*u); the
    # printed files carry the product and solve to the same numbers as the power
    eq = "dt(u) - 0.0025*(dx(u, 2) + dy(u, 2)) - u + u**3"
    for fam, boundary in (("wall_spectral", "neumann: dn(u) = 0"), ("spectral", "periodic")):
        task = _task(eq, boundary=boundary, space=("x", "y"), span=(0.0, 0.05), frames=3)
        code = render(task, family(fam).design(), problem(task))
        body = code.split("\nimport numpy as np\n", 1)[1]  # past the docstring's equation
        assert "u**3" not in body and "u*u*u" in body, fam
        ns = _exec(code)
        powered = _exec(code.replace("u*u*u", "u**3"))
        u0 = 0.5 * np.random.default_rng(3).standard_normal((2, 12, 12))
        t = np.linspace(0.0, 0.05, 3)
        a, b = ns["solver"](u0, t), powered["solver"](u0, t)
        # products against correctly rounded powers: round-off differences of a few ulps per
        # stage, over a few hundred stages of a contracting flow
        assert np.abs(a - b).max() <= 1e-12, fam


def test_library_modules_a_solver_needs_every_run_are_imported_at_the_top():
    # the evaluator imports a file's top-level library imports before its clock starts
    # (evaluate.preload): a 2D spectral or cell-centre wall-spectral solver's scipy.fft import
    # (0.26-0.39 s) is not charged to it, as a user's process pays it once; a 1D spectral solver
    # uses numpy.fft and does not import scipy.fft at all
    from pdesharp.evaluate.preload import library_imports

    cubic = "dt(u) - 0.01*(dx(u, 2) + dy(u, 2)) - u + u**3"
    cases = [(_task(cubic, space=("x", "y")), "spectral", True),
             (_task("dt(u) - 0.01*dx(u, 2) - u + u**3"), "spectral", False),
             (_task(cubic, "neumann: dn(u) = 0", ("x", "y")), "wall_spectral", True)]
    for task, fam, wanted in cases:
        code = render(task, family(fam).candidates(problem(task))[0], problem(task))
        assert ("scipy.fft" in library_imports(code)) == wanted, (fam, task.equation)
        if wanted:  # the block still imports it where it runs: the top line only moves the cost
            assert re.search(r"^\s+import scipy\.fft as", code, re.M)
        ns = _exec(code)  # and the file runs
        u0 = np.random.default_rng(1).standard_normal((1,) + (8,) * len(task.domain))
        assert np.all(np.isfinite(ns["solver"](0.1 * u0, np.linspace(0.0, 0.01, 2))))


def test_spectral_larger_steps_stop_inside_rk4s_stability_limit_and_stay_accurate_there():
    # a larger step is offered up to 90% of RK4's imaginary-axis limit on the kept modes (1.2
    # under the 2/3 rule); a solver at that CFL runs and, for this smooth viscous Burgers
    # solution, stays within 1e-4 of one at CFL 0.1: measured 2.1e-5 at 1.2 (1.0e-5 at 0.9,
    # 1.4e-4 at 2.0), so the bound holds with a 5x margin (deterministic arithmetic)
    task = _task("dt(u) + dx(u**2/2) - 0.02*dx(u, 2)", span=(0.0, 0.5), frames=6)
    fam, p = family("spectral"), problem(task)
    d = fam.design(CFL=0.9)
    larger = [m[1] for m in fam.moves(d, p, "robust", False) if m[0] == "CFL" and m[1] > 0.9]
    assert larger == [fam.max_cfl(d, p)] == [1.2]
    top = fam.design(CFL=1.2)
    assert all(m[1] <= 1.2 for m in fam.moves(top, p, "robust", False) if m[0] == "CFL")
    x = (np.arange(64) + 0.5) / 64
    u0 = np.stack([0.5 + 0.3 * np.sin(2 * np.pi * x), 0.2 - 0.6 * np.cos(4 * np.pi * x)])
    t = np.linspace(0.0, 0.5, 6)
    fast = _namespace(task, "spectral", CFL=1.2)["solver"](u0, t)
    fine = _namespace(task, "spectral", CFL=0.1)["solver"](u0, t)
    assert np.all(np.isfinite(fast))
    assert np.max(np.abs(fast - fine)) < 1e-4


def test_spectral_1d_transform_ufuncs_compute_numpy_fft_numbers_and_fall_back(monkeypatch):
    # on a 1D grid the stages call numpy.fft's transform ufuncs directly (half the time of a
    # call on small arrays): the solver's output is bitwise what numpy.fft's functions give,
    # on even and odd grids; a NumPy without the private module, or with one that computes
    # other numbers, gets numpy.fft itself (no failure, the same output)
    import numpy.fft as npfft

    task = _task("dt(u) + 0.5*dx(u**2) - 0.02*dx(u, 2)", span=(0.0, 0.3), frames=4)
    t = np.linspace(0.0, 0.3, 4)
    rng = np.random.default_rng(8)
    for n in (30, 31):
        u0 = rng.standard_normal((3, n))
        ns = _namespace(task, "spectral")
        fast = ns["solver"](u0, t)
        vh, grid = ns["_init_state"]([u0], {})
        transforms = ns["_cut"](grid)[2]
        if hasattr(npfft, "_pocketfft_umath"):  # NumPy >= 2
            assert isinstance(transforms, ns["_Ufuncs"])
        assert ns["_pocket"]() is transforms  # checked once, not at every call's new grid
        plain = _namespace(task, "spectral")
        plain["_pocket"] = lambda: npfft  # numpy.fft's functions
        want = plain["solver"](u0, t)
        assert np.all(np.isfinite(want)) and np.array_equal(fast, want)
    ns = _namespace(task, "spectral")
    monkeypatch.setattr(npfft, "_pocketfft_umath", None, raising=False)  # module gone
    assert ns["_pocket"]() is npfft

    class Wrong:  # a changed module: other numbers
        def __getattr__(self, name):
            return lambda a, fct, out: out.__setitem__(Ellipsis, 0) or out

    monkeypatch.setattr(npfft, "_pocketfft_umath", Wrong())
    ns = _namespace(task, "spectral")  # a fresh module: the answer is found once per process
    assert ns["_pocket"]() is npfft


# 1D Kuramoto-Sivashinsky as APEBench writes it (conservative form): the case where a stage's
# own Python and passes were half of a step
KS = "dt(u) + 1.8*dx(u**2) + 1.44*dx(u, 2) + 0.4*dx(u, 4)"


def test_spectral_state_is_its_kept_block_where_the_modes_outside_it_are_zero():
    # REFINE = 2 keeps every data mode under the 2/3 rule: the state is the kept block alone
    # and its steps are the full-size state's, number for number (the same operations on the
    # same values; outside the block exp(hL) 0 = 0). REFINE = 1: data modes above n/3 lie
    # outside the block, so the state stays full size
    task = _task(KS, span=(0.0, 0.2), frames=3)
    rng = np.random.default_rng(8)
    u0 = rng.standard_normal((3, 24))
    for refine, on_block in ((2, True), (1, False)):
        for integ in ("etdrk4", "if_rk4"):
            ns = _namespace(task, "spectral", REFINE=refine, INTEGRATOR=integ)
            state, grid = ns["_init_state"]([u0], {})
            assert grid["on_block"] is on_block
            c = grid["cut"][0]
            assert state.shape[-1] == (c if on_block else grid["shape"][0] // 2 + 1)
            if not on_block:
                continue
            full = dict(grid, on_block=False)  # the same grid, carrying full-size spectra
            vh = ns["_spectrum"](state, grid)
            for _ in range(4):
                state = ns["_step"](state, 0.0, 0.003, grid, {})
                vh = ns["_step"](vh, 0.0, 0.003, full, {})
            assert np.array_equal(ns["_spectrum"](state, grid), vh)
            assert state.flags.c_contiguous
            # and the output at the data points from either
            assert np.array_equal(np.array(ns["_output"](state, grid, {})),
                                  np.array(ns["_output"](vh, full, {})))
    # the whole solver, REFINE = 2, against the same solver with the block path switched off
    code = render(task, family("spectral").design(), problem(task))
    off = code.replace('grid["on_block"] = not np.any(rest)', 'grid["on_block"] = False')
    assert off != code
    t = np.linspace(0.0, 0.2, 3)
    assert np.array_equal(_exec(code)["solver"](u0, t), _exec(off)["solver"](u0, t))


def test_generated_entries_computed_on_the_unknowns_add_no_zero():
    # "+ _zero" broadcasts an entry to the unknowns' shape and keeps it a new array: an entry
    # computed on an unknown is both already (one pass less per stage); a bare unknown keeps
    # it (the caller's own array must not come back), and so does an entry of x alone
    task = _task(KS)
    code = render(task, family("spectral").design(), problem(task))
    flux = code[code.index("def flux("):code.index("def wave_speeds(")]
    assert "return [(1.8*u*u)]" in flux or "return [(1.8*u**2)]" in flux, flux
    ns = _exec(code)
    W = [np.linspace(-1.0, 1.0, 8).reshape(2, 4)]
    F = ns["flux"](W, None, 0.0, {}, 0)[0]
    assert F.shape == (2, 4) and F.dtype == np.float64 and np.allclose(F, 1.8 * W[0] ** 2)
    bare = _task("dt(u) + dx(u) - 0.01*dx(u, 2) + sin(x)")
    code = render(bare, family("spectral").design(), problem(bare))
    flux = code[code.index("def flux("):code.index("def wave_speeds(")]
    assert "return [(u) + _zero]" in flux, flux
    ns = _exec(code)
    F = ns["flux"](W, None, 0.0, {}, 0)[0]
    assert F is not W[0] and np.array_equal(F, W[0])


def test_a_1d_flux_alone_takes_the_fused_stage_with_the_same_numbers():
    # 1D, a flux and nothing else, ETDRK4: N is the transforms and the flux with nothing
    # between, -i k moved into the ETDRK4 weights. Against the same solver with the fold off
    # (N = _nonlinear_cut, -i k applied in it): the same numbers to rounding. Tolerance 1e-12
    # relative to max |u|: the two differ only in where -i k multiplies (q (ik F) against
    # (q ik) F), a few ulps per step, over 12 steps of an O(1) solution
    rng = np.random.default_rng(3)
    u0 = rng.standard_normal((2, 24))
    t = np.linspace(0.0, 0.2, 3)
    task = _task(KS, span=(0.0, 0.2), frames=3)
    code = render(task, family("spectral").design(INTEGRATOR="etdrk4"), problem(task))
    off = code.replace("        return terms[0][1]\n    return None", "        return None\n"
                       "    return None")
    assert off != code
    numpy_fft = code.replace("        _FFT1.append(_checked_ufuncs())",
                             "        _FFT1.append(np.fft)")  # a NumPy without the ufuncs
    assert numpy_fft != code
    ns = _exec(code)
    ref = _exec(off)["solver"](u0, t)
    scale = np.abs(ref).max()
    for variant in (ns, _exec(numpy_fft)):
        got = variant["solver"](u0, t)
        assert np.abs(got - ref).max() <= 1e-12 * scale
    state, grid = ns["_init_state"]([u0], {})
    ns["_step"](state, 0.0, 0.01, grid, {})
    assert grid["stage"][1] is not None  # the fused stage: -i k folded
    # a linear source is all in the exact factor: nothing for the stages (no transform of
    # zeros), and the fold holds. Not folded: integrating-factor RK4 (N is added to the state
    # there), a nonlinear source, 2D
    for eq, integ, space, folded in (
            (KS + " - 0.5*u", "etdrk4", ("x",), True), (KS, "if_rk4", ("x",), False),
            (KS + " - u**3", "etdrk4", ("x",), False),
            ("dt(u) + dx(u**2/2) + dy(u**2/2) - 0.1*(dx(u, 2) + dy(u, 2))", "etdrk4",
             ("x", "y"), False)):
        task = _task(eq, space=space, span=(0.0, 0.1), frames=2)
        ns = _namespace(task, "spectral", INTEGRATOR=integ)
        assert ns["HAS_SOURCE"] is eq.endswith("u**3"), eq
        assert ("explicit_source" in ns) is ns["HAS_SOURCE"]
        w0 = rng.standard_normal((1,) + (16,) * len(space))
        state, grid = ns["_init_state"]([w0], {})
        ns["_step"](state, 0.0, 0.001, grid, {})
        assert (grid["stage"][1] is not None) is folded, (eq, integ)


def test_whole_grid_sine_and_cosine_transforms_equal_the_axis_by_axis_ones():
    # one n-D DCT/DST (bases._fast_whole) against _fast's 1-D transforms axis by axis, for each
    # parity in 1, 2 and 3 dimensions; mixed parities and quarter-wave axes keep the axis loop
    ns = _exec("import numpy as np\nAXIS_KIND = ['integer'] * 3\nPARITY = [['cos'] * 3]\n"
               + BASES_CODE)
    rng = np.random.default_rng(11)
    for shape in ((12,), (10, 8), (6, 5, 4)):
        for parity in ("cos", "sin"):
            fwd, ev = ns["_fast_whole"]((parity,) * len(shape), shape)
            u = rng.standard_normal((3,) + shape)
            c = u
            for a, n in enumerate(shape):
                c = ns["_fast"](a, parity, n)[0](c, 1 + a)
            assert np.allclose(fwd(u), c, rtol=0, atol=1e-13 * np.abs(c).max())
            back = c
            for a, n in enumerate(shape):
                back = ns["_fast"](a, parity, n)[1](back, 1 + a)
            assert np.allclose(ev(c), back, rtol=0, atol=1e-13 * np.abs(back).max())
            assert np.allclose(ev(fwd(u)), u, rtol=0, atol=1e-12)  # values -> series -> values
    assert ns["_fast_whole"](("cos", "sin"), (10, 8)) is None
    ns["AXIS_KIND"] = ["integer", "half"]
    assert ns["_fast_whole"](("cos", "cos"), (10, 8)) is None


def test_the_generated_matrix_exponential_equals_scipys_on_real_and_complex_stacks():
    # the exact and wall-spectral families' _expm (a degree-18 Taylor series split after
    # Paterson and Stockmeyer, scaled and squared) against scipy.linalg.expm (Pade): measured
    # 6e-16 .. 5e-13 relative to the largest entry, growing with the squarings; 1e-11 leaves
    # 20x on the worst of them
    from scipy.linalg import expm

    from pdesharp.builtin.families.exact import EXPM

    ns = _exec("import numpy as np\n" + EXPM)
    rng = np.random.default_rng(3)
    for n in (2, 8):
        for scale in (0.05, 1.0, 10.0):
            for dtype in (float, complex):
                A = rng.standard_normal((40, n, n)) * scale / np.sqrt(n)
                if dtype is complex:
                    A = A + 1j * rng.standard_normal(A.shape) * scale / np.sqrt(n)
                E = ns["_expm"](A)
                assert E.dtype == np.result_type(A.dtype, float)  # real stays real
                R = np.array([expm(a) for a in A])
                big = np.abs(R).max(axis=(1, 2), keepdims=True)
                assert np.max(np.abs(E - R) / big) < 1e-11, (n, scale, dtype)
