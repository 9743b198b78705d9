"""APEBench scenarios as pdesharp tasks: the mapping, without JAX.

APEBench (Koehler et al. 2024) defines its scenarios through exponax's steppers, and a
scenario's PDE is whatever its reference stepper integrates. exponax writes the PDE of its
generic steppers, on the periodic box [0, L)^D with N points per axis *without the end point*
(x_i = i L / N) and one stepper call per stored frame (dt), as

* linear (``GeneralLinearStepper``):  u_t = sum_j a_j (1 . nabla^j) u, where (1 . nabla^j) u is
  sum over the axes d of d^j u / dx_d^j: the isotropic operator is applied axis by axis (no
  mixed derivatives; for j = 4 it is u_xxxx + u_yyyy, not the biharmonic, and for j = 0 it is
  D u);
* nonlinear (``GeneralNonlinearStepper``):  the linear part + b0 u^2 + b1 1/2 (1 . nabla)(u^2)
  + b2 1/2 |grad u|^2, all on the right-hand side, the last with its spatial mean removed
  (``zero_mode_fix``);
* convection (``GeneralConvectionStepper``):  u_t + c 1/2 div(u (x) u) = the linear part, with
  as many channels as axes (Burgers' vector form; the 1D case is u_t + c/2 (u^2)_x).

APEBench's *difficulty* and *normalized* modes are the same steppers with L = 1 and dt = 1 and
coefficients derived from the scenario's numbers:

* normalized: alpha_j = a_j dt / L^j, beta_1 = b_1 dt / L, beta_2 = b_2 dt / L^2;
* difficulty: gamma_0 = alpha_0, gamma_j = alpha_j N^j 2^(j-1) D (j >= 1), and for the
  nonlinear terms delta_0 = beta_0, delta_1 = beta_1 M N D, delta_2 = beta_2 M N^2 D, with M the
  largest absolute value of the state (1).

:class:`ApeProblem` holds those physical coefficients (what the stepper integrates);
:func:`spec` turns one into a short-form task; the conversions are below. The library side
(:mod:`.apebench`) reads an :class:`ApeProblem` off a scenario's reference stepper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pdesharp.untrusted import one_line

AXES = ("x", "y", "z")
LINEAR_NAMES = ("zeroth-order (drag/growth)", "advection", "diffusion", "dispersion",
                "hyper-diffusion")


class NotMapped(ValueError):
    """The scenario's PDE has no task form here; the message says why (one line)."""


@dataclass(frozen=True)
class ApeProblem:
    """One APEBench scenario's PDE and set-up, in exponax's physical form."""

    name: str  # APEBench's scenario name, e.g. "1d_diff_adv"
    dims: int  # D
    points: int  # N per axis (x_i = i L / N, the end point left out)
    extent: float  # L
    dt: float  # time between stored frames (one stepper call)
    frames: int  # stored steps after frame 0 (the rollout horizon)
    linear: tuple[float, ...]  # a_j of u_t = sum_j a_j (1 . nabla^j) u
    kind: str = "linear"  # linear | nonlinear | convection
    quadratic: float = 0.0  # b0 (nonlinear)
    convection: float = 0.0  # b1 (nonlinear, single channel, right-hand side)
    gradient_norm: float = 0.0  # b2 (nonlinear)
    convection_scale: float = 0.0  # c (convection: u_t + c/2 div(u (x) u) = ...)
    conservative: bool = True  # convection: the divergence form (exponax's default here)
    channels: int = 1
    ic: str = ""  # APEBench's ic_config, e.g. "fourier;5;true;true"
    warmup: int = 0  # stepper calls before frame 0
    substeps: int = 1  # stepper calls of dt / substeps per frame (RepeatedStepper)
    stepper: str = ""  # the exponax class, for the record
    notes: tuple[str, ...] = field(default_factory=tuple)


# -- APEBench's modes -> physical coefficients (exponax's conversion formulas) ---------------
def linear_from_normalized(alphas, *, extent: float = 1.0, dt: float = 1.0) -> tuple:
    """a_j = alpha_j L^j / dt."""
    return tuple(float(a) * extent**j / dt for j, a in enumerate(alphas))


