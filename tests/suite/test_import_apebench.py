"""`pdesharp suite import apebench`: with APEBench installed (an optional extra), a few
scenarios imported at small settings, their data APEBench's own, their stated error checked and
the task's equation checked against the data by pdesharp's own spectral solver (the audit);
without it, a clear refusal that writes nothing."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import yaml

from pdesharp.cli import main
from pdesharp.suite.importers.apebench import ApebenchUnavailable, import_apebench

EPS32 = 2.0**-24
SETTINGS = ["num_points=32", "test_temporal_horizon=20"]  # small: seconds, not minutes


def test_without_apebench_the_import_says_how_to_install_it_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "apebench", None)  # `import apebench` raises ImportError
    with pytest.raises(ApebenchUnavailable, match="pip install apebench"):
        import_apebench(tmp_path / "s", names=["diff_adv"])
    assert not (tmp_path / "s").exists()
    with pytest.raises(SystemExit) as exit_:
        main(["suite", "import", "apebench", "--out", str(tmp_path / "s")])
    assert exit_.value.code != 0 and "optional extra" in capsys.readouterr().err


def test_a_bad_setting_is_refused_before_anything_is_written(tmp_path):
    for bad in (["num_points=-3"], ["num_points=lots"], ["__class__=1"], ["ic_config=1"]):
        with pytest.raises(ValueError):
            import_apebench(tmp_path / "s", names=["diff_adv"], settings=bad)
    assert not (tmp_path / "s").exists()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    pytest.importorskip("apebench", reason="APEBench is not installed (optional extra: "
                                           "pip install jax jaxlib exponax apebench)")
    out = tmp_path_factory.mktemp("ape") / "suite"
    got = import_apebench(out, names=["diff_adv_diff", "diff_fisher", "diff_ks", "phy_sh"],
                          samples=1, settings=SETTINGS)
    return out, got


@pytest.mark.slow
def test_scenarios_are_imported_with_apebench_data_and_their_stated_error(imported):
    out, got = imported
    names = ["1d_diff_adv_diff-numpoints32-testtemporalhorizon20",
             "1d_diff_fisher-numpoints32-testtemporalhorizon20"]
    assert got.written == names
    reasons = {r["name"]: r["reason"] for r in got.refused}
    assert "mean removed" in reasons["diff_ks"]  # KS in combustion form: exponax's mean removal
    assert "only supported for 2D" in reasons["phy_sh"]  # APEBench's own refusal, passed on
    import h5py

    for name in names:
        case = out / name
        task = yaml.safe_load((case / "task.yaml").read_text())
        assert task["grid"] == "periodic_nodes" and task["n_frames"] == 21
        with h5py.File(case / "test.hdf5") as h5:
            u = h5["tensor"][...]
            assert u.shape == (1, 21, 32) and u.dtype == np.float32
            assert np.array_equal(h5["x-coordinate"][...],
                                  np.linspace(0, 1, 32, endpoint=False).astype(np.float32))
            assert np.allclose(h5["t-coordinate"][...], np.arange(21.0))
            stated = float(h5.attrs["reference_error_estimate"])
            assert "ETDRK4" in h5.attrs["reference_error_method"]
        ref = yaml.safe_load((case / "reference.yaml").read_text())
        assert ref["kind"] == "generated" and ref["error"] == pytest.approx(stated, rel=1e-2)
        assert json.loads((case / "scenario.json").read_text())["settings"] == \
            {"num_points": 32, "test_temporal_horizon": 20}
    # the linear scenario's integrator is exact in time: its error is float32 round-off,
    # accumulated over 20 steps of FFT round trips (a few eps each); 10x margin
    with h5py.File(out / names[0] / "test.hdf5") as h5:
        assert float(h5.attrs["reference_error_estimate"]) < 20 * 10 * EPS32


@pytest.mark.slow
def test_the_task_equation_is_the_one_apebench_integrates(imported):
    """pdesharp's own converged spectral solution of the *task as written* (the audit: float64,
    a finer grid, ETDRK4 to 1e-10), from the stored frame 0, matches APEBench's data to within
    the data's stated error: a wrong sign, coefficient or scaling in the mapping would be off
    by O(1e-2) or more over 20 steps."""
    from pdesharp.audit.core import audit_file
    from pdesharp.task import load_task_file

    out, got = imported
    for name in got.written:
        task = load_task_file(out / name / "task.yaml")
        report = audit_file(task, out / name / "test.hdf5", samples="first:1").report
        assert report.status == "ok", report.reason
        with __import__("h5py").File(out / name / "test.hdf5") as h5:
            stated = float(h5.attrs["reference_error_estimate"])
        # both measure the same error of the data (float32 rounding; for Fisher-KPP also
        # ETDRK2's time error): within a factor 10, or at round-off level (20 steps of eps32)
        assert report.reference_error < max(10 * stated, 20 * 10 * EPS32), (name, stated)
