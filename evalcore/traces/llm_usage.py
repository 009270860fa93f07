"""A trace's tokens and cost: the LLM spans' counts, each call counted once, within bounds.

Two instrumentors often record the same model call: a framework's LLM span (LangChain,
LlamaIndex...) wraps the SDK instrumentor's LLM span (OpenAI, Anthropic...), and both carry
`llm.token_count.*` and `llm.cost.total`. Summing every LLM span doubled such a trace's tokens
and cost. The rule, per count (prompt tokens, completion tokens, cost): an LLM span's value is
summed only when no LLM span below it reports that count. The innermost span is the call
itself; an outer one reports it again, or the total of the calls below it. An outer span's
count is still used when nothing below reports that count (a framework span that prices the
call its SDK span only counted).

Every value and every sum is bounded as the answer contract bounds it
(evalcore/schemas/bounds.py): a count past the bound, or counts summing past it (two costs of
1e308 summed to inf, which the store kept as "unknown"), is refused naming the span and the
attribute, instead of crashing the write or going unseen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evalcore.errors import InputError
from evalcore.schemas.bounds import MAX_COST_USD, MAX_TOKENS, short_number
from evalcore.traces.spans import Span
from evalcore.traces.trace_tree import TraceTree

PROMPT = "llm.token_count.prompt"
COMPLETION = "llm.token_count.completion"
COST = "llm.cost.total"
# count attribute -> (a whole number?, its bound, the answer field it sums into)
COUNTS = {PROMPT: (True, MAX_TOKENS, "input_tokens"), COMPLETION: (True, MAX_TOKENS, "output_tokens"),
          COST: (False, MAX_COST_USD, "cost_usd")}


def span_number(span: Span, name: str, file: str, limit: float, integer: bool = False,
                signed: bool = False) -> float | int | None:
    """The attribute `name` as a finite number within `limit` (in magnitude when `signed`, else
    non-negative), None when absent; InputError naming the span and attribute otherwise. An
    integer of any size is compared as an integer: it never goes through float (400 digits
    overflow it)."""
    value = span.attributes.get(name)
    if value is None:
        return None
    kind = "a finite number" if signed else "a non-negative number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and not math.isfinite(value)) or (value < 0 and not signed):
        raise InputError(file, f"expected {kind}, got {_short(value)}", record=span.place, field=name)
    if abs(value) > limit:
        raise InputError(file, f"{short_number(value)} is past the bound of {short_number(limit)} "
                         "(docs/data-formats.md, 'Bounds')", record=span.place, field=name)
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise InputError(file, f"expected a whole number, got {value!r}", record=span.place, field=name)
        return int(value)
    return float(value)


def _short(value: Any) -> str:
    text = short_number(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass
class Usage:
    """What the LLM spans of one trace add up to; `nested` counts the LLM spans whose counts
    were left out because an LLM span below them reports the same count."""

    fields: dict[str, Any] | None
    nested: int = 0


def trace_usage(tree: TraceTree, file: str) -> Usage:
    """Tokens, cost and model of one trace, each call counted once (the module's rule)."""
    llms = [s for s in tree.spans if s.kind == "LLM"]
    if not llms:
        return Usage(None)
    values = {id(s): {name: span_number(s, name, file, limit, integer)
                      for name, (integer, limit, _) in COUNTS.items()} for s in llms}
    totals: dict[str, int | float | None] = {name: None for name in COUNTS}
    reported_below: dict[str, set[str]] = {}  # span id -> the counts some LLM span below it reports
    nested = 0
    for span in tree.children_first():
        below = reported_below.get(span.span_id, set())
        reported = set(below)
        if span.kind == "LLM":
            mine = {name for name, value in values[id(span)].items() if value is not None}
            nested += bool(mine & below)
            for name in sorted(mine - below):
                totals[name] = _add(totals[name], values[id(span)][name], span, name, file)
            reported |= mine
        if reported and span.parent_id is not None:
            reported_below.setdefault(span.parent_id, set()).update(reported)
    models: list[str] = []
    for span in llms:
        model = span.attributes.get("llm.model_name")
        if isinstance(model, str) and model and model not in models:
            models.append(model)
    return Usage({"input_tokens": totals[PROMPT] or 0, "output_tokens": totals[COMPLETION] or 0,
                  "cost_usd": totals[COST], "model": ",".join(models) or None}, nested)


def _add(total: int | float | None, value: int | float | None, span: Span, name: str, file: str) -> int | float:
    """`total` + `value`, refused naming `span` when the sum passes the count's bound."""
    total = value if total is None else total + value
    limit = COUNTS[name][1]
    if total > limit:
        raise InputError(file, f"the trace's LLM spans sum past the bound of {short_number(limit)} with this "
                         f"span's {short_number(value)} (docs/data-formats.md, 'Bounds')", record=span.place,
                         field=name)
    return total
