"""What a target says about itself (/health, /models/info, /index/stats), capped for run.json.

Why: the snapshot is stored in the run's manifest, and every `runs`, `show` and dashboard
page reads manifests. A server whose /models/info returned 40 MB made run.json 84 MB and
every listing of every run slow and large. A snapshot is kept whole up to SNAPSHOT_LIMIT
bytes of JSON; past that, an object keeps its leading fields that fit (so the small ones
people read, like the model names, usually survive), each field that does not fit is
replaced by a short note of its size, and `_truncated` says what happened. Anything else
(a huge list or string) is kept as the start of its JSON text.
"""

from __future__ import annotations

import json
from typing import Any

SNAPSHOT_LIMIT = 64 * 1024
TRUNCATED_KEY = "_truncated"
_KEY_LIMIT = 200  # characters of a field name kept in a truncated snapshot


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def cap_snapshot(value: Any, what: str, limit: int = SNAPSHOT_LIMIT) -> Any:
    """`value` if its JSON fits in `limit` characters, else a truncated copy that does (with a note)."""
    total = _size(value)
    if total <= limit:
        return value
    note = (f"{what} returned {total:,} characters of JSON, more than the {limit:,} kept in the run's "
            "manifest; the rest was left out")
    budget = limit - _size({TRUNCATED_KEY: note}) - 64
    if not isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False, default=str)
        start = text[: max(budget - _size(""), 0) // 2]  # // 2: escaping may double the length
        return {TRUNCATED_KEY: note, "start": start}
    kept: dict[str, Any] = {}
    used = 2
    left_out = 0
    for key, item in value.items():
        name = str(key)[:_KEY_LIMIT]
        whole = _size({name: item})
        if used + whole <= budget:
            kept[name] = item
            used += whole + 2
            continue
        placeholder = f"<left out: {whole:,} characters>"
        short = _size({name: placeholder})
        if used + short <= budget:
            kept[name] = placeholder
            used += short + 2
        else:
            left_out += 1
    if left_out:
        note += f"; {left_out:,} more field{'s' if left_out != 1 else ''} not listed"
    return {**kept, TRUNCATED_KEY: note}
