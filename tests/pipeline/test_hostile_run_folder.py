"""Issue 25, through the real CLI as root: a run folder someone hands you is untrusted input,
task names are checked where they are read, and an overflowing solver cannot win on the
residual. One hostile test per row of the issue's table (rows 1-4 and 9 here; the clock, the
parsers, printing, report.md and memory rows have their own files, named in docs/security.md).

One scripted `pdesharp solve --feedback residual` (replies written by us for this test, not a
real model's) makes the run folder the hostile variants are copied from: its genesis writes an
honest exact-shift solver (g1) and one that returns ±1e308 after frame 0 (g2); judge 1
nominates g2, judges 2 and 3 nominate g1, so both run.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from llm_server import LLMServer
from pipeline_scripts import analysis_replies, genesis_reply, nominate, patch, shift

from pdesharp.cli import main
from pdesharp.task import load_task

OVERFLOW = '''import numpy as np

def solver(u0_batch, t_coordinate, beta):
    B, N = u0_batch.shape
    out = np.empty((B, len(t_coordinate), N))
    out[:, 0] = u0_batch
    out[:, 1:] = np.where(np.arange(N) % 2, 1e308, -1e308)
    return out
'''
CANARY = "SEC-CANARY-3f9a"
# model text that would make report.md fetch a remote image or carry a script link (row 11)
BEACONS = ("![beacon](http://127.0.0.1:9/beacon.png) [click](javascript:alert(1)) "
           "<img src=http://127.0.0.1:9/x.png> \\[esc](javascript:alert(3))")


def cli(*argv, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdesharp.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})


@pytest.fixture()
def pdesharp(capsys):
    """The CLI in this process (a refusal ends before anything heavy runs): returns code,
    stdout, stderr, as a user's shell would see them."""
    def run(*argv) -> subprocess.CompletedProcess:
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
        out = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, out.out, out.err)
    return run


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory, shared_data):
    tmp = tmp_path_factory.mktemp("hostile-run")
    rules = [{"tag": tag, "reply": replies[0]}
             for tag, replies in analysis_replies("numerical").items()]
    rules += [{"tag": "genesis", "sample": 0,
               "reply": genesis_reply(shift(1.0), f"exact {BEACONS}")},
              {"tag": "genesis", "sample": 1, "reply": genesis_reply(OVERFLOW, "overflow")},
              {"tag": "judge.nominate", "reply": nominate("g1")},
              {"tag": "judge.propose",
               "reply": patch("    scale = 1.0", "    scale = 1.0  # same", "same", ["g1"])},
              {"tag": "reporter", "reply": f"Narrative written by the test.\n\n{BEACONS}\n\n"
                                           "[id]: javascript:alert(2)\n[ref][id]"}]
    script, first = tmp / "rules.yaml", tmp / "judge1.yaml"
    script.write_text("# replies written by us for this test\n"
                      + yaml.safe_dump({"rules": rules}, sort_keys=False))
    first.write_text("# replies written by us for this test\n" + yaml.safe_dump({"rules": [
        {"tag": "judge.nominate", "reply": nominate("g2")}, *rules[-2:]]}, sort_keys=False))
    proc = cli("solve", "advection", "--model", f"scripted:{script}", "--judges",
               f"scripted:{first},scripted:{script},scripted:{script}", "--candidates", "2",
               "--max-rounds", "1", "--rejudge-cycles", "0", "--feedback", "residual",
               "--debug-attempts", "0",
               "--dev-data", shared_data / "advection_dev.hdf5", "--data-dir", tmp,
               "--max-samples", "2", "--no-convergence", "--out", tmp / "runs",
               "--run-id", "r", "--quiet")
    return tmp, tmp / "runs" / "r", proc


def copy_of(run_folder, tmp_path, name="copy") -> Path:
    _, run, proc = run_folder
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / name
    shutil.copytree(run, out)
    return out


def set_config(run: Path, **changes) -> None:
    """Rewrite the folder's recorded config (run.sqlite and config.json), as an attacker would."""
    db = sqlite3.connect(run / "run.sqlite")
    config = json.loads(db.execute("SELECT config FROM runs").fetchone()[0])
    for key, value in changes.items():
        if key == "api_key_env":
            config.setdefault("llm", {})[key] = value
        else:
            config[key] = value
    db.execute("UPDATE runs SET config=?", (json.dumps(config),))
    db.commit()
    db.close()
    (run / "config.json").write_text(json.dumps(config))


