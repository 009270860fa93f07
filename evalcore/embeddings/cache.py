"""An append-only, multi-process-safe cache of fixed-width float32 rows keyed by a text hash.

Used for sentence vectors (width = model dimension) and for BERTScore pair results (width 3).
Layout under one namespace folder (e.g. `<store>/_shared/embeddings/vectors/<model key>/`)::

    meta.json            what the rows are (model id, kind, width), for humans and sanity checks
    part-*.npz           keys (hex sha256, S64) + rows (float32, n x width)

The folder is the store's to hand out (`RunStore.shared_cache("embeddings", local=True)`, a
store/shared_cache.SharedCache): the cache says what a part holds, the store where it lies and
how it is written and removed (never through a link, whole or not at all).

Why part files: two processes scoring at once each write their own uniquely named file
(`SharedCache.append`: temporary name, fsync, atomic rename), so nobody overwrites anybody and a
reader never sees half a file. Duplicated keys across parts are harmless (same input -> same
row). A reader re-scans for new parts only when it misses, so a second process's work is picked up.

Compaction: every scoring pass adds a part, so a long-lived store would end up opening
hundreds of small files on every cold start. Once a folder holds COMPACT_AT parts, the writer
merges them into one (written like any part, then the merged ones are deleted). Only one
process compacts at a time (`SharedCache.exclusive(".compact.lock")`, a non-blocking flock;
without fcntl nobody compacts). A reader that listed a part a compaction then deleted just skips
it: its rows are in the merged part, which the reader loads on its next miss.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import IO, Any, Iterable, Protocol

import numpy as np

COMPACT_AT = 64  # parts in one folder that trigger a merge
PARTS = "part-*.npz"
LOCK = ".compact.lock"


class PartArea(Protocol):
    """What the cache needs of the store's area (store/shared_cache.SharedCache)."""

    location: Any

    def names(self, pattern: str) -> list[str]: ...

    def open(self, rel: str) -> Any: ...

    def exists(self, rel: str) -> bool: ...

    def write(self, rel: str, data: bytes) -> Any: ...

    def append(self, prefix: str, suffix: str, fill: Any) -> str: ...

    def remove(self, rel: str) -> None: ...

    def exclusive(self, rel: str) -> Any: ...

    def sub(self, *names: str) -> "PartArea": ...


def _load_part(area: PartArea, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(keys, rows) of one part file, opened as a regular file only: a FIFO or a device in a
    part's place is refused (an OSError, so the part is skipped like a damaged one) instead of
    blocking the scorer for ever or feeding it without end (evalcore/common/regular_files.py)."""
    with area.open(name) as fh, np.load(fh, allow_pickle=False) as data:
        return data["keys"], np.asarray(data["rows"], dtype=np.float32)


def text_key(*parts: str) -> str:
    """sha256 hex of the parts joined by NUL (exact text: no normalisation, so no false hits)."""
    digest = hashlib.sha256()
    for i, part in enumerate(parts):
        if i:
            digest.update(b"\0")
        digest.update(part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def namespace(area: PartArea | None, kind: str, identity: str) -> PartArea | None:
    """The area of one (kind, identity): the identity (model id + settings) is hashed into the
    folder's name. None without an area (memory only)."""
    if area is None:
        return None
    return area.sub(kind, hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24])


