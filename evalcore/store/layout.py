"""Where things live in a run store, and the atomic file operations every writer uses (Parquet
files are written by store/parquet_write.py).

Layout (root = `--store`, `EVALCORE_STORE`, or `./runs`), format 2::

    <root>/<run_id>/run.json                     manifest (RunManifest, no secrets)
    <root>/<run_id>/tables.json                  the run's pointer: which canonical files are current
    <root>/<run_id>/data/<table>-g<N>-<id>.parquet   canonical rows, one file per table (and summary)
    <root>/<run_id>/parts/<table>/part-*.parquet     rows written since the last compaction (unseen by readers)
    <root>/<run_id>/quarantine/parts/<table>/...     part files that could not be read, set aside (store/health.py)
    <root>/_shared/store.json                    store marker {"format_version": N} (absent = 1)
    <root>/_shared/annotations/part-*.parquet    human annotations (append-only, across runs)
    <root>/.staging/<run_id>/                    a run being imported; renamed into place when complete
    <root>/.trash/                               runs being deleted

Format 1 (before compaction existed) kept every table as `<run_id>/<table>/part-*.parquet` and
readers de-duplicated them on every query; such runs are still read (store/views.py) and are
compacted into format 2 by the first write (store/compaction.py).

Why a pointer file rather than a folder of files: a reader lists nothing and de-duplicates
nothing. It reads `tables.json`, which names exactly one file per table, and a compaction
publishes a new set of files by replacing that one small file atomically (os.replace), so a
reader sees the old set or the new set, never a mix. The same holds on object storage, where
a listing is not atomic but a single object write is.

Why a missing pointer is damage, not emptiness: every format-2 run gets its pointer before its
run.json, so a run with a format-2 manifest and no pointer lost it. Reading that as "no files"
once made the next compaction delete every file of the run; now readers and writers refuse the
run (RunDamaged) until `evalcore store repair` rebuilds the pointer from data/ (store/health.py).
"""

from __future__ import annotations

import io
import json
import os
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable

from evalcore.store import staging as _staging
from evalcore.errors import StoreError
from evalcore.common.regular_files import MARKER_MAX_BYTES, FileTooLarge, NotRegularFile, open_file, special_kind
from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.pointer_rules import (  # the pointer's name rules; store modules import them from here too
    DATA_DIR,
    PARTS_DIR,
    RUN_TABLES,
    data_generation,
    is_part_name,
    pointer_problem,
)

FORMAT_VERSION = 2
DEFAULT_ROOT = "runs"
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SHARED_DIR = "_shared"
STAGING_DIR = _staging.STAGING_DIR
TRASH_DIR = ".trash"
STORE_MARKER = "store.json"
LOCK_NAME = ".run.json.lock"
COMPACT_LOCK = ".compact.lock"
POINTER = "tables.json"
QUARANTINE_DIR = "quarantine"


# The run a file belongs to, in DuckDB SQL over read_parquet's `filename` column: the folder two
# levels above the file (<run>/data/<file>, and a format-1 run's <run>/<table>/<file>). Readers
# take each row's run_id from here, never from the row itself: a copied run folder's rows carry
# the original's id (store/views.py).
RUN_OF_FILE_SQL = r"regexp_extract(filename, '([^/\\]+)[/\\][^/\\]+[/\\][^/\\]+$', 1)"


def default_root() -> Location:
    """`EVALCORE_STORE` (a folder or `s3://bucket/prefix`), else ./runs."""
    return _fs.location(os.environ.get("EVALCORE_STORE") or DEFAULT_ROOT)


