"""APEBench's scenarios as suite cases (``pdesharp suite import apebench``), when its library is
installed (an optional extra: ``pip install apebench``, which brings JAX and exponax; ``pip
install jax jaxlib`` works on CPU).

For each requested scenario (APEBench's names: ``diff_adv``, ``2d_diff_burgers``,
``phy_adv_diff``...; a leading ``Nd_`` sets its dimension) this importer

1. builds the scenario at its own settings (any ``settings`` override, e.g. ``num_points=64``,
   is applied as APEBench's own keyword arguments are, and named in the case);
2. reads the PDE off the scenario's *reference stepper* (its class, domain extent, step and
   coefficients: :func:`problem_of`) and maps it to a task (:mod:`.apebench_map`); a stepper
   whose PDE a task cannot state (Navier-Stokes vorticity, Swift-Hohenberg, Gray-Scott, the
   mean-free gradient norm of Kuramoto-Sivashinsky...) is refused with the reason;
3. makes the dev and test trajectories with APEBench's own generator (``get_train_data`` /
   ``get_test_data``: its initial-condition generator, seeds, warm-up and stepper, float32),
   ``samples`` of each, over the scenario's test horizon;
4. estimates the reference's own error: the first samples are run again from their stored
   frame 0 by the same exponax stepper class on a grid twice as fine (the initial state
   Fourier-interpolated), with four substeps per frame of ETDRK order 4, in float64; the nRMSE
   of the reference against it (CodePDE's formula over all frames and points; mean and worst
   sample) is stored in each file (``reference_error_estimate``, ``reference_error_estimate_max``,
   ``reference_error_method``, ``reference_error_samples``: the attribute names ``pdesharp data
   generate`` uses) and in ``reference.yaml`` (``kind: generated``).

Without the library the import stops with :class:`ApebenchUnavailable` and writes nothing.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from pdesharp.suite.importers import staged
from pdesharp.suite.importers.apebench_map import ApeProblem, NotMapped, spec
from pdesharp.suite.importers.pdeagent import Imported
from pdesharp.suite.names import BadName, check_name
from pdesharp.untrusted import one_line, task_name_for

CHECKED_SAMPLES = 2  # samples of each split re-run on the refined grid for the estimate
REFINE_POINTS = 2  # the estimate's grid: this many times the scenario's points per axis
REFINE_SUBSTEPS = 4  # and this many ETDRK4 substeps per frame
MAX_VALUES = 2 * 10**8  # a split's stored values (samples x frames x channels x points)
SETTING = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
# the settings a user may override: numbers of the scenario (APEBench's own keyword arguments)
OVERRIDABLE = ("num_points", "num_substeps", "num_warmup_steps", "test_temporal_horizon",
               "train_seed", "test_seed", "domain_extent", "dt")


class ApebenchUnavailable(RuntimeError):
    """APEBench (or JAX) is not installed; the message says how to install it."""


def _library():
    try:
        import apebench  # noqa: F401
        import exponax  # noqa: F401
        from apebench.scenarios import scenario_dict
    except ImportError as exc:
        raise ApebenchUnavailable(
            "APEBench is not installed (it is an optional extra): `pip install apebench` "
            f"(brings JAX and exponax; `pip install jax jaxlib` for CPU). ({exc})") from None
    return scenario_dict


def default_names() -> list[str]:
    """APEBench's curated 1D scenarios (its first published study)."""
    try:
        from apebench.scraper import CURATION_APEBENCH_V1
    except ImportError:
        return ["diff_adv", "diff_diff", "diff_adv_diff", "diff_disp", "diff_hyp_diff",
                "diff_burgers", "diff_kdv", "diff_ks", "diff_ks_cons", "diff_fisher"]
    return [c["scenario"] for c in CURATION_APEBENCH_V1
            if c.get("num_spatial_dims", 1) == 1 and set(c) == {"scenario"}]


def parse_settings(items: list[str] | dict | None) -> dict[str, float | int]:
    """``["num_points=64", ...]`` -> {name: number}; only :data:`OVERRIDABLE` names."""
    if not items:
        return {}
    pairs = items.items() if isinstance(items, dict) else \
        (str(s).split("=", 1) if "=" in str(s) else (str(s), "") for s in items)
    out: dict[str, float | int] = {}
    for key, value in pairs:
        key = str(key).strip()
        if key not in OVERRIDABLE:
            raise ValueError(f"{one_line(key, 40)!r} is not a setting the importer overrides "
                             f"(choose from {', '.join(OVERRIDABLE)})")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{key}: {one_line(value, 40)!r} is not a number") from None
        if not math.isfinite(number) or number <= 0 and key not in ("train_seed", "test_seed"):
            raise ValueError(f"{key} must be a positive finite number")
        out[key] = int(number) if number == int(number) and key not in ("domain_extent", "dt") \
            else number
    return out


