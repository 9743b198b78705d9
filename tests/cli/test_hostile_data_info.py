"""Issue 25 row 10: `pdesharp data info` printed a task file's dev-file path and an HDF5 file's
key names as Rich markup with their escape sequences: an OSC title write and a clickable
`[link=...]` reached the terminal. Every cell and line now goes through
:func:`pdesharp.untrusted.plain`; errors through :func:`pdesharp.commands._common.fail`.

The console is forced to behave as a colour terminal (FORCE_COLOR), where Rich emits OSC 8 for
a link; pdesharp's own styling (CSI colour codes) may appear, an OSC sequence may not."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import yaml

from pdesharp.cli import main
from pdesharp.task import load_task

EVIL = "\x1b]0;owned\x07[link=http://evil.example/x]click[/link]\x1b]8;;http://evil.example\x07"


@pytest.fixture()
def terminal_like(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "400")  # no folding inside a cell
    monkeypatch.delenv("NO_COLOR", raising=False)


def run(capsys, *argv) -> tuple[int, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out + out.err


def clean(text: str) -> None:
    assert "\x1b]" not in text and "\x07" not in text  # no OSC string (title, link, clipboard)
    assert "\x9d" not in text


def test_a_task_files_data_path_is_printed_as_text(tmp_path, capsys, terminal_like):
    data = load_task("advection").model_dump(mode="json")
    data["name"] = "adv_paths"
    data["data"]["dev"]["files"] = [f"dev{EVIL}.hdf5"]
    spec = tmp_path / "t.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    code, text = run(capsys, "data", "info", spec, "--data-dir", tmp_path)
    assert code == 0
    clean(text)
    assert "[link=http:/evil.example/x]click[/link]" in text  # shown as text (a Path: one /)


def test_an_hdf5_files_key_names_are_printed_as_text(tmp_path, capsys, terminal_like):
    path = tmp_path / f"keys{EVIL[:12]}.hdf5"
    with h5py.File(path, "w") as f:
        f.create_dataset(f"x{EVIL}", data=np.zeros(3))
    code, text = run(capsys, "data", "info", "advection", "--dev-data", path)
    assert code == 0
    clean(text)
    assert "broken" in text and "lacks keys" in text


def test_a_task_name_with_escapes_is_refused_in_one_clean_line(tmp_path, capsys,
                                                                terminal_like):
    data = load_task("advection").model_dump(mode="json")
    data["name"] = f"adv{EVIL}"
    spec = tmp_path / "t.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    code, text = run(capsys, "data", "info", spec)
    assert code == 2 and "a task name is letters, digits and underscores" in text
    clean(text)
