"""Every generated reference states its own error (issue 24, item 3): the stored estimate
against independent solutions, the resolution that adapts to the tolerance, the refusal when no
resolution reaches it, and the audit of a generated walled file by regeneration.

The walled case is the issue's: Allen–Cahn between Neumann walls in 2D, ε = 0.05, whose
reference on a fixed 26×26 Chebyshev grid was 2.4e-4 from the PDE's solution. The independent
solution here is a cosine (DCT-II) pseudo-spectral ETDRK4 solver written below, sharing no code
with the generator: homogeneous Neumann walls are the even reflection, so the cosine series is
the natural basis. Only the initial data are the generator's (its analytic random functions,
evaluated at the DCT's cell centres), since the draw is what makes the sample.
"""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest
from scipy.fft import dctn, idctn

from pdesharp.audit import audit_file
from pdesharp.cli import main
from pdesharp.data.generate import accuracy, generate_to_file, generic_bounded
from pdesharp.data.generate.generic_bounded import make_box, wall_initial_data
from pdesharp.data.generate.generic_symbolic import compile_system
from pdesharp.examples import example_path
from pdesharp.task import load_task

N_OUT = 16  # output cell centres per axis (small: the test is about the error, not the grid)
FINE = 15  # DCT grid = 15 x 16 = 240 cell centres per axis; odd, so every output centre is one


def _nrmse(a: np.ndarray, b: np.ndarray) -> float:
    """CodePDE's nRMSE of one sample (all frames and points) against ``b``."""
    return float(np.sqrt(np.mean((np.asarray(a, float) - b) ** 2)) / np.sqrt(np.mean(b ** 2)))


def _dct_allen_cahn(task, sample: int, eps: float, times: np.ndarray) -> np.ndarray:
    """u_t = ε²Δu + u − u³ with zero normal derivative on (0, 1)², by cosine pseudo-spectral
    ETDRK4 (Kassam–Trefethen weights), 4 steps per frame interval, on 240² cell centres.
    Measured 2.9e-9 (nRMSE) from an 81×81 Chebyshev run of the same data; 144² gives 2.2e-8."""
    n = N_OUT * FINE
    x = (np.arange(n) + 0.5) / n
    system = compile_system(task, bounded=True)
    box = make_box(task, N_OUT, 32)
    u0 = wall_initial_data(task, system.unknowns, system.introduced, box, [x, x], 1, 0,
                           first=sample)["u"][1][0]
    k = np.pi * np.arange(n)
    lam = -eps ** 2 * (k[:, None] ** 2 + k[None, :] ** 2) + 1.0  # ε²Δ + 1 in the cosine basis

    def nonlinear(v):
        return dctn(-idctn(v, type=2, norm="ortho") ** 3, type=2, norm="ortho")

    h = (times[1] - times[0]) / 4
    z = h * lam
    r = np.exp(2j * np.pi * (np.arange(32) + 0.5) / 32)
    lr = z[..., None] + r
    e, e2 = np.exp(z), np.exp(z / 2)
    q = h * np.real(np.mean((np.exp(lr / 2) - 1) / lr, -1))
    f1 = h * np.real(np.mean((-4 - lr + np.exp(lr) * (4 - 3 * lr + lr ** 2)) / lr ** 3, -1))
    f2 = h * np.real(np.mean((2 + lr + np.exp(lr) * (lr - 2)) / lr ** 3, -1))
    f3 = h * np.real(np.mean((-4 - 3 * lr - lr ** 2 + np.exp(lr) * (4 - lr)) / lr ** 3, -1))
    v = dctn(u0, type=2, norm="ortho")
    frames = [u0]
    for _ in range(len(times) - 1):
        for _ in range(4):
            nv = nonlinear(v)
            a = e2 * v + q * nv
            na = nonlinear(a)
            b = e2 * v + q * na
            nb = nonlinear(b)
            c = e2 * a + q * (2 * nb - nv)
            v = e * v + f1 * nv + 2 * f2 * (na + nb) + f3 * nonlinear(c)
        frames.append(idctn(v, type=2, norm="ortho"))
    centre = FINE // 2
    return np.asarray(frames)[:, centre::FINE, centre::FINE]


