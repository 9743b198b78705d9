"""Scores a solver cannot game (issue 18, item 3), through the real evaluator and sandbox.

* ``--feedback residual``: a solver that ignores the given u0 and returns an exact travelling
  wave of the PDE has a near-zero PDE residual; the residual score adds the mismatch with the
  given initial data, so it must lose to the honest exact solver.
* The convergence test compares the solver's own outputs at several resolutions: returning
  ``1 + 1e6 * (1/N)**4`` gives "order 4" while solving nothing. The rate must not be shown as a
  measured rate: it is withheld (the outputs do not start from the given initial data), and
  what judges read labels any rate as solver-controlled.
"""

from __future__ import annotations

import numpy as np

from pdesharp.evaluate import Evaluator
from pdesharp.synthesis.judges import describe_result
from pdesharp.synthesis.ranking import Rule, pick_best
from pdesharp.task import load_task

WAVE = """
import numpy as np
def solver(u0_batch, t_coordinate, beta):
    # ignores u0: an exact solution of u_t + beta u_x = 0 of its own choosing
    n = u0_batch.shape[-1]
    x = (np.arange(n) + 0.5) / n
    t = np.asarray(t_coordinate, dtype=np.float64)
    wave = np.sin(2 * np.pi * (x[None, :] - beta * t[:, None]))
    return np.repeat(wave[None], u0_batch.shape[0], axis=0)
"""

FAKE_ORDER = """
import numpy as np
def solver(u0_batch, t_coordinate, beta):
    n = u0_batch.shape[-1]
    return np.full((u0_batch.shape[0], len(t_coordinate), n), 1.0 + 1e6 * (1.0 / n) ** 4)
"""


def test_exact_wave_ignoring_u0_loses_under_residual_feedback(shared_data, solver_code):
    task = load_task("advection")
    ev = Evaluator(task, data_dir=shared_data, max_samples=2, convergence=False, timeout=120)
    honest = ev.evaluate_sync(solver_code("advection_exact"), split="dev", feedback="residual")
    wave = ev.evaluate_sync(WAVE, split="dev", feedback="residual")
    assert honest.ok and wave.ok, (honest.message, wave.message)
    # the wave is an exact solution: before the change its residual (1.4e-6) beat the honest
    # solver's (2.5e-3, the float32 data's own time differences). Now it carries its O(1)
    # mismatch with u0 (sin(2 pi x) against PDEBench's random u0: > 0.5 relative)
    assert wave.residual > 0.5
    assert honest.residual < 0.05
    assert honest.score < wave.score
    winner, _ = pick_best([("wave", wave), ("honest", honest)], Rule())
    assert winner == "honest"
    assert "mismatch with the given initial data" in wave.message
    # the honest solver returns u0 as frame 0 and the task is periodic: nothing was added, so
    # its score is the PDE residual alone, as before the change
    from pdesharp.evaluate.residual_score import residual_parts

    ref = ev.reference("dev")
    pred = ev_prediction(ev, solver_code("advection_exact"), ref)
    parts = residual_parts(task, {"u": pred}, ref)
    assert parts["initial"] == 0.0 and parts["boundary"] == 0.0
    assert abs(honest.residual - parts["pde"]) <= 1e-12 * max(parts["pde"], 1e-30)


def ev_prediction(ev, code: str, ref) -> np.ndarray:
    """The honest solver's prediction computed in-process (trusted test code)."""
    ns: dict = {}
    exec(compile(code, "advection_exact.py", "exec"), ns)  # test's own reference solver
    u0 = np.asarray(ref.initial("u"), dtype=np.float64)
    return ns["solver"](u0, np.asarray(ref.t, dtype=np.float64), 0.1)


def test_faked_convergence_order_is_not_shown_as_measured(shared_data):
    task = load_task("advection")
    ev = Evaluator(task, data_dir=shared_data, max_samples=1, convergence=True, residual=False,
                   timeout=120)
    r = ev.evaluate_sync(FAKE_ORDER, split="dev", feedback="nrmse")
    assert r.ok, r.message
    assert r.nrmse > 0.5  # it solves nothing
    # the errors between its own outputs fall exactly as N^-4: CodePDE would print 4.0
    assert r.convergence_order is None
    assert "rate withheld" in r.convergence_note and "initial data" in r.convergence_note
    shown = describe_result(r, "nrmse")
    assert "convergence rate" not in shown and "4.0" not in shown


def test_honest_rate_is_kept_for_the_report_and_not_shown_to_judges(shared_data, solver_code):
    task = load_task("advection")
    ev = Evaluator(task, data_dir=shared_data, max_samples=1, convergence=True, residual=False,
                   timeout=120)
    r = ev.evaluate_sync(solver_code("advection_exact"), split="dev", feedback="nrmse")
    assert r.ok and r.convergence_order is not None, r.convergence_note
    shown = describe_result(r, "nrmse")
    # the solver controls its own refinement study: the rate cannot inform a choice between
    # solvers, so the judges' result line leaves it out (issue 24 item 6); the result keeps it
    assert "convergence" not in shown and f"{r.convergence_order:.3f}" not in shown
