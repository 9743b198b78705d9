"""Where audits are cached, when a cached audit is used, and `pdesharp data audit`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from audit_helpers import advection_exact, user_task, write_1d

from pdesharp.audit import audit_with_cache, cached_audit
from pdesharp.audit.cache import file_sha256, user_cache_root
from pdesharp.task import load_task

TIMES = np.arange(11) * 0.2


@pytest.fixture
def user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    # these tests are about the default locations: no override (the suite sets one, conftest)
    monkeypatch.delenv("PDESHARP_AUDIT_DIR", raising=False)
    return tmp_path / "xdg"


@pytest.fixture
def data_file(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    clean = advection_exact(64, 3, 5, TIMES)
    return write_1d(folder / "adv.h5", clean + 1e-3 * TIMES[None, :, None], TIMES)


def test_writable_folder_keeps_the_audit_beside_the_data(data_file, user_cache):
    task = load_task("advection")
    first = audit_with_cache(task, data_file)
    assert first.path.parent == data_file.parent / "adv.h5.audit"
    assert not (user_cache / "pdesharp").exists()
    again = audit_with_cache(task, data_file)  # served from the cache, not recomputed
    assert again.path == first.path and again.report.created == first.report.created
    np.testing.assert_array_equal(again.converged["u"], first.converged["u"])


def test_read_only_folder_falls_back_to_the_user_cache(data_file, user_cache):
    task = load_task("advection")
    folder = data_file.parent
    os.chmod(folder, 0o555)  # as the shared data folder: no write bits (root ignores access)
    try:
        result = audit_with_cache(task, data_file)
    finally:
        os.chmod(folder, 0o755)
    assert not (folder / "adv.h5.audit").exists()
    assert result.path.parent == user_cache_root() / file_sha256(data_file)[:24]
    assert str(user_cache) in str(result.path)
    # a run finds it by content, wherever the file is
    copy = data_file.parent / "copy.h5"
    copy.write_bytes(data_file.read_bytes())
    found = cached_audit(task, copy, [0, 2])
    assert found is not None and found.report.reference_error == result.report.reference_error


def test_changed_data_makes_the_cached_audit_stale(data_file, user_cache):
    task = load_task("advection")
    old = audit_with_cache(task, data_file)
    u = advection_exact(64, 3, 5, TIMES) + 3e-3 * TIMES[None, :, None]
    write_1d(data_file, u, TIMES)
    assert cached_audit(task, data_file) is None
    new = audit_with_cache(task, data_file)
    assert new.report.reference_error > 1.5 * old.report.reference_error  # 3x the drift


def test_partial_audits_do_not_stand_for_the_file(data_file, user_cache):
    task = load_task("advection")
    audit_with_cache(task, data_file, frames=4)
    assert cached_audit(task, data_file) is None
    audit_with_cache(task, data_file, limit=2)
    assert cached_audit(task, data_file, [0, 1]) is not None
    assert cached_audit(task, data_file, [0, 1, 2]) is None  # sample 2 was not audited


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pdesharp.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=300)


def test_cli_audit_prints_the_findings_and_writes_json(data_file, tmp_path, user_cache):
    out = tmp_path / "audit.json"
    run = _cli("data", "audit", "advection", "--dev-data", str(data_file), "--json", str(out),
               env={"XDG_CACHE_HOME": str(user_cache)})
    assert run.returncode == 0, run.stderr
    assert "reference error" in run.stdout and "mean of u: drifts" in run.stdout
    report = json.loads(out.read_text())
    assert report["status"] == "ok" and len(report["per_sample"]) == 3
    assert "stored:" in run.stdout and (data_file.parent / "adv.h5.audit").is_dir()


def test_cli_says_why_a_task_cannot_be_audited(tmp_path, user_cache):
    spec = user_task("dt(u) - nu*dx(u, 2)", {"nu": 0.1}).model_dump(mode="json")
    spec["boundary"] = "dirichlet: u = 0"
    import yaml

    task_file = tmp_path / "dirichlet.yaml"
    task_file.write_text(yaml.safe_dump(spec))
    data = write_1d(tmp_path / "d.h5", np.ones((1, 3, 16)), np.array([0.0, 0.1, 0.2]))
    before = sorted(tmp_path.rglob("*"))
    run = _cli("data", "audit", str(task_file), "--dev-data", str(data),
               env={"XDG_CACHE_HOME": str(user_cache)})
    assert run.returncode == 1
    assert "no converged solution" in run.stderr and "periodic" in run.stderr
    # a refusal creates nothing: no .audit folder beside the data, nothing in the user cache
    assert sorted(tmp_path.rglob("*")) == before
    assert not any(p.is_file() for p in Path(user_cache).rglob("*"))
    missing = _cli("data", "audit", "advection", "--dev-data", str(tmp_path / "none.h5"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_the_audit_dir_override_is_the_only_place_read_or_written(data_file, user_cache,
                                                                  tmp_path, monkeypatch):
    task = load_task("advection")
    beside = audit_with_cache(task, data_file)  # the default: beside the writable data
    assert beside.path.parent == data_file.parent / "adv.h5.audit"
    root = tmp_path / "audits"
    monkeypatch.setenv("PDESHARP_AUDIT_DIR", str(root))
    assert cached_audit(task, data_file) is None  # the folder beside the data is not looked at
    moved = audit_with_cache(task, data_file)
    assert moved.path.parent == root / file_sha256(data_file)[:24]
    assert cached_audit(task, data_file).path == moved.path
    assert not (user_cache / "pdesharp").exists()
