"""The shared price table: lookup rules, overrides, and clear errors."""

import json

import pytest

from evalcore.errors import EvalcoreError
from evalcore.judges.pricing import load_prices, price_for, token_cost


def test_prefix_and_provider_lookup():
    assert price_for("claude-haiku-4-5-20251001") == {"input": 1.0, "output": 5.0}
    assert price_for("anthropic:claude-3-5-sonnet-20241022")["output"] == 15.0
    assert price_for("gpt-4o-mini-2024-07-18")["input"] == 0.15  # longest prefix wins over gpt-4o
    assert price_for("my-local-llama") is None and token_cost("my-local-llama", 10, 10) is None
    assert token_cost("gpt-4o", 1_000_000, 1_000_000) == pytest.approx(12.5)


def test_env_file_and_extra_override(tmp_path, monkeypatch):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"my-local-llama": {"input": 0.1, "output": 0.2}}))
    monkeypatch.setenv("EVALCORE_PRICES", str(table))
    prices = load_prices({"gpt-4o": {"input": 1, "output": 1}})
    assert price_for("my-local-llama", prices) == {"input": 0.1, "output": 0.2}
    assert prices["gpt-4o"] == {"input": 1.0, "output": 1.0}


def test_bad_table_is_a_clear_error(tmp_path, monkeypatch):
    table = tmp_path / "prices.yaml"
    table.write_text("gpt-4o: {input: cheap}\n")
    monkeypatch.setenv("EVALCORE_PRICES", str(table))
    with pytest.raises(EvalcoreError, match="prices.yaml"):
        load_prices()
