"""A full disk (or an exhausted quota), or a store that cannot be written (a read-only
volume, missing permissions), is a one-line message, not a traceback.

Why here, at the top of the CLI: every write in the store is atomic (a temporary file renamed
into place) and imports are staged, so when a write fails for lack of space nothing already
stored is damaged; the user only needs to know which file could not be written and that the
store is intact. The store's writers name the file in the error (store/layout.py
`failed_write`), since neither Python's `write` nor pyarrow does. A run's manifest changes only
with the data it describes (RunWriter.publish(record=...)), so it too reads as before. Where a
command published part of its work before the disk filled, it says what (errors.note_published)
and the line says that instead.
"""

from __future__ import annotations

import errno

from evalcore.errors import published_note

DISK_FULL = {errno.ENOSPC: "no space left on device"}
if hasattr(errno, "EDQUOT"):
    DISK_FULL[errno.EDQUOT] = "disk quota exceeded"
NOT_WRITABLE = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
                errno.EPERM: "operation not permitted"}


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL


def is_not_writable(exc: BaseException) -> bool:
    """A refused access to a named file (the store's writers and locks name theirs)."""
    return isinstance(exc, OSError) and exc.errno in NOT_WRITABLE and bool(exc.filename)


def not_writable_message(exc: OSError) -> str:
    """One line: which file, why, and that what was stored is intact (a refused write
    changes nothing; the store's writes are atomic)."""
    verb = "cannot write" if exc.errno == errno.EROFS else "no access to"
    stored = published_note(exc) or "nothing already stored was changed"
    return (f"{verb} {exc.filename} ({NOT_WRITABLE[exc.errno]}); {stored} "
            "(check the permissions or the mount of that folder, or pass another --store)")


def disk_full_message(exc: OSError, store_root: object | None = None) -> str:
    """One line: what happened, which file, and that what was stored is intact, or what the
    command published before the disk filled (errors.note_published)."""
    where = f" while writing {exc.filename}" if exc.filename else (
        f" while writing to {store_root}" if store_root else "")
    stored = published_note(exc) or "nothing already stored was changed"
    return f"{DISK_FULL[exc.errno]}{where}; {stored} (free some space and run the command again)"
