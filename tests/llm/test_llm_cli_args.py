"""Model-layer command-line flags."""

from __future__ import annotations

import argparse

import pytest

from pdesharp.llm import default_prices, make_model, set_default_prices
from pdesharp.llm.cli_args import add_llm_arguments, llm_options


@pytest.fixture(autouse=True)
def restore_default_prices():
    yield
    set_default_prices(None)


def parser(**kw):
    p = argparse.ArgumentParser()
    add_llm_arguments(p, **kw)
    return p


def test_defaults_map_to_make_model_options():
    opts = llm_options(parser().parse_args([]))
    assert opts == {"timeout": 600.0, "max_retries": 2}
    m = make_model("ollama:m", **opts)
    assert m.inner.timeout == 600.0 and m.inner.max_retries == 2


def test_flags(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("models:\n  my-model: {input: 1, output: 3}\n")
    args = parser().parse_args(["--api-key-env", "MY_KEY", "--prices", str(f), "--concurrency", "3",
                                "--llm-timeout", "30", "--llm-retries", "0"])
    opts = llm_options(args)
    assert opts == {"api_key_env": "MY_KEY", "concurrency": 3, "timeout": 30.0, "max_retries": 0}
    assert default_prices().lookup("my-model").output == 3.0
    assert default_prices().lookup("gpt-4o") is not None  # shipped table still underneath


@pytest.mark.parametrize("argv", [["--concurrency", "0"], ["--llm-timeout", "0"], ["--llm-retries", "-1"]])
def test_bad_values_are_rejected(argv):
    with pytest.raises(SystemExit):
        parser().parse_args(argv)


def test_skip_avoids_clashes_with_a_commands_own_flags():
    p = argparse.ArgumentParser()
    p.add_argument("--prices")
    add_llm_arguments(p, skip={"--prices"})
    assert p.parse_args(["--prices", "x"]).prices == "x"
    with pytest.raises(ValueError, match="--no-such"):
        add_llm_arguments(argparse.ArgumentParser(), skip={"--no-such"})
