"""What a judge reply's token usage may say, and what is recorded when it says nothing.

Why a module of its own: cost figures are sums over thousands of calls, so one reply whose
`usage` block is missing, negative or impossible must not become a silent $0, a negative cost
or a billion-token bill. The rules (docs/judges.md, "Costs"):
- usage missing (a proxy or local server that does not send it): the tokens are *estimated*
  from characters (the dry run's 3.5 characters per token; the reply's estimate is capped at
  the request's token limit, which the provider enforces) and marked estimated;
- a count that is not a whole number >= 0, more output tokens than the request allowed (plus a
  small margin), or more input tokens than the request has bytes (plus room for the provider's
  own framing; no tokenizer makes more than one token of a byte, and a request larger than
  the model's context would have been refused) makes the reply *malformed*: the call fails with
  the count named, and nothing about it is priced or cached.
The same check runs on a cached entry before it is reused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 3.5  # the dry run's estimate (TaskDef.estimate_input)
FRAMING_TOKENS = 4096  # what a provider may add to the bytes sent: role markers, a schema's own prompt
OUTPUT_MARGIN = 16  # tokens over max_tokens tolerated (stop sequences, counting differences)


class UsageError(ValueError):
    """A reply's usage cannot be true; the message names the count."""


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    estimated: bool = False


def token_limit(params: dict[str, Any]) -> int | None:
    """The reply limit the request set: max_completion_tokens (reasoning models) or max_tokens."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _strings(value: Any) -> int:
    """Characters of every string inside value (the text a request carries)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_strings(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_strings(v) for v in value)
    return 0


def estimate(params: dict[str, Any], text: str) -> Usage:
    """Tokens from characters: the system text and messages sent, and the reply."""
    n_in = math.ceil(_strings([params.get("system"), params.get("messages")]) / CHARS_PER_TOKEN)
    n_out = math.ceil(len(text) / CHARS_PER_TOKEN)
    limit = token_limit(params)
    return Usage(n_in, min(n_out, limit) if limit is not None else n_out, estimated=True)


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and value >= 0:
            return int(value)
        raise UsageError(f"{name} {value!r} is not a whole number")
    if value < 0:
        raise UsageError(f"{name} {value} is negative")
    return value


def checked(params: dict[str, Any], text: str, input_tokens: Any, output_tokens: Any) -> Usage:
    """The usage to record for a reply to `params`: the reported counts when they can be
    true, an estimate when none were reported; raises UsageError when they cannot be true."""
    if input_tokens is None and output_tokens is None:
        return estimate(params, text)
    guess = estimate(params, text)
    n_in = guess.input_tokens if input_tokens is None else _count("input_tokens", input_tokens)
    n_out = guess.output_tokens if output_tokens is None else _count("output_tokens", output_tokens)
    sent = len(json.dumps(params, ensure_ascii=False).encode("utf-8"))
    if n_in > sent + FRAMING_TOKENS:
        raise UsageError(f"input_tokens {n_in} exceed what the request could hold ({sent} bytes sent)")
    limit = token_limit(params)
    if limit is not None and n_out > limit + max(OUTPUT_MARGIN, limit // 20):
        raise UsageError(f"output_tokens {n_out} exceed the request's limit of {limit}")
    return Usage(n_in, n_out, estimated=input_tokens is None or output_tokens is None)
