"""Unreadable files, and setting unreadable part files aside (a compaction's one need from
store/health.py, kept apart so that compaction and health, which repairs by compacting, do not
import each other).

* a file that cannot be read is found by its footer (`unreadable`: the Parquet footer, what
  every reader opens first; `deep=True` decodes every page as well, for `store check`);
* a part file a writer left unreadable (a 0-byte or garbage file in parts/), or one of another
  table (its columns say so), cannot be absorbed, and would fail every later compaction of its
  run or put rows in the wrong table: it is moved to
  `<run>/quarantine/<its path>` with one warning, and `store clean` / `store check` list it.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.layout import QUARANTINE_DIR, run_root
from evalcore.store.pointer_rules import columns_problem

# the warning keeps the logger name it has always had (people filter on it)
log = logging.getLogger("evalcore.store.health")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def unreadable(path: Location, deep: bool = False) -> str | None:
    """Why a Parquet file cannot be read (None if it can): its footer, or with `deep` every row."""
    where, filesystem = _fs.arrow(path)
    try:
        if deep:
            source = pq.ParquetFile(where, filesystem=filesystem, pre_buffer=False)
            for _ in source.iter_batches(batch_size=65536, use_threads=False):
                pass
        else:
            pq.read_metadata(where, filesystem=filesystem)
    except FileNotFoundError:
        return "the file is missing"
    except Exception as exc:  # pyarrow says ArrowInvalid, OSError or others for one bad file
        return _one_line(exc)
    return None


def misfiled(path: Location, table: str) -> str | None:
    """Why a readable file of run table `table` (a part, or a canonical file the pointer names)
    is not a file of that table (None if it is, or if it cannot be read: `unreadable` says
    that): its columns are another table's, or it lacks the ones a merge keys on
    (pointer_rules.columns_problem). Merged, its rows would become rows of the wrong table."""
    where, filesystem = _fs.arrow(path)
    try:
        names = pq.read_schema(where, filesystem=filesystem).names
    except Exception:  # unreadable: said elsewhere
        return None
    return columns_problem(table, names)


def _corrupt(path: Location, table: str) -> str | None:
    """Why a part file is garbage for certain (None if it reads as a file of its table, or if it
    could not be read because of the disk or the network, which is no reason to set it aside):
    its bytes were read whole, and they are not Parquet; or it is another table's file."""
    why = unreadable(path)
    if why is None:
        return misfiled(path, table)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None  # gone meanwhile: nothing to set aside
    if not data:
        return "an empty (0-byte) file"
    try:
        pq.read_metadata(pa.BufferReader(data))
    except Exception as exc:
        return _one_line(exc)
    return None


def quarantine_path(run_dir: Location, part: Location) -> Location:
    return run_dir / QUARANTINE_DIR / part.relative_to(run_dir).as_posix()


def quarantine_unreadable_parts(run_dir: Location, pending: dict[str, list[Location]]) -> dict[str, list[Location]]:
    """The pending parts without those that are not Parquet: those are moved to quarantine/
    (one warning for all of them), so the compaction absorbs the rest and carries on."""
    kept: dict[str, list[Location]] = {}
    moved: list[tuple[str, str]] = []
    for table, parts in pending.items():
        kept[table] = []
        for part in parts:
            why = _corrupt(part, table)
            if why is None:
                kept[table].append(part)
                continue
            _safe.move(run_root(run_dir), part, quarantine_path(run_dir, part))
            moved.append((part.relative_to(run_dir).as_posix(), why))
    if moved:
        first, why = moved[0]
        more = f" and {len(moved) - 1} more" if len(moved) > 1 else ""
        log.warning("run %s: set aside %d unreadable part file(s) in %s: %s (%s)%s; `evalcore store clean` lists them",
                    run_dir.name, len(moved), run_dir / QUARANTINE_DIR, first, why, more)
    return kept


def quarantined_files(run_dir: Location) -> list[tuple[Location, int]]:
    """Files set aside in a run's quarantine/ folder, with their sizes."""
    folder = run_dir / QUARANTINE_DIR
    if _fs.is_remote(folder):
        return [(p, int(info.get("size") or 0)) for p, info in folder.walk_files()]
    if not folder.is_dir():
        return []
    return [(p, p.stat().st_size) for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()]
