"""Strict parsing of judge replies into validated task outputs.

Why strict: a lenient parser ("find anything that looks like JSON") is exactly what a hostile
answer exploits, by writing a fake verdict that the judge then quotes. We accept one JSON value
and nothing else: the whole reply, or the whole reply inside one ```json fence (some models add
it despite being told not to). Anything else is a parse error; the client then sends one repair
request, and if that fails too the metric becomes NaN with the error as its reason.

Each task's definition (evalcore.judges.tasks) checks types, ranges and counts (one verdict
per context...) and returns a normalised dict, so metric code never sees a half-formed verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Callable

from evalcore.judges.tasks import TASKS, ParseError, get_task
from evalcore.common.value_budget import TooManyValues
from evalcore.common.value_budget import loads as bounded_loads

__all__ = ["ParseError", "VALIDATORS", "parse_json", "parse_reply"]

_FENCED = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\Z", re.DOTALL)


def parse_json(text: str | None) -> Any:
    if text is None or not text.strip():
        raise ParseError("empty reply")
    body = text.strip()
    m = _FENCED.match(body)
    if m:
        body = m.group(1).strip()
    try:
        return bounded_loads(body, parse_constant=_reject_constant)  # counted before it is built
    except TooManyValues as exc:
        raise ParseError(f"the reply holds {exc}") from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"not a single JSON value ({exc.msg} at char {exc.pos})") from None


def _reject_constant(name: str) -> Any:
    raise ParseError(f"{name} is not allowed in a verdict")


def parse_reply(task: str, text: str | None, inputs: dict, parts: tuple[str, ...] | None = None) -> dict:
    """Parse and validate one reply against its task's definition (a combined task's named
    `parts` only, when given); raises ParseError naming the problem (PartsError when some
    parts of a combined reply are usable)."""
    return get_task(task).parse(parse_json(text), inputs, parts)


class _Validators(Mapping):
    """task -> validator(decoded reply, inputs), read from the task registry (kept for callers
    that want a plain mapping, e.g. tests that check every task has one)."""

    def __getitem__(self, task: str) -> Callable[[Any, dict], dict]:
        return get_task(task).parse

    def __iter__(self) -> Iterator[str]:
        return iter(TASKS)

    def __len__(self) -> int:
        return len(TASKS)


VALIDATORS = _Validators()