def scenario_for(name: str, settings: dict, *, samples: int, scenarios=None):
    """APEBench's scenario ``name`` (``[Nd_]key``) at its settings and ours."""
    scenarios = scenarios if scenarios is not None else _library()
    m = re.fullmatch(r"(?:([123])d_)?([a-z0-9_]{1,40})", str(name))
    if not m or m.group(2) not in scenarios:
        raise NotMapped(f"no APEBench scenario {one_line(name, 60)!r}")
    cls = scenarios[m.group(2)]
    kwargs: dict[str, Any] = {"num_spatial_dims": int(m.group(1) or 1)}
    for key, value in settings.items():
        if not hasattr(cls, key):
            raise NotMapped(f"the scenario {m.group(2)} has no setting {key}")
        kwargs[key] = value
    horizon = int(settings.get("test_temporal_horizon", cls.test_temporal_horizon))
    kwargs.update(num_train_samples=samples, num_test_samples=samples,
                  train_temporal_horizon=horizon, test_temporal_horizon=horizon)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:  # APEBench's own refusal (e.g. 2D-only scenarios)
        raise NotMapped(f"APEBench refuses it: {one_line(exc, 200)}") from None


def _class_names(obj) -> set[str]:
    return {c.__name__ for c in type(obj).__mro__}


def problem_of(scenario) -> ApeProblem:
    """The PDE the scenario's reference stepper integrates, read off the stepper."""
    stepper = scenario.get_ref_stepper()
    substeps = 1
    if "RepeatedStepper" in _class_names(stepper):
        substeps = int(stepper.num_sub_steps)
        frame_dt = float(stepper.dt)
        stepper = stepper.stepper
    else:
        frame_dt = float(stepper.dt)
    names = _class_names(stepper)
    common = dict(
        name=scenario.get_scenario_name(), dims=int(stepper.num_spatial_dims),
        points=int(stepper.num_points), extent=float(stepper.domain_extent), dt=frame_dt,
        frames=int(scenario.test_temporal_horizon), channels=int(stepper.num_channels),
        ic=str(scenario.ic_config), warmup=int(scenario.num_warmup_steps), substeps=substeps,
        stepper=type(stepper).__name__)
    if "GeneralLinearStepper" in names:
        return ApeProblem(linear=_floats(stepper.linear_coefficients), kind="linear", **common)
    if "GeneralNonlinearStepper" in names:
        b0, b1, b2 = _floats(stepper.nonlinear_coefficients)
        return ApeProblem(linear=_floats(stepper.linear_coefficients), kind="nonlinear",
                          quadratic=b0, convection=b1, gradient_norm=b2, **common)
    if "GeneralConvectionStepper" in names:
        lin = _floats(stepper.linear_coefficients)
        scale = float(stepper.convection_scale)
        if bool(stepper.single_channel):  # -c 1/2 (1 . grad)(u^2): the nonlinear form's b1 = -c
            return ApeProblem(linear=lin, kind="nonlinear", convection=-scale, **common)
        return ApeProblem(linear=lin, kind="convection", convection_scale=scale,
                          conservative=bool(stepper.conservative), **common)
    raise NotMapped(f"its reference stepper {type(stepper).__name__} has no task form here "
                    "(mapped: exponax's generic linear, nonlinear and convection steppers)")


def _floats(values) -> tuple:
    return tuple(float(np.asarray(v)) for v in values)


# -- data and the estimate of its error -------------------------------------------------------
def trajectories(scenario) -> tuple[np.ndarray, np.ndarray]:
    """(dev, test): APEBench's train and test data, [samples, frames, channels, *points]."""
    dev = np.asarray(scenario.get_train_data())
    test = np.asarray(scenario.get_test_data())
    return dev, test


