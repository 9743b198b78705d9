"""Prediction / reference / error pictures for one sample (matplotlib, Agg backend).

One block of panels per returned field (a system gets one block per field, top to bottom):

* 1D, time-dependent: space-time images of the prediction, the reference and the error, and the
  last frame as lines;
* 2D, time-dependent: snapshots at a few times (first, last and evenly between), a row each for
  the prediction, the reference and the error;
* 1D steady: the prediction and the reference as lines, and the error;
* 2D steady (Darcy): the prediction, the reference and the error as images.

Prediction and reference share one colour scale per field (the reference's range) and the error
one symmetric scale per field (white is no error), so snapshots compare across times.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task

SNAPSHOTS = 4  # times shown for a 2D time-dependent field


class PlotError(ValueError):
    """The data have a shape this module does not draw; the message says which."""


def snapshot_frames(n_frames: int, count: int = SNAPSHOTS) -> list[int]:
    """Frame indices shown for a 2D time-dependent field: the first, the last, evenly between."""
    return sorted({int(round(v)) for v in np.linspace(0, n_frames - 1, min(count, n_frames))})


def _layout(task: Task, shape: tuple[int, ...], n_fields: int) -> tuple[str, int, int]:
    """(kind, rows, columns) of the figure for fields of ``shape`` (one sample)."""
    dim = len(task.equation.space)
    if task.steady:
        if len(shape) != dim or dim not in (1, 2):
            raise PlotError(f"cannot draw a steady {dim}D field of shape {shape}")
        return ("steady1d", n_fields, 2) if dim == 1 else ("steady2d", n_fields, 3)
    if len(shape) != dim + 1 or dim not in (1, 2):
        raise PlotError(f"cannot draw a {dim}D time-dependent field of shape {shape} "
                        "(1D and 2D fields are drawn)")
    if dim == 1:
        return "time1d", n_fields, 4
    return "time2d", 3 * n_fields, len(snapshot_frames(shape[0]))


def plot_sample(task: Task, pred: dict[str, np.ndarray], ref: ReferenceData, path: Path,
                sample: int | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(task.solver.returns)
    b = task.evaluation.plot_sample if sample is None else sample
    b = max(0, min(b, ref.n_samples - 1))
    shape = tuple(np.asarray(ref.fields[names[0]][b]).shape)
    kind, nrows, ncols = _layout(task, shape, len(names))
    width = 3.6 if kind == "time2d" else 4.0
    # The snapshot grid (24 panels per two fields) gets fixed margins, one colour bar per row
    # and tick labels on the outer panels only: tight_layout over 96 axes took 2/3 of the
    # figure's 6 s of CPU, now ~2 s. The other kinds have a handful of panels.
    w, h = width * ncols, 3.2 * nrows  # inches
    # margins in inches: the title above, tick labels and the axis name below and left, the
    # colour bars' labels right
    grid = dict(left=0.5 / w, right=1 - 0.75 / w, bottom=0.55 / h, top=1 - 0.6 / h,
                wspace=0.15, hspace=0.3) if kind == "time2d" else None
    fig, axes = plt.subplots(nrows, ncols, figsize=(w, h), squeeze=False, gridspec_kw=grid)
    t = ref.t if ref.t is not None else None
    for k, name in enumerate(names):
        p = np.asarray(pred[name][b], dtype=float)
        r = np.asarray(ref.fields[name][b], dtype=float)
        if kind == "time1d":
            _time1d(fig, axes[k], task, name, p, r, ref, t)
        elif kind == "time2d":
            _time2d(fig, axes[3 * k:3 * k + 3], task, name, p, r, t, last=k == len(names) - 1)
        elif kind == "steady1d":
            _steady1d(axes[k], task, name, p, r, ref)
        else:
            _images(fig, axes[k], task, name, (p, r, p - r),
                    ("prediction", "reference", "error"))
    fig.suptitle(f"{task.name}, sample {b}")
    if grid is None:
        fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def _limits(r: np.ndarray, err: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    vmin, vmax = float(r.min()), float(r.max())
    if vmax <= vmin:
        vmin, vmax = vmin - 1.0, vmax + 1.0
    emax = float(np.abs(err).max()) or 1.0  # symmetric, so white means no error
    return (vmin, vmax), (-emax, emax)


def _extent2d(task: Task) -> list[float]:
    (x0, x1), (y0, y1) = (task.domain[a] for a in task.equation.space)
    return [float(x0), float(x1), float(y0), float(y1)]


def _image(fig, ax, img2d, extent, cmap, lim, title, task: Task, *, colorbar: bool = True,
           xlabel: bool = True, ylabel: bool = True):
    # arrays are [N_x, N_y]: transposed and origin "lower", x runs right and y up
    im = ax.imshow(img2d.T, origin="lower", extent=extent, cmap=cmap, aspect="auto",
                   vmin=lim[0], vmax=lim[1])
    ax.set_title(title, fontsize=9)
    if xlabel:
        ax.set_xlabel(task.equation.space[0])
    else:
        ax.tick_params(labelbottom=False)
    if ylabel:
        ax.set_ylabel(task.equation.space[1])
    else:
        ax.tick_params(labelleft=False)
    if colorbar:
        fig.colorbar(im, ax=ax)
    return im


def _time1d(fig, row, task: Task, name, p, r, ref: ReferenceData, t) -> None:
    lo, hi = task.domain[task.equation.space[0]]
    t = t if t is not None and len(t) == p.shape[0] else np.arange(p.shape[0])
    extent = [lo, hi, float(t[-1]), float(t[0])]
    err = p - r
    vlim, elim = _limits(r, err)
    for ax, img, title, cmap, lim in zip(row[:3], (p, r, err),
                                         ("prediction", "reference", "error"),
                                         ("viridis", "viridis", "coolwarm"), (vlim, vlim, elim)):
        im = ax.imshow(img, extent=extent, cmap=cmap, aspect="auto", vmin=lim[0], vmax=lim[1])
        ax.set_title(f"{name}: {title}")
        ax.set_xlabel(task.equation.space[0])
        ax.set_ylabel("t")
        fig.colorbar(im, ax=ax)
    x = ref.x if ref.x is not None and len(ref.x) == p.shape[-1] else np.linspace(lo, hi, p.shape[-1])
    ax = row[3]
    ax.plot(x, r[-1], "k-", lw=1.5, label="reference")
    ax.plot(x, p[-1], "r--", lw=1.0, label="prediction")
    ax.set_title(f"{name} at t = {float(t[-1]):g}")
    ax.legend(fontsize=8)


def _time2d(fig, rows, task: Task, name, p, r, t, last: bool) -> None:
    """Three rows (prediction, reference, error) of snapshots; the panels of a row share one
    colour scale, shown once at the row's end; x labels under the figure's last row only."""
    frames = snapshot_frames(p.shape[0])
    err = p - r
    vlim, elim = _limits(r[frames], err[frames])
    extent = _extent2d(task)
    rowdefs = ((p, "prediction", "viridis", vlim), (r, "reference", "viridis", vlim),
               (err, "error", "coolwarm", elim))
    for i, (field, what, cmap, lim) in enumerate(rowdefs):
        for j, f in enumerate(frames):
            when = (f"t = {float(t[f]):.3g}" if t is not None and len(t) == p.shape[0]
                    else f"frame {f}")
            im = _image(fig, rows[i][j], field[f], extent, cmap, lim, f"{name} {what}, {when}",
                        task, colorbar=False, xlabel=last and i == 2, ylabel=j == 0)
        fig.colorbar(im, ax=list(rows[i]), fraction=0.02, pad=0.01)


def _steady1d(row, task: Task, name, p, r, ref: ReferenceData) -> None:
    lo, hi = task.domain[task.equation.space[0]]
    x = ref.x if ref.x is not None and len(ref.x) == p.shape[-1] else np.linspace(lo, hi, p.shape[-1])
    ax = row[0]
    ax.plot(x, r, "k-", lw=1.5, label="reference")
    ax.plot(x, p, "r--", lw=1.0, label="prediction")
    ax.set_title(f"{name}")
    ax.set_xlabel(task.equation.space[0])
    ax.legend(fontsize=8)
    ax = row[1]
    ax.plot(x, p - r, "b-", lw=1.0)
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_title(f"{name}: error (prediction - reference)")
    ax.set_xlabel(task.equation.space[0])


def _images(fig, row, task: Task, name, imgs, titles) -> None:
    _, r, err = imgs
    vlim, elim = _limits(r, err)
    extent = _extent2d(task)
    for ax, img, title, cmap, lim in zip(row, imgs, titles, ("viridis", "viridis", "coolwarm"),
                                         (vlim, vlim, elim)):
        _image(fig, ax, img, extent, cmap, lim, f"{name}: {title}", task)
