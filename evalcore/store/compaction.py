"""Compaction: fold a run's part files into one canonical file per table, plus its summary.

Writers append part files (a crash loses at most the batch in flight); readers must not pay
for that. When an import, a run or a scoring pass ends (and whenever a writer opens a run
that has leftovers), this merges the run's current canonical file with its pending parts,
keeping the newest row per key (tables.KEYS) or the newest whole set (tables.SET_KEYS),
writes the result under a new generation name, computes the run's summary tables
(store/summary.py) and its one-row-per-answer metric values (store/wide.py), and publishes all of it by atomically replacing the run's pointer.

Crash safety, by construction:
* before the pointer is replaced, nothing readers see has changed (new files are unreferenced
  and swept by the next compaction);
* after it, the absorbed parts may still be on disk; the next compaction absorbs them again,
  which changes nothing (same rows, same timestamps: the newest still wins);
* the files the previous pointer named are kept for one more generation, so a reader that
  read the old pointer a moment ago can still open them;
* nothing is deleted that a readable pointer cannot account for: a file goes only if a
  pointer named it and a newer one retired it, or it is the unpublished output of a
  compaction that was killed (the generation after the pointer's, which no pointer can have
  named). A run whose pointer is missing or unreadable, or whose current files cannot be
  read, is refused (layout.RunDamaged) instead of being read as empty; an unreadable part
  file is set aside in quarantine/ (store/health.py) instead of failing every compaction.
One compaction per run at a time (an flock on the run's `.compact.lock`; on object storage a
lease object of that name, store/lease.py); writers never wait for it — parts they add
meanwhile are simply left for the next one. On object storage the pointer is also replaced
conditionally on the version this compaction read: one that lost its lease (frozen past it)
finds the pointer changed, and starts over from the new one instead of overwriting it.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from contextlib import contextmanager
from functools import partial
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import duckdb
import pyarrow as pa

try:  # POSIX; elsewhere compactions of one run must not overlap (documented in docs/store.md)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Conflict, Location
from evalcore.store.layout import (
    COMPACT_LOCK,
    DATA_DIR,
    FORMAT_VERSION,
    PARTS_DIR,
    RUN_TABLES,
    RunDamaged,
    data_generation,
    empty_pointer,
    failed_write,
    fsync_dir,
    pending_parts,
    read_pointer_versioned,
    run_root,
    write_pointer,
)
from evalcore.store.compaction_derived import write_derived
from evalcore.store.merge import ForeignRows, Merged, merge_files
from evalcore.store.paired_jobs import run_jobs
from evalcore.store.quarantine import quarantine_unreadable_parts
from evalcore.store.run_damage import file_findings, refuse
from evalcore.store.summary import DERIVED_TABLES
from evalcore.store.written_parts import forget


# How long a file that stopped being current stays on disk: a reader that read the old pointer
# (or listed a format-1 run's parts) a moment before may still be opening it.
GRACE_S = 600.0
STALE_TMP_S = 3600.0  # a temporary part file this old belongs to a writer that died
ATTEMPTS = 3  # object storage: compactions that start over after a pointer changed under them


@dataclass
class Compaction:
    """What one compaction did (for logs, tests and benchmarks)."""

    run_dir: Location
    changed: bool = False
    generation: int = 0
    parts_absorbed: int = 0
    rows: dict[str, int] = field(default_factory=dict)


@contextmanager
def compaction_lock(run_dir: Location) -> Iterator[None]:
    """The run's compaction lock (also taken by delete, so a run never vanishes mid-compaction)."""
    with _locked(run_dir):
        yield


