"""Bounds on an answer's numbers, on the nesting of its free-form JSON and on the length of a
question's labels, checked by the contracts (names: evalcore/schemas/ids.py).

Why here, at the schema edge: an answer reaches the store three ways (`evalcore import` of a
recorded-answers file, a live `evalcore run`, OpenInference traces), and each validates it
through EvalResponse / EvalQuestion. Checking anywhere else left a way round, and these values
crashed the write instead of being refused:

- a token count of 10**19 validated as a Python int and failed writing Parquet's int64 column
  ("OverflowError: Python int too large to convert to C long");
- a number of 400 digits overflowed `float()`; two finite costs of 1e308 summed to inf;
- `metadata` nested 260 levels deep validated as `dict[str, Any]` and then failed pydantic's
  serializer (it stops near 250 levels) as the record was written.

So every number gets an upper bound far above anything real and far below what its column,
a float or a sum over a run can hold, and free-form JSON (`metadata`, `raw`, `details`) gets one
nesting bound. A value past a bound is a validation error naming the field, which every way in
already turns into one line (`error: FILE, record N, field 'token_usage.input_tokens': ...`).

Records read back from the store (validation context STORED, evalcore.schemas.ids) are not
checked again: they were written, so they serialize, and an older evalcore may have stored a
number above a bound chosen later; refusing to read them would lose a run.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ValidationInfo

MAX_TOKENS = 10**12  # one answer's input or output tokens; int64 holds 9.2e18, a million answers' sum too
MAX_COST_USD = 1e6  # one answer's cost in US dollars
MAX_DURATION_MS = 1e10  # a latency or a timing, in milliseconds (about 116 days)
MAX_SCORE = 1e15  # the magnitude of a retrieval score (a similarity, a distance, BM25...)
MAX_RANK = 10**9  # a retrieved context's rank
MAX_JSON_DEPTH = 64  # levels of nesting in a free-form JSON field, the field's own object being level 1
# A label a run is grouped and filtered by (category, question type, difficulty, a tag): each is
# kept with statistics and a dictionary in the store, where a label of megabytes cost thirteen
# times its size to import (an answer of that size: seven).
MAX_LABEL_CHARS = 4096


def _stored(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("stored_ids"))


def _bounded(base: type, limit: float, what: str, signed: bool = False) -> Any:
    """`base` (int or float) with validators refusing a number whose value (or magnitude, when `signed`) passes `limit`, and
    any float that is not finite. The check also runs before pydantic's own, so that an integer
    too large for a float (400 digits, say) is refused with the bound, not "not a valid number"."""
    shown = f"{limit:,.0f}" if limit < 1e7 else f"{limit:.0e}".replace("e+", "e")

    def check(value: Any, info: ValidationInfo) -> Any:
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or _stored(info):
            return value  # not a number: pydantic's own check names the type
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{what} must be a finite number")
        if (abs(value) if signed else value) > limit:
            raise ValueError(f"{what} of {short_number(value)} is past the bound of {shown}"
                             f"{' in magnitude' if signed else ''} (docs/data-formats.md, 'Bounds')")
        return value

    return Annotated[base, BeforeValidator(check), AfterValidator(check)]


def short_number(value: float) -> str:
    """A number for a message: an int of any size never goes through float (it may not fit)."""
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"about 10^{int(abs(value).bit_length() * math.log10(2))}"
    return f"{value:.6g}"


def json_depth_over(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when lists and objects in `value` nest more than `limit` levels (`value` itself,
    when a list or object, is level 1). Walked with a stack: any depth is safe to ask about.
    A list or object reached again (Python can share one among many places: `x = [x, x]` n times
    makes 2**n routes) is walked again only when reached deeper than before, so each is walked
    at most `limit` times, however many routes lead to it; one that holds itself is over."""
    stack = [(value, 1)]
    deepest: dict[int, int] = {}  # id of a list or object walked -> the deepest level it was walked at
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            items = node.values()
        elif isinstance(node, (list, tuple)):
            items = node
        else:
            continue
        if depth > limit:
            return True
        if deepest.get(id(node), 0) >= depth:  # (alive throughout: `value` holds it, so its id is its own)
            continue
        deepest[id(node)] = depth
        stack.extend((item, depth + 1) for item in items if isinstance(item, (dict, list, tuple)))
    return False


def _shallow(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    if _stored(info):
        return value
    for key, item in value.items():  # the entry named, so a user finds it in a large object
        if json_depth_over(item, MAX_JSON_DEPTH - 1):
            raise ValueError(f"the entry {str(key)[:80]!r} is nested more than {MAX_JSON_DEPTH} levels deep (the "
                             "bound for free-form JSON: metadata, raw, details; docs/data-formats.md, 'Bounds')")
    return value


def _short(value: str, info: ValidationInfo) -> str:
    if len(value) > MAX_LABEL_CHARS and not _stored(info):
        raise ValueError(f"a label of {len(value):,} characters; a category, question type, difficulty or tag may "
                         f"be at most {MAX_LABEL_CHARS:,} (docs/data-formats.md, 'Bounds')")
    return value


TokenCount = _bounded(int, MAX_TOKENS, "a token count")
CostUsd = _bounded(float, MAX_COST_USD, "a cost")
DurationMs = _bounded(float, MAX_DURATION_MS, "a duration")
SignedDurationMs = _bounded(float, MAX_DURATION_MS, "a duration", signed=True)
Score = _bounded(float, MAX_SCORE, "a score", signed=True)
Rank = _bounded(int, MAX_RANK, "a rank")
# A free-form JSON object (metadata, raw, details): anything JSON, at most MAX_JSON_DEPTH levels.
JsonObject = Annotated[dict[str, Any], AfterValidator(_shallow)]
Label = Annotated[str, AfterValidator(_short)]
