"""Prediction / reference / error pictures for one sample (matplotlib, Agg backend).

1D time-dependent tasks: space-time images of each returned field plus the final frame as lines;
2D steady tasks (Darcy): three images side by side.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pdesharp.data.reference import ReferenceData
from pdesharp.task import Task


def plot_sample(task: Task, pred: dict[str, np.ndarray], ref: ReferenceData, path: Path,
                sample: int | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(task.solver.returns)
    b = task.evaluation.plot_sample if sample is None else sample
    b = min(b, ref.n_samples - 1)
    steady = task.steady
    ncols = 3 if steady else 4
    fig, axes = plt.subplots(len(names), ncols, figsize=(4 * ncols, 3.4 * len(names)), squeeze=False)
    for row, name in enumerate(names):
        p = np.asarray(pred[name][b], dtype=float)
        r = np.asarray(ref.fields[name][b], dtype=float)
        err = p - r
        if steady:
            extent = None
            if len(task.equation.space) == 2:
                (x0, x1), (y0, y1) = (task.domain[a] for a in task.equation.space)
                extent = [y0, y1, x1, x0]
            emax = float(np.abs(err).max()) or 1.0
            for ax, img, title, cmap, lim in zip(axes[row], (p, r, err),
                                                 ("prediction", "reference", "error"),
                                                 ("viridis", "viridis", "coolwarm"),
                                                 ((None, None), (None, None), (-emax, emax))):
                im = ax.imshow(img, extent=extent, cmap=cmap, aspect="auto", vmin=lim[0], vmax=lim[1])
                ax.set_title(f"{name}: {title}")
                fig.colorbar(im, ax=ax)
            continue
        lo, hi = task.domain[task.equation.space[0]]
        t = ref.t if ref.t is not None else np.arange(p.shape[0])
        extent = [lo, hi, float(t[-1]), float(t[0])]
        vmin, vmax = float(r.min()), float(r.max())
        emax = float(np.abs(err).max()) or 1.0  # symmetric, so white means no error
        for ax, img, title, cmap, lim in zip(axes[row][:3], (p, r, err),
                                             ("prediction", "reference", "error"),
                                             ("viridis", "viridis", "coolwarm"),
                                             ((vmin, vmax), (vmin, vmax), (-emax, emax))):
            im = ax.imshow(img, extent=extent, cmap=cmap, aspect="auto", vmin=lim[0], vmax=lim[1])
            ax.set_title(f"{name}: {title}")
            ax.set_xlabel(task.equation.space[0])
            ax.set_ylabel("t")
            fig.colorbar(im, ax=ax)
        x = ref.x if ref.x is not None and len(ref.x) == p.shape[-1] else np.linspace(lo, hi, p.shape[-1])
        ax = axes[row][3]
        ax.plot(x, r[-1], "k-", lw=1.5, label="reference")
        ax.plot(x, p[-1], "r--", lw=1.0, label="prediction")
        ax.set_title(f"{name} at t = {float(t[-1]):g}")
        ax.legend(fontsize=8)
    fig.suptitle(f"{task.name}, sample {b}")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