@pytest.fixture(scope="module")
def walled(tmp_path_factory):
    """The issue's task generated as a user does, one sample, the default tolerance (1e-6)."""
    folder = tmp_path_factory.mktemp("walls")
    spec = example_path("allen_cahn_neumann2d")
    out = folder / "ac.hdf5"
    assert main(["data", "generate", str(spec), "--samples", "1", "--seed", "0", "--nx",
                 str(N_OUT), "--check-samples", "1", "--out", str(out)]) == 0
    task = load_task(spec)
    with h5py.File(out, "r") as h5:
        data = h5["tensor"][()]
        times = h5["t-coordinate"][()]
        attrs = dict(h5.attrs)
    exact = _dct_allen_cahn(task, 0, task.parameters["epsilon"], np.asarray(times, float))
    return task, out, data, attrs, _nrmse(data[0], exact)


def test_a_generated_wall_reference_is_within_the_tolerance_and_says_how_far(walled):
    task, out, data, attrs, true_error = walled
    est = accuracy.read_estimate(attrs)
    assert est is not None and est.estimate is not None and est.met
    assert est.tolerance == accuracy.DEFAULT_TOLERANCE
    # the criterion (1e-5), and the tolerance the file claims to meet
    assert true_error <= 1e-5 and true_error <= est.tolerance
    # the resolution adapted: the default 33x33 grid is ~2e-5 off, so a finer level was written
    assert int(attrs["resolution_level"]) >= 1
    levels = json.loads(attrs["reference_error_levels"])
    assert levels[0]["difference"] > est.tolerance >= levels[-1]["difference"]
    # The stored estimate bounds the true error within a factor 2: it is the difference from
    # the next finer level, which converges geometrically (ratio ~1/15 per level measured);
    # 1e-8 covers the DCT solution's own error (2.9e-9). Nor is it a gross over-estimate.
    assert true_error <= 2 * est.estimate + 1e-8, (true_error, est.estimate)
    assert est.estimate <= 5 * true_error + 1e-8, (true_error, est.estimate)


def test_the_audit_of_a_generated_wall_file_regenerates_it_finer(walled):
    task, out, data, attrs, true_error = walled
    report = audit_file(task, out).report
    assert report.status == "ok", report.reason
    assert "generator" in report.method and "finer" in report.method
    # the audit's converged solution is two levels finer than the file (~1e-9 from the truth)
    assert abs(report.reference_error - true_error) <= 0.5 * true_error + 1e-8
    assert report.convergence.estimated_error < 0.2 * report.reference_error
    assert report.stated_error == pytest.approx(float(attrs["reference_error_estimate"]))
    assert report.own_error == report.reference_error


def test_a_file_whose_recorded_draw_is_not_its_data_is_not_audited_by_regeneration(
        walled, tmp_path):
    """Hostile attributes: a seed that does not make the stored initial data, then a spec that
    is not the task's. Neither is believed."""
    task, out, *_ = walled
    forged = tmp_path / "forged.hdf5"
    shutil.copy(out, forged)
    with h5py.File(forged, "r+") as h5:
        h5.attrs["seed"] = 7
    report = audit_file(task, forged).report
    assert report.status == "unavailable" and "not the recorded generator's draw" in report.reason
    with h5py.File(forged, "r+") as h5:
        h5.attrs["seed"] = 0
        h5.attrs["task_spec"] = str(h5.attrs["task_spec"]).replace("0.05", "0.5")
    report = audit_file(task, forged).report
    assert report.status == "unavailable" and "another task spec" in report.reason


HEAT_ROBIN = """\
name: heat_robin
equation: dt(u) = 0.05*dx(u, 2) + sin(pi*x)
domain: {x: [0, 1]}
boundary: "x = 0: u = 0.5; x = 1: dx(u) + u = 1"
time_span: [0, 0.5]
n_frames: 3
generator: {modes: 3, ranges: {u: [0, 1]}}
"""


