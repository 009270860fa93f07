"""An append-only, multi-process-safe cache of fixed-width float32 rows keyed by a text hash.

Used for sentence vectors (width = model dimension) and for BERTScore pair results (width 3).
Layout under one namespace folder (e.g. `<store>/_shared/embeddings/vectors/<model key>/`)::

    meta.json            what the rows are (model id, kind, width), for humans and sanity checks
    part-*.npz           keys (hex sha256, S64) + rows (float32, n x width)

Why part files: two processes scoring at once each write their own uniquely named file
(temporary name, fsync, atomic rename), so nobody overwrites anybody and a reader never sees
half a file. Duplicated keys across parts are harmless (same input -> same row). A reader
re-scans for new parts only when it misses, so a second process's work is picked up.

Compaction: every scoring pass adds a part, so a long-lived store would end up opening
hundreds of small files on every cold start. Once a folder holds COMPACT_AT parts, the writer
merges them into one (written like any part, then the merged ones are deleted). Only one
process compacts at a time (a non-blocking flock on `.compact.lock`; without fcntl nobody
compacts). A reader that listed a part a compaction then deleted just skips it: its rows are
in the merged part, which the reader loads on its next miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from evalcore.common.regular_files import open_file, write_new

try:
    import fcntl
except ImportError:  # Windows: no compaction (part files still work, there are just more of them)
    fcntl = None  # type: ignore[assignment]

COMPACT_AT = 64  # parts in one folder that trigger a merge


def _load_part(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(keys, rows) of one part file, opened as a regular file only: a FIFO or a device in a
    part's place is refused (an OSError, so the part is skipped like a damaged one) instead of
    blocking the scorer for ever or feeding it without end (evalcore/common/regular_files.py)."""
    with open_file(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:
        return data["keys"], np.asarray(data["rows"], dtype=np.float32)


def text_key(*parts: str) -> str:
    """sha256 hex of the parts joined by NUL (exact text: no normalisation, so no false hits)."""
    digest = hashlib.sha256()
    for i, part in enumerate(parts):
        if i:
            digest.update(b"\0")
        digest.update(part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def namespace_dir(root: Path, kind: str, identity: str) -> Path:
    """A folder per (kind, identity): the identity (model id + settings) is hashed into the name."""
    return Path(root) / kind / hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24]


class ArrayCache:
    """Rows by key, in memory, mirrored to part files when a directory is given."""

    def __init__(self, directory: Path | None, width: int | None = None, meta: dict[str, Any] | None = None,
                 confine: Callable[[Path], Any] | None = None):
        """`confine`: the store's proof that a path lies inside it, not reached through a link
        (RunStore.confine); called before every file this cache writes, locks or deletes."""
        self.directory = Path(directory) if directory is not None else None
        self._confine = confine or (lambda path: path)
        self.width = width
        self.meta = dict(meta or {})
        self._rows: dict[str, np.ndarray] = {}
        self._seen_parts: set[str] = set()
        self.parts_written = 0
        if self.directory is not None:
            self.refresh()

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: str) -> bool:
        return key in self._rows

    # ---- reading -------------------------------------------------------------------------
    def refresh(self) -> int:
        """Load part files not seen yet; returns how many rows were added."""
        if self.directory is None or not self.directory.is_dir():
            return 0
        added = 0
        for path in sorted(self.directory.glob("part-*.npz")):
            if path.name in self._seen_parts:
                continue
            try:
                keys, rows = _load_part(path)
            except FileNotFoundError:  # merged away by a compaction: its rows are in a newer part
                continue
            except Exception as exc:  # a damaged file must not stop scoring: recompute instead
                self._seen_parts.add(path.name)
                warnings.warn(f"skipping unreadable cache part {path}: {exc}", stacklevel=2)
                continue
            if rows.ndim != 2 or len(keys) != len(rows) or (self.width and rows.shape[1] != self.width):
                self._seen_parts.add(path.name)
                warnings.warn(f"skipping cache part {path} with unexpected shape {rows.shape}", stacklevel=2)
                continue
            self._seen_parts.add(path.name)
            self.width = self.width or int(rows.shape[1])
            for key, row in zip(keys, rows):
                k = key.decode("ascii") if isinstance(key, bytes) else str(key)
                if k not in self._rows:
                    self._rows[k] = row
                    added += 1
        return added

    def get(self, keys: Iterable[str], refresh_on_miss: bool = True) -> dict[str, np.ndarray]:
        """Rows found for `keys` (missing keys are absent from the result)."""
        keys = list(keys)
        if refresh_on_miss and any(k not in self._rows for k in keys):
            self.refresh()
        return {k: self._rows[k] for k in keys if k in self._rows}

    # ---- writing -------------------------------------------------------------------------
    def put(self, keys: list[str], rows: np.ndarray) -> Path | None:
        """Remember rows in memory and append them as one new part file."""
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
        if self.directory is None:
            return None
        written = self._write_part(self.directory, keys, rows)
        if len(list(self.directory.glob("part-*.npz"))) >= COMPACT_AT:
            self.compact()
        return written

    def compact(self) -> int:
        """Merge this folder's part files into one; returns how many parts were merged.

        0 when there is nothing to merge, when another process is compacting this folder, or
        without fcntl. Unreadable parts are left where they are (and still skipped by readers).
        The merged part is complete on disk before any old part is deleted, so a crash at any
        point loses nothing: at worst some rows exist twice, which readers tolerate.
        """
        if self.directory is None or fcntl is None or not self.directory.is_dir():
            return 0
        self._confine(self.directory / ".compact.lock")
        try:
            lock = open_file(self.directory / ".compact.lock", "a+b", follow=False)
        except OSError:  # a FIFO or a link in its place (never opened), or unwritable: nobody compacts
            return 0
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return 0
            merged: list[Path] = []
            keys: list[bytes] = []
            rows: list[np.ndarray] = []
            taken: set[bytes] = set()
            for path in sorted(self.directory.glob("part-*.npz")):
                try:
                    part_keys, part_rows = _load_part(path)
                except Exception:  # noqa: BLE001 - vanished or damaged: not ours to merge
                    continue
                if part_rows.ndim != 2 or len(part_keys) != len(part_rows) or \
                        (self.width and part_rows.shape[1] != self.width):
                    continue
                merged.append(path)
                fresh = [i for i, k in enumerate(part_keys) if bytes(k) not in taken]
                taken.update(bytes(part_keys[i]) for i in fresh)
                keys.extend(bytes(part_keys[i]) for i in fresh)
                rows.append(part_rows[fresh])
            if len(merged) < 2:
                return 0
            self._write_part(self.directory, [k.decode("ascii") for k in keys], np.concatenate(rows))
            for path in merged:
                self._confine(path.parent)
                path.unlink(missing_ok=True)
            return len(merged)

    def _write_part(self, directory: Path, keys: list[str], rows: np.ndarray) -> Path:
        self._confine(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._confine(directory)  # mkdir(exist_ok) accepts a link to a folder: checked again
        self._write_meta(directory)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        name = f"part-{stamp}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        tmp = directory / f".{name}.tmp"
        with open_file(tmp, "xb", follow=False) as fh:
            np.savez(fh, keys=np.array(keys, dtype="S64"), rows=rows)
            fh.flush()
            os.fsync(fh.fileno())
        final = directory / name
        os.replace(tmp, final)
        self._seen_parts.add(name)
        self.parts_written += 1
        return final

    def _write_meta(self, directory: Path) -> None:
        path = directory / "meta.json"
        if path.exists():
            return
        meta = {**self.meta, "width": self.width}
        tmp = directory / f".meta.{uuid.uuid4().hex[:8]}.tmp"
        write_new(tmp, json.dumps(meta, indent=2, sort_keys=True).encode("utf-8"))
        os.replace(tmp, path)
