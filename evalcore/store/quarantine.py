"""Unreadable files, and setting unreadable part files aside (a compaction's one need from
store/health.py, kept apart so that compaction and health, which repairs by compacting, do not
import each other).

* a file that cannot be read is found by its footer (`unreadable`: the Parquet footer, what
  every reader opens first; `deep=True` decodes every page as well, for `store check`);
* a part file a writer left unreadable (a 0-byte or garbage file in parts/), one of another
  table (its columns say so), or one holding another run's rows (copied from another run's
  folder) cannot be absorbed, and would fail every later compaction of its run or put rows in
  the wrong table or run: it is moved to `<run>/quarantine/<its path>` with one warning, and
  `store clean` / `store check` list it (`part_problem` is the one test both apply).
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from typing import TYPE_CHECKING, Any, Iterable

from evalcore.common.regular_files import NotRegularFile
from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.layout import QUARANTINE_DIR, run_root
from evalcore.store.pointer_rules import columns_problem

UNREADABLE_PART = "unreadable part file"

# the warning keeps the logger name it has always had (people filter on it)
log = logging.getLogger("evalcore.store.health")

if TYPE_CHECKING:  # pyarrow is imported where a file's footer is read: a healthy store's readers never do
    import pyarrow.parquet as pq


def read_errors() -> tuple[type[BaseException], ...]:
    """What reading a damaged file raises, for an `except` clause (which evaluates it only when
    an error arrives): DuckDB's errors, the system's, and pyarrow's once pyarrow is loaded (a
    reader that never imported it cannot meet one, and need not import it to say so)."""
    import duckdb

    arrow = sys.modules.get("pyarrow")
    return (duckdb.Error, OSError, *((arrow.ArrowException,) if arrow is not None else ()))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


DEEP_BATCH_ROWS = 1024  # rows decoded at a time when every row of a file is read (`deep`)


def unreadable(path: Location, deep: bool = False) -> str | None:
    """Why a Parquet file cannot be read (None if it can): its footer, or with `deep` every row.
    A FIFO, socket or device is never opened (fs.arrow refuses it: "it is a FIFO...")."""
    if not deep:
        return footer(path)[1]
    import pyarrow.parquet as pq

    try:
        where, filesystem = _fs.arrow(path)
        source = pq.ParquetFile(where, filesystem=filesystem, pre_buffer=False)
        # a small batch: a long text repeated on every row is stored once (dictionary encoding)
        # but decoded per row, so 65,536 rows of such a tiny file once took 600+ MB at once
        for _ in source.iter_batches(batch_size=DEEP_BATCH_ROWS, use_threads=False):
            pass
    except Exception as exc:
        return _why(exc)
    return None


def footer(path: Location) -> tuple[pq.FileMetaData | None, str | None]:
    """(the file's Parquet footer, None), or (None, why it cannot be read)."""
    import pyarrow.parquet as pq

    try:
        where, filesystem = _fs.arrow(path)
        return pq.read_metadata(where, filesystem=filesystem), None
    except Exception as exc:
        return None, _why(exc)


def _why(exc: BaseException) -> str:
    if isinstance(exc, NotRegularFile):
        return f"it {exc.why}"
    if isinstance(exc, FileNotFoundError):
        return "the file is missing"
    return _one_line(exc)  # pyarrow says ArrowInvalid, OSError or others for one bad file


def misfiled(path: Location, table: str, meta: pq.FileMetaData | None = None) -> str | None:
    """Why a readable file of run table `table` (a part, or a canonical file the pointer names)
    is not a file of that table (None if it is, or if it cannot be read: `unreadable` says
    that): its columns are another table's, or it lacks the ones a merge keys on
    (pointer_rules.columns_problem). Merged, its rows would become rows of the wrong table.
    `meta`: its footer, when read already."""
    meta = meta or footer(path)[0]
    return None if meta is None else columns_problem(table, meta.schema.to_arrow_schema().names)


def other_run(values: Iterable[Any], run_id: str) -> str | None:
    """The first value that is not `run_id` (a null included, as "None"); None if every one is.
    The one test of "rows of another run" (a merge applies it to the key columns it reads)."""
    return next((str(v) for v in values if not (isinstance(v, str) and v == run_id)), None)


def foreign_run(path: Location, run_id: str, meta: pq.FileMetaData | None = None) -> str | None:
    """Another run's id that a row of this file carries (None if every row is this run's, or
    if the file cannot be read or has no run_id column: `unreadable` and `misfiled` say so).
    Exact and cheap: the footer's statistics answer for a file evalcore wrote (every row group
    min = max = the run, no nulls); only otherwise is the run_id column read."""
    meta = meta or footer(path)[0]
    if meta is None or "run_id" not in meta.schema.names:
        return None
    index = meta.schema.names.index("run_id")
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max or not stats.has_null_count or stats.null_count:
            break
        found = other_run([_text(stats.min), _text(stats.max)], run_id)
        if found is not None:
            return found
    else:
        return None
    import pyarrow.parquet as pq

    try:
        where, filesystem = _fs.arrow(path)
        source = pq.ParquetFile(where, filesystem=filesystem, pre_buffer=False)
        ids: dict = {}  # in order of appearance; a batch at a time: a long id repeated on every row decodes per row
        for batch in source.iter_batches(batch_size=DEEP_BATCH_ROWS, columns=["run_id"], use_threads=False):
            ids.update(dict.fromkeys(batch.column(0).unique().to_pylist()))
    except Exception:  # unreadable: said elsewhere
        return None
    return other_run(ids, run_id)


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def foreign_problem(found: str | None) -> str | None:
    return None if found is None else f"holds rows of run {found!r}, not of this one"


def part_problem(part: Location, table: str, run_id: str, deep: bool = False) -> str | None:
    """Why a pending part file of `table` cannot be absorbed into run `run_id` (None if it can):
    it is not Parquet, or holds another table's columns, or another run's rows. The one test
    both the compaction (which sets such a part aside in quarantine/, never merging it) and
    `store check` (which lists it as a stray the next write sets aside) apply: a part a write
    would choke on is never one check calls fine."""
    meta, why = footer(part)
    why = why or (unreadable(part, deep=True) if deep else None)
    if why is not None:
        return f"{UNREADABLE_PART} ({why})"
    return misfiled(part, table, meta) or foreign_problem(foreign_run(part, run_id, meta))


def _corrupt(path: Location, table: str, run_id: str) -> str | None:
    """Why a part file is to be set aside (part_problem), when that is certain: another table's
    columns or another run's rows; or its bytes were read whole, and they are not Parquet. None
    if it reads as a part of this run, or if it could not be read because of the disk or the
    network, which is no reason to set it aside (the compaction fails instead)."""
    why = part_problem(path, table, run_id)
    if why is None or not why.startswith(UNREADABLE_PART):
        return why
    if not _fs.is_remote(path) and os.path.isdir(path) and not os.path.islink(path):
        return "a folder named like a part file"  # moved aside whole: nothing in it is read or lost
    try:
        data = _fs.read_versioned(path, limit=None)[0]
    except FileNotFoundError:
        return None  # gone meanwhile: nothing to set aside
    if not data:
        return "an empty (0-byte) file"
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(pa.BufferReader(data))
    except Exception as exc:
        return _one_line(exc)
    return None


def quarantine_path(run_dir: Location, part: Location) -> Location:
    return run_dir / QUARANTINE_DIR / part.relative_to(run_dir).as_posix()


def _free(path: Location) -> Location:
    """`path`, or beside it a name nothing holds yet: a part set aside under a name set aside
    before (the same file copied in twice) never replaces what is there."""
    if _fs.is_remote(path) or not os.path.lexists(path):
        return path
    return path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}")


