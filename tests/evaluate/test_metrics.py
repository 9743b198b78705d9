"""nRMSE against an independent, loop-by-loop implementation of CodePDE's formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdesharp.data import load_reference
from pdesharp.evaluate import nrmse
from pdesharp.evaluate.metrics import stack_fields
from pdesharp.task import load_task


def nrmse_loops(pred, ref) -> tuple[float, list[float]]:
    """CodePDE's definition written out with plain Python loops over samples and points."""
    per = []
    for b in range(ref.shape[0]):
        err2 = ref2 = 0.0
        count = 0
        for idx in np.ndindex(ref.shape[1:]):
            p, r = float(pred[(b, *idx)]), float(ref[(b, *idx)])
            err2 += (p - r) ** 2
            ref2 += r * r
            count += 1
        per.append(math.sqrt(err2 / count) / math.sqrt(ref2 / count))
    return sum(per) / len(per), per


@pytest.mark.parametrize("shape", [(3, 5, 16), (2, 4, 8, 3), (3, 9, 9)])
def test_nrmse_matches_loops_on_random_arrays(shape):
    rng = np.random.default_rng(0)
    ref = rng.normal(size=shape).astype(np.float32)
    pred = ref + 0.05 * rng.normal(size=shape)
    mean, per = nrmse(pred, ref)
    expect, expect_per = nrmse_loops(pred, ref)
    # the error is float64 (float64 prediction minus float32 reference), but the reference norm
    # is a float32 mean of float32 squares, exactly as in CodePDE: agreement with the double
    # loop is to float32 summation error (~1e-7 relative), so 1e-6
    assert mean == pytest.approx(expect, rel=1e-6)
    assert np.allclose(per, expect_per, rtol=1e-6)


def test_nrmse_is_zero_for_exact_and_scales_linearly():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(2, 3, 10)).astype(np.float32)
    assert nrmse(ref.copy(), ref)[0] == 0.0
    # a 1% multiplicative error gives exactly 0.01 per sample (up to float32 storage of ref)
    assert nrmse(ref.astype(np.float64) * 1.01, ref)[0] == pytest.approx(0.01, rel=1e-6)


def test_nrmse_rejects_shape_mismatch():
    with pytest.raises(ValueError, match="shape"):
        nrmse(np.zeros((2, 3, 4)), np.ones((2, 3, 5)))


def test_cns_uses_one_joint_norm_per_sample(shared_data):
    """(Vx, density, pressure) stacked on a last axis: density and pressure dominate the norm."""
    task = load_task("cns1d")
    ref = load_reference(task, shared_data / "cns1d_dev.hdf5", limit=1)
    fields = [ref.fields[n] for n in task.solver.returns]
    assert task.solver.returns == ["v", "rho", "p"]  # CodePDE's order: Vx, density, pressure
    pred = [f.astype(np.float64) for f in fields]
    pred[0] = pred[0] + 0.1  # perturb velocity only
    joint, _ = nrmse(stack_fields(pred), stack_fields(fields))
    v_only, _ = nrmse(pred[0], fields[0])
    expect, _ = nrmse_loops(stack_fields(pred)[:, ::10, ::16], stack_fields(fields)[:, ::10, ::16])
    assert joint < v_only / 5  # the joint norm is far larger than the velocity's own norm
    # subsampled loop check: same formula on every 10th frame / 16th cell agrees to ~5%
    assert joint == pytest.approx(expect, rel=0.05)


def test_real_data_perturbed_reference(shared_data):
    """A perturbed copy of real float32 data, checked against the loop formula on all points."""
    task = load_task("burgers")
    ref = load_reference(task, shared_data / "burgers_dev.hdf5", limit=2).fields["u"][:, :20, :64]
    rng = np.random.default_rng(2)
    pred = ref * (1 + 1e-3 * rng.normal(size=ref.shape))
    mean, per = nrmse(pred, ref)
    expect, expect_per = nrmse_loops(pred, ref)
    assert mean == pytest.approx(expect, rel=1e-6)  # float32 reference norm, as above
    assert 5e-4 < mean < 2e-3
    # float32 prediction: CodePDE computes in float32 then; we must not upcast silently
    mean32, _ = nrmse(pred.astype(np.float32), ref)
    assert mean32 == pytest.approx(expect, rel=1e-4)  # float32 sums: ~1e-5 relative
