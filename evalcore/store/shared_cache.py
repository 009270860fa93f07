"""The one way a cache keeps files in the store's `_shared/` area: `RunStore.shared_cache(name)`.

Why the store hands out an object instead of a folder: the judge cache and the embedding caches
once laid out their files themselves, each with its own atomic-write scheme beside the store's
(three in all), and each had to remember to ask the store whether a path was inside it before
every write. Now a cache is given a `SharedCache`, a folder of the store it can only reach
through these methods, and every write, delete and lock goes through the store's own rules:

- a path is proven inside the store (or, for a store on object storage, inside this machine's
  folder for it) and not reached through a symbolic link before anything is written, deleted or
  locked (store/safe_paths.py); names are plain names, never `..` or a separator;
- a file is written whole or not at all (store/layout.write_atomic: temporary name, fsync,
  rename; on object storage one PUT), under a name given by the cache (`write`: the same key,
  the same bytes, so two processes racing on one key write identical files) or a new unique one
  (`append`: `<prefix>-<UTC time>-<pid>-<random><suffix>`, so two writers never overwrite each
  other and a reader never sees half a file);
- a file is read only when it is a regular file (a FIFO or a device in an entry's place is
  never opened), and an entry with a bound (`read`: 64 MB by default): what cannot be read is a
  miss, replaced by the next write (evalcore/common/regular_files.py);
- one process at a time may do housekeeping (`exclusive`: a non-blocking flock; on object
  storage, and without fcntl, nobody gets it).

What the files hold (JSON replies, `.npz` rows) is the cache's business; where they lie and how
they are written is the store's. The layout is the one the caches had before this module, so
caches written by earlier versions are read as they are (tests/test_store_shared_cache.py).
"""

from __future__ import annotations

import io
import os
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import IO, Any, Callable, Iterator

from evalcore.common.regular_files import METADATA_MAX_BYTES, open_file
from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.layout import write_atomic, write_atomic_bytes

try:  # POSIX; elsewhere nobody gets `exclusive` (the caches then skip their housekeeping)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class SharedCache:
    """One folder of the store's shared area, for one cache (or one namespace of it: `sub`).

    `root` is what every write is proven to lie in: the store's root, or this machine's folder
    for a store on object storage. `SharedCache(folder, folder)` is an area of its own, for a
    cache used without a store (tests, a child process given the folder)."""

    def __init__(self, root: Location | str, folder: Location | str | None = None):
        self.root: Location = _fs.location(root)
        self.folder: Location = _fs.location(folder) if folder is not None else self.root

    def __repr__(self) -> str:
        return f"SharedCache({self.folder})"

    @property
    def location(self) -> Location:
        """Where the files lie (for messages, and for tests that look at them)."""
        return self.folder

    def sub(self, *names: str) -> "SharedCache":
        """The area of one namespace inside this one (a model's vectors, a folder per key prefix)."""
        return SharedCache(self.root, self._path("/".join(names)))

    def _path(self, rel: str) -> Location:
        """`rel` (plain names joined by `/`) under the folder; OutsideStore for anything else."""
        path = self.folder
        for part in rel.split("/"):
            problem = _safe.name_problem(part)
            if problem:
                raise _safe.OutsideStore(f"{self.folder}/{rel}", f"its path {problem}")
            path = path / part
        return path

    # ---- reading ---------------------------------------------------------------------------
    def read(self, rel: str, limit: int = METADATA_MAX_BYTES) -> bytes | None:
        """The bytes of one entry, or None when there is none, or it is no regular file, or
        larger than `limit`, or unreadable: a miss, which the next `write` replaces."""
        try:
            return _fs.read_small(self._path(rel), limit)
        except OSError:
            return None

    def exists(self, rel: str) -> bool:
        """Whether anything stands under this name (a file, or whatever else: a cache that writes
        a file only once leaves it alone)."""
        path = self._path(rel)
        return path.exists() if _fs.is_remote(path) else os.path.lexists(path)

    def names(self, pattern: str) -> list[str]:
        """The names of the files in the folder matching the glob `pattern`, sorted ([] while
        the folder does not exist)."""
        if not self.folder.is_dir():
            return []
        return sorted(path.name for path in self.folder.glob(pattern))

    @contextmanager
    def open(self, rel: str) -> Iterator[IO[bytes]]:
        """A file opened for reading, proven a regular file first (an OSError otherwise, and
        FileNotFoundError when it is gone: merged away by another process's housekeeping)."""
        path = self._path(rel)
        if _fs.is_remote(path):
            yield io.BytesIO(path.read_bytes())
            return
        with open_file(path, "rb") as fh:
            yield fh

    # ---- writing ---------------------------------------------------------------------------
    def write(self, rel: str, data: bytes, private: bool = False) -> Location:
        """Put one entry under its own name, whole (replacing what stood there). `private`: readable
        by its owner alone (mode 0600 from the moment it exists), for an entry that tells what
        only its writer could read."""
        path = self._path(rel)
        _safe.make_dirs(self.root, path.parent)
        if private and not _fs.is_remote(path):
            def fill(fh: IO[bytes]) -> None:
                os.fchmod(fh.fileno(), 0o600)
                fh.write(data)

            write_atomic(path, fill, within=self.root)
        else:
            write_atomic_bytes(path, data, within=self.root)
        return path

    def append(self, prefix: str, suffix: str, fill: Callable[[IO[bytes]], Any]) -> str:
        """Write a new file under a name no other writer can take (`fill(fh)` writes its
        content); returns the name."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        name = f"{prefix}-{stamp}-{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"
        path = self._path(name)
        _safe.make_dirs(self.root, self.folder)
        write_atomic(path, fill, within=self.root)
        return name

    def remove(self, rel: str) -> None:
        """Delete one file (absent is fine; a link is removed itself, never followed)."""
        _safe.unlink(self.root, self._path(rel))

    @contextmanager
    def exclusive(self, rel: str) -> Iterator[bool]:
        """Hold the lock file `rel` for housekeeping if no other process does: yields True
        while held, False when someone else holds it, when the lock cannot be opened (a FIFO
        in its place, a folder that is not there yet), on object storage and without fcntl."""
        path = self._path(rel)
        if fcntl is None or _fs.is_remote(path):
            yield False
            return
        try:
            lock = _safe.open_lock(self.root, path)
        except OSError:
            yield False
            return
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            yield True
