"""``pdesharp bench`` takes the model layer's options (--base-url, --api-key-env, --llm-timeout,
...) and builds every method's model with them: a cell with ``--model compat:x --base-url URL``
makes its calls at URL. The loopback server's replies are written by us, not recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from llm_server import LLMServer

from pdesharp.bench import BenchConfig, BenchError, solve_model_config
from pdesharp.cli import main

RULES = Path(__file__).parent / "fixtures" / "codepde_rules.yaml"


def _solver_reply() -> str:
    """The exact spectral-shift solver of the bench CLI fixture (written by us)."""
    rules = yaml.safe_load(RULES.read_text())["rules"]
    return next(r["reply"] for r in rules if r["tag"] == "codepde.generate")


def test_compat_cell_makes_its_calls_at_base_url(tmp_path, shared_data, capsys, monkeypatch):
    monkeypatch.setenv("PDESHARP_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    # Set to a dead address: compat must use --base-url, never this variable.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("BENCH_TEST_KEY", "sk-loopback")
    out = tmp_path / "bench"
    with LLMServer(lambda body, i: _solver_reply(), api_key="sk-loopback") as srv:
        argv = ["bench", "--tasks", "advection", "--methods", "codepde", "--model", "compat:x",
                "--base-url", srv.url, "--api-key-env", "BENCH_TEST_KEY", "--llm-timeout", "30",
                "--llm-retries", "0", "--samples", "1", "--out", str(out),
                "--data-dir", str(shared_data), "--max-samples", "2"]
        assert main(argv) == 0
        chats, url = srv.chat_requests, srv.url
    # One sample, no debugging (the solver runs): exactly one call, authorised with the key
    # from --api-key-env (the server answers 401 otherwise) and naming the model "x".
    assert len(chats) == 1 and chats[0].status == 200
    assert chats[0].body["model"] == "x"
    row = (out / "table.md").read_text().splitlines()[2]
    assert "| advection | codepde |" in row and "failed" not in row
    saved = json.loads((out / "bench.json").read_text())
    assert saved["base_url"] == url
    assert saved["llm"] == {"api_key_env": "BENCH_TEST_KEY", "timeout": 30.0, "max_retries": 0}
    summary = json.loads((out / "advection" / "codepde-r0" / "summary.json").read_text())
    assert summary["best_dev_score"] is not None
    capsys.readouterr()


def test_compat_without_base_url_is_refused_before_any_cell(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    out = tmp_path / "bench"
    with pytest.raises(SystemExit):
        main(["bench", "--tasks", "advection", "--methods", "codepde", "--model", "compat:bridge",
              "--out", str(out)])
    err = capsys.readouterr().err
    assert "needs --base-url" in err and "openai:bridge" in err
    assert not out.exists()  # nothing written: not even bench.json


def test_optillm_methods_behind_a_proxy_need_no_endpoint_check():
    # With --optillm-url, cot/moa/cepo only pass the model name on to the proxy.
    BenchConfig(tasks=["advection"], methods=["cot", "moa"], model="gpt-4o-mini",
                optillm_url="http://127.0.0.1:8000/v1").check_model_spec()
    with pytest.raises(BenchError, match="unknown model spec"):
        BenchConfig(tasks=["advection"], methods=["cot", "codepde"], model="gpt-4o-mini",
                    optillm_url="http://127.0.0.1:8000/v1").check_model_spec()


def test_sharp_cells_get_the_same_model_options():
    cfg = BenchConfig(tasks=["advection"], methods=["sharp"], model="compat:x",
                      base_url="http://127.0.0.1:1/v1", llm={"timeout": 5.0}, prices="p.yaml",
                      sharp_options={"candidates": 2})
    config = solve_model_config(cfg, task="advection", max_evals=3, **cfg.sharp_options)
    assert (config.model, config.base_url, config.llm, config.prices) == (
        "compat:x", "http://127.0.0.1:1/v1", {"timeout": 5.0}, "p.yaml")
    assert (config.task, config.max_evals, config.candidates) == ("advection", 3, 2)