def refined_stepper(p: ApeProblem, scenario):
    """The same PDE with exponax's generic stepper of the same class: REFINE_POINTS x the
    points, REFINE_SUBSTEPS substeps per frame, ETDRK4."""
    import exponax as ex

    n = p.points * REFINE_POINTS
    dt = p.dt / REFINE_SUBSTEPS
    extra = dict(order=4, dealiasing_fraction=float(getattr(scenario, "dealiasing_fraction",
                                                            2 / 3)),
                 num_circle_points=int(getattr(scenario, "num_circle_points", 16)),
                 circle_radius=float(getattr(scenario, "circle_radius", 1.0)))
    generic = ex.stepper.generic
    if p.kind == "linear":
        one = generic.GeneralLinearStepper(p.dims, p.extent, n, dt, linear_coefficients=p.linear)
    elif p.kind == "nonlinear":
        one = generic.GeneralNonlinearStepper(
            p.dims, p.extent, n, dt, linear_coefficients=p.linear,
            nonlinear_coefficients=(p.quadratic, p.convection, p.gradient_norm), **extra)
    else:
        one = generic.GeneralConvectionStepper(
            p.dims, p.extent, n, dt, linear_coefficients=p.linear,
            convection_scale=p.convection_scale, conservative=p.conservative, **extra)
    return ex.RepeatedStepper(one, REFINE_SUBSTEPS)


def estimate_error(p: ApeProblem, scenario, data: np.ndarray, count: int = CHECKED_SAMPLES
                   ) -> dict:
    """The reference's nRMSE against a refined float64 run of its first ``count`` samples from
    their stored frame 0: {"mean", "max", "samples", "method"}."""
    import jax

    before = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", True)
    try:
        import exponax as ex
        import jax.numpy as jnp

        stepper = refined_stepper(p, scenario)
        roll = ex.rollout(stepper, p.frames, include_init=True)
        errors = []
        picked = list(range(min(count, data.shape[0])))
        for s in picked:
            start = jnp.asarray(data[s, 0], dtype=jnp.float64)
            fine = np.asarray(roll(ex.map_between_resolutions(start, p.points * REFINE_POINTS)))
            fine = fine[(Ellipsis,) + (slice(None, None, REFINE_POINTS),) * p.dims]
            ref = data[s].astype(np.float64)
            errors.append(float(np.sqrt(np.mean((ref - fine) ** 2)) /
                                max(np.sqrt(np.mean(fine**2)), 1e-300)))
    finally:
        jax.config.update("jax_enable_x64", before)
    method = (f"nRMSE of the stored float32 trajectories against the same exponax stepper class "
              f"on a {REFINE_POINTS}x finer grid ({p.points * REFINE_POINTS} points per axis), "
              f"{REFINE_SUBSTEPS} ETDRK4 substeps per frame, float64, from the same stored "
              f"frame 0 (Fourier-interpolated), over all {p.frames + 1} frames; "
              f"{len(picked)} sample(s)")
    return {"mean": float(np.mean(errors)), "max": float(np.max(errors)), "samples": picked,
            "method": method}


def estimate_attrs(est: dict) -> dict:
    """The file attributes of an estimate (the names ``pdesharp data generate`` writes)."""
    return {"reference_error_estimate": est["mean"], "reference_error_estimate_max": est["max"],
            "reference_error_method": est["method"],
            "reference_error_samples": json.dumps(est["samples"])}


def split_arrays(p: ApeProblem, task, data: np.ndarray) -> dict[str, np.ndarray]:
    """[samples, frames, channels, *points] -> the task's data keys."""
    from pdesharp.grid import axis_points

    out: dict[str, np.ndarray] = {}
    for c, unknown in enumerate(task.equation.unknowns):
        out[task.data.fields[unknown]] = data[:, :, c]
    out[task.data.t_key or "t-coordinate"] = np.arange(p.frames + 1) * p.dt
    for a in task.equation.space:
        out[f"{a}-coordinate"] = axis_points(0.0, p.extent, p.points, "periodic_nodes")
    return out


# -- a scenario -> a case folder --------------------------------------------------------------
def case_name(p: ApeProblem, settings: dict) -> str:
    suffix = "".join(f"-{k.replace('_', '')}{v:g}" for k, v in sorted(settings.items()))
    return check_name((p.name + suffix)[:80], what="case name")


