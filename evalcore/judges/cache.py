"""Content-addressed judge cache in the run store (`<store>/_shared/judge_cache/`).

Key = SHA-256 of the canonical JSON of the full request (provider, model, base URL, and every
parameter sent: system text, messages, max_tokens, temperature). Same request -> same key ->
the stored reply, so re-scoring a run with the same judge makes no calls at all, and any
change in prompt version, model or data misses the cache as it should.

Entries are one JSON file each, written atomically (temp file + rename; on an s3:// store one
PUT) and never modified (an entry that is no regular file, a FIFO say, or larger than 64 MB is
never opened or read whole: a miss, replaced by the next reply; evalcore/common/regular_files.py):
two processes racing on one key write identical content. The judge client puts a reply only
after it parsed and passed its task's check, and re-checks an entry before using it (older
versions cached unchecked replies); errors and bad replies are asked again next time. Nothing
secret is in a request, so nothing secret is cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable

from evalcore.common.regular_files import METADATA_MAX_BYTES, read_regular, write_new


def request_key(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeCache:
    def __init__(self, directory: Path | Any | None, confine: Callable[[Any], Any] | None = None):
        # a folder, or the store's shared folder on object storage (an S3Path, whose PUT is
        # atomic by itself)
        self.dir = Path(directory) if isinstance(directory, (str, os.PathLike)) else directory
        # the store's proof that a path lies inside it, not reached through a link
        # (RunStore.confine): checked before every entry is written
        self._confine = confine or (lambda path: path)

    def _path(self, key: str) -> Any:
        if self.dir is None:
            raise ValueError("cache disabled")
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.dir is None:
            return None
        path = self._path(key)
        try:  # a FIFO or device in an entry's place is never opened: a miss (put replaces it)
            raw = read_regular(path, METADATA_MAX_BYTES) if isinstance(path, Path) \
                else path.read_versioned(METADATA_MAX_BYTES)[0]  # object storage: a bounded GET
            return json.loads(raw.decode("utf-8"))
        except (OSError, ValueError):
            return None

    def contains(self, key: str) -> bool:
        return self.dir is not None and self._path(key).is_file()

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if self.dir is None:
            return
        path = self._confine(self._path(key))
        if not isinstance(path, Path):  # object storage: one PUT is whole or absent
            path.write_text(json.dumps(entry, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self._confine(path)  # mkdir(exist_ok) accepts a link to a folder: checked again
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        write_new(tmp, json.dumps(entry, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        os.replace(tmp, path)