def test_an_unreachable_tolerance_is_refused_before_the_run_or_written_with_a_warning(
        tmp_path, monkeypatch, capsys):
    # 1e-12 is below float32 storage (~3e-8 relative): no resolution level can reach it
    monkeypatch.setattr(generic_bounded, "LEVELS", 2)  # two levels: one comparison, quick
    spec = tmp_path / "heat.yaml"
    spec.write_text(HEAT_ROBIN)
    out = tmp_path / "heat.hdf5"
    args = ["data", "generate", str(spec), "--samples", "3", "--seed", "1", "--nx", "16",
            "--out", str(out), "--tolerance", "1e-12", "--check-samples", "1"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "no resolution level reached the tolerance 1.0e-12" in err and "level 0" in err
    assert "--on-tolerance warn" in err
    assert not out.exists() and not list(tmp_path.glob("*.partial"))
    assert main(args + ["--on-tolerance", "warn"]) == 0
    printed = capsys.readouterr().out
    assert "WARNING: the reference error is above the tolerance" in printed
    est = accuracy.read_file_estimate(out)
    assert est.met is False and est.level == 1 and 1e-12 < est.estimate < 1e-6


ADVECTION_DIFFUSION = """\
name: advdiff
equation: dt(u) = -dx(u) + 0.01*dx(u, 2)
domain: {x: [0, 1]}
boundary: periodic
time_span: [0, 0.5]
n_frames: 5
"""


def test_a_periodic_reference_estimate_matches_its_exact_error(tmp_path):
    """Linear, so the exact solution of the generator's (band-limited) initial data is each
    Fourier mode moved and damped; the file's error is then its float32 storage."""
    spec = tmp_path / "advdiff.yaml"
    spec.write_text(ADVECTION_DIFFUSION)
    task = load_task(spec)
    out = generate_to_file(task, 3, 4, out=tmp_path / "a.hdf5", nx=32)
    from pdesharp.data.generate.generic import generate_task

    u0 = generate_task(task, 3, 4, 32, n_frames=2)["tensor"][:, 0]  # float64 initial data
    with h5py.File(out, "r") as h5:
        data, times = h5["tensor"][()], h5["t-coordinate"][()]
    k = 2 * np.pi * np.fft.fftfreq(32, 1 / 32)
    symbol = -1j * k - 0.01 * k ** 2
    exact = np.real(np.fft.ifft(np.fft.fft(u0)[:, None] * np.exp(symbol * times[:, None]),
                                axis=-1))
    true = np.mean([_nrmse(data[s], exact[s]) for s in range(3)])
    est = accuracy.read_file_estimate(out)
    assert est.met and est.level == 0  # the default resolution is converged already
    # both are float32 rounding (~3e-8) plus the generator's ~1e-10: within 20 % of each other
    assert true == pytest.approx(est.estimate, rel=0.2)


def test_data_info_shows_the_error_a_file_states(walled, capsys):
    task, out, data, attrs, true_error = walled
    assert main(["data", "info", str(example_path("allen_cahn_neumann2d")), "--dev-data",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    assert "own error" in printed and f"{float(attrs['reference_error_estimate']):.1e}" in printed


def test_a_file_stating_nonsense_about_its_error_is_not_believed(tmp_path):
    """The estimate is read from a data file, which may be hostile: not-a-number, negative and
    out-of-range values are dropped, never used; text is cut to 500 characters."""
    path = tmp_path / "hostile.hdf5"
    with h5py.File(path, "w", libver="latest") as h5:  # "latest": attributes above 64 kB
        h5["tensor"] = np.zeros((1, 2, 4), np.float32)
        h5.attrs["reference_error_estimate"] = "nan"
        h5.attrs["reference_error_estimate_max"] = -1.0
        h5.attrs["reference_error_tolerance"] = float("inf")
        h5.attrs["reference_error_met"] = True
        h5.attrs["resolution_level"] = 10 ** 9
        h5.attrs["reference_error_method"] = "x" * 200_000
    est = accuracy.read_file_estimate(path)
    assert est.estimate is None and est.estimate_max is None and est.met is None
    assert est.level is None and est.tolerance == accuracy.DEFAULT_TOLERANCE
    assert est.reason == "x" * 500
    with h5py.File(path, "r+") as h5:
        h5.attrs["reference_error_estimate"] = 3e-7
        h5.attrs["resolution_level"] = [1, 2]  # an array where a number belongs
    est = accuracy.read_file_estimate(path)
    assert est.estimate == 3e-7 and est.method == "x" * 500 and est.level is None
