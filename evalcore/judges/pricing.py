"""Judge cost accounting: tokens x the shared price table (evalcore.pricing).

A model missing from the table costs 0 here and its calls are marked `price_unknown` in the
stored request metadata, so an unpriced run is visible rather than silently cheap. Local servers
(vLLM, Ollama) are free by this definition; give them a price if you want hardware cost.
"""

from __future__ import annotations

from evalcore.pricing import DEFAULT_PRICES, load_prices, price_for

__all__ = ["DEFAULT_PRICES", "cost_usd", "load_prices"]


def cost_usd(prices: dict[str, dict[str, float]], model: str, input_tokens: int,
             output_tokens: int) -> tuple[float, bool]:
    """(cost, price_known)."""
    p = price_for(model, prices)
    if p is None:
        return 0.0, False
    return (input_tokens * p["input"] + output_tokens * p["output"]) / 1_000_000, True
