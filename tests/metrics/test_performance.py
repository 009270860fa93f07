"""Latency, failure indicators, tokens and priced cost."""

import pytest

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.performance import SPECS, price_for, token_cost
from evalcore.schemas import EvalQuestion, EvalResponse

BY_NAME = {s.name: s for s in SPECS}
Q = EvalQuestion(id="q", question="?")


def run(name, options=None, **resp):
    r = EvalResponse(question_id="q", method="m", **resp)
    return BY_NAME[name].compute([(Q, r)], ScoringContext(run_id="t", options=options or {}))[0]


def test_failure_indicators():
    assert run("is_error", answer="", error="boom").value == 1.0
    assert run("is_timeout", answer="", error="slow", error_kind="timeout").value == 1.0
    assert run("is_error", answer="", error="slow", error_kind="timeout").value == 1.0
    assert run("is_empty", answer="   ").value == 1.0
    assert run("is_empty", answer="", error="boom").value == 0.0  # an error, not an empty answer
    assert run("is_error", answer="ok").value == 0.0


def test_latency_and_tokens():
    assert run("latency_ms", answer="a", latency_ms=812.5).value == 812.5
    assert run("latency_ms", answer="a").reason == "no latency recorded"
    assert run("tokens", answer="a", token_usage={"input_tokens": 400, "output_tokens": 20}).value == 420


def test_cost_from_price_table_and_reported():
    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000, "model": "gpt-4o-mini"}
    assert run("cost_usd", answer="a", token_usage=usage).value == pytest.approx(0.15 + 0.06)
    opts = {"prices": {"my-llm": {"input": 1.0, "output": 2.0}}, "rag_model": "my-llm"}
    assert run("cost_usd", opts, answer="a", token_usage={"input_tokens": 500_000, "output_tokens": 0}).value \
        == pytest.approx(0.5)
    assert run("cost_usd", answer="a", token_usage={"input_tokens": 5, "cost_usd": 0.25}).value == 0.25
    assert "no model name" in run("cost_usd", answer="a", token_usage={"input_tokens": 5}).reason
    assert "no price for model" in run("cost_usd", answer="a",
                                       token_usage={"input_tokens": 5, "model": "mystery"}).reason


def test_price_lookup_prefix_and_provider():
    assert price_for("claude-3-5-sonnet-20241022") == {"input": 3.0, "output": 15.0}
    assert price_for("anthropic:claude-3-5-haiku-latest")["input"] == 0.8
    assert token_cost("unknown-model", 1, 1) is None
