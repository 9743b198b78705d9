"""CodePDE's five tasks as a suite folder: one ``case.yaml`` per built-in task.

The cases name the built-in tasks (advection, burgers, reacdiff1d, cns1d, darcy), which follow
CodePDE's set-up exactly; their data are the data folder's (`pdesharp data download NAME` for
CodePDE's published dev/test subsets, or `pdesharp data generate NAME`), so the reference is
the published one (its own error: `pdesharp data audit NAME`).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from pdesharp.suite.importers.pdeagent import Imported

CODEPDE_TASKS = ("advection", "burgers", "reacdiff1d", "cns1d", "darcy")


def import_codepde(out: str | Path, *, names: list[str] | None = None,
                   force: bool = False) -> Imported:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written, refused, skipped = [], [], []
    for name in names or CODEPDE_TASKS:
        if name not in CODEPDE_TASKS:
            refused.append({"name": name, "reason": f"not one of CodePDE's tasks "
                                                    f"({', '.join(CODEPDE_TASKS)})"})
            continue
        folder = out / name
        if folder.exists() and not force:
            skipped.append(name)
            continue
        folder.mkdir(exist_ok=True)
        (folder / "case.yaml").write_text(yaml.safe_dump(
            {"task": name, "note": "CodePDE's task, on the data folder's data"}, sort_keys=False))
        (folder / "reference.yaml").write_text(yaml.safe_dump(
            {"kind": "published", "note": "PDEBench's solver (its error: pdesharp data audit "
                                          f"{name})"}, sort_keys=False))
        written.append(name)
    if not (out / "suite.yaml").exists():
        (out / "suite.yaml").write_text(yaml.safe_dump({"name": "codepde",
                                                        "note": "CodePDE's five tasks"}))
    return Imported(written=written, refused=refused, skipped=skipped)