def linear_from_difficulty(gammas, *, points: int, dims: int) -> tuple:
    """alpha_0 = gamma_0, alpha_j = gamma_j / (N^j 2^(j-1) D) (L = 1, dt = 1)."""
    return tuple(float(g) if j == 0 else float(g) / (points**j * 2 ** (j - 1) * dims)
                 for j, g in enumerate(gammas))


def nonlinear_from_difficulty(deltas, *, points: int, dims: int, maximum: float = 1.0
                              ) -> tuple[float, float, float]:
    """beta_0 = delta_0, beta_1 = delta_1 / (M N D), beta_2 = delta_2 / (M N^2 D)."""
    d0, d1, d2 = (float(d) for d in deltas)
    return d0, d1 / (maximum * points * dims), d2 / (maximum * points**2 * dims)


# -- a problem -> a short-form task -----------------------------------------------------------
def _num(v: float) -> str:
    return repr(float(v))


def _sum_axes(dims: int, term: str) -> str:
    """``term`` (with ``{a}`` for the axis) summed over the axes, bracketed in 2D/3D."""
    parts = [term.format(a=a) for a in AXES[:dims]]
    return parts[0] if dims == 1 else "(" + " + ".join(parts) + ")"


def linear_terms(p: ApeProblem, unknown: str = "u") -> tuple[list[str], dict[str, float]]:
    """The right-hand side's linear terms and their parameters (a0..a4 as exponax names them)."""
    terms, params = [], {}
    for j, a in enumerate(p.linear):
        if a == 0.0:
            continue
        name = f"a{j}"
        params[name] = float(a)
        if j == 0:
            terms.append(f"{p.dims}*{name}*{unknown}" if p.dims > 1 else f"{name}*{unknown}")
        elif j == 1:
            terms.append(f"{name}*" + _sum_axes(p.dims, "d{a}(" + unknown + ")"))
        else:
            terms.append(f"{name}*" + _sum_axes(p.dims, "d{a}(" + unknown + f", {j})"))
    return terms, params


def equations(p: ApeProblem) -> tuple[list[str], list[str], dict[str, float]]:
    """(unknowns, equations, parameters) of the problem's PDE, in pdesharp's notation."""
    if p.dims not in (1, 2, 3):
        raise NotMapped(f"{p.dims} space dimensions")
    linear = list(p.linear)
    while linear and linear[-1] == 0.0:  # APEBench pads its coefficient tuples with zeros
        linear.pop()
    if len(linear) > 5:
        raise NotMapped("linear terms of order above 4 (pdesharp's notation stops at the "
                        "fourth derivative per axis here)")
    if p.kind == "linear" or p.kind == "nonlinear":
        if p.channels != 1:
            raise NotMapped(f"{p.channels} channels for a scalar stepper")
        if p.gradient_norm:
            raise NotMapped("the gradient-norm term 1/2 |grad u|^2 with its spatial mean "
                            "removed (exponax's zero_mode_fix; Kuramoto-Sivashinsky in "
                            "combustion form): a task equation cannot state the mean removal")
        terms, params = linear_terms(p)
        if p.quadratic:
            params["b0"] = float(p.quadratic)
            terms.append("b0*u**2")
        if p.convection:
            params["b1"] = float(p.convection)
            terms.append("b1/2*" + _sum_axes(p.dims, "d{a}(u**2)"))
        if not terms:
            raise NotMapped("no term at all (u_t = 0)")
        return ["u"], [f"dt(u) = {' + '.join(terms)}"], params
    if p.kind == "convection":
        names = ["u", "v", "w"][: p.dims]
        if p.channels != p.dims:
            raise NotMapped(f"{p.channels} channels in {p.dims}D convection (exponax's single-"
                            "channel convection stepper is not mapped)")
        params = {"c": float(p.convection_scale)}
        out = []
        for i, ui in enumerate(names):
            terms, lin = linear_terms(p, ui)
            params.update(lin)
            if p.conservative:  # c/2 sum_j d_j(u_i u_j)
                flux = " + ".join(f"d{AXES[j]}({ui}*{uj})" if ui != uj else f"d{AXES[j]}({ui}**2)"
                                  for j, uj in enumerate(names))
            else:  # c sum_j u_j d_j u_i (exponax's non-conservative form has no 1/2)
                flux = " + ".join(f"{uj}*d{AXES[j]}({ui})" for j, uj in enumerate(names))
            left = f"c/2*({flux})" if p.conservative else f"c*({flux})"
            rhs = " + ".join(terms) if terms else "0"
            out.append(f"dt({ui}) + {left} = {rhs}")
        return names, out, params
    raise NotMapped(f"the stepper kind {p.kind!r}")


