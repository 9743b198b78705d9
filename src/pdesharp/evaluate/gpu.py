"""What a CUDA solver needs inside the sandbox: device nodes, driver libraries, environment.

Discovery is separate from assembly (:meth:`~pdesharp.evaluate.sandbox.SandboxPolicy.bwrap_argv`)
and takes its roots as arguments, so the assembled sandbox is testable on machines without a GPU.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

GPU_NODE_PATTERNS = ("nvidia[0-9]*", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                     "nvidia-modeset", "nvidia-caps/*", "dri/renderD*", "dri/card*")
GPU_LIB_PATTERN = re.compile(r"lib(cuda|nvidia-[a-z0-9-]+|nvrtc|cudadebugger)\.so")


@dataclass
class GpuPlan:
    nodes: list[str]
    lib_dirs: list[str]
    env: dict[str, str]


def gpu_plan(dev_root: Path = Path("/dev"), ldconfig: str | None = None,
             environ: dict[str, str] | None = None) -> GpuPlan:
    """Device nodes and driver library folders a CUDA solver needs inside the sandbox."""
    environ = os.environ if environ is None else environ
    nodes = sorted({str(p) for pat in GPU_NODE_PATTERNS for p in dev_root.glob(pat)
                    if p.exists()})
    if ldconfig is None:
        try:
            ldconfig = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                                      timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            ldconfig = ""
    dirs = set()
    for line in ldconfig.splitlines():
        if "=>" in line and GPU_LIB_PATTERN.search(line):
            dirs.add(str(Path(line.split("=>", 1)[1].strip()).parent))
    for var in ("LD_LIBRARY_PATH",):
        for d in environ.get(var, "").split(":"):
            if d and Path(d).is_dir():
                dirs.add(str(Path(d)))
    for cuda in sorted(Path("/usr/local").glob("cuda*")):
        dirs.add(str(cuda))
    env = {k: environ[k] for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                                   "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH")
           if k in environ}
    return GpuPlan(nodes=nodes, lib_dirs=sorted(dirs), env=env)
