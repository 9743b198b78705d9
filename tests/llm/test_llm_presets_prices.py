"""Presets, make_model, the price table and its overrides."""

from __future__ import annotations

import asyncio

import pytest
from llm_server import LLMServer, ServerReply

from pdesharp.llm import (
    PRESETS,
    Budget,
    BudgetExceeded,
    CachedModel,
    ChatParams,
    LimitedModel,
    Message,
    MeteredModel,
    ModelError,
    OpenAICompatModel,
    Price,
    PriceError,
    PriceTable,
    Usage,
    is_builtin,
    load_prices,
    make_model,
    parse_spec,
)
from pdesharp.llm.prices import PROVIDER_PREFIXES, normalise_model_id, shipped_prices


def transport(model):
    while not isinstance(model, OpenAICompatModel):
        model = model.inner
    return model


@pytest.mark.parametrize("spec,url,key,model", [
    ("openai:gpt-4o-mini", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini"),
    ("deepseek:deepseek-chat", "https://api.deepseek.com", "DEEPSEEK_API_KEY", "deepseek-chat"),
    ("openrouter:anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
     "anthropic/claude-sonnet-4"),
    ("gemini:gemini-2.5-pro", "https://generativelanguage.googleapis.com/v1beta/openai/",
     "GEMINI_API_KEY", "gemini-2.5-pro"),
    ("ollama:qwen2.5-coder:7b", "http://localhost:11434/v1", None, "qwen2.5-coder:7b"),
    ("vllm:Qwen/Qwen2.5-7B-Instruct", "http://localhost:8000/v1", None, "Qwen/Qwen2.5-7B-Instruct"),
])
def test_presets(spec, url, key, model, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    ms = parse_spec(spec)
    assert (ms.base_url, ms.api_key_env, ms.model, ms.name) == (url, key, model, spec)
    if key:
        monkeypatch.setenv(key, "sk-test")
    t = transport(make_model(spec))
    assert (t.base_url, t.model, t.name) == (url.rstrip("/"), model, spec)
    assert t.free is (key is None)


def test_openai_base_url_env_and_explicit_override(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.test/v1")
    assert parse_spec("openai:gpt-4o").base_url == "http://proxy.test/v1"
    assert parse_spec("openai:gpt-4o", base_url="http://other.test/v1").base_url == "http://other.test/v1"


def test_generic_form_and_errors():
    ms = parse_spec("my-model:latest", base_url="http://h.test/v1")
    assert (ms.provider, ms.model, ms.api_key_env) == ("compat", "my-model:latest", None)
    assert parse_spec("x", base_url="http://h.test/v1", api_key_env="MY_KEY").api_key_env == "MY_KEY"
    with pytest.raises(ValueError, match="Did you mean openai:gpt-4o"):
        parse_spec("gpt-4o")
    with pytest.raises(ValueError, match="needs --base-url"):
        parse_spec("compat:m")
    with pytest.raises(ValueError, match="names no model"):
        parse_spec("openai:")
    with pytest.raises(ValueError, match="empty model spec"):
        parse_spec("  ")


def test_builtin_is_not_a_chat_model():
    assert is_builtin("builtin") and is_builtin(" Builtin ") and not is_builtin("openai:gpt-4o")
    assert not is_builtin(None)
    with pytest.raises(ValueError, match="'builtin' is not a chat model; the pipeline selects the built-in analyst"):
        make_model("builtin")


def test_missing_key_is_reported_before_any_call(monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(ModelError, match=r"\$DEEPSEEK_API_KEY is not set"):
        make_model("deepseek:deepseek-chat")


def test_unknown_option_is_rejected():
    with pytest.raises(TypeError, match="temprature"):
        make_model("ollama:m", temprature=0.1)


def test_provider_prefixes_known_to_prices_match_presets():
    assert set(PRESETS) <= PROVIDER_PREFIXES


def test_make_model_wraps_and_works_end_to_end(tmp_path):
    with LLMServer([ServerReply("ok", prompt_tokens=100, completion_tokens=10)]) as srv:
        budget = Budget(max_usd=1e-6)
        prices = PriceTable({"test-model": Price(input=10.0, output=10.0)})
        model = make_model("test-model", base_url=srv.url, cache=tmp_path / "c.sqlite",
                           budget=budget, prices=prices, concurrency=2, max_retries=0)
        assert isinstance(model, MeteredModel) and isinstance(model.inner, CachedModel)
        assert isinstance(model.inner.inner, LimitedModel)
        assert model.name == "compat:test-model"
        msgs = [Message(role="user", content="hi")]
        r = asyncio.run(model.chat(msgs))
        assert r.cost_usd == pytest.approx(110 * 10.0 / 1e6, rel=1e-12)
        # Budget now spent ($1.1e-3 > $1e-6): even a would-be cache hit is refused.
        with pytest.raises(BudgetExceeded):
            asyncio.run(model.chat(msgs))
        assert len(srv.chat_requests) == 1


def test_price_lookup_snapshots_prefixes_and_case():
    t = shipped_prices()
    assert t.lookup("gpt-4o") == t.lookup("openai:gpt-4o-2024-08-06") == t.lookup("openrouter:openai/GPT-4o")
    assert t.lookup("gpt-4o-mini") != t.lookup("gpt-4o")
    assert t.lookup("claude-3-7-sonnet-20250219") == t.lookup("claude-3-7-sonnet")
    assert t.lookup("claude-sonnet-4-5-20250929") == t.lookup("claude-sonnet-4-5")
    assert t.lookup("gemini-2.5-pro-preview-06-05") == t.lookup("gemini-2.5-pro")
    assert t.lookup("o3-pro") is None  # not an alias of o3: a different (pricier) model
    assert t.lookup("ollama:qwen2:7b") is None
    assert normalise_model_id("qwen2:7b") == "qwen2:7b"
    for name in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "o3", "o4-mini", "o3-mini", "deepseek-chat",
                 "deepseek-reasoner", "claude-3-7-sonnet", "claude-sonnet-4", "gemini-2.5-pro"):
        assert t.lookup(name) is not None, name


def test_cost_formula_uses_cached_rate():
    p = Price(input=3.0, output=15.0, cached_input=0.3)
    u = Usage(prompt_tokens=2_000_000, completion_tokens=100_000, cached_tokens=1_000_000)
    # 1M uncached * $3 + 1M cached * $0.3 + 0.1M out * $15 = 3 + 0.3 + 1.5
    assert p.cost(u) == pytest.approx(4.8, rel=1e-12)
    assert Price(input=1.0, output=1.0).cost(Usage(prompt_tokens=10, cached_tokens=10)) == pytest.approx(1e-5)


def test_cache_writes_have_their_own_rate_and_anthropics_is_a_quarter_above_input(tmp_path):
    p = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    u = Usage(prompt_tokens=3_000_000, cached_tokens=1_000_000, cache_write_tokens=1_000_000)
    # 1M plain * $3 + 1M read * $0.3 + 1M written * $3.75
    assert p.cost(u) == pytest.approx(7.05, rel=1e-12)
    # written tokens are never counted twice: at most what the cache did not serve
    over = Usage(prompt_tokens=10, cached_tokens=8, cache_write_tokens=5)
    assert p.cost(over) == pytest.approx((8 * 0.3 + 2 * 3.75) / 1e6, rel=1e-12)
    shipped = load_prices(use_env=False)
    for name in ("claude-sonnet-4", "claude-opus-4-1", "claude-3-5-haiku"):
        price = shipped.lookup(name)
        assert price.cache_write == pytest.approx(1.25 * price.input, rel=1e-12), name
    assert shipped.lookup("gpt-4o").cache_write is None  # OpenAI does not charge for writes
    f = tmp_path / "p.yaml"
    f.write_text("models:\n  m: {input: 1, output: 2, cached_input: 0.1, cache_write: 1.25}\n")
    assert load_prices(f, use_env=False).lookup("m").cache_write == 1.25


def test_user_price_file_overrides_and_env(tmp_path, monkeypatch):
    f = tmp_path / "p.yaml"
    f.write_text("models:\n  gpt-4o: {input: 1, output: 2}\n  my-model: {input: 0.5, output: 0.5}\n")
    t = load_prices(f, use_env=False)
    assert t.lookup("gpt-4o") == Price(input=1.0, output=2.0)
    assert t.lookup("my-model").input == 0.5 and t.lookup("o3") is not None  # rest kept
    monkeypatch.setenv("PDESHARP_PRICES", str(f))
    assert load_prices().lookup("my-model") is not None


@pytest.mark.parametrize("text,match", [
    ("- a\n", "'models:' section"),
    ("models:\n  m: {input: 1}\n", "needs 'input' and 'output'"),
    ("models:\n  m: {input: one, output: 2}\n", "must be numbers"),
    ("models:\n  m: {input: 1, output: 2, cache: 1}\n", "unknown fields"),
    ("models:\n  m: {input: -1, output: 2}\n", ">= 0"),
    ("models: [\n", "not valid YAML"),
])
def test_bad_price_files(tmp_path, text, match):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(PriceError, match=match):
        load_prices(f, use_env=False)
    with pytest.raises(PriceError, match="cannot read"):
        load_prices(tmp_path / "absent.yaml", use_env=False)


def test_params_default_is_used_when_none(tmp_path):
    with LLMServer(["x"]) as srv:
        model = make_model("ollama:m", base_url=srv.url)
        asyncio.run(model.chat([Message(role="user", content="hi")], None))
        body = srv.chat_requests[0].body
        assert body["temperature"] == ChatParams().temperature
        assert body["max_tokens"] == ChatParams().max_tokens
