"""Content-addressed judge cache in the run store (`<store>/_shared/judge_cache/`).

Key = SHA-256 of the canonical JSON of the full request (provider, model, base URL, and every
parameter sent: system text, messages, max_tokens, temperature). Same request -> same key ->
the stored reply, so re-scoring a run with the same judge makes no calls at all, and any
change in prompt version, model or data misses the cache as it should.

Entries are one JSON file each, `<2 hex>/<key>.json` in the folder the store hands the cache
(`RunStore.shared_cache("judge_cache")`, store/shared_cache.py), which writes each whole and
never through a link (temporary file + rename; on an s3:// store one PUT) and reads only a
regular file of at most 64 MB (anything else is a miss, replaced by the next reply): the cache
says what an entry holds, the store where it lies and how it is written. Entries are never
modified: two processes racing on one key write identical content. The judge client puts a
reply only after it parsed and passed its task's check, and re-checks an entry before using it
(older versions cached unchecked replies); errors and bad replies are asked again next time.
Nothing secret is in a request, so nothing secret is cached.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol


def request_key(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class EntryArea(Protocol):
    """What the cache needs of the store's area (store/shared_cache.SharedCache)."""

    def read(self, rel: str) -> bytes | None: ...

    def write(self, rel: str, data: bytes) -> Any: ...


class JudgeCache:
    """Replies by request key, in the store's area for them (None: no cache)."""

    def __init__(self, area: EntryArea | None):
        self.area = area

    @staticmethod
    def _entry(key: str) -> str:
        return f"{key[:2]}/{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.area is None:
            return None
        raw = self.area.read(self._entry(key))
        if raw is None:
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError:  # a damaged entry is a miss too (a UnicodeDecodeError is a ValueError)
            return None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if self.area is None:
            return
        self.area.write(self._entry(key), json.dumps(entry, ensure_ascii=False, sort_keys=True).encode("utf-8"))