def store_format(root: Location, path: Location) -> int:
    """The format version the store marker at `path` says (absent: 1, a store written before the
    marker existed); StoreError, one line naming the file, for a marker that is unreadable,
    invalid, newer than this code understands, reached through a symbolic link (a link there is
    named: read through, it once said only "no valid format_version"), not a regular file (a
    FIFO hung every command) or larger than a marker can be (/dev/zero's bytes took them all)."""
    link = _safe.first_link(root, path)
    if link is not None:
        raise _safe.OutsideStore(path, f"{link} is a symbolic link (to {_safe.link_target(link)}); the store's own "
                                       "files are never read through one: replace it by a copy of what it points "
                                       "to, or remove it", doing="read the store marker")
    _safe.refuse_non_folder_parent(root, path, doing="read the store marker")  # `_shared` as a FIFO...
    try:
        text = _fs.read_small(path, MARKER_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        return 1
    except (NotRegularFile, FileTooLarge) as exc:
        raise StoreError(f"{path} {exc.why}: it cannot be the store marker; remove it (the next write to the "
                         "store puts a new one)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: unreadable store marker ({exc})") from exc
    # (on object storage a missing bucket, no credentials or an unreachable endpoint are
    # StoreErrors already, one line naming the store: store/s3.py)
    try:
        version = json.loads(text).get("format_version")
    except (ValueError, AttributeError):
        version = None
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise StoreError(f"{path}: store marker has no valid format_version")
    if version > FORMAT_VERSION:
        raise StoreError(f"{path}: store format version {version} is newer than this evalcore "
                         f"understands ({FORMAT_VERSION}); upgrade evalcore to read it")
    return version


def check_run_id(run_id: str) -> str:
    """Reject ids that could escape the store or collide with its own folders."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id) or ".." in run_id:
        raise StoreError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-' (max 128)")
    return run_id


def new_run_id(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:40] or "run"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{slug}-{stamp}-{uuid.uuid4().hex[:6]}"


def failed_write(exc: OSError, tmp: Path, path: Path) -> OSError:
    """After a failed write: remove the half-written temporary file, and return the error
    naming the file that was being written. Neither `fh.write` nor pyarrow names it, and a
    full disk reported without a path leaves a user guessing which store filled up."""
    try:
        tmp.unlink()
    except OSError:
        pass
    if exc.errno is None:
        return exc
    return OSError(exc.errno, os.strerror(exc.errno), str(path))  # a subclass by errno, as raised


def run_root(run_dir: Location) -> Location:
    """The store a run folder belongs to: its parent, or for a run being imported
    (`.staging/<run_id>`) the parent of that. What every write and delete in the run is
    proven inside (store/safe_paths.py)."""
    parent = run_dir.parent
    return parent.parent if parent.name == STAGING_DIR else parent


def write_atomic(path: Location, fill: Callable[[IO[bytes]], Any], *, within: Location) -> None:
    """Write what `fill(fh)` writes under a temporary name, fsync, rename: the file is whole or
    absent (on object storage one PUT is that already). `within`: the store root it must lie in.
    The one way the store, and the caches it hands folders to (store/shared_cache.py), write a
    file in place."""
    _safe.inside(within, path)
    if _fs.is_remote(path):
        buffer = io.BytesIO()
        fill(buffer)
        path.write_bytes(buffer.getvalue())
        return
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open_file(tmp, "xb", follow=False) as fh:  # a new file: nothing found there is opened
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise failed_write(exc, tmp, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic_bytes(path: Location, data: bytes, *, within: Location) -> None:
    """`write_atomic` of bytes in hand (a pointer, a manifest, the marker, a cache entry)."""
    write_atomic(path, lambda fh: fh.write(data), within=within)


def parts_dir(run_dir: Path, table: str) -> Path:
    return run_dir / PARTS_DIR / table


def pending_parts(run_dir: Path, table: str) -> list[Path]:
    """Part files not yet compacted: format 2's parts/<table>/ and format 1's <table>/. Only
    plain names (pointer_rules.is_part_name): a compaction lists what it absorbs in the
    pointer, which refuses any other name; a file named otherwise stays (`store check` lists it)."""
    found = []
    for folder in (run_dir / table, parts_dir(run_dir, table)):
        try:
            found.extend(p for p in folder.iterdir() if is_part_name(p.name))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return sorted(found)


class RunDamaged(StoreError):
    """A run whose pointer is missing or unreadable, or one of whose current files cannot be
    read. Readers leave it out (or, asked for it by name, raise this); writers refuse to touch
    it, so nothing of it is deleted or overwritten before a person looked. One line."""

    def __init__(self, run_dir: Location, problem: str, file: str | None = None, hint: str | None = None,
                 name: str | None = None):
        self.run_id = run_dir.name
        self.name = name  # the run's name, when its manifest was read
        self.file = file  # relative to the run folder, when one file is the problem
        self.problem = " ".join(str(problem).split())  # one line, whatever the library said
        hint = hint or f"`evalcore store check {self.run_id}` lists its files"
        self.hint = hint
        super().__init__(f"run {self.run_id} is damaged: {self.problem}; {hint}")


COPY_HINT = "rename the folder back to the run's id, or delete this copy"


def repair_hint(run_id: str) -> str:
    return f"`evalcore store repair {run_id}` rebuilds it from the files in data/"


def _has_files(folder: Location) -> bool:
    try:
        return any(p.is_file() or _has_files(p) for p in folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return False


def looks_format1(run_dir: Location) -> bool:
    """Without a pointer: is this a format-1 run (written before pointers existed, or one whose
    upgrade was killed before it published)? Only if its run.json says format 1, it has no
    format-2 part files, its data/ holds at most the first generation, and it still has its
    format-1 part files to read. Anything else lost its pointer."""
    try:
        version = json.loads(_fs.read_small(run_dir / "run.json").decode("utf-8")).get("format_version")
    except (OSError, ValueError, AttributeError):
        return False
    if version != 1 or _has_files(run_dir / PARTS_DIR):
        return False
    try:
        data = [data_generation(p.name) for p in (run_dir / DATA_DIR).iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        data = []
    if any(d is None or d[1] > 1 for d in data):
        return False
    legacy_parts = any(p.suffix == ".parquet" for t in RUN_TABLES for p in _listing(run_dir / t))
    return legacy_parts or not data


def _listing(folder: Location) -> list:
    try:
        return list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def is_legacy(run_dir: Location) -> bool:
    """A format-1 run: no pointer file, and the marks of format 1 (see looks_format1)."""
    return not (run_dir / POINTER).is_file() and looks_format1(run_dir)


def run_identity_problem(run_dir: Location, manifest_run_id: Any = None) -> str | None:
    """Why the run in this folder is not the run its name says (None if it is). A run is its
    folder: a copy (`cp -r RUN RUN.bak`), a renamed folder or an edited run.json carries
    another run's id inside, and counting it under either would count that run twice.
    `manifest_run_id`: the id run.json says, when the caller has read it already."""
    if not _fs.is_remote(run_dir) and run_dir.is_symlink():
        return f"the run folder is a symbolic link (to {os.readlink(run_dir)}), not a folder of the store"
    if manifest_run_id is None:
        try:
            manifest_run_id = json.loads(_fs.read_small(run_dir / "run.json").decode("utf-8")).get("run_id")
        except FileNotFoundError:
            return None  # no run here (yet): nothing to compare
        except (OSError, ValueError, AttributeError):
            return None  # unreadable: the manifest's own readers say so
    if manifest_run_id != run_dir.name:
        return (f"run.json says it is run {manifest_run_id!r}, but its folder is {run_dir.name!r} "
                f"(a copied or renamed run folder, or an edited run.json); rename the folder back to its id, "
                f"or delete the copy with `evalcore delete {run_dir.name}`")
    return None


def odd_file(path: Location) -> str | None:
    """What is wrong when a file the store reads as the run's own (run.json, tables.json) is a
    symbolic link ("<name> is a symbolic link (to <target>)") or no regular file at all
    ("<name> is a FIFO (named pipe), not a regular file"); None otherwise, and always on object
    storage. A run is its folder: what it says about itself is never read from elsewhere
    (store/run_links.py), nor from a pipe that would block the reader for ever."""
    if _fs.is_remote(path):
        return None
    if os.path.islink(path):
        return f"{path.name} is a symbolic link (to {_safe.link_target(path)})"
    kind = special_kind(path)
    return f"{path.name} is {kind}, not a regular file" if kind else None


def manifest_way_out(run_id: str, linked: bool) -> str:
    """What to do about a run.json that is a link or no regular file (odd_file): `store repair`
    cannot make a manifest, so a person replaces it."""
    if linked:
        return "replace the link by a copy of the file it points to"
    return ("it holds no manifest, and `evalcore store repair` cannot rebuild one: put a copy of the run's run.json "
            f"in its place (from a backup), or delete the run with `evalcore delete {run_id}`")


def read_pointer(run_dir: Location) -> dict[str, Any]:
    """The run's pointer ({} for a format-1 run); RunDamaged if it is missing or unreadable."""
    return read_pointer_versioned(run_dir)[0]


def read_pointer_versioned(run_dir: Location) -> tuple[dict[str, Any], str | None]:
    """The run's pointer and its version (an ETag on object storage, for `write_pointer`).
    ({}, None) for a format-1 run; RunDamaged for a pointer that is missing or unreadable."""
    path = run_dir / POINTER
    odd = odd_file(path)
    if odd:
        linked = os.path.islink(path)
        how = "through a link" if linked else "from one"
        raise RunDamaged(run_dir, f"{odd}: a run's pointer is never read {how}",
                         hint=f"`evalcore store repair {run_dir.name}` removes the "
                              + ("link (never what it points to)" if linked else "file (it holds no data)")
                              + f" and rebuilds the pointer from {DATA_DIR}/")
    try:
        raw, token = _fs.read_versioned(path)
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        if looks_format1(run_dir):
            return {}, None
        raise RunDamaged(run_dir, f"{path} is missing", hint=repair_hint(run_dir.name)) from None
    except (NotRegularFile, FileTooLarge) as exc:
        raise RunDamaged(run_dir, f"{path} {exc.why}", hint=repair_hint(run_dir.name)) from None
    except (OSError, ValueError) as exc:
        raise RunDamaged(run_dir, f"{path}: unreadable table pointer ({exc})", hint=repair_hint(run_dir.name)) from exc
    problem = pointer_problem(data, run_dir.name)
    if problem:
        hint = COPY_HINT if isinstance(data, dict) and data.get("run_id", run_dir.name) != run_dir.name \
            else repair_hint(run_dir.name)
        raise RunDamaged(run_dir, f"{path}: {problem}", hint=hint)
    return data, token


def fsync_dir(path: Location) -> None:
    """Make the entries of a local folder durable (the files renamed into it). On object storage
    a finished PUT is durable already."""
    if _fs.is_remote(path):
        return
    try:
        # a folder only (O_DIRECTORY), and never waiting on a FIFO put in its place (O_NONBLOCK)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NONBLOCK)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # pragma: no cover - platforms without directory fsync
        pass


def write_pointer(run_dir: Location, pointer: dict[str, Any], token: str | None = None) -> str | None:
    """Replace the pointer atomically. On object storage the PUT is conditional on `token`
    (the version read; None = it must not exist yet) and the new version is returned; a
    pointer changed meanwhile raises fs.Conflict instead of being overwritten."""
    # the folder it was written for: a copy of the run folder under another name is told apart
    data = json.dumps(pointer | {"run_id": run_dir.name}, indent=1, sort_keys=True).encode()
    root = run_root(run_dir)
    if _fs.is_remote(run_dir):
        return _fs.replace(_safe.inside(root, run_dir / POINTER), data, token)
    write_atomic_bytes(run_dir / POINTER, data, within=root)
    fsync_dir(run_dir)  # make the rename durable before the files it replaced are removed
    return None


def empty_pointer() -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION, "generation": 0, "files": {}, "previous": []}
