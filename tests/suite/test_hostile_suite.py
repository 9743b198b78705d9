"""Hostile suite folders: a case folder that is a symlink, files inside a case that are
symlinks (to a file outside, to another case's data), names with '..', YAML alias bombs and
oversized files. Each bad case is refused with its reason; the good ones stay; nothing outside
the suite folder is read. Cheap: discovery only, nothing is solved."""

from __future__ import annotations

import os

import pytest

from pdesharp.suite.cases import MAX_YAML_BYTES, SuiteError, discover
from pdesharp.suite.names import BadName, check_name
from pdesharp.suite.run import SuiteConfig, SuiteRunError, case_dir


def _case(folder, text="task: advection\n"):
    folder.mkdir()
    (folder / "case.yaml").write_text(text)
    return folder


def test_symlinks_dotdot_names_and_bombs_are_refused(tmp_path, one_d_suite):
    root = tmp_path / "suite"
    root.mkdir()
    _case(root / "good")
    secret = tmp_path / "secret.yaml"
    secret.write_text("task: burgers\n")
    os.symlink(root / "good", root / "linked_case")  # the case folder itself is a link
    bad_yaml = root / "linked_yaml"
    bad_yaml.mkdir()
    os.symlink(secret, bad_yaml / "case.yaml")  # a file outside the suite, through a link
    stolen = root / "linked_data"
    stolen.mkdir()  # another suite's data file through a link
    (stolen / "task.yaml").write_bytes((one_d_suite / "c3_poisson1d" / "task.yaml").read_bytes())
    os.symlink(one_d_suite / "c3_poisson1d" / "dev.hdf5", stolen / "dev.hdf5")
    _case(root / "a..b")
    _case(root / "dotdot_task", "task: ../../etc/passwd\n")
    _case(root / "bomb", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a]\n"
                         "c: [*b, *b, *b, *b, *b, *b]\ntask: advection\n")
    _case(root / "huge", "task: advection\nnote: " + "x" * (MAX_YAML_BYTES + 1) + "\n")
    _case(root / "deep", "task: advection\nnote: " + "[" * 200 + "]" * 200 + "\n")
    _case(root / "fifo", "task: advection\n")
    os.mkfifo(root / "fifo" / "dev.hdf5")  # opening it would block: never opened
    (root / "README.md").write_text("not a case")

    suite = discover(root)
    assert [c.name for c in suite.cases] == ["good"]
    why = {r.name: r.reason for r in suite.refused}
    assert set(why) == {"linked_case", "linked_yaml", "linked_data", "a..b", "dotdot_task",
                        "bomb", "huge", "deep", "fifo"}
    assert "symbolic link" in why["linked_case"]
    assert "symbolic link" in why["linked_yaml"] and "symbolic link" in why["linked_data"]
    assert "not a usable name" in why["a..b"] and "not a usable name" in why["dotdot_task"]
    assert "aliases" in why["bomb"] or "anchors" in why["bomb"]
    assert f"at most {MAX_YAML_BYTES}" in why["huge"]
    assert "nested" in why["deep"]
    assert "not a regular file" in why["fifo"]


@pytest.mark.parametrize("name", ["..", "../x", "a/b", ".hidden", "-rf", "a..b", "x\x00y",
                                  "é", "", "a" * 81, None, 3])
def test_the_name_check_refuses(name):
    with pytest.raises(BadName):
        check_name(name, what="case")
    if isinstance(name, str):
        with pytest.raises(BadName):
            case_dir("/tmp/out", name)


def test_the_suite_folder_itself(tmp_path):
    with pytest.raises(SuiteError, match="not a folder"):
        discover(tmp_path / "missing")
    with pytest.raises(SuiteError, match="no case folders"):
        discover(tmp_path)
    (tmp_path / "suite.yaml").write_text("name: ../up\n")
    with pytest.raises(SuiteError, match="not a usable name"):
        discover(tmp_path)


def test_an_output_folder_with_other_settings_is_refused(tmp_path, one_d_suite):
    from pdesharp.suite.run import prepare

    cfg = SuiteConfig(suite=str(one_d_suite), out=str(tmp_path / "out"), budget_evals=2)
    prepare(cfg)[1].close()
    cfg.budget_evals = 5
    with pytest.raises(SuiteRunError, match="budget_evals: 2 -> 5"):
        prepare(cfg)
    with pytest.raises(SuiteRunError, match="unknown method"):
        prepare(SuiteConfig(suite=str(one_d_suite), out=str(tmp_path / "o2"), methods=["x"]))


@pytest.mark.parametrize("command", [["suite", "report"], ["report"]])
def test_a_results_folder_holding_a_link_is_refused_before_anything_is_read(tmp_path, capsys,
                                                                            command):
    """A suite's results folder handed over by someone else is untrusted (issue 25): a link
    inside it (here to a secret beside it) stops `pdesharp suite report` and `pdesharp report`
    with the reason, before the settings or the store are read; nothing is written."""
    from pdesharp.cli import main

    secret = tmp_path / "secret.txt"
    secret.write_text("canary-7f3a")
    out = tmp_path / "results"
    out.mkdir()
    (out / "suite.json").write_text("{}")
    (out / "suite.sqlite").write_bytes(b"")
    (out / "cases").mkdir()
    os.symlink(secret, out / "cases" / "leak.md")
    with pytest.raises(SystemExit) as exc:
        main([*command, str(out)])
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "symbolic link" in err and "canary-7f3a" not in err
    assert sorted(p.name for p in out.iterdir()) == ["cases", "suite.json", "suite.sqlite"]


def test_a_results_folder_is_no_source_of_paths_or_endpoints(tmp_path, capsys, one_d_suite):
    """A results folder whose suite.json names another output folder and an endpoint: `report`
    writes the page inside the folder it was given, never where suite.json points, and `suite
    resume` refuses the recorded endpoint and key variable (as `pdesharp resume` does), naming
    the flags, before anything runs."""
    import json

    from pdesharp.cli import main
    from pdesharp.suite.run import prepare

    out = tmp_path / "results"
    prepare(SuiteConfig(suite=str(one_d_suite), out=str(out)))[1].close()
    elsewhere = tmp_path / "elsewhere"
    data = json.loads((out / "suite.json").read_text())
    data.update(out=str(elsewhere), base_url="http://attacker.example/v1",
                llm={"api_key_env": "OTHER_KEY"})
    (out / "suite.json").write_text(json.dumps(data))
    assert main(["suite", "report", str(out)]) == 0
    assert (out / "index.html").is_file() and not elsewhere.exists()
    with pytest.raises(SystemExit) as exc:
        main(["suite", "resume", str(out)])
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "--base-url http://attacker.example/v1" in err and "--api-key-env OTHER_KEY" in err
    assert not elsewhere.exists()
