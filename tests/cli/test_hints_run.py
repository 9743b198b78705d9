"""Issue 20.6: every command the tool suggests runs as suggested, for a user's YAML task too.

Each hint is taken from the tool's own output (``data info``, report.md, ``resume``) and run
exactly as written, in a subprocess, from another working folder.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from cli_helpers import pdesharp

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "tasks" / "advection_diffusion1d.yaml"  # periodic: generator + audit


def run_hint(command: str, cwd: Path, env: dict):
    words = shlex.split(command)
    assert words[0] == "pdesharp", command
    return pdesharp(*words[1:], cwd=cwd, env=env)


def test_suggested_commands_run_as_suggested(tmp_path):
    # no cached audit from other runs, and auto computes none: the report must suggest the command
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PDESHARP_AUDIT_AUTO_SECONDS": "0",
           "PDESHARP_AUDIT_DIR": str(tmp_path / "audits")}
    data, work = tmp_path / "data", tmp_path / "work"
    work.mkdir()
    info = pdesharp("data", "info", str(TASK), "--data-dir", str(data), cwd=work, env=env)
    assert info.returncode == 0, info.stderr
    hint = re.search(r"dev: (pdesharp data generate .*?), then pass --dev-data (\S+)",
                     info.stdout)
    assert hint, info.stdout
    generated = run_hint(hint.group(1), work, env)
    assert generated.returncode == 0, generated.stderr
    dev_file = Path(hint.group(2))
    assert dev_file.is_file()
    again = pdesharp("data", "info", str(TASK), "--data-dir", str(data), "--dev-data",
                     str(dev_file), cwd=work, env=env)
    assert again.returncode == 0 and "present" in again.stdout

    solved = pdesharp("solve", str(TASK), "--dev-data", str(dev_file), "--max-samples", "2",
                      "--max-evals", "1", "--no-convergence", "--run-id", "h", "--quiet",
                      cwd=work, env=env)
    assert solved.returncode == 0, solved.stderr
    report = (work / "runs" / "h" / "report.md").read_text()
    audit = re.search(r"`(pdesharp data audit [^`]*)` computes it", report)
    assert audit, report
    assert str(TASK) in audit.group(1)  # the YAML's path, not its name
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    audited = run_hint(audit.group(1), elsewhere, env)
    assert audited.returncode == 0, audited.stderr
    assert "reference error" in audited.stdout.lower()

    finished = pdesharp("resume", str(work / "runs" / "h"), cwd=elsewhere, env=env)
    if "already finished" in finished.stdout:
        show = re.search(r"`(pdesharp show [^`]*)`", finished.stdout)
        shown = run_hint(show.group(1), elsewhere, env)
        assert shown.returncode == 0 and "status" in shown.stdout
    else:  # a budget stop resumes (and then finishes within the same budget)
        assert finished.returncode == 0, finished.stderr
