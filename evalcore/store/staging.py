"""Staging folders left behind by imports that died, and how to tell them from live ones.

An import builds its run in `<store>/.staging/<run_id>/` and renames it into the store when it
is complete (`RunStore.staged_run`). Its own error handling removes the folder on an exception
or Ctrl-C, but a process killed outright (SIGKILL, OOM killer, power cut) runs no cleanup, and
the half-built run would stay there forever: invisible to readers, yet as large as the part of
the file that was imported.

Removing a staging folder is only safe once its writer is gone, and a folder's age says little
about that (a slow import may not touch its folder for minutes). So the writer proves it is
alive: for its whole life it holds an exclusive `flock` on `.writer.lock` inside its folder.
The kernel drops that lock when the process ends, however it ends, so a lock that can be taken
without waiting means nobody is writing there any more. `flock` locks belong to one open file,
not to the process, so a live writer in the cleaner's own process is detected too.

Folders without a lock file (made by an evalcore that predates the lock, or caught in the
instant between `mkdir` and taking the lock) and every folder on systems without `fcntl`
(Windows) fall back to an age rule: removed only when nothing in them changed for
`STALE_AFTER` seconds (24 h).

`<store>/.trash/` is the other leftover: `delete` renames a run there (so it vanishes from
readers at once) and then removes it; a delete killed in between leaves the renamed folder.
Everything in .trash is garbage by construction, so `sweep_trash` removes it all; a delete
still running at the same moment only finds less to remove.
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable

try:  # POSIX; without it only the age rule applies (documented in docs/reliability.md)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

STAGING_DIR = ".staging"
TRASH_DIR = ".trash"
LOCK_FILE = ".writer.lock"
STALE_AFTER = 24 * 3600.0
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # run ids, as store.RUN_ID_RE

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Removed:
    """One abandoned staging folder that a sweep removed (or, in a dry run, would remove)."""

    path: Path
    bytes: int
    reason: str


def hold_writer_lock(folder: Path) -> IO[bytes] | None:
    """Take the liveness lock of a fresh staging folder; keep the returned file open for as long
    as the folder is being written (None where fcntl is missing: the age rule covers it).

    The lock file is created and locked under a temporary name and only then renamed to
    LOCK_FILE, so a cleaner never finds LOCK_FILE unlocked while its writer lives.
    """
    if fcntl is None:
        return None
    tmp = folder / f"{LOCK_FILE}.{uuid.uuid4().hex[:8]}.tmp"
    # a new file of our own, never one found there (O_EXCL also refuses a link by that name)
    fh = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644), "wb")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(tmp, folder / LOCK_FILE)
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise
    return fh


def _claim(root: Path, folder: Path, max_age: float, now: float) -> tuple[str | None, IO[bytes] | None]:
    """Why `folder` is abandoned (None: it may be alive), and the lock file to keep open while
    removing it so that a second cleaner leaves it alone."""
    from evalcore.common.regular_files import NotRegularFile
    from evalcore.store import safe_paths as _safe

    lock_path = folder / LOCK_FILE
    if fcntl is not None:
        try:
            fh = _safe.open_lock(root, lock_path, create=False)
        except (FileNotFoundError, NotRegularFile):  # none, or no lock a writer made (a FIFO...): the age rule
            fh = None
        except (OSError, _safe.OutsideStore):
            return None, None  # cannot check it (or it is a link), so it is not ours to remove
        if fh is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                # the writer may have published (lock file removed) between our open and lock
                if os.path.samestat(os.fstat(fh.fileno()), os.stat(lock_path)):
                    return "its writer is gone", fh
            except OSError:  # held by a live writer, or vanished meanwhile
                pass
            fh.close()
            return None, None
    idle = _idle_seconds(folder, now)
    if idle is not None and idle > max_age:
        return f"untouched for {idle / 3600:.0f} h", None
    return None, None


def _idle_seconds(folder: Path, now: float) -> float | None:
    """Seconds since anything in `folder` last changed; None if it vanished."""
    try:
        newest = folder.lstat().st_mtime
        for base, dirs, files in os.walk(folder):
            for name in dirs + files:
                try:
                    newest = max(newest, os.lstat(os.path.join(base, name)).st_mtime)
                except FileNotFoundError:
                    pass
    except FileNotFoundError:
        return None
    return now - newest


def _size(folder: Path) -> int:
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except FileNotFoundError:
                pass
    return total


def _remove(root: Path, folder: Path) -> None:
    """Delete everything but the lock file first, so a cleaner killed half-way leaves a folder
    that the next sweep still recognises (and finishes) by its free lock. Every removal is
    proven inside the store first; a link in the folder is removed itself, never followed."""
    from evalcore.store import safe_paths as _safe

    _safe.inside(root, folder)
    for child in folder.iterdir():
        if child.name == LOCK_FILE:
            continue
        if child.is_dir() and not child.is_symlink():
            _safe.remove_tree(root, child, ignore_errors=False)
        else:
            _safe.unlink(root, child)
    _safe.unlink(root, folder / LOCK_FILE)
    folder.rmdir()


def sweep(root: Path, *, max_age: float = STALE_AFTER, dry_run: bool = False,
          kept: list[Path] | None = None) -> list[Removed]:
    """Remove the abandoned folders in `<root>/.staging`; return what was removed.

    Only directories named like a run id are considered (never symlinks, never anything else
    in the store). Folders that may still be written are left alone and, if `kept` is given,
    listed there. A folder that cannot be removed is logged and left for the next sweep.
    `.staging` itself must be a real folder of the store: a link raises OutsideStore, and
    nothing is removed.
    """
    from evalcore.store import safe_paths as _safe

    root = Path(root)
    base = _safe.inside(root, root / STAGING_DIR)
    try:
        entries = sorted(base.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    now = time.time()
    removed: list[Removed] = []
    for folder in entries:
        if not NAME_RE.match(folder.name) or folder.is_symlink() or not folder.is_dir():
            continue
        reason, lock = _claim(root, folder, max_age, now)
        try:
            if reason is None:
                if kept is not None and folder.exists():
                    kept.append(folder)
                continue
            size = _size(folder)
            if not dry_run:
                try:
                    _remove(root, folder)
                except (OSError, _safe.OutsideStore) as exc:
                    log.warning("could not remove staging folder %s: %s", folder, exc)
                    continue
            removed.append(Removed(folder, size, reason))
        finally:
            if lock is not None:
                lock.close()
    return removed


def sweep_trash(root: Path, *, dry_run: bool = False) -> list[Removed]:
    """Remove what deletes left in `<root>/.trash` (folders only, never following symlinks).
    `.trash` itself must be a real folder of the store: a link raises OutsideStore."""
    from evalcore.store import safe_paths as _safe

    root = Path(root)
    base = _safe.inside(root, root / TRASH_DIR)
    try:
        entries = sorted(base.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed: list[Removed] = []
    for folder in entries:
        if folder.is_symlink() or not folder.is_dir():
            continue
        size = _size(folder)
        if not dry_run:
            _safe.remove_tree(root, folder)
            if folder.exists():
                log.warning("could not remove deleted run folder %s", folder)
                continue
        removed.append(Removed(folder, size, "a delete was interrupted"))
    return removed


def sweep_quietly(root: Path, sweeper: Callable[[Any], list[Removed]] | None = None) -> list[Removed]:
    """The sweep run when an import starts: best effort, never raises, and tells the user
    (a WARNING, so it shows without any logging setup) what it removed and why. `sweeper`
    replaces the local folder sweep (the S3 store passes its own)."""
    try:
        removed = (sweeper or sweep)(root)
    except Exception as exc:  # cleanup must never cost the user their import
        log.warning("could not clean up abandoned staging folders in %s: %s", root, exc)
        return []
    for item in removed:
        log.warning("removed abandoned staging folder %s (%s, %s): an import was interrupted there",
                    item.path, human_bytes(item.bytes), item.reason)
    return removed


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover
