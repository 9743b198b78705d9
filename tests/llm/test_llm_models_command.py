"""``pdesharp models``: provider list, price table, endpoint check against the loopback server."""

from __future__ import annotations

import pytest
from llm_server import LLMServer, ServerReply

from pdesharp.cli import main


def test_list_shows_presets_and_key_state(capsys, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "x")
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "https://api.deepseek.com" in out and "OPENROUTER_API_KEY" in out and "builtin" in out


def test_prices_with_override(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text("models:\n  my-model: {input: 0.123, output: 4.56}\n")
    assert main(["models", "prices", "--prices", str(f)]) == 0
    out = capsys.readouterr().out
    assert "my-model" in out and "4.56" in out and "gpt-4o" in out


def test_check_and_chat_against_a_live_server(capsys):
    with LLMServer([ServerReply("ready", prompt_tokens=9, completion_tokens=1)],
                   models=["test-model", "other"]) as srv:
        assert main(["models", "check", "test-model", "--base-url", srv.url, "--chat"]) == 0
        out = capsys.readouterr().out
        assert "offers 'test-model'" in out and "chat ok" in out and "9 prompt + 1 completion" in out
        assert main(["models", "check", "absent", "--base-url", srv.url]) == 1
        assert "not in the endpoint's model list (2 models: other, test-model)" in capsys.readouterr().out


def test_check_dead_endpoint_and_bad_spec(capsys):
    assert main(["models", "check", "m", "--base-url", "http://127.0.0.1:9/v1"]) == 1
    assert "cannot reach http://127.0.0.1:9/v1 (connection refused)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["models", "check", "gpt-4o"])
    assert "Did you mean openai:gpt-4o" in capsys.readouterr().err
