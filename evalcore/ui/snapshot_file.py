"""The dashboard snapshot's cache file: where it lives, what makes it stale, how to open it.

Why apart from the Snapshot class (snapshot_db.py): these are plain file concerns (a path in
the store's _shared/ folder, a version fingerprint, per-run file signatures, connecting
despite a damaged file or another process's lock), testable without any rows.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb

from evalcore.store import RunStore
from evalcore.tables import SCHEMAS
from evalcore.ui.snapshot_sql import DERIVED, RUN_TABLES

CACHE_DIR = "app_cache"
CACHE_FILE = "snapshot.duckdb"
CACHE_FORMAT = 2  # bump when the layout of the cache file changes in a way the fingerprint misses


def _fingerprint() -> str:
    """What the cached rows depend on: table schemas, derived SQL, the DuckDB storage version."""
    parts = [str(CACHE_FORMAT), duckdb.__version__, *DERIVED.values(),
             *(f"{t}:{SCHEMAS[t]}" for t in RUN_TABLES)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


FINGERPRINT = _fingerprint()


def cache_path(store: RunStore) -> Path:
    return store.shared_dir(CACHE_DIR) / CACHE_FILE


def signature(root: Path, paths: list[str]) -> str:
    """(path relative to the store, size, mtime) of each file, as JSON: stable across restarts
    and store moves."""
    out = []
    for p in sorted(paths):
        try:
            st = Path(p).stat()
        except OSError:
            continue
        try:
            name = str(Path(p).resolve().relative_to(root))
        except ValueError:
            name = p
        out.append((name, st.st_size, st.st_mtime_ns))
    return json.dumps(out)


def open_file(path: Path) -> tuple[duckdb.DuckDBPyConnection | None, str]:
    """Connect to the cache file; (None, why) when it cannot be used here."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"cannot create {path.parent}: {exc}"
    for attempt in (1, 2):
        try:
            return duckdb.connect(str(path)), ""
        except duckdb.Error as exc:
            first_line = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            if "lock" in str(exc).lower():  # another process (a second dashboard) has it open
                return None, f"cache file in use by another process ({first_line})"
            if attempt == 2:
                return None, f"cache file unusable ({first_line})"
            # A damaged or foreign file: it is only a cache, so start over.
            for leftover in (path, path.with_name(path.name + ".wal")):
                try:
                    leftover.unlink(missing_ok=True)
                except OSError:
                    return None, f"cache file unusable and not removable ({first_line})"
    return None, "unreachable"
