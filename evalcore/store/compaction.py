"""Compaction: fold a run's part files into one canonical file per table, plus its summary.

Writers append part files (a crash loses at most the batch in flight); readers must not pay
for that. When an import, a run or a scoring pass ends (and whenever a writer opens a run
that has leftovers), this merges the run's current canonical file with its pending parts,
keeping the newest row per key (tables.KEYS) or the newest whole set (tables.SET_KEYS),
writes the result under a new generation name, computes the run's summary tables
(store/summary.py), and publishes all of it by atomically replacing the run's pointer.

Crash safety, by construction:
* before the pointer is replaced, nothing readers see has changed (new files are unreferenced
  and swept by the next compaction);
* after it, the absorbed parts may still be on disk; the next compaction absorbs them again,
  which changes nothing (same rows, same timestamps: the newest still wins);
* the files the previous pointer named are kept for one more generation, so a reader that
  read the old pointer a moment ago can still open them.
One compaction per run at a time (an flock on the run's `.compact.lock`); writers never wait
for it — parts they add meanwhile are simply left for the next one.
"""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
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

from evalcore.schemas.labels import CLASS_METRICS, GRADE_METRICS
from evalcore.store.layout import (
    COMPACT_LOCK,
    DATA_DIR,
    FORMAT_VERSION,
    POINTER,
    RUN_TABLES,
    empty_pointer,
    pending_parts,
    read_pointer,
    write_parquet_atomic,
    write_pointer,
)
from evalcore.store.merge import Merged, merge_files
from evalcore.store.summary import SUMMARY_TABLES, summary_sql
from evalcore.tables import KEYS, ORDER_COLUMN, SCHEMAS, SET_KEYS, SORT_COLUMNS


