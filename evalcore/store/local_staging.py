"""A run staged on a local disk: built in `.staging/<run_id>/` under its writer's lock, then
renamed into place whole (RunStore.staged_run; store/remote_staging.py does the same on object
storage, store/staging.py sweeps what killed imports left).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from evalcore.errors import StoreError
from evalcore.store import safe_paths as _safe
from evalcore.store import staging as _staging
from evalcore.store.layout import STAGING_DIR, empty_pointer, write_pointer
from evalcore.store.writer import RunWriter

if TYPE_CHECKING:
    from evalcore.schemas import RunManifest


@contextmanager
def staged(root: Path, manifest: RunManifest, final: Path, mark: Callable[[], None]) -> Iterator[RunWriter]:
    """RunStore.staged_run on a local disk (the store at `root`). On any exception (including
    Ctrl-C) the staging folder is removed and nothing in the store changes; on success it is
    renamed to `final` in one step. `mark()` writes the store's marker (RunStore._mark) before
    the run becomes visible."""
    staging = _safe.inside(root, root / STAGING_DIR / manifest.run_id)  # before any sweep
    _staging.sweep_quietly(root)
    try:
        staging.mkdir(parents=True)
    except FileExistsError as exc:
        raise StoreError(f"run {manifest.run_id!r} is already being staged") from exc
    writer = RunWriter(manifest.run_id, staging)
    lock = None
    try:
        lock = _staging.hold_writer_lock(staging)
        write_pointer(staging, empty_pointer())
        writer.write_manifest(manifest)
        yield writer
        writer.publish()  # published runs are canonical from their first moment
        mark()  # before the rename: an import never fails after its run is visible
        # drop the lock file so the published run does not carry it; until the rename,
        # the folder is lock-less but young, which the age rule still protects
        _safe.unlink(root, staging / _staging.LOCK_FILE)
        try:
            _safe.move(root, staging, final)
        except OSError as exc:  # the id appeared meanwhile (ids are unique, so: a bug)
            raise StoreError(f"cannot publish run {manifest.run_id!r}: {exc}") from exc
        writer.dir = final
    except BaseException:
        _safe.remove_tree(root, staging)
        raise
    finally:
        if lock is not None:
            lock.close()