def snapshot(run: Path) -> dict:
    return {p.relative_to(run): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


# -- row 9: an overflowing solver under --feedback residual ---------------------------------

def test_an_overflowing_solver_fails_and_the_run_finishes(run_folder):
    _, run, proc = run_folder
    assert proc.returncode == 0, proc.stderr[-2000:]
    db = sqlite3.connect(run / "run.sqlite")
    rows = {cid: (status, json.loads(result)) for cid, status, result in db.execute(
        "SELECT candidate_id, status, result FROM evaluations WHERE split='dev'")}
    db.close()
    status, result = rows["g2"]
    assert status == "nan" and result["residual"] is None
    assert "not finite" in result["message"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["best_id"] != "g2" and summary["status"] == "finished"
    assert 0 < summary["best_dev_score"] < 1e-2  # the honest exact shift's residual


# -- row 11: report.md renders no remote image and no non-http(s) link ---------------------

def test_report_md_renders_no_remote_image_and_no_script_link(run_folder):
    from markdown_it import MarkdownIt

    _, run, proc = run_folder
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = (run / "report.md").read_text()
    assert "Narrative written by the test." in text and "beacon" in text  # shown, as text
    html = MarkdownIt("commonmark").enable("table").render(text)
    # the report's own figure (a file beside it) is the only image; links are http(s) or none
    assert re.findall(r'src="([^"]*)"', html) == ["pareto.svg"]
    assert all(h.startswith(("http://", "https://")) for h in re.findall(r'href="([^"]*)"', html))
    assert "[click](javascript:alert(1))" in html  # the model's text, shown as text


# -- rows 1 and 2: settings recorded in a run folder ----------------------------------------

def resumable(run_folder, tmp_path) -> Path:
    run = copy_of(run_folder, tmp_path)
    (run / "report.md").unlink()  # an unfinished run: resume would redo the final steps
    return run


def test_resume_never_takes_isolation_from_the_folder(run_folder, tmp_path, pdesharp):
    run = resumable(run_folder, tmp_path)
    marker = tmp_path / "WRITTEN-ON-THE-HOST"
    db = sqlite3.connect(run / "run.sqlite")  # solvers that write a file, to be run again
    db.execute("UPDATE candidates SET code = ? || code",
               (f"open({str(marker)!r}, 'w').write('x')\n",))
    db.execute("DELETE FROM evaluations")
    db.commit()
    db.close()
    set_config(run, unsafe_no_isolation=True, executor="ray", ray_address="ray://10.0.0.1:10001",
               device="cuda")
    before = snapshot(run)
    proc = pdesharp("resume", run, "--quiet")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "--unsafe-no-isolation" in proc.stderr and "--executor ray" in proc.stderr
    assert "--ray-address ray://10.0.0.1:10001" in proc.stderr and "--device cuda" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists() and snapshot(run) == before  # nothing ran, nothing was written


def test_resume_never_sends_a_key_to_the_folders_endpoint(run_folder, tmp_path, pdesharp,
                                                         monkeypatch):
    run = resumable(run_folder, tmp_path)
    monkeypatch.setenv("SEC_CANARY_KEY", CANARY)
    with LLMServer(["never asked"]) as srv:
        set_config(run, model="compat:evil", base_url=srv.url, api_key_env="SEC_CANARY_KEY")
        proc = pdesharp("resume", run, "--quiet")
        assert srv.requests == []
    assert proc.returncode == 2
    assert "--base-url" in proc.stderr and "--api-key-env SEC_CANARY_KEY" in proc.stderr
    assert CANARY not in proc.stdout + proc.stderr


# -- row 3: links and stored paths in a run folder -------------------------------------------

@pytest.fixture()
def secret(tmp_path) -> Path:
    path = tmp_path / "secret.png"  # a PNG signature, then the secret: passes a naive check
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + CANARY.encode() * 8)
    return path


@pytest.mark.parametrize("planted", ["plots/winner-dev.png", "narrative.md"])
def test_report_and_show_refuse_a_folder_with_a_link(run_folder, tmp_path, secret, planted,
                                                     pdesharp):
    run = copy_of(run_folder, tmp_path)
    (run / planted).parent.mkdir(exist_ok=True)
    (run / planted).unlink(missing_ok=True)
    (run / planted).symlink_to(secret)
    encoded = base64.b64encode(secret.read_bytes()).decode()[:40]
    for argv in (["report", run, "--no-plot"], ["report", run], ["show", run],
                 ["resume", run]):
        proc = pdesharp(*argv)
        assert proc.returncode == 2, (argv, proc.stderr[-2000:])
        assert "symbolic link" in proc.stderr and "Traceback" not in proc.stderr
        assert CANARY not in proc.stdout + proc.stderr and encoded not in proc.stdout
    assert not (run / "report.html").exists()


def test_report_never_reads_a_stored_plot_path(run_folder, tmp_path, secret, pdesharp):
    run = copy_of(run_folder, tmp_path)
    shutil.rmtree(run / "plots", ignore_errors=True)
    summary = json.loads((run / "summary.json").read_text())
    db = sqlite3.connect(run / "run.sqlite")
    for seq, result in db.execute("SELECT seq, result FROM evaluations").fetchall():
        data = json.loads(result)
        data["plot_path"] = str(secret)
        db.execute("UPDATE evaluations SET result=? WHERE seq=?", (json.dumps(data), seq))
    db.commit()
    db.close()
    # no data where the report looks: the figure cannot be drawn, so only the stored path
    # could supply one
    proc = pdesharp("report", run, "--data-dir", tmp_path / "nowhere", "--out",
                    tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "r.html").read_text()
    assert base64.b64encode(secret.read_bytes()).decode()[:40] not in html
    assert "plot not drawn" in html and summary["best_id"] in html


def test_report_survives_forged_events(run_folder, tmp_path, pdesharp):
    """The events table is data too: an event nested 100,000 deep, one of 2 MB, one that is no
    JSON object, and one that claims a timing shared the cores. The report renders, and the
    claim only moves a re-timed code's median (nothing here was re-timed: no time changes)."""
    run = copy_of(run_folder, tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    db = sqlite3.connect(run / "run.sqlite")
    forged = ["[" * 100_000 + "]" * 100_000, json.dumps({"candidate": "g1", "x": "a" * 2**21}),
              "[1, 2, 3]", "not json", json.dumps({"candidate": "g1", "contended": True})]
    for data in forged:
        db.execute("INSERT INTO events(ts, kind, data) VALUES ('', 'evaluation', ?)", (data,))
    db.execute("UPDATE candidates SET parents=? WHERE id='g2'", (forged[0],))  # parents too
    db.commit()
    db.close()
    proc = pdesharp("report", run, "--out", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "r.html").read_text()
    assert summary["best_id"] in html and "a" * 1000 not in html
    proc = pdesharp("show", run)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # an unfinished run whose recorded configuration is nested 100,000 deep: resume refuses
    # it in words, and nothing runs or is written
    run = resumable(run_folder, tmp_path / "deep")
    db = sqlite3.connect(run / "run.sqlite")
    db.execute("UPDATE runs SET config=?", (forged[0],))
    db.commit()
    db.close()
    before = snapshot(run)
    proc = pdesharp("resume", run, "--quiet")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "configuration cannot be read (JSON nested too deep)" in proc.stderr
    assert snapshot(run) == before


def test_a_png_that_is_not_a_png_is_not_embedded(run_folder, tmp_path, pdesharp):
    run = copy_of(run_folder, tmp_path)
    (run / "plots").mkdir(exist_ok=True)
    (run / "plots" / "winner-dev.png").write_text(f"root:{CANARY}:19000:0:99999:7:::\n")
    proc = pdesharp("report", run, "--out", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "r.html").read_text()
    assert "is not a PNG image" in html
    assert base64.b64encode(f"root:{CANARY}".encode()).decode()[:16] not in html


# -- row 4: names are checked where they are read -------------------------------------------

def test_a_task_name_cannot_leave_the_runs_folder(tmp_path, pdesharp):
    data = load_task("advection").model_dump(mode="json")
    data["name"] = "../../x"
    spec = tmp_path / "a" / "b" / "evil.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "a" / "b" / "runs"
    proc = pdesharp("solve", spec, "--out", out, "--quiet")
    assert proc.returncode == 2 and "a task name is letters, digits and underscores" in \
        proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "evil.yaml"]
    # a run id, and a run id looked up under --out, are one folder name
    proc = pdesharp("solve", "advection", "--run-id", "../x", "--out", out, "--quiet")
    assert proc.returncode == 2 and "--run-id '../x' is not usable" in proc.stderr
    proc = pdesharp("resume", "../../x", "--out", out)
    assert proc.returncode == 2 and "run id '../../x' is not usable" in proc.stderr
    assert not (tmp_path / "x").exists() and not out.exists()


def test_a_run_folder_task_with_a_bad_name_is_refused(run_folder, tmp_path, pdesharp):
    run = resumable(run_folder, tmp_path)
    task = yaml.safe_load((run / "task.yaml").read_text())
    task["name"] = "../../x"
    (run / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    proc = pdesharp("resume", run, "--quiet")
    assert proc.returncode == 2 and "a task name is letters" in proc.stderr


def test_a_translated_task_with_a_bad_name_is_refused(tmp_path, pdesharp):
    data = load_task("advection").model_dump(mode="json")
    data["name"] = "../../x"
    reply = "```yaml\n" + yaml.safe_dump(data, sort_keys=False) + "```"
    rules = tmp_path / "rules.yaml"
    rules.write_text("# written by us for this test\n" + yaml.safe_dump(
        {"rules": [{"tag": "translate", "reply": reply},
                   {"tag": "translate.fix", "reply": reply}]}))
    proc = pdesharp("translate", "Solve the advection equation.", "--model",
                    f"scripted:{rules}", "--out", tmp_path / "out.yaml")
    assert proc.returncode != 0 and not (tmp_path / "out.yaml").exists()
    assert "a task name is letters" in proc.stderr + proc.stdout