@dataclass
class Compaction:
    """What one compaction did (for logs, tests and benchmarks)."""

    run_dir: Path
    changed: bool = False
    generation: int = 0
    parts_absorbed: int = 0
    rows: dict[str, int] = field(default_factory=dict)


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    with open(run_dir / COMPACT_LOCK, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def sql_list(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _label_fill(has_label: bool) -> str:
    """Format-1 metric rows kept grades and classes only in details: lift them into `label`."""
    grades = ", ".join(f"'{m}'" for m in GRADE_METRICS)
    classes = ", ".join(f"'{m}'" for m in CLASS_METRICS)
    derived = (f"CASE WHEN metric IN ({grades}) THEN upper(json_extract_string(details, '$.grade')) "
               f"WHEN metric IN ({classes}) THEN upper(json_extract_string(details, '$.class')) END")
    return f"coalesce(label, {derived})" if has_label else derived


def _has_column(paths: list[Path], column: str) -> bool:
    import pyarrow.parquet as pq

    return any(column in pq.read_schema(p).names for p in paths)


def merge_sql(table: str, paths: list[Path]) -> str:
    """SELECT of the newest row per key (or newest set per set key) over `paths`.

    Ties on the timestamp go to the later file name (parts/ sorts after data/, and part names
    start with their write time), so a re-absorbed part never doubles a row."""
    src = f"read_parquet({sql_list(paths)}, union_by_name = true, filename = true)"
    order = ORDER_COLUMN[table]
    sort = ", ".join(SORT_COLUMNS[table])
    star = "* EXCLUDE (filename)"
    if table == "metrics":
        has_label = _has_column(paths, "label")
        star = f"* EXCLUDE (filename{', label' if has_label else ''}), {_label_fill(has_label)} AS label"
    if table in KEYS:
        keys = ", ".join(KEYS[table])
        qualify = f"row_number() OVER (PARTITION BY {keys} ORDER BY {order} DESC NULLS LAST, filename DESC) = 1"
    else:
        keys = ", ".join(SET_KEYS[table])
        qualify = f"dense_rank() OVER (PARTITION BY {keys} ORDER BY {order} DESC NULLS LAST, filename DESC) = 1"
    return f"SELECT {star} FROM {src} QUALIFY {qualify} ORDER BY {sort}"


def _merge_to(path: Path, table: str, sources: list[Path]) -> Merged:
    """Stream the merge into a temporary file, fsync it, rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    merged = merge_files(sources, table, tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return merged


def _define(con: duckdb.DuckDBPyConnection, table: str, path: Path | None) -> None:
    if path is None:
        con.register(f"_empty_{table}", SCHEMAS[table].empty_table())
        con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM _empty_{table}")
    else:
        con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet({sql_list([path])})")


def compact(run_dir: Path, force_summary: bool = False) -> Compaction:
    """Compact one run folder (a published run or a staging folder). Idempotent."""
    result = Compaction(run_dir)
    with _locked(run_dir):
        pointer = read_pointer(run_dir) or empty_pointer()
        pending = {t: pending_parts(run_dir, t) for t in RUN_TABLES}
        files: dict[str, str] = dict(pointer["files"])
        has_summary = all(s in files for s in SUMMARY_TABLES)
        result.generation = int(pointer.get("generation", 0))
        if not any(pending.values()) and has_summary and not force_summary and (run_dir / POINTER).is_file():
            return result
        generation = result.generation + 1
        tag = f"g{generation}-{uuid.uuid4().hex[:8]}"
        rows = dict(pointer.get("rows") or {})
        replaced = dict(pointer.get("replaced") or {})
        con = duckdb.connect(":memory:")
        try:
            con.execute("SET disabled_optimizers = 'statistics_propagation'")
            # the summaries scan each table once: DuckDB's file cache would only hold the run's
            # data in memory (a 100 MB import grew by it), so it is off here
            con.execute("SET enable_external_file_cache = false")
            for table in RUN_TABLES:
                current = [run_dir / files[table]] if table in files else []
                if pending[table]:
                    name = f"{DATA_DIR}/{table}-{tag}.parquet"
                    merged = _merge_to(run_dir / name, table, current + pending[table])
                    # rows superseded by a newer version of the same key (a re-score; for a live
                    # run's answers always 0: each is asked once) — an audit trail of replacements
                    replaced[table] = replaced.get(table, 0) + merged.rows_in - merged.rows_out
                    files[table], rows[table] = name, merged.rows_out
                    result.parts_absorbed += len(pending[table])
                _define(con, table, run_dir / files[table] if table in files else None)
            for name in SUMMARY_TABLES:
                arrow = con.sql(summary_sql(name)).to_arrow_table()
                rel = f"{DATA_DIR}/{name}-{tag}.parquet"
                write_parquet_atomic(run_dir / rel, arrow)
                files[name] = rel
        finally:
            con.close()
        previous = sorted(set(pointer["files"].values()) - set(files.values()))
        write_pointer(run_dir, {"format_version": FORMAT_VERSION, "generation": generation, "files": files,
                                "previous": previous, "rows": rows, "replaced": replaced,
                                "compacted_at": datetime.now(timezone.utc).isoformat()})
        _sweep(run_dir, pending, set(files.values()) | set(previous))
        result.changed, result.generation, result.rows = True, generation, rows
    return result


def _sweep(run_dir: Path, absorbed: dict[str, list[Path]], referenced: set[str]) -> None:
    """Remove absorbed parts, emptied part folders and data files no pointer generation names."""
    for paths in absorbed.values():
        for p in paths:
            p.unlink(missing_ok=True)
    for table in RUN_TABLES:  # format-1 folders: no format-2 writer ever writes there again
        try:
            (run_dir / table).rmdir()
        except OSError:
            pass
    # parts/<table>/ folders stay, even empty: a writer may be about to publish a file there
    data = run_dir / DATA_DIR
    for f in data.iterdir() if data.is_dir() else []:
        if f"{DATA_DIR}/{f.name}" not in referenced:
            f.unlink(missing_ok=True)


def pending_rows(run_dir: Path, table: str) -> int:
    """Rows written to `table` since the last compaction (Parquet footers only: cheap)."""
    import pyarrow.parquet as pq

    total = 0
    for p in pending_parts(run_dir, table):
        try:
            total += pq.read_metadata(p).num_rows
        except (OSError, pa.ArrowInvalid):  # absorbed and removed meanwhile
            continue
    return total


def has_pending(run_dir: Path) -> bool:
    return any(pending_parts(run_dir, t) for t in RUN_TABLES) or not os.path.isfile(run_dir / POINTER)
