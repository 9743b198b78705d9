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
    to broadcast into where an entry may not be one (a constant, a function of x alone); either
    way each entry is a new float64 array shaped like the unknown, even from float32 data."""
    ns, code = _physics(equation)
    u = np.linspace(0.1, 0.9, 8, dtype=np.float32).reshape(2, 4)
    W, X = [u], (np.linspace(0, 1, 4),)
    for out in (ns["flux"](W, X, 0.0, {}, 0), ns["source"](W, X, 0.0, {})):
        assert out[0].shape == u.shape and out[0].dtype == np.float64
        assert not np.shares_memory(out[0], u)
    np.testing.assert_allclose(ns["flux"](W, X, 0.0, {}, 0)[0], u.astype(np.float64) ** 2,
                               rtol=1e-6)  # float32 data, float64 result: 1e-6 is the data's
    src = ns["source"](W, X, 0.0, {})[0]
    expected = np.ones(u.shape) if constant else u.astype(np.float64) * (1 - u)
    np.testing.assert_allclose(src, expected, rtol=1e-6)
    # the zeros are allocated only for the constant source
    source_fn = code.split("def source(")[1].split("\ndef ")[0]
    assert ("zeros_like" in source_fn) == constant, source_fn
