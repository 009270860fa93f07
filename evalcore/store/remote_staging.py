"""Staging folders on object storage: telling a live import from a dead one, and sweeping.

On a local disk an importing process proves it lives by holding an flock (evalcore/store/staging.py).
S3 has no locks, so the import holds a lease object `.staging/<run_id>/.writer.lock` instead
(store/lease.py: renewed every few seconds while the process runs). A cleaner that can take
that lease over (it expired: the writer stopped renewing it) knows the writer is gone; a
folder without one (caught between its first object and the lease) goes only when nothing in
it changed for 24 hours, as on disk. Removing a folder is deleting its objects.
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import contextmanager
from typing import Callable, Iterator

from evalcore.store import staging as _staging
from evalcore.errors import StoreError
from evalcore.schemas import RunManifest
from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.layout import POINTER, STAGING_DIR, empty_pointer, write_pointer
from evalcore.store.lease import acquire, expired, holder, lease_lock
from evalcore.store.s3 import S3Path
from evalcore.store.writer import RunWriter

log = logging.getLogger(__name__)


@contextmanager
def writer_lease(folder: S3Path) -> Iterator[None]:
    """Held for the whole life of an import into `folder`."""
    with lease_lock(folder / _staging.LOCK_FILE, wait_s=0):
        yield


def sweep(root: S3Path, *, max_age: float = _staging.STALE_AFTER, dry_run: bool = False,
          kept: list | None = None) -> list[_staging.Removed]:
    """Remove abandoned `<root>/.staging/<run_id>/` folders; return what was removed."""
    try:
        entries = sorted((root / _staging.STAGING_DIR).iterdir())
    except FileNotFoundError:
        return []
    now, removed = time.time(), []
    for folder in entries:
        if not folder.is_dir() or not _staging.NAME_RE.match(folder.name):
            continue
        objects = folder.walk_files()
        lock = folder / _staging.LOCK_FILE
        reason = None
        if any(p == lock for p, _ in objects):
            if dry_run:
                info, _ = holder(lock)
                reason = "its writer is gone" if info is not None and expired(info) else None
            else:
                try:  # a lease we can take over is one its writer stopped renewing
                    acquire(lock, uuid.uuid4().hex, wait_s=0)
                    reason = "its writer is gone"
                except StoreError:
                    reason = None
        else:
            times = [info["LastModified"].timestamp() for _, info in objects if info.get("LastModified")]
            if times and now - max(times) > max_age:
                reason = f"untouched for {(now - max(times)) / 3600:.0f} h"
        if reason is None:
            if kept is not None:
                kept.append(folder)
            continue
        size = sum(int(info.get("size") or 0) for _, info in objects)
        if not dry_run:
            try:
                _safe.remove_tree(root, folder)
            except StoreError as exc:  # a key that is not a plain path: left, and said
                log.warning("could not remove staging folder %s: %s", folder, exc)
                continue
        removed.append(_staging.Removed(folder, size, reason))  # type: ignore[arg-type]
    return removed


def sweep_quietly(root: S3Path) -> list[_staging.Removed]:
    """The sweep an import runs first: never raises, warns for what it removed (the local
    store's wording and rules, with this store's sweep)."""
    return _staging.sweep_quietly(root, sweep)


@contextmanager
def staged(root: S3Path, manifest: RunManifest, final: S3Path, mark: Callable[[], None]) -> Iterator[RunWriter]:
    """RunStore.staged_run on object storage (the store at `root`): built under
    .staging/<run_id>/ while a lease object there says its writer lives, then copied into place
    with run.json last — written only if absent, so the run appears whole, in one PUT. `mark()`
    writes the store's marker (RunStore._mark) before the run becomes visible."""
    staging = _safe.inside(root, root / STAGING_DIR / manifest.run_id)
    sweep_quietly(root)
    if staging.exists():
        raise StoreError(f"run {manifest.run_id!r} is already being staged")
    writer = RunWriter(manifest.run_id, staging)
    try:
        with writer_lease(staging):
            write_pointer(staging, empty_pointer())
            writer.write_manifest(manifest)
            yield writer
            writer.publish()
            mark()
            _fs.publish_tree(staging, final, last=(POINTER, "run.json"))
            writer.dir = final
    finally:
        _safe.remove_tree(root, staging)
