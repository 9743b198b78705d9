"""No input crashes the analyst (issue 19, item 6): a seeded sample of equation forms, generated
from a grammar of terms over the allowed functions, each gets an acceptance (with designs the
author can render) or a one-line refusal, never an exception, and ``tasks check`` stays fast.

The grammar draws what users type: fluxes and their non-conservative forms, products of
derivatives, cross derivatives, derivatives of order 1 to 4 of expressions, every function of the
expression reader's allowlists (Piecewise and Heaviside included), coefficients that depend on
x and t, a parameter times a bracket holding dt, Sobolev-type dt(u - dx(u, 2)), second time
derivatives, systems of two unknowns, periodic boxes and every kind of wall, 1D and 2D."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from pdesharp.builtin.support import support
from pdesharp.expression import ELEMENTARY, SPECIAL
from pdesharp.task import TaskError, task_from_dict

FUNCTIONS = [f for f in ELEMENTARY if f not in ("Piecewise", "atan2", "Min", "Max", "re", "im")]
SPECIALS = ["erf", "erfc", "besselj", "gamma", "sinc", "Si", "expint", "airyai"]
BOUNDARIES_1D = ["periodic", "dirichlet: {u} = 0", "neumann: dx({u}) = 0",
                 "x = 0: {u} = 1 + sin(t)/2; x = 1: dx({u}) + {u} = 0", "robin: dn({u}) + {u} = 0"]
BOUNDARIES_2D = ["periodic", "dirichlet: {u} = 0", "periodic in x; y = 0: {u} = 0; y = 1: dy({u}) = 0"]


class Grammar:
    def __init__(self, rng: random.Random, unknowns, space):
        self.rng, self.unknowns, self.space = rng, unknowns, space

    def atom(self):
        r = self.rng.random()
        if r < 0.55:
            return self.rng.choice(self.unknowns)
        if r < 0.7:
            return self.rng.choice(["nu", "k", "2", "0.5", "3"])
        return self.rng.choice(list(self.space) + ["t", "pi"])

    def expr(self, depth=0):
        r = self.rng.random()
        if depth > 2 or r < 0.3:
            return self.atom()
        if r < 0.45:
            return f"{self.expr(depth + 1)}*{self.expr(depth + 1)}"
        if r < 0.55:
            return f"({self.expr(depth + 1)} + {self.expr(depth + 1)})"
        if r < 0.62:
            return f"{self.expr(depth + 1)}**{self.rng.choice([2, 3])}"
        if r < 0.72:
            f = self.rng.choice(FUNCTIONS if self.rng.random() < 0.85 else SPECIALS)
            arg = self.expr(depth + 1)
            if f == "besselj":
                return f"besselj(0, {arg})"
            if f in ("log", "sqrt", "acosh", "asin", "acos", "atanh", "gamma"):
                arg = f"(2 + {arg}**2)" if f != "asin" else f"{arg}/(2 + {arg}**2)"
            return f"{f}({arg})"
        if r < 0.77:
            return (f"Piecewise(({self.expr(depth + 1)}, {self.rng.choice(self.space)} < 0.5),"
                    f" ({self.expr(depth + 1)}, True))")
        return self.derivative(depth + 1)

    def derivative(self, depth):
        a = self.rng.choice(self.space)
        n = self.rng.choice([1, 1, 2, 2, 3, 4])
        inner = self.rng.choice(self.unknowns) if self.rng.random() < 0.5 else self.expr(depth)
        d = f"d{a}({inner}, {n})" if n > 1 else f"d{a}({inner})"
        if len(self.space) > 1 and self.rng.random() < 0.2:
            d = f"d{self.space[1 - self.space.index(a)]}({d})"
        return d

    def rhs(self):
        return " + ".join(self.term() for _ in range(self.rng.randint(1, 3)))

    def term(self):
        r = self.rng.random()
        if r < 0.5:
            return f"{self.atom()}*{self.derivative(1)}"
        if r < 0.8:
            return self.derivative(1)
        return self.expr(1)

    def equation(self, u):
        r = self.rng.random()
        if r < 0.55:
            return f"dt({u}) = {self.rhs()}"
        if r < 0.65:
            return f"nu*(dt({u}) - {self.rhs()}) + {self.atom()}"
        if r < 0.75:
            return f"dt({u} - dx({u}, 2)) = {self.rhs()}"
        if r < 0.85:
            return f"dt({u}, 2) = {self.rhs()}"
        if r < 0.9:
            return f"dt({u}) + {self.expr(1)}*dt({u}) = {self.rhs()}"
        return f"dt({u}) + {self.rhs()}"


def sample(seed: int) -> dict:
    rng = random.Random(seed)
    space = ["x"] if rng.random() < 0.75 else ["x", "y"]
    unknowns = ["u"] if rng.random() < 0.7 else ["u", "v"]
    g = Grammar(rng, unknowns, space)
    boundary = rng.choice(BOUNDARIES_1D if len(space) == 1 else BOUNDARIES_2D)
    if boundary != "periodic":
        boundary = "; ".join(boundary.format(u=u) for u in unknowns) if "x = 0" not in boundary \
            and "y = 0" not in boundary else boundary.format(u=unknowns[0])
    return {"name": f"fuzz{seed}", "equation": [g.equation(u) for u in unknowns],
            "parameters": {"nu": 0.01, "k": 2.0}, "domain": {a: [0, 1] for a in space},
            "boundary": boundary, "time_span": [0, 0.5], "n_frames": 6}


SEEDS = range(48)


def test_every_form_gets_a_verdict_fast():
    """48 seeded forms: each an acceptance whose first designs render, or a one-line refusal
    naming the reason. Measured: ~0.3 s per form on a quiet machine, the slowest ~3 s (SymPy on a
    system); the bounds below (20 s per form, 4 min in all) still catch the 30 s dsolve of a
    cubic source the analysis used to spend. CPU time of this process, where the analysis runs
    (its clocks are timers in this process), not wall time: a loaded machine (load 13, 2 cores:
    11.6 s wall for the slowest form) slows the wall clock, not the work."""
    verdicts, slow, t_all = {}, [], time.process_time()
    for seed in SEEDS:
        spec = sample(seed)
        t0 = time.process_time()
        try:
            task = task_from_dict(spec, f"fuzz {seed}")
        except TaskError as exc:  # the reader refused it: also a verdict, with the reason
            verdicts[seed] = ("spec", str(exc))
            continue
        got = support(task)  # must not raise
        took = time.process_time() - t0
        slow.append((took, seed))
        if got.supported:
            assert got.families and got.designs, spec
            verdicts[seed] = ("accepted", got.families)
        else:
            reason = got.reason
            assert reason and "\n" not in reason, (spec, reason)
            assert "its analysis failed" not in reason, (spec, reason)  # a defect, not a verdict
            verdicts[seed] = ("refused", reason)
    total = time.process_time() - t_all
    worst = max(slow)
    assert worst[0] < 20.0, f"tasks check took {worst[0]:.1f} s on {sample(worst[1])}"
    assert total < 240.0
    kinds = [v[0] for v in verdicts.values()]
    # the sample is broad: a third of the forms accepted (16 measured), some refused by name,
    # and the random signs make ill-posed forms (dt(u) = 2*dx(u, 4), dt(u) = dx(v, 2) with
    # dt(v) = dx(u): 11 measured), which are said to be so instead of accepted and blowing up
    ill = [v[1] for v in verdicts.values() if v[0] == "refused" and "ill-posed" in v[1]]
    assert kinds.count("accepted") >= 14 and kinds.count("refused") >= 3, verdicts
    assert len(ill) >= 5, verdicts


@pytest.mark.parametrize("equations,unknowns", [
    (["dt(u, 2) = dx(u, 2) - sin(u)"], ["u"]),  # sine-Gordon
    (["dt(u, 2) = dx(u, 2) - u - u**3"], ["u"]),  # nonlinear Klein-Gordon
    (["dt(a) = -dx(b, 2) + n*b", "dt(b) = dx(a, 2) - n*a", "dt(n, 2) = dx(n, 2) + dx(a**2 + b**2, 2)"],
     ["a", "b", "n"]),  # Zakharov (real and imaginary parts of E, the density n)
])
def test_second_order_systems_with_a_nonlinear_source_are_accepted_not_crashed(equations,
                                                                               unknowns):
    """These crashed tasks check and solve in _coupled_rate ("setting an array element with a
    sequence"); now the coupling's wave speed bounds the step and designs exist."""
    spec = {"name": "waves", "equation": equations, "parameters": {},
            "domain": {"x": [0, 20]}, "boundary": "periodic", "time_span": [0, 1], "n_frames": 6}
    got = support(task_from_dict(spec))
    assert got.supported, got.reason
    assert got.designs


def _fourier_reference(rhs, y0, x, t):
    """An independent reference for the systems below: Fourier differentiation on the output
    grid (the periodic, smooth data are resolved to round-off at N = 128 on (0, 20)) and
    SciPy's DOP853 at rtol 1e-11; shares no code with pdesharp. ``rhs(y, d)`` gets ``d(f, p)``,
    the p-th derivative, and ``d(f, -2)`` applying (1 - d^2)^-1."""
    from scipy.integrate import solve_ivp

    k = 2 * np.pi * np.fft.fftfreq(len(x), x[1] - x[0])

    def d(f, p):
        sym = 1 / (1 + k**2) if p == -2 else (1j * k) ** p
        return np.real(np.fft.ifft(sym * np.fft.fft(f)))

    stiff = getattr(rhs, "stiff", False)  # fourth and sixth orders: Radau IIA, implicit
    sol = solve_ivp(lambda _, y: rhs(y.reshape(len(y0), -1), d).ravel(), (t[0], t[-1]),
                    np.concatenate(y0), method="Radau" if stiff else "DOP853", t_eval=t,
                    rtol=1e-10 if stiff else 1e-11, atol=1e-12 if stiff else 1e-13)
    return sol.y.reshape(len(y0), len(x), len(t)).transpose(2, 1, 0)  # [T, N, fields]


def _nlkg(y, d):  # u_tt = u_xx - u - u^3 as (u, u_t)
    u, v = y
    return np.array([v, d(u, 2) - u - u**3])


def _zakharov(y, d):  # a_t = -b_xx + n b, b_t = a_xx - n a, n_tt = n_xx + (a^2 + b^2)_xx
    a, b, n, m = y
    return np.array([-d(b, 2) + n * b, d(a, 2) - n * a, m, d(n, 2) + d(a**2 + b**2, 2)])


def _camassa_holm(y, d):  # (1 - d^2) u_t = -3 u u_x + 2 u_x u_xx + u u_xxx
    (u,) = y
    ux, uxx = d(u, 1), d(u, 2)
    return np.array([d(-3 * u * ux + 2 * ux * uxx + u * d(u, 3), -2)])


def _advected_by_s(y, d):  # u_t = 2 lam s u_x + u_xx, s_t = s_xx (lam = 0.5)
    u, s_ = y
    return np.array([s_ * d(u, 1) + d(u, 2), d(s_, 2)])


def _pfc(y, d):  # phase-field crystal: u_t = (u^3 + (r + 1) u + 2 u_xx + u_xxxx)_xx, r = -0.2
    (u,) = y
    return np.array([d(u**3 + 0.8 * u + 2 * d(u, 2) + d(u, 4), 2)])


def _surface_diffusion(y, d):  # u_t = -(u_xxx / (1 + u_x^2)^2)_x
    (u,) = y
    return np.array([-d(d(u, 3) / (1 + d(u, 1) ** 2) ** 2, 1)])


_pfc.stiff = _surface_diffusion.stiff = True


@pytest.mark.parametrize("equations,rhs,initial", [
    # a non-conservative product of two unknowns (-2*lam*s*dx(u), the form)
    (["dt(u) - 2*0.5*s*dx(u) - dx(u, 2) = 0", "dt(s) = dx(s, 2)"], _advected_by_s,
     lambda x: [np.exp(-(x - 10) ** 2), 1 + 0.5 * np.sin(2 * np.pi * x / 20)]),
    # sixth and fourth order, nonlinear (phase-field crystal, surface diffusion)
    (["dt(u) = dx(u**3 + (r + 1)*u + 2*dx(u, 2) + dx(u, 4), 2)".replace("r", "-0.2")], _pfc,
     lambda x: [0.3 * np.cos(2 * np.pi * 3 * x / 20) + 0.1 * np.sin(2 * np.pi * x / 20)]),
    (["dt(u) + dx(dx(u, 3)/(1 + dx(u)**2)**2) = 0"], _surface_diffusion,
     lambda x: [0.5 * np.sin(2 * np.pi * 2 * x / 20) + 0.2 * np.cos(2 * np.pi * 5 * x / 20)]),
    (["dt(u, 2) = dx(u, 2) - u - u**3"], _nlkg, lambda x: [np.exp(-(x - 10) ** 2)]),
    (["dt(a) = -dx(b, 2) + n*b", "dt(b) = dx(a, 2) - n*a",
      "dt(n, 2) = dx(n, 2) + dx(a**2 + b**2, 2)"], _zakharov,
     lambda x: [0.8 / np.cosh(x - 10), 0 * x, -0.5 / np.cosh(x - 10) ** 2]),
    # Camassa-Holm: u*dx(u, 3) held by the inverted Sobolev operator (was refused: the step
    # bound ignored the operator, 3e-11)
    (["dt(u - dx(u, 2)) + 3*u*dx(u) - 2*dx(u)*dx(u, 2) - u*dx(u, 3) = 0"], _camassa_holm,
     lambda x: [0.5 * np.exp(-((x - 10) / 2) ** 2)]),
])
def test_the_accepted_systems_are_solved(equations, rhs, initial):
    """Accepted means solved: the first designs of nonlinear Klein-Gordon and Zakharov (the
    systems that crashed in _coupled_rate) and of the forms the issue names against the
    independent Fourier reference above;
    starting at rest (the task declares no velocity). The best family's first design must reach
    1e-4 (measured: Fourier ETDRK4 5.0e-6 on Klein-Gordon, 1.0e-8 on Zakharov, where finite
    volumes, the only family Zakharov had before, stop at 2.4e-3; 7e-10 on Camassa-Holm;
    3.8e-9 on the product s*dx(u) (method of lines 2.3e-6); 1.3e-7 on the phase-field crystal;
    2.9e-7 on surface diffusion)."""
    from pdesharp.builtin import BuiltinAnalyst, DataBounds
    from pdesharp.builtin.author import design_facts, problem, render
    from pdesharp.builtin.families import candidate_designs

    from builtin_helpers import nrmse

    spec = {"name": "waves", "equation": equations, "parameters": {},
            "domain": {"x": [0, 20]}, "boundary": "periodic", "time_span": [0, 1], "n_frames": 6}
    task = task_from_dict(spec)
    n = 128
    x = (np.arange(n) + 0.5) * 20 / n
    t = np.linspace(0, 1, 6)
    y0 = initial(x)
    at_rest = [0 * x] * sum("dt(u, 2)" in e or "dt(n, 2)" in e for e in equations)  # velocities
    ref = _fourier_reference(rhs, y0 + at_rest, x, t)[..., : len(y0)]
    bounds = DataBounds(fields={u: (float(f.min()) - 0.1, float(f.max()) + 0.1)
                                for u, f in zip(task.equation.unknowns, y0)}, n={"x": n})
    analysis = BuiltinAnalyst(data_bounds=bounds).analyse_sync(task)
    p = problem(task, design_facts(analysis))
    scores = {}
    firsts = {}
    for design in candidate_designs(p):  # each family's first design (a run's candidates)
        firsts.setdefault(design.family, design)
    for design in firsts.values():
        ns: dict = {}
        exec(compile(render(task, design, p), "<wave solver>", "exec"), ns)
        out = ns[task.solver.name](*[f[None] for f in y0], t)
        out = out if isinstance(out, tuple) else (out,)
        pred = np.stack([np.asarray(o)[0] for o in out], -1)
        assert pred.shape == ref.shape and np.isfinite(pred).all()
        scores[design.family] = nrmse(pred[None], ref[None])
    assert min(scores.values()) < 1e-4, scores
