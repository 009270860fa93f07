"""One price table for every cost evalcore reports: the RAG system's tokens and the judge's.

USD per million tokens, {"input": x, "output": y}. Prices change and differ per contract, so
the table is configurable: a JSON/YAML file named by EVALCORE_PRICES (EVALCORE_JUDGE_PRICES is
read too, for older set-ups) and `extra` entries passed by the caller override the defaults.
A model is found by exact name, else by the longest table key its name starts with
("claude-3-5-sonnet-20241022" uses "claude-3-5-sonnet"); a provider prefix such as
"anthropic:" is ignored. An unknown model has no price (None), never a silent 0.
The defaults are list prices at the time of writing: check them against your invoice.
"""

from __future__ import annotations

import os

import yaml

from evalcore.common import safe_yaml, value_budget
from evalcore.errors import EvalcoreError, InputError
from evalcore.common.text_input import read_document
from evalcore.common.value_budget import SETTINGS_MAX_BYTES, SETTINGS_MAX_NODES

DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-opus-5": {"input": 5.0, "output": 25.0},
    "claude-sonnet-5": {"input": 2.0, "output": 10.0},
    "claude-opus-4-5": {"input": 5.0, "output": 25.0},
    "claude-sonnet-4-6": {"input": 3.0, "output": 15.0},
    "claude-sonnet-4-5": {"input": 3.0, "output": 15.0},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0},
    "claude-sonnet-4": {"input": 3.0, "output": 15.0},
    "claude-opus-4": {"input": 15.0, "output": 75.0},
    "claude-3-7-sonnet": {"input": 3.0, "output": 15.0},
    "claude-3-5-sonnet": {"input": 3.0, "output": 15.0},
    "claude-3-5-haiku": {"input": 0.8, "output": 4.0},
    "claude-3-haiku": {"input": 0.25, "output": 1.25},
    "gpt-4o": {"input": 2.5, "output": 10.0},
    "gpt-4o-mini": {"input": 0.15, "output": 0.6},
    "gpt-4.1": {"input": 2.0, "output": 8.0},
    "gpt-4.1-mini": {"input": 0.4, "output": 1.6},
    "text-embedding-3-small": {"input": 0.02, "output": 0.0},
    "text-embedding-ada-002": {"input": 0.1, "output": 0.0},
    "heuristic": {"input": 0.0, "output": 0.0},
}

_PROVIDERS = {"anthropic", "openai"}


def _entries(data: object, source: str) -> dict[str, dict[str, float]]:
    if not isinstance(data, dict):
        raise EvalcoreError(f"{source}: a price table maps model -> {{input, output}}")
    try:
        return {str(k): {"input": float(v["input"]), "output": float(v["output"])} for k, v in data.items()}
    except (TypeError, KeyError, ValueError) as exc:
        raise EvalcoreError(f"{source}: every model needs numeric 'input' and 'output' prices ({exc})") from exc


def load_prices(extra: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, float]]:
    """Defaults, then the EVALCORE_PRICES / EVALCORE_JUDGE_PRICES file, then `extra`."""
    table = {k: dict(v) for k, v in DEFAULT_PRICES.items()}
    for var in ("EVALCORE_JUDGE_PRICES", "EVALCORE_PRICES"):
        path = os.environ.get(var)
        if path:
            try:
                text = read_document(path, SETTINGS_MAX_BYTES)  # small bounds: a settings file
                data = (value_budget.loads(text, SETTINGS_MAX_NODES, scope="settings file") if path.endswith(".json")
                        else safe_yaml.loads(text, SETTINGS_MAX_NODES, safe_yaml.SETTINGS_HINT))
            except InputError as exc:
                raise EvalcoreError(f"{var}={path}: unreadable price table ({exc.detail})") from exc
            except (ValueError, yaml.YAMLError, RecursionError) as exc:
                raise EvalcoreError(f"{var}={path}: unreadable price table ({exc})") from exc
            table.update(_entries(data, path))
    if extra:
        table.update(_entries(extra, "prices"))
    return table


def price_for(model: str | None, table: dict[str, dict[str, float]] | None = None) -> dict[str, float] | None:
    """The price entry for a model name, or None when the table has none."""
    if not model:
        return None
    table = table if table is not None else DEFAULT_PRICES
    provider, _, rest = model.partition(":")
    name = rest if rest and provider in _PROVIDERS else model
    if name in table:
        return table[name]
    keys = [k for k in table if name.startswith(k)]
    return table[max(keys, key=len)] if keys else None


def token_cost(model: str | None, input_tokens: int, output_tokens: int,
               table: dict[str, dict[str, float]] | None = None) -> float | None:
    """USD for the tokens, or None when the model has no price."""
    entry = price_for(model, table)
    if entry is None:
        return None
    return (input_tokens * entry.get("input", 0.0) + output_tokens * entry.get("output", 0.0)) / 1e6
