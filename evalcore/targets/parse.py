"""Turn a server's JSON into an EvalResponse through a ResponseMap.

Lenient where servers differ harmlessly (heading paths as lists, ranks missing, citations as
bare ids, numbers as strings) and strict where a metric would be silently wrong: a payload
that is not an object, an answer that is not text, or a ranking that fails EvalResponse's
validation (duplicate chunk ids) is `MalformedResponse`, which the runner classifies and
retries like any other transient server fault. Text that UTF-8 cannot hold (lone
surrogates, which JSON can spell; and NUL) is replaced by U+FFFD and listed in `raw["unencodable_text"]`
(evalcore/schemas/storable.py says why).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from pydantic import ValidationError

from evalcore.schemas import EvalResponse
from evalcore.schemas.storable import MAX_PATHS, make_storable, storable_note
from evalcore.targets.paths import get_path
from evalcore.targets.spec import ResponseMap

RAW_LIMIT = 4000  # characters of unmapped payload kept in EvalResponse.raw for debugging
MAX_RANK = 2 ** 53  # a rank beyond this is not a position (and floats lose whole numbers past it)
REPAIRED_KEY = "unencodable_text"  # EvalResponse.raw entry: fields whose lone surrogates were replaced

log = logging.getLogger(__name__)


class MalformedResponse(ValueError):
    """The server answered 2xx but the body does not fit the contract."""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return " > ".join(str(v).strip() for v in value if str(v).strip())
    return str(value)


def _number(value: Any, field: str) -> float | None:
    """A finite number, or MalformedResponse naming the field (JSON as Python reads it may
    spell Infinity and NaN, which no metric can use)."""
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise MalformedResponse(f"{field} is not a number: {_short_repr(value)}") from exc
    if not math.isfinite(number):
        raise MalformedResponse(f"{field} is not a finite number: {_short_repr(value)}")
    return number


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _chunk(item: Any, position: int, fields: dict[str, str]) -> dict[str, Any]:
    if isinstance(item, str):
        return {"rank": position, "text": item}
    if not isinstance(item, dict):
        raise MalformedResponse(f"retrieved item {position} is a {type(item).__name__}, not an object")
    out: dict[str, Any] = {"rank": position}
    for key, path in fields.items():
        value = get_path(item, path)
        if value is None:
            continue
        if key == "rank":
            rank = _number(value, f"retrieved[{position - 1}].rank")
            if rank is not None and rank > MAX_RANK:
                raise MalformedResponse(f"retrieved[{position - 1}].rank is out of range: {value!r}")
            out["rank"] = int(rank) if rank is not None and rank >= 1 else position
        elif key == "score":
            out["score"] = _number(value, f"retrieved[{position - 1}].score")
        elif key == "text":
            out["text"] = str(value)
        else:
            out[key] = _text(value)
    return out


def _citation(item: Any, fields: dict[str, str]) -> dict[str, Any] | None:
    if isinstance(item, (str, int)) and not isinstance(item, bool):
        return {"chunk_id": str(item)}
    if not isinstance(item, dict):
        return None
    out = {}
    for key, path in fields.items():
        if key in {"chunk_id", "rel_path", "heading_path", "section", "text"}:
            value = get_path(item, path)
            if value is not None:
                out[key] = _text(value)
    return out or None


def _usage(payload: dict[str, Any], rmap: ResponseMap) -> dict[str, Any] | None:
    got = {}
    for key in ("input_tokens", "output_tokens"):
        path = getattr(rmap, key)
        value = get_path(payload, path) if path else None
        if value is not None:
            number = _number(value, key)
            got[key] = max(0, int(number or 0))
    if rmap.model and get_path(payload, rmap.model) is not None:
        got["model"] = str(get_path(payload, rmap.model))
    if rmap.cost_usd and get_path(payload, rmap.cost_usd) is not None:
        got["cost_usd"] = _number(get_path(payload, rmap.cost_usd), "cost_usd")
    return got or None


def _timings(value: Any) -> dict[str, float]:
    if not isinstance(value, dict):
        return {}
    out = {}
    for key, number in value.items():
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            out[str(key)] = _number(number, f"timings.{key}")
    return out


def _raw_extras(payload: dict[str, Any], rmap: ResponseMap) -> dict[str, Any]:
    """Top-level fields the map did not use: kept (bounded) so a user can see what else came back."""
    used = {p.split(".")[0].split("[")[0] for p in (rmap.answer, rmap.retrieved, rmap.citations,
            rmap.abstained, rmap.scope, rmap.input_tokens, rmap.timings) if p}
    extras = {k: v for k, v in payload.items() if k not in used}
    if not extras:
        return {}
    text = json.dumps(extras, ensure_ascii=False, default=str)
    return extras if len(text) <= RAW_LIMIT else {"truncated": text[:RAW_LIMIT]}


def parse_response(payload: Any, rmap: ResponseMap, question_id: str, method: str) -> EvalResponse:
    """Map one JSON payload to an EvalResponse (latency/attempts are filled by the caller)."""
    if not isinstance(payload, dict):
        raise MalformedResponse(f"expected a JSON object, got {type(payload).__name__}")
    # Text that cannot be stored (lone surrogates) is repaired, not refused: refusing would
    # make the same question fail on every --resume. The record says what was changed.
    payload, repaired = make_storable(payload)
    if repaired:
        log.warning("question %s, method %s: %s", question_id, method, storable_note(repaired))
    answer = get_path(payload, rmap.answer)
    if answer is None:
        raise MalformedResponse(f"no answer at field path {rmap.answer!r}")
    if not isinstance(answer, (str, int, float)) or isinstance(answer, bool):
        raise MalformedResponse(f"answer at {rmap.answer!r} is a {type(answer).__name__}, not text")
    retrieved = [_chunk(item, i, rmap.chunk_fields)
                 for i, item in enumerate(_as_list(get_path(payload, rmap.retrieved) if rmap.retrieved else None),
                                          start=1)]
    citations = [c for c in (_citation(item, rmap.citation_fields)
                             for item in _as_list(get_path(payload, rmap.citations) if rmap.citations else None))
                 if c]
    abstained = get_path(payload, rmap.abstained) if rmap.abstained else None
    scope = get_path(payload, rmap.scope) if rmap.scope else None
    data = {
        "question_id": question_id, "method": method, "answer": str(answer),
        "retrieved": retrieved, "citations": citations,
        "abstained": abstained if isinstance(abstained, bool) else None,
        "scope": [str(s) for s in _as_list(scope)] if scope is not None else None,
        "token_usage": _usage(payload, rmap),
        "timings": _timings(get_path(payload, rmap.timings) if rmap.timings else None),
        "raw": _raw_extras(payload, rmap),
    }
    if repaired:
        data["raw"][REPAIRED_KEY] = {"replaced": len(repaired), "fields": repaired[:MAX_PATHS]}
    try:
        return EvalResponse.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise MalformedResponse(f"response does not fit the contract at {loc or 'top level'}: "
                                f"{first.get('msg')}") from exc