def write_case(folder: Path, p: ApeProblem, scenario, settings: dict, *, name: str) -> dict:
    """Generate, estimate and write the case folder (beside, then renamed into place)."""
    from pdesharp.data.generate import write_generated
    from pdesharp.task import TaskError, task_from_dict

    size = (p.frames + 1) * p.channels * p.points**p.dims * scenario.num_test_samples
    if size > MAX_VALUES:
        raise NotMapped(f"{size:.2e} values per split (more than {MAX_VALUES:.0e}): lower "
                        "--samples or num_points / test_temporal_horizon")
    dev, test = trajectories(scenario)
    if not (np.all(np.isfinite(dev)) and np.all(np.isfinite(test))):
        raise NotMapped("APEBench's generator produced values that are not finite")
    est = estimate_error(p, scenario, test)
    reference = (f"APEBench's reference data: exponax's {p.stepper} at the scenario's own "
                 f"settings ({p.points} points per axis, one stepper call of dt = {p.dt:g} per "
                 f"frame{f' in {p.substeps} substeps' if p.substeps > 1 else ''}, float32). "
                 f"Its estimated error (nRMSE against a refined run): {est['mean']:.2e} (worst "
                 f"checked sample {est['max']:.2e}).")
    data = spec(p, reference=reference)
    data["name"] = task_name_for(name)  # the task-name rule: at most 64 characters
    try:
        task = task_from_dict(json.loads(json.dumps(data)), f"scenario {p.name}")
    except TaskError as exc:
        raise NotMapped(f"the derived task does not validate: {one_line(exc, 300)}") from None
    attrs = {"made_by": "pdesharp suite import apebench", "case": name,
             "apebench_scenario": p.name, "generator": f"apebench/exponax {p.stepper}",
             "resolution": f"APEBench's settings: {p.points} points per axis, dt {p.dt:g}",
             **estimate_attrs(est)}
    with staged(folder) as part:
        (part / "task.yaml").write_text(
            "# Imported by `pdesharp suite import apebench` from an APEBench scenario; the\n"
            "# data are APEBench's own (its generator, seeds and stepper), scenario.json says\n"
            "# which settings.\n"
            + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))
        write_generated(part / "dev.hdf5", split_arrays(p, task, dev),
                        attrs={**attrs, "split": "dev (APEBench's train initial conditions)"})
        write_generated(part / "test.hdf5", split_arrays(p, task, test),
                        attrs={**attrs, "split": "test (APEBench's test initial conditions)"})
        (part / "reference.yaml").write_text(yaml.safe_dump({
            "kind": "generated", "error": float(f"{est['mean']:.3g}"),
            "note": one_line(est["method"], 600)}, sort_keys=False))
        (part / "scenario.json").write_text(json.dumps({
            "scenario": p.name, "settings": settings, "stepper": p.stepper,
            "samples_per_split": int(scenario.num_test_samples),
            "horizon": p.frames, "reference_error": est}, indent=1))
    return est


def import_apebench(out: str | Path, *, names: list[str] | None = None, samples: int = 4,
                    force: bool = False, settings: list[str] | dict | None = None,
                    note=None) -> Imported:
    """Every scenario of ``names`` (default: APEBench's curated 1D ones) as a case folder under
    ``out``; refusals go to ``out/refused.json``. Raises :class:`ApebenchUnavailable` without
    the library and ValueError for a bad setting (before writing anything)."""
    overrides = parse_settings(settings)
    if not 1 <= int(samples) <= 1000:
        raise ValueError("samples must be between 1 and 1000")
    scenarios = _library()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written, refused, skipped = [], [], []
    estimates: dict[str, dict] = {}
    for requested in names or default_names():
        shown = one_line(requested, 80)
        try:
            scenario = scenario_for(requested, overrides, samples=int(samples),
                                    scenarios=scenarios)
            p = problem_of(scenario)
            spec(p)  # refuses an unmappable PDE before any data is made
            name = case_name(p, overrides)
            folder = out / name
            if folder.exists() and not force:
                skipped.append(name)
                continue
            if note:
                note(f"{name}: generating with APEBench ({p.stepper})")
            estimates[name] = write_case(folder, p, scenario, overrides, name=name)
            written.append(name)
        except (NotMapped, BadName) as exc:
            refused.append({"name": shown, "reason": str(exc)})
    (out / "refused.json").write_text(json.dumps(refused, indent=1))
    if not (out / "suite.yaml").exists():
        (out / "suite.yaml").write_text(yaml.safe_dump(
            {"name": "apebench", "note": "imported from APEBench's scenarios"}, sort_keys=False))
    return Imported(written=written, refused=refused, skipped=skipped)
