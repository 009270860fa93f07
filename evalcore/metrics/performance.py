"""Per-question operational metrics: latency, failures, tokens and cost.

Why per question: the store keeps one value per (question, method), so p50/p95, rates and
totals are aggregates over these values (evalcore.analysis) and can be cut by category like any
other metric. Percentiles are never averaged: they are computed from the per-question values.

Cost: a cost the target reports (token_usage.cost_usd) is used as is; otherwise
tokens x the price table (USD per million tokens, input and output). The table is
configurable with options["prices"] = {model: {"input": x, "output": y}}; a model is found by
exact name, else by the longest table key its name starts with ("claude-3-5-sonnet-20241022"
uses "claude-3-5-sonnet"). The RAG model's name comes from token_usage.model or
options["rag_model"]. The defaults are list prices at the time of writing: check them.
"""

from __future__ import annotations

from typing import Any

from evalcore.judges import pricing
from evalcore.metrics.base import Item, MetricOption, MetricSpec, Score, ScoringContext, per_item
from evalcore.schemas import EvalQuestion, EvalResponse



def price_for(model: str | None, prices: dict[str, dict[str, float]] | None = None) -> dict[str, float] | None:
    """The price entry for a model: the shared table (evalcore.judges.pricing, incl. EVALCORE_PRICES)
    plus options["prices"]."""
    return pricing.price_for(model, pricing.load_prices(prices))


def token_cost(model: str | None, input_tokens: int, output_tokens: int,
               prices: dict[str, dict[str, float]] | None = None) -> float | None:
    return pricing.token_cost(model, input_tokens, output_tokens, pricing.load_prices(prices))


def _latency(q: EvalQuestion, r: EvalResponse) -> Score:
    if r.latency_ms is None:
        return Score.nan("no latency recorded")
    details: dict[str, Any] = {"timings": dict(r.timings)} if r.timings else {}
    if r.error:
        details["target_error"] = r.error_kind
    return Score(float(r.latency_ms), details=details)


def _is_error(q: EvalQuestion, r: EvalResponse) -> Score:
    return Score(float(r.error is not None), details={"error_kind": r.error_kind} if r.error else {})


def _is_timeout(q: EvalQuestion, r: EvalResponse) -> Score:
    return Score(float(r.error_kind == "timeout"))


def _is_empty(q: EvalQuestion, r: EvalResponse) -> Score:
    empty = r.error_kind == "empty" or (r.error is None and not r.answer.strip())
    return Score(float(empty))


def _tokens(q: EvalQuestion, r: EvalResponse) -> Score:
    if r.token_usage is None:
        return Score.nan("no token usage reported")
    u = r.token_usage
    return Score(float(u.total_tokens), details={"input_tokens": u.input_tokens, "output_tokens": u.output_tokens})


def _cost(q: EvalQuestion, r: EvalResponse, opts: dict[str, Any]) -> Score:
    u = r.token_usage
    if u is None:
        return Score.nan("no token usage reported")
    if u.cost_usd is not None:
        return Score(float(u.cost_usd), details={"source": "reported"})
    model = u.model or opts.get("rag_model")
    if not model:
        return Score.nan("no model name for pricing (token_usage.model or options rag_model)")
    cost = token_cost(model, u.input_tokens, u.output_tokens, opts.get("prices"))
    if cost is None:
        return Score.nan(f"no price for model {model!r} (add it to options prices)")
    return Score(cost, details={"source": "price_table", "model": model})


def _with_options(fn):
    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        return [fn(q, r, ctx.options) for q, r in items]
    return batch


# cost_usd's settings; `prices` also prices the judge calls of `score --dry-run` (scoring/estimate.py)
COST_OPTIONS = (
    MetricOption("prices", dict[str, dict[str, float]], None,
                 "model prices per million tokens for cost_usd (default: evalcore.judges.pricing's table)"),
    MetricOption("rag_model", str, None, "the answering model, when responses do not name it (for cost_usd)"),
)

SPECS = [
    MetricSpec("latency_ms", "performance", per_item(_latency), higher_is_better=False,
               description="End-to-end latency of the answer, milliseconds.", scale="open"),
    MetricSpec("is_error", "performance", per_item(_is_error), binary=True, higher_is_better=False,
               description="1 if the target failed for this question (any error kind, timeouts included)."),
    MetricSpec("is_timeout", "performance", per_item(_is_timeout), binary=True, higher_is_better=False,
               description="1 if the target timed out."),
    MetricSpec("is_empty", "performance", per_item(_is_empty), binary=True, higher_is_better=False,
               description="1 if the answer is empty (without another error) or flagged empty."),
    MetricSpec("tokens", "performance", per_item(_tokens), higher_is_better=False,
               description="Input + output tokens the target reported.", scale="open"),
    MetricSpec("cost_usd", "performance", _with_options(_cost), higher_is_better=False,
               description="Reported cost, else tokens x price table (USD).", scale="open", options=COST_OPTIONS),
]
