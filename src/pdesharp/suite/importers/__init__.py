"""Public benchmarks as suite folders: ``pdesharp suite import FORMAT ...``.

Each importer writes one case folder per problem it can convert and lists the others, with the
reason, in ``refused.json`` (shown in the suite's table); nothing it reads is trusted.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

FORMATS = ("pdeagent", "codepde", "apebench")


@contextmanager
def staged(folder: Path):
    """A fresh folder beside ``folder`` to write a case into, renamed into its place (replacing
    an old case) when the block ends and removed if it fails: a killed or failed import leaves
    no half-written case."""
    part = folder.with_name(f".{folder.name}.part")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    try:
        yield part
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(part, folder)
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