class ArrayCache:
    """Rows by key, in memory, mirrored to part files when the store gave an area for them."""

    def __init__(self, area: PartArea | None, width: int | None = None, meta: dict[str, Any] | None = None):
        self.area = area
        self.width = width
        self.meta = dict(meta or {})
        self._rows: dict[str, np.ndarray] = {}
        self._seen_parts: set[str] = set()
        self.parts_written = 0
        if self.area is not None:
            self.refresh()

    @property
    def directory(self) -> Any:
        """Where the part files lie (None: memory only)."""
        return self.area.location if self.area is not None else None

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: str) -> bool:
        return key in self._rows

    # ---- reading -------------------------------------------------------------------------
    def refresh(self) -> int:
        """Load part files not seen yet; returns how many rows were added."""
        if self.area is None:
            return 0
        added = 0
        for name in self.area.names(PARTS):
            if name in self._seen_parts:
                continue
            try:
                keys, rows = _load_part(self.area, name)
            except FileNotFoundError:  # merged away by a compaction: its rows are in a newer part
                continue
            except Exception as exc:  # a damaged file must not stop scoring: recompute instead
                self._seen_parts.add(name)
                warnings.warn(f"skipping unreadable cache part {self.directory / name}: {exc}", stacklevel=2)
                continue
            self._seen_parts.add(name)
            if not self._fits(keys, rows):
                warnings.warn(f"skipping cache part {self.directory / name} with unexpected shape {rows.shape}",
                              stacklevel=2)
                continue
            self.width = self.width or int(rows.shape[1])
            for key, row in zip(keys, rows):
                k = key.decode("ascii") if isinstance(key, bytes) else str(key)
                if k not in self._rows:
                    self._rows[k] = row
                    added += 1
        return added

    def _fits(self, keys: np.ndarray, rows: np.ndarray) -> bool:
        return rows.ndim == 2 and len(keys) == len(rows) and not (self.width and rows.shape[1] != self.width)

    def get(self, keys: Iterable[str], refresh_on_miss: bool = True) -> dict[str, np.ndarray]:
        """Rows found for `keys` (missing keys are absent from the result)."""
        keys = list(keys)
        if refresh_on_miss and any(k not in self._rows for k in keys):
            self.refresh()
        return {k: self._rows[k] for k in keys if k in self._rows}

    # ---- writing -------------------------------------------------------------------------
    def put(self, keys: list[str], rows: np.ndarray) -> str | None:
        """Remember rows in memory and append them as one new part file; its name."""
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        if len(keys) != len(rows):
            raise ValueError("keys and rows differ in length")
        if not keys:
            return None
        if rows.ndim != 2 or (self.width and rows.shape[1] != self.width):
            raise ValueError(f"rows of shape {rows.shape} do not fit a cache of width {self.width}")
        self.width = self.width or int(rows.shape[1])
        for key, row in zip(keys, rows):
            self._rows[key] = row
        if self.area is None:
            return None
        written = self._write_part(keys, rows)
        if len(self.area.names(PARTS)) >= COMPACT_AT:
            self.compact()
        return written

    def compact(self) -> int:
        """Merge this folder's part files into one; returns how many parts were merged.

        0 when there is nothing to merge, when another process is compacting this folder, or
        without fcntl. Unreadable parts are left where they are (and still skipped by readers).
        The merged part is complete on disk before any old part is deleted, so a crash at any
        point loses nothing: at worst some rows exist twice, which readers tolerate.
        """
        if self.area is None or not self.area.names(PARTS):
            return 0
        with self.area.exclusive(LOCK) as held:
            if not held:
                return 0
            merged, keys, rows = self._readable_parts()
            if len(merged) < 2:
                return 0
            self._write_part([k.decode("ascii") for k in keys], np.concatenate(rows))
            for name in merged:
                self.area.remove(name)
            return len(merged)

    def _readable_parts(self) -> tuple[list[str], list[bytes], list[np.ndarray]]:
        """The parts a compaction merges (readable, of this cache's shape), and their rows with
        each key once."""
        merged: list[str] = []
        keys: list[bytes] = []
        rows: list[np.ndarray] = []
        taken: set[bytes] = set()
        for name in self.area.names(PARTS):
            try:
                part_keys, part_rows = _load_part(self.area, name)
            except Exception:  # noqa: BLE001 - vanished or damaged: not ours to merge
                continue
            if not self._fits(part_keys, part_rows):
                continue
            merged.append(name)
            fresh = [i for i, k in enumerate(part_keys) if bytes(k) not in taken]
            taken.update(bytes(part_keys[i]) for i in fresh)
            keys.extend(bytes(part_keys[i]) for i in fresh)
            rows.append(part_rows[fresh])
        return merged, keys, rows

    def _write_part(self, keys: list[str], rows: np.ndarray) -> str:
        self._write_meta()

        def fill(fh: IO[bytes]) -> None:
            np.savez(fh, keys=np.array(keys, dtype="S64"), rows=rows)

        name = self.area.append("part", ".npz", fill)
        self._seen_parts.add(name)
        self.parts_written += 1
        return name

    def _write_meta(self) -> None:
        if not self.area.exists("meta.json"):
            meta = {**self.meta, "width": self.width}
            self.area.write("meta.json", json.dumps(meta, indent=2, sort_keys=True).encode("utf-8"))
