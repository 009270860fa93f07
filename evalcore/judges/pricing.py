"""Judge cost accounting: tokens x a price table (USD per million tokens).

Prices change and differ per contract, so the table is configurable: pass `prices=` to
make_judge, or point EVALCORE_JUDGE_PRICES at a JSON/YAML file mapping model id ->
{"input": usd_per_mtok, "output": usd_per_mtok}; entries there override the defaults below.
A model missing from the table costs 0 and its calls are marked `price_unknown` in the stored
request metadata, so an unpriced run is visible rather than silently cheap. Local servers
(vLLM, Ollama) are free by this definition; give them a price if you want hardware cost.

The defaults are list prices as published by the providers when this table was written;
check them against your invoice before quoting a cost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-sonnet-5-5": {"input": 2.0, "output": 10.0},
    "claude-sonnet-5": {"input": 2.0, "output": 10.0},
    "claude-opus-5": {"input": 5.0, "output": 25.0},
    "claude-sonnet-4-6": {"input": 3.0, "output": 15.0},
    "claude-sonnet-4-5-20250929": {"input": 3.0, "output": 15.0},
    "claude-sonnet-4-5": {"input": 3.0, "output": 15.0},
    "claude-haiku-4-5-20251001": {"input": 1.0, "output": 5.0},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0},
    "claude-opus-4-5-20251101": {"input": 5.0, "output": 25.0},
    "claude-opus-4-5": {"input": 5.0, "output": 25.0},
    "gpt-4o": {"input": 2.5, "output": 10.0},
    "gpt-4o-mini": {"input": 0.15, "output": 0.6},
    "gpt-4.1": {"input": 2.0, "output": 8.0},
    "gpt-4.1-mini": {"input": 0.4, "output": 1.6},
}


def load_prices(extra: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, float]]:
    table = {k: dict(v) for k, v in DEFAULT_PRICES.items()}
    path = os.environ.get("EVALCORE_JUDGE_PRICES")
    if path:
        text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
        table.update({str(k): {"input": float(v["input"]), "output": float(v["output"])} for k, v in data.items()})
    if extra:
        table.update({k: {"input": float(v["input"]), "output": float(v["output"])} for k, v in extra.items()})
    return table


def cost_usd(prices: dict[str, dict[str, float]], model: str, input_tokens: int,
             output_tokens: int) -> tuple[float, bool]:
    """(cost, price_known)."""
    p = prices.get(model)
    if p is None:
        return 0.0, False
    return (input_tokens * p["input"] + output_tokens * p["output"]) / 1_000_000, True
