"""The side-by-side bench's converged references (bench/sbs_reference.py): values at the data
points, and an error estimate that sees an under-resolved reference."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from sbs_reference import converged, etdrk4  # noqa: E402

N = 16
X = 2 * np.pi * np.arange(N) / N
TIMES = np.array([0.0, 0.5, 1.0])


def _riccati(amplitude: float, refine: int):
    """dt u = u^2 pointwise from u0 = a sin(x): u = u0 / (1 - u0 t), whose Fourier modes decay
    like (a t / (1 + sqrt(1 - (a t)^2)))^|m|: 0.27^|m| at a t = 0.5. The square makes modes
    above the data's Nyquist (8 here) at once."""
    w0 = (amplitude * np.sin(X))[None, None]
    exact = np.stack([w0[0, 0] / (1 - w0[0, 0] * t) for t in TIMES], axis=0)[None, None]
    return w0, exact, dict(times=TIMES, lengths=(2 * np.pi,),
                           symbol=lambda ks: np.zeros((1,) + ks[0].shape),
                           nonlinear=lambda W, ks, vm: W**2, refine=refine)


def test_the_reference_is_the_solution_at_the_data_points():
    # modes |m| >= 8 hold ~0.27^8 = 3e-5 of the solution at t = 1; a 4x grid keeps |m| < 21
    # under the 2/3 rule (0.27^21 ~ 1e-12). The point values agree with the exact solution to
    # 4.6e-11 (measured); the Fourier series cut to the data's modes misses by 6.1e-5 (the
    # bound 1e-8 sits between, 200x and 6000x from them)
    w0, exact, kw = _riccati(0.5, refine=4)
    got = etdrk4(w0, substeps=64, **kw)
    err = np.abs(got - exact).max() / np.abs(exact).max()
    assert err < 1e-8, err
    cut = np.fft.irfft(np.fft.rfft(exact[0, 0, -1])[:N // 2], n=N)  # the data's modes only
    assert np.abs(cut - exact[0, 0, -1]).max() / np.abs(exact).max() > 1e-6


def test_the_error_estimates_see_time_steps_and_an_under_resolved_grid():
    # measured: on the 4x grid the time bound 4.6e-9, the spectral tail 1.7e-6 and the true
    # error 7.2e-10; on the data grid itself (refine 1, |m| < 6 kept) the tail 6.5e-2 and the
    # true error 1.3e-3. The tail errs high (it is the upper half of the kept band, not what
    # lies beyond it) but never below the true error: bounds 20x or more from each value
    def rel(sol):
        return float(np.max(np.sqrt(np.mean((sol - exact) ** 2, axis=-1))
                            / np.sqrt(np.mean(exact**2, axis=-1))))

    w0, exact, kw = _riccati(0.5, refine=4)
    sol, bound, tail = converged(w0, substeps=32, **kw)
    assert bound < 1e-7 and tail < 1e-4 and rel(sol) < 2e-8 and rel(sol) < tail
    sol, bound, tail = converged(w0, substeps=32, **{**kw, "refine": 1})
    assert tail > 1e-3 and 1e-5 < rel(sol) < tail, (tail, rel(sol))
