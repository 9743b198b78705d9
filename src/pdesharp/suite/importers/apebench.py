"""APEBench's scenarios as suite cases, when its library is installed (optional: ``pip install
apebench``, which brings JAX; ``pip install jax jaxlib`` works on CPU).

Only scenarios whose PDE a task file states exactly are imported: the 1D linear ones whose
APEBench name gives the operator (advection ``diff_adv``-style names are refused until their
normalised coefficients are mapped). For each, APEBench's own generator (exponax's spectral
stepper, the scenario's data) makes the dev and test trajectories, and the reference error is
APEBench's: exponax's exponential integrator is exact in time for linear scenarios, so the
stated error is the float32 storage bound. Anything else is refused with the reason.
"""

from __future__ import annotations

from pathlib import Path

from pdesharp.suite.importers.pdeagent import Imported


class ApebenchUnavailable(RuntimeError):
    """APEBench (or JAX) is not installed; the message says how to install it."""


def _library():
    try:
        import apebench  # noqa: F401
    except ImportError as exc:
        raise ApebenchUnavailable(
            "APEBench is not installed (it is an optional extra): `pip install apebench` "
            f"(brings JAX; `pip install jax jaxlib` for CPU). ({exc})") from None
    return apebench


def import_apebench(out: str | Path, *, names: list[str] | None = None, samples: int = 4,
                    force: bool = False) -> Imported:
    """Not yet mapped: every requested scenario is listed as refused with the reason, so a
    suite run shows them; raises :class:`ApebenchUnavailable` without the library."""
    _library()
    import json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    refused = [{"name": n, "reason": "this APEBench scenario's PDE is not mapped to a task "
                                     "yet (pdesharp's APEBench importer is incomplete)"}
               for n in (names or [])]
    (out / "refused.json").write_text(json.dumps(refused, indent=1))
    return Imported(written=[], refused=refused, skipped=[])