def initial_words(ic: str, warmup: int) -> str:
    """APEBench's ic_config in words (e.g. ``fourier;5;true;true``)."""
    parts = [s.strip() for s in str(ic).split(";")]
    clamp = ""
    if parts and parts[0].lower() == "clamp" and len(parts) >= 4:
        clamp = f", then clipped to [{parts[1]}, {parts[2]}]"
        parts = parts[3:]
    kind = parts[0].lower() if parts else ""
    flags = [p.lower() == "true" for p in parts[2:4]] + [False, False]
    extra = (", zero mean" if flags[0] else "") + \
            (", scaled to a largest absolute value of 1" if flags[1] else "")
    if kind == "fourier" and len(parts) > 1:
        what = (f"a random truncated Fourier series (wavenumbers up to {one_line(parts[1], 10)}, "
                f"exponax's RandomTruncatedFourierSeries){extra}")
    elif kind == "diffused" and len(parts) > 1:
        what = f"diffused random noise (intensity {one_line(parts[1], 12)}){extra}"
    elif kind == "grf" and len(parts) > 1:
        what = f"a Gaussian random field (power-law exponent {one_line(parts[1], 12)}){extra}"
    else:
        what = f"APEBench's initial-condition generator {one_line(ic, 60)!r}"
    warm = (f"; then advanced {warmup} steps with the reference stepper, the result being frame 0"
            if warmup else "")
    return f"Random initial conditions as APEBench draws them: {what}{clamp}{warm}."


def spec(p: ApeProblem, *, reference: str = "", error: float | None = None) -> dict:
    """The short-form task of ``p`` (grid ``periodic_nodes``: exponax's points)."""
    unknowns, eqs, params = equations(p)
    if not (p.points >= 4 and p.extent > 0 and p.dt > 0 and p.frames >= 1):
        raise NotMapped("a scenario needs N >= 4, L > 0, dt > 0 and at least one step")
    for k, v in params.items():
        if not math.isfinite(v):
            raise NotMapped(f"the coefficient {k} is not finite")
    domain = {a: [0.0, float(p.extent)] for a in AXES[: p.dims]}
    notes = [
        "Imported from APEBench: the grid is exponax's, N points per axis from 0 with the end "
        "point L left out (x_i = i*L/N), on a periodic box.",
        "Every linear term applies its derivative axis by axis, as exponax's isotropic "
        "operators do: the fourth-order term is the sum of the fourth derivatives along each "
        "axis (no mixed derivative), and the zeroth-order term counts once per axis.",
        *p.notes,
    ]
    out: dict = {
        "name": _task_name(p.name),
        "title": f"APEBench {p.name} ({p.stepper or p.kind})",
        "equation": {"unknowns": unknowns, "equations": eqs},
        "parameters": params,
        "domain": domain,
        "grid": "periodic_nodes",
        "boundary": "periodic",
        "time_span": [0.0, float(p.frames * p.dt)],
        "n_frames": int(p.frames) + 1,
        "initial_condition": initial_words(p.ic, p.warmup),
        "evaluation": {"convergence": {"kind": "none"}, "plot_sample": 0},
        "notes": notes,
    }
    if reference:
        out["reference"] = reference
    return out


def _task_name(name: str) -> str:
    import re

    clean = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_") or "scenario"
    return ("apebench_" + clean)[:80]
