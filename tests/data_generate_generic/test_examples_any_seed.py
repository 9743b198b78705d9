"""Every shipped example task generates data with any seed (issue 20: ``fisher_robin1d`` failed
with seeds 1 and 3, ``isothermal_euler1d`` with every seed), its initial data within the
example's ``generator.ranges`` (two seeds per example); the steady examples say why the generic
generator cannot make them (or, where a steady generator exists, generate too: one solution
whatever the seed). Small grids, two frames and loose tolerances keep this quick: it checks
the initial data, the walls and that integration succeeds, not accuracy (the exact-solution
tests do that)."""

from __future__ import annotations

import numpy as np
import pytest

from pdesharp.data.generate.generic import check_task, make_batch
from pdesharp.data.generate.generic_symbolic import UnsupportedTask
from pdesharp.examples import example_names, example_path
from pdesharp.task import load_task

EXAMPLES = example_names()
LOOSE = {"rtol": 1e-7, "tol": 1e-6, "n_frames": 2}


def test_the_examples_are_found():
    assert {"fisher_robin1d", "burgers_inflow1d", "heat2d", "poisson1d"} <= set(EXAMPLES)


# examples of forms the generic generator accepts but cannot integrate from its random data
# (Sobolev-type dt, fourth order between walls, Euler's shocks: every draw fails, and `data
# generate` says so after its redraws): their references come from
# examples/tasks/reference_terms.py (and the upper-convected Maxwell start-up, whose quadratic
# stress coupling check_task refuses up front: examples/tasks/reference_waves.py). Known gap:
# check_task should refuse the others up front too.
DEDICATED = {"bbm_soliton1d", "bbm_walls1d", "cahn_hilliard_neumann1d", "sod1d", "ucm_startup1d"}


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_generates_with_several_seeds(name):
    if name in DEDICATED:
        pytest.skip("reference made by examples/tasks/reference_terms.py or reference_waves.py,"
                    " not the generic generator")
    task = load_task(example_path(name))
    try:
        check_task(task)
    except UnsupportedTask as exc:  # only a steady example may be refused, saying why
        assert task.steady and "steady" in str(exc), str(exc)
        return
    nx = 16 if len(task.equation.space) == 1 else 8
    spec = task.generator
    modes = spec.modes if spec else 4
    if 3 * modes >= nx:
        nx = 3 * modes + 4
    ranges = spec.ranges if spec else {}
    options = dict(LOOSE)
    if not task.boundary.startswith("periodic"):
        # walls: a degree-12 tensor grid in 2D keeps Radau's dense Jacobian small (11^2 rows per
        # unknown), degree 32 in 1D keeps the stiffness of dispersive problems (Gross-Pitaevskii:
        # eigenvalues ~ degree^4) down; resolution is not what this test checks (in 2D the
        # initial data's conditions are checked on a fine grid whatever the degree)
        options["collocation"] = 12 if len(task.equation.space) == 2 else 32
        # and Radau at rtol 1e-4: at 1e-7 the 1D Gross-Pitaevskii example takes ~190k
        # right-hand sides per sample (60-250 s), at 1e-5 ~8k, at 1e-4 a quarter of that time
        # (Zakharov between walls: 14 -> 6 s for three seeds); a blow-up still fails Radau and
        # a non-finite value still fails the assertion below, whatever the tolerance
        options["rtol"] = 1e-4
    # two seeds: 1 and 3, the draws issue 20 saw fail (fisher_robin1d); a third seed cost a
    # third more CPU (~15 s over the examples) for one more random draw per example. A steady
    # example draws nothing (one solution whatever the seed): one seed (stokes2d and
    # diffusion_variable2d took 13 s for two)
    for seed in (1,) if task.steady else (1, 3):
        batch = make_batch(task, seed, 0, 1, nx, **options)
        for unknown, key in task.data.fields.items():
            field = batch.arrays[key]
            assert np.all(np.isfinite(field)), (name, seed, unknown)
            if unknown in ranges:
                lo, hi = ranges[unknown]
                slack = 0.005 * (hi - lo)  # F's extrema are measured on a reference grid
                assert lo - slack <= field[:, 0].min() and field[:, 0].max() <= hi + slack, \
                    (name, seed, unknown, field[:, 0].min(), field[:, 0].max())
