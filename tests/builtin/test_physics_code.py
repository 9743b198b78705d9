"""The physics functions the built-in families generate from the equation (builtin/physics.py):
what they return, whatever shortcut the emitted code takes."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from pdesharp.builtin.balance_law import balance_law
from pdesharp.builtin.physics import law_facts, physics_source
from pdesharp.task import task_from_dict


def _physics(equation: str) -> tuple[dict, str]:
    task = task_from_dict(yaml.safe_load(f"""\
        name: t
        equation: {equation}
        domain: {{x: [0, 1]}}
        boundary: periodic
        time_span: [0, 1]
        n_frames: 3
        """))
    law = balance_law(task)
    code = physics_source(law, law_facts(law))
    ns = {"np": np}
    exec(code, ns)
    return ns, code


@pytest.mark.parametrize("equation, constant", [
    ("dt(u) + dx(u**2) - u*(1 - u)", False),  # every entry an array of the unknown
    ("dt(u) + dx(u**2) - 1", True)])  # a constant source: no array of its own
def test_flux_and_source_are_new_float64_arrays_of_the_unknowns_shape(equation, constant):
    """The flux and the source run at every stage, so their code only allocates a zero array
    to broadcast into where an entry may not be one (a constant, a function of x alone), and
    adds it only there: an entry computed on the unknown is a new array of its shape already.
    Each entry is a new float64 array shaped like the unknown: the unknowns are float64 (every
    solver casts its inputs on entry: families/common.py; tested with float32 data in
    test_every_family_returns_float64_from_float32_data)."""
    ns, code = _physics(equation)
    u = np.linspace(0.1, 0.9, 8, dtype=np.float64).reshape(2, 4)
    W, X = [u], (np.linspace(0, 1, 4),)
    for out in (ns["flux"](W, X, 0.0, {}, 0), ns["source"](W, X, 0.0, {})):
        assert out[0].shape == u.shape and out[0].dtype == np.float64
        assert not np.shares_memory(out[0], u)
    np.testing.assert_allclose(ns["flux"](W, X, 0.0, {}, 0)[0], u ** 2, rtol=1e-15)
    src = ns["source"](W, X, 0.0, {})[0]
    expected = np.ones(u.shape) if constant else u * (1 - u)
    np.testing.assert_allclose(src, expected, rtol=1e-15)
    # the zeros are allocated, and added, only for the constant source
    source_fn = code.split("def source(")[1].split("\ndef ")[0]
    assert ("zeros_like" in source_fn) == constant, source_fn
    assert ("+ _zero" in source_fn) == constant, source_fn
    flux_fn = code.split("def flux(")[1].split("\ndef ")[0]
    assert "+ _zero" not in flux_fn, flux_fn


def test_every_family_returns_float64_from_float32_data():
    """The physics functions compute in the unknowns' type (an entry computed on the unknown
    adds no float64 zero): every time-dependent family's solver casts its inputs to float64 on
    entry, so float32 data (PDEBench stores float32) give the float64 solution, the same as
    the data cast beforehand."""
    from pdesharp.builtin.author import problem, render
    from pdesharp.builtin.families import family

    task = task_from_dict(yaml.safe_load("""\
        name: t
        equation: dt(u) + dx(0.5*u**2) - 0.01*dx(u, 2) - u*(1 - u)
        domain: {x: [0, 1]}
        boundary: periodic
        time_span: [0, 0.05]
        n_frames: 3
        """))
    u0 = (0.5 + 0.3 * np.sin(2 * np.pi * (np.arange(32) + 0.5) / 32)).reshape(1, 32)
    t = np.linspace(0.0, 0.05, 3)
    for name in ("spectral", "fv", "mol", "split"):
        ns: dict = {}
        exec(compile(render(task, family(name).design(), problem(task)), name, "exec"), ns)
        low = ns["solver"](u0.astype(np.float32), t)
        assert low.dtype == np.float64, name
        # float32 data are the float64 data rounded: the same solution of the rounded data
        assert np.array_equal(low, ns["solver"](u0.astype(np.float32).astype(np.float64), t))


@pytest.mark.parametrize("equation, rate, flow", [
    # the logistic u' = r u (1 - u) and Allen-Cahn's u' = u - u^3 (Bernoulli), written by hand
    ("dt(u) - 0.004*dx(u, 2) - 20*u*(1 - u)", lambda x: 20.0,
     lambda q, r, t: q * np.exp(r * t) / (1 - q + q * np.exp(r * t))),
    ("dt(u) - 0.01*dx(u, 2) - (1 + x)*u*(1 - u)", lambda x: 1.0 + x,
     lambda q, r, t: q * np.exp(r * t) / (1 - q + q * np.exp(r * t))),
    ("dt(u) - 0.01*dx(u, 2) - (u - u**3)", lambda x: 1.0,
     lambda q, r, t: q / np.sqrt(q**2 + (1 - q**2) * np.exp(-2 * t)))])
def test_the_exact_source_step_computes_its_parts_free_of_the_field_once(equation, rate, flow):
    """The split schemes call source_exact on the whole field every step: its parts that do not
    depend on the field (exp(-r tau), 1 - exp(-r tau)) are bound once per call, one exp where
    the plain form had two, and the array expression collected in q0. Same values as the
    closed form written here: within 1e-13 relative (a few roundings of O(1) quantities; the
    two forms differ in the order of operations), at small and long steps, q0 = 0 included,
    with no floating-point exception (the chosen form's guard against overflow kept)."""
    ns, code = _physics(equation)
    body = code[code.index("def source_exact"):].split("\n\n\n")[0]
    ret = body[body.index("return"):]
    assert body.count("np.exp(") == 1 and "exp" not in ret, body
    x = np.linspace(0.0, 1.0, 7)
    q = np.linspace(0.0, 1.7, 7)[:, None] * np.ones_like(x)
    for tau in (1e-6, 1e-3, 0.5, 30.0):
        with np.errstate(all="raise"):
            got = ns["source_exact"](q, tau, (x,), {})
        want = flow(q, rate(x), tau)
        assert np.allclose(got, want, rtol=1e-13, atol=0.0), (tau, np.abs(got - want).max())


def test_a_rewriting_of_the_exact_step_that_runs_long_is_given_up_for_the_plain_form(
        monkeypatch):
    """The rewriting expands a closed form derived from the task's (untrusted) source: a clock
    bounds it, and past it the solvers get the plain closed form, the same numbers."""
    import time

    from pdesharp.builtin import physics

    def slow(*args):
        time.sleep(30)  # (interrupted by the 2 s clock)
        raise AssertionError("the clock did not stop the rewriting")

    monkeypatch.setattr(physics, "hoisted", slow)
    start = time.monotonic()
    ns, code = _physics("dt(u) - 0.01*dx(u, 2) - 17*u*(1 - u)")  # (a law no other test caches)
    assert time.monotonic() - start < 20
    body = code[code.index("def source_exact"):].split("\n\n\n")[0]
    assert body.count("np.exp(") == 2 and "_p0" not in body, body
    q = np.linspace(0.0, 1.5, 5)
    want = q * np.exp(17 * 0.1) / (1 - q + q * np.exp(17 * 0.1))
    assert np.allclose(ns["source_exact"](q, 0.1, (None,), {}), want, rtol=1e-13, atol=0.0)