@contextmanager
def _locked(run_dir: Location) -> Iterator[None]:
    if _fs.is_remote(run_dir):
        with _fs.lease(run_dir / COMPACT_LOCK):
            yield
        return
    if fcntl is None:
        yield
        return
    with _safe.open_lock(run_root(run_dir), run_dir / COMPACT_LOCK) as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _merge_to(path: Location, table: str, sources: list[Location]) -> Merged:
    """Stream the merge into a temporary file, fsync it, rename it into place (object
    storage: into a local temporary file, sent as one object)."""
    root = run_root(path.parent.parent)
    _safe.inside(root, path)
    if _fs.is_remote(path):
        with tempfile.TemporaryDirectory(prefix="evalcore-merge-") as tmpdir:
            local = Path(tmpdir) / path.name
            merged = merge_files(sources, table, local, run_id=path.parent.parent.name)
            _fs.upload(local, path)
        return merged
    _safe.make_dirs(root, path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        merged = merge_files(sources, table, tmp, run_id=path.parent.parent.name)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # e.g. a full disk: no half file left, and the error names the file
        raise failed_write(exc, tmp, path) from None
    except BaseException:  # e.g. a source that cannot be read: no half file left either
        tmp.unlink(missing_ok=True)
        raise
    return merged


def compact(run_dir: Location, force_summary: bool = False) -> Compaction:
    """Compact one run folder (a published run or a staging folder). Idempotent."""
    result = Compaction(run_dir)
    if not run_dir.is_dir():
        return result  # deleted meanwhile: nothing to publish, and nothing to recreate
    refuse(run_dir, files=False)  # not the run it names, or a link (FIFO...) in it: before its lock file is opened
    with _locked(run_dir):
        for attempt in range(ATTEMPTS):
            try:
                return _compact_locked(run_dir, force_summary, result)
            except Conflict:  # object storage only: another compactor published meanwhile
                if attempt == ATTEMPTS - 1:
                    raise
    return result  # pragma: no cover - the loop returns or raises


def _compact_locked(run_dir: Location, force_summary: bool, result: Compaction) -> Compaction:
    if not (run_dir / "run.json").is_file():
        return result  # deleted (moved to .trash) while this waited for the lock
    # every reason writers refuse a run, checked again under the lock (store/run_damage.py: the
    # list `store check` prints and `store repair` acts on): a pointer we cannot read, a file of
    # another table or run under a table's name...
    refuse(run_dir)
    found, token = read_pointer_versioned(run_dir)  # RunDamaged: never compact what we cannot read
    pointer = found or empty_pointer()
    done = _finish_previous(run_dir, pointer)
    pending = {t: [p for p in pending_parts(run_dir, t) if _rel(run_dir, p) not in done] for t in RUN_TABLES}
    files: dict[str, str] = dict(pointer["files"])
    has_summary = all(s in files for s in DERIVED_TABLES)
    result.generation = int(pointer.get("generation", 0))
    if not any(pending.values()) and has_summary and not force_summary and found:
        if pointer.get("retired"):  # nothing new: still let expired files go
            _sweep(run_dir, {"absorbed": [], **pointer}, token, base_generation=result.generation)
        return result
    if any(pending.values()):  # a part that cannot be read would fail this and every later compaction
        pending = quarantine_unreadable_parts(run_dir, pending)
    try:
        return _write_generation(run_dir, pointer, token, pending, files, result)
    except ForeignRows as exc:  # rows of another run: a copied folder or files put in by hand
        rel = _rel(run_dir, exc.path)
        raise RunDamaged(run_dir, f"{rel} holds rows of run {exc.found!r}, not of this one", file=rel) from None
    except (pa.ArrowException, duckdb.Error, OSError) as exc:
        _diagnose(run_dir, files, exc)
        raise


def _diagnose(run_dir: Location, files: dict[str, str], exc: BaseException) -> None:
    """After a compaction failed reading: if a file the pointer names cannot be read to its last
    row, the run is damaged (one line naming the file, as `store check` names it) — not a
    traceback, and nothing written."""
    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError) and exc.errno is not None:
        return  # a full disk, a read-only store: the error already names the file being written
    for name, rel in sorted(files.items()):
        damage = next(file_findings(run_dir, name, rel, deep=True), None) if name in RUN_TABLES else None
        if damage is not None:
            raise damage.error(run_dir) from None


def _write_generation(run_dir: Location, pointer: dict, token: str | None,
                      pending: dict[str, list[Location]], files: dict[str, str], result: Compaction) -> Compaction:
    generation = result.generation + 1
    tag = f"g{generation}-{uuid.uuid4().hex[:8]}"
    rows = dict(pointer.get("rows") or {})
    replaced = dict(pointer.get("replaced") or {})
    files = dict(files)
    names = {t: f"{DATA_DIR}/{t}-{tag}.parquet" for t in RUN_TABLES if pending[t]}
    merges = {t: partial(_merge_to, run_dir / names[t], t, ([run_dir / files[t]] if t in files else []) + pending[t])
              for t in names}  # two at a time (store/paired_jobs.py), the largest first
    for table, merged in run_jobs(merges, first=sorted(names, key=lambda t: -_weight(pending[t]))).items():
        # rows superseded by a newer version of the same key (a re-score; for a live run's
        # answers always 0: each is asked once) — an audit trail of replacements
        replaced[table] = replaced.get(table, 0) + merged.rows_in - merged.rows_out
        files[table], rows[table] = names[table], merged.rows_out
        result.parts_absorbed += len(pending[table])
    files.update(write_derived(run_dir, files, tag, merged=set(names)))
    # the new files' directory entries must be durable before the pointer names them: after a
    # power cut a pointer naming a file that was never written down would leave the run unreadable
    fsync_dir(run_dir / DATA_DIR)
    previous = sorted(set(pointer["files"].values()) - set(files.values()))
    absorbed = sorted(_rel(run_dir, p) for paths in pending.values() for p in paths)
    now = time.time()
    # files a reader may be reading right now: the previous canonical files, and format-1
    # parts (readers of a not-yet-upgraded run read those); removed after GRACE_S
    retired = {**pointer.get("retired", {}), **{f: now for f in previous},
               **{f: now for f in absorbed if not f.startswith(f"{PARTS_DIR}/")}}
    token = write_pointer(run_dir, {"format_version": FORMAT_VERSION, "generation": generation, "files": files,
                                    "previous": previous, "rows": rows, "replaced": replaced,
                                    "absorbed": absorbed, "retired": retired,
                                    "compacted_at": datetime.now(timezone.utc).isoformat()}, token)
    _sweep(run_dir, pointer | {"files": files, "absorbed": absorbed, "retired": retired}, token,
           base_generation=result.generation)
    result.changed, result.generation, result.rows = True, generation, rows
    return result