def _written_here(part: Location, table: str, run_id: str) -> bool:
    """This process wrote `part`, it is still that file, and what it wrote there is a part of
    `table` holding rows of `run_id` only: nothing to check on disk (store/written_parts.py;
    its footer read again cost ~0.4 ms a part of a live run's final publish)."""
    if _fs.is_remote(part):
        return False
    from evalcore.store.tables import SCHEMAS
    from evalcore.store.written_parts import recall

    written = recall(part)
    if written is None or not written.schema.equals(SCHEMAS[table]):
        return False
    if "run_id" not in written.schema.names:
        return True
    return written.column("run_id").unique().to_pylist() == [run_id]


def quarantine_unreadable_parts(run_dir: Location, pending: dict[str, list[Location]]) -> dict[str, list[Location]]:
    """The pending parts without those the run cannot absorb (`_corrupt`): those are moved to
    quarantine/ (one warning for all of them), so the compaction absorbs the rest and carries on."""
    kept: dict[str, list[Location]] = {}
    moved: list[tuple[str, str]] = []
    for table, parts in pending.items():
        kept[table] = []
        for part in parts:
            if _written_here(part, table, run_dir.name):
                kept[table].append(part)
                continue
            why = _corrupt(part, table, run_dir.name)
            if why is None:
                kept[table].append(part)
                continue
            _safe.move(run_root(run_dir), part, _free(quarantine_path(run_dir, part)))
            moved.append((part.relative_to(run_dir).as_posix(), why))
    if moved:
        first, why = moved[0]
        more = f" and {len(moved) - 1} more" if len(moved) > 1 else ""
        log.warning("run %s: set aside %d part file(s) it cannot absorb in %s: %s (%s)%s; `evalcore store clean` "
                    "lists them",
                    run_dir.name, len(moved), run_dir / QUARANTINE_DIR, first, why, more)
    return kept


def quarantined_files(run_dir: Location) -> list[tuple[Location, int]]:
    """Files set aside in a run's quarantine/ folder, with their sizes."""
    folder = run_dir / QUARANTINE_DIR
    if _fs.is_remote(folder):
        return [(p, int(info.get("size") or 0)) for p, info in folder.walk_files()]
    if not folder.is_dir():
        return []
    found = sorted(p for p in folder.rglob("*") if not p.is_symlink())
    files = [(p, p.stat().st_size) for p in found if p.is_file()]
    # a folder set aside whole (one named like a part file) is listed even when it holds no file
    empty = [(p, 0) for p in found if p.is_dir() and not any(q.is_file() for q in p.rglob("*"))
             and p.parent != folder and p.parent.parent != folder]
    return sorted(files + empty)
