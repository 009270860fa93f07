"""The dashboard's snapshots, one per store and process, and their first build in the background.

What pages call: `get_view` (the snapshot, or an Interim while it is first built), and for
tests and benchmarks `get_snapshot`, `forget`, `clear_cache`, `wait_built`. The snapshot itself
is evalcore/ui/snapshot_db.py, its cache file snapshot_file.py, the shared SQL snapshot_sql.py;
their names are re-exported here so callers need one import.
"""

from __future__ import annotations

import shutil
import threading
import time
from typing import Any

import duckdb

from evalcore.store import RunStore
from evalcore.ui.snapshot_db import Snapshot
from evalcore.ui.snapshot_file import CACHE_DIR, CACHE_FILE, FINGERPRINT, cache_path
from evalcore.ui.snapshot_sql import DERIVED, RUN_TABLES, VIEWS

__all__ = ["CACHE_DIR", "CACHE_FILE", "DERIVED", "FINGERPRINT", "RUN_TABLES", "VIEWS", "Snapshot",
           "building", "cache_path", "clear_cache", "forget", "get_snapshot", "get_view",
           "page_finished", "wait_built"]

_SNAPSHOTS: dict[str, Snapshot] = {}
_GLOBAL = threading.Lock()
# background first builds: store key -> (thread, the Interim serving pages meanwhile)
_BUILDS: dict[str, tuple[threading.Thread, Any]] = {}
IDLE_S, BUILD_DELAY_MAX_S = 0.5, 8.0
_BUILD_ERRORS: dict[str, BaseException] = {}


def get_snapshot(store: RunStore, refresh: bool = True, persist: bool = True) -> Snapshot:
    """The process-wide snapshot for a store root, refreshed unless told otherwise.

    `persist` (the default) keeps it in the store's cache file when that file can be used.
    """
    key = str(store.root.resolve())
    with _GLOBAL:
        snap = _SNAPSHOTS.get(key)
        if snap is None:
            # Only inside an existing store: opening the app on a wrong path must not create folders.
            use_file = persist and store.root.is_dir()
            snap = _SNAPSHOTS[key] = Snapshot(store, path=cache_path(store) if use_file else None)
    if refresh or not snap.initialised:
        snap.refresh()
    return snap


def forget(store: RunStore) -> None:
    """Drop a store's snapshot from this process (tests, benchmarks, a store deleted underneath us)."""
    wait_built(store)  # never close a connection a background build is writing to
    _BUILD_ERRORS.pop(str(store.root.resolve()), None)
    with _GLOBAL:
        snap = _SNAPSHOTS.pop(str(store.root.resolve()), None)
    if snap is not None:
        snap.con.close()


# ---- the first start without a cache: build in the background, serve pages meanwhile ----


def _build(key: str, snap: Snapshot) -> None:
    # Let the page that started the build render first: it competes with the page for the
    # cores (2 on the bench machine). Start once the page has finished (entry.main calls
    # page_finished), or once the Interim has been idle for IDLE_S with no query or
    # computation under way (pages run without entry.main), or after BUILD_DELAY_MAX_S;
    # then build on one DuckDB thread, so pages served meanwhile keep the other cores.
    interim = _BUILDS[key][1]
    deadline = time.monotonic() + BUILD_DELAY_MAX_S
    while time.monotonic() < deadline and not interim.page_done.is_set() and (
            interim.active or time.monotonic() - interim.last_used < IDLE_S):
        time.sleep(0.05)
    snap.threads = 1
    snap.con.execute("SET threads = 1")
    try:
        snap.refresh()
    except BaseException as exc:  # reported by the next page render (which then builds in line)
        _BUILD_ERRORS[key] = exc
    finally:
        snap.threads = 0
        try:
            snap.con.execute("RESET threads")
        except duckdb.Error:
            pass
        with _GLOBAL:
            _BUILDS.pop(key, None)


def get_view(store: RunStore) -> Any:
    """What a page reads: the snapshot, refreshed, when it is usable now; while it is first
    built (no usable cache file), an Interim, with the build running in a background thread
    (one per process and store)."""
    key = str(store.root.resolve())
    with _GLOBAL:
        snap = _SNAPSHOTS.get(key)
        if snap is None:
            use_file = store.root.is_dir()
            snap = _SNAPSHOTS[key] = Snapshot(store, path=cache_path(store) if use_file else None)
        running = _BUILDS.get(key)
        if running is None and not snap.initialised and key not in _BUILD_ERRORS:
            thread = threading.Thread(target=_build, args=(key, snap), name="evalcore-snapshot-build", daemon=True)
            from evalcore.ui.interim import Interim  # late: interim builds on this module

            running = _BUILDS[key] = (thread, Interim(store))
            thread.start()
    if running is not None:
        return running[1]
    _BUILD_ERRORS.pop(key, None)
    snap.refresh()
    return snap


def page_finished() -> None:
    """A page render has ended (called by entry.main): background builds waiting may start."""
    with _GLOBAL:
        waiting = [interim for _, interim in _BUILDS.values()]
    for interim in waiting:
        interim.page_done.set()


def building(store: RunStore) -> bool:
    """Whether this process is building the store's snapshot in the background now."""
    with _GLOBAL:
        return str(store.root.resolve()) in _BUILDS


def wait_built(store: RunStore, timeout: float | None = None) -> None:
    """Wait for a background build of the store's snapshot (tests, benchmarks)."""
    with _GLOBAL:
        running = _BUILDS.get(str(store.root.resolve()))
    if running is not None:
        running[0].join(timeout)


def clear_cache(store: RunStore) -> None:
    """Delete the persisted snapshot (harmless: the next open rebuilds it)."""
    forget(store)
    shutil.rmtree(store.shared_dir(CACHE_DIR), ignore_errors=True)
