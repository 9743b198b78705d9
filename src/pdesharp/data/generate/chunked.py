"""Generate a data file in batches of samples, keeping every finished batch on disk.

``pdesharp data generate`` can run for many minutes. It works through the samples in batches of a
fixed size (one sample for the generators that integrate samples one by one, a few where a batch
is much cheaper than its samples alone); each finished batch is saved at once in a folder beside
the output, ``<out>.partial/``, so an interruption (Ctrl-C, a killed job) loses at most the batch
in progress. Re-running the same command finds the folder, checks that it was made with the same
settings (task spec, seed, sample count, grid, options, pdesharp version) and continues where it
stopped; the finished file then holds exactly the data an uninterrupted run writes (only its
creation time differs), because the batches are the same and each depends only on the seed and
its sample numbers. The folder is
removed once the output file is written.

A batch of the generic generator whose integration fails (the random initial data blow up) is
redone sample by sample, and each failing sample is replaced by the next redraw of that sample
(:func:`.generic_ic.draw_coefficients`), up to :data:`MAX_DRAWS` draws; each rejection is
reported and recorded in the file's ``rejected_draws`` attribute.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

MAX_DRAWS = 8  # draws of one sample before the generator gives up on the task


@dataclass(frozen=True)
class GenerationProgress:
    """One step of a generation, for a progress display or a log line.

    ``kind``: ``start`` (``done`` samples already on disk from an interrupted run), ``samples``
    (samples ``first .. last - 1`` finished in ``seconds``), ``rejected`` (draw ``draw`` of sample
    ``first`` failed: ``message``), ``check`` (a step of the error estimate: ``message``).
    """

    kind: Literal["start", "samples", "rejected", "check"]
    done: int
    total: int
    first: int = 0
    last: int = 0
    seconds: float = 0.0
    draw: int = 0
    message: str = ""


ProgressSink = Callable[[GenerationProgress], None]


class StalePartialWork(ValueError):
    """The ``.partial`` folder beside the output was made with other settings."""


@dataclass
class Batch:
    """What one batch produced: per-sample arrays [b, ...], shared arrays, notes."""

    arrays: dict[str, np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)
    rejected: list[dict] = field(default_factory=list)


def partial_dir(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def fingerprint(settings: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


class PartialWork:
    """The ``<out>.partial/`` folder: a manifest and one ``.npz`` per finished batch."""

    def __init__(self, out: Path, settings: Mapping[str, Any]):
        self.dir = partial_dir(Path(out))
        self.settings = dict(settings)
        self.key = fingerprint(settings)

    def open(self, *, restart: bool = False) -> list[tuple[int, int]]:
        """Start or continue: the (first, last) sample ranges already on disk."""
        manifest = self.dir / "manifest.json"
        if self.dir.exists() and restart:
            shutil.rmtree(self.dir)
        if self.dir.exists():
            try:
                old = json.loads(manifest.read_text())
            except (OSError, ValueError):
                old = None
            if not isinstance(old, dict) or old.get("fingerprint") != self.key:
                theirs = old.get("settings", {}) if isinstance(old, dict) else {}
                diff = sorted(k for k in set(theirs) | set(self.settings)
                              if theirs.get(k) != self.settings.get(k))
                raise StalePartialWork(
                    f"{self.dir} holds samples of an interrupted generation with other settings"
                    f" ({', '.join(diff) or 'unreadable manifest'} differ); pass --restart to"
                    " discard them, or choose another --out")
            return sorted(self._ranges())
        self.dir.mkdir(parents=True)
        tmp = manifest.with_suffix(".tmp")
        tmp.write_text(json.dumps({"fingerprint": self.key, "settings": self.settings},
                                  indent=1, sort_keys=True, default=str))
        os.replace(tmp, manifest)
        return []

    def _ranges(self) -> list[tuple[int, int]]:
        out = []
        for p in self.dir.glob("samples-*.npz"):
            try:
                a, b = (int(v) for v in p.stem.split("-")[1:3])
            except ValueError:
                continue
            out.append((a, b))
        return out

    def _path(self, first: int, last: int) -> Path:
        return self.dir / f"samples-{first:07d}-{last:07d}.npz"

    def save(self, first: int, last: int, batch: Batch) -> None:
        """Write one batch atomically (a crash leaves either the whole file or none)."""
        path = self._path(first, last)
        tmp = path.with_name(path.stem + ".tmp.npz")
        meta = json.dumps({"info": batch.info, "rejected": batch.rejected}, default=str)
        np.savez(tmp, __meta__=np.array(meta), **batch.arrays)
        os.replace(tmp, path)

    def load(self, first: int, last: int) -> Batch:
        with np.load(self._path(first, last), allow_pickle=False) as z:
            meta = json.loads(str(z["__meta__"]))
            arrays = {k: z[k] for k in z.files if k != "__meta__"}
        return Batch(arrays, meta.get("info", {}), meta.get("rejected", []))

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def batches(n_samples: int, size: int) -> list[tuple[int, int]]:
    size = max(1, int(size))
    return [(a, min(a + size, n_samples)) for a in range(0, n_samples, size)]


def run_batches(work: PartialWork, n_samples: int, size: int,
                make: Callable[[int, int], Batch], per_sample: set[str], *,
                restart: bool = False, sink: ProgressSink | None = None
                ) -> tuple[dict[str, np.ndarray], dict[str, Any], list[dict]]:
    """Make every batch not yet on disk, saving each; return (arrays, merged info, rejections).

    ``per_sample`` names the arrays whose first axis is the sample; the others (coordinates)
    must be the same in every batch. A KeyboardInterrupt leaves the finished batches on disk.
    """
    plan = batches(n_samples, size)
    have = set(work.open(restart=restart)) & set(plan)
    done = sum(b - a for a, b in have)
    emit = sink or (lambda event: None)
    emit(GenerationProgress("start", done, n_samples))
    try:
        for first, last in plan:
            if (first, last) in have:
                continue
            t0 = time.monotonic()
            batch = make(first, last)
            work.save(first, last, batch)
            done += last - first
            emit(GenerationProgress("samples", done, n_samples, first, last,
                                    time.monotonic() - t0))
    except BaseException:
        if done == 0:  # nothing to keep: leave no trace of the attempt
            work.remove()
        raise
    loaded = [work.load(a, b) for a, b in plan]
    arrays: dict[str, np.ndarray] = {}
    for key in loaded[0].arrays:
        if key in per_sample:
            arrays[key] = np.concatenate([b.arrays[key] for b in loaded], axis=0)
        else:
            arrays[key] = loaded[0].arrays[key]
            for b in loaded[1:]:
                if not np.array_equal(b.arrays[key], arrays[key]):
                    raise ValueError(f"batches disagree on {key!r}; pass --restart")
    rejected = [r for b in loaded for r in b.rejected]
    return arrays, merge_info([b.info for b in loaded]), rejected


def merge_info(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """One description of what the integrator did over all batches: equal values as they are,
    evaluation counts summed, other numbers (steps, error estimates) at their worst (max)."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for info in infos for k in info):
        values = [info[key] for info in infos if key in info]
        if all(v == values[0] for v in values):
            out[key] = values[0]
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = sum(values) if key == "rhs_evaluations" else max(values)
        else:
            out[key] = values[0]
    return out