def _weight(paths: list[Location]) -> int:
    """Bytes of `paths` on a local disk (the merge to start first), their number elsewhere."""
    total = 0
    for p in paths:
        try:
            total += 1 if _fs.is_remote(p) else os.stat(p).st_size
        except OSError:  # gone meanwhile: the merge says so
            pass
    return total


def _rel(run_dir: Location, path: Location) -> str:
    return path.relative_to(run_dir).as_posix()


def _finish_previous(run_dir: Location, pointer: dict) -> set[str]:
    """The parts the last compaction absorbed (listed in its pointer). Format-2 parts among them
    that a killed compaction left behind are removed now — absorbing them twice would count their
    rows as replaced; format-1 parts stay until their grace time ends (readers may hold them)."""
    absorbed = set(pointer.get("absorbed") or [])
    _safe.unlink_all(run_root(run_dir), [run_dir / rel for rel in sorted(absorbed) if rel.startswith(f"{PARTS_DIR}/")])
    return absorbed


def _sweep(run_dir: Location, pointer: dict, token: str | None = None, base_generation: int = 0) -> None:
    """After a new pointer is published: remove the absorbed format-2 parts (never read by
    readers), retired files whose grace time is over, format-1 folders left empty, and the
    output of compactions that were killed before publishing: data files of generation
    `base_generation + 1` (the one every compaction starting from the pointer it read writes)
    that the new pointer does not name. Any other file in data/ no pointer accounts for stays
    (`evalcore store check` lists it)."""
    root = run_root(run_dir)
    gone = [run_dir / rel for rel in pointer["absorbed"] if rel.startswith(f"{PARTS_DIR}/")]
    _safe.unlink_all(root, gone)
    forget(gone)  # what this process held of them (store/written_parts.py)
    now, kept = time.time(), {}
    for rel, since in pointer["retired"].items():
        if rel in pointer["files"].values():
            continue
        if now - since >= GRACE_S:
            _safe.unlink(root, run_dir / rel)
        elif (run_dir / rel).exists():
            kept[rel] = since
    if kept != pointer["retired"]:
        pointer = pointer | {"retired": kept, "absorbed": [a for a in pointer["absorbed"] if a in kept
                                                            or a.startswith(f"{PARTS_DIR}/")]}
        write_pointer(run_dir, pointer, token)
    for table in RUN_TABLES:  # format-1 folders: no format-2 writer ever writes there again
        try:
            _safe.inside(root, run_dir / table).rmdir()
        except OSError:  # not empty, absent, or (OutsideStore) a link: left as it is
            pass
    # parts/<table>/ folders stay, even empty: a writer may be about to publish a file there;
    # a temporary part file is left only by a writer killed between writing and renaming it
    # (never read: readers and compaction see only renamed parts); removed once surely dead
    _sweep_stale_temporaries(run_dir)
    referenced = set(pointer["files"].values()) | set(pointer["retired"])
    data = run_dir / DATA_DIR
    found = [(f, data_generation(f.name)) for f in (data.iterdir() if data.is_dir() else [])]
    newest = max((g[1] for _, g in found if g), default=0)
    if newest > base_generation + 1:
        return  # data/ is newer than the pointer this compaction started from: leave it all
    for f, parsed in found:
        if f"{DATA_DIR}/{f.name}" not in referenced and parsed and parsed[1] == base_generation + 1:
            _safe.unlink(root, f)


def _sweep_stale_temporaries(run_dir: Location) -> None:
    """Remove `.part-*.tmp` files older than STALE_TMP_S from parts/<table>/ (local stores only:
    on object storage a part is one PUT, there is no temporary object)."""
    if _fs.is_remote(run_dir):
        return
    now, root = time.time(), run_root(run_dir)
    for table in RUN_TABLES:
        folder = run_dir / PARTS_DIR / table
        for f in folder.glob(".part-*.tmp") if folder.is_dir() else []:
            try:
                if now - f.lstat().st_mtime >= STALE_TMP_S:
                    _safe.unlink(root, f)
            except OSError:
                pass


def pending_rows(run_dir: Location, table: str) -> int:
    """Rows written to `table` since the last compaction (Parquet footers only: cheap)."""
    import pyarrow.parquet as pq

    total = 0
    for p in pending_parts(run_dir, table):
        where, filesystem = _fs.arrow(p)
        try:
            total += pq.read_metadata(where, filesystem=filesystem).num_rows
        except (OSError, pa.ArrowInvalid):  # absorbed and removed meanwhile
            continue
    return total
