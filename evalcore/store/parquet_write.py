"""Writing the store's Parquet files: a run's part files and its canonical files, each whole or
absent.

Why apart from layout.py: every reader needs the layout (where a run's files are, its pointer),
and only writers need pyarrow; listing the runs imported it, numpy with it, for nothing.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.layout import failed_write
from evalcore.store.tables import dictionary_columns, statistics_columns, to_arrow
from evalcore.store.written_parts import remember

# How every Parquet file of the store is written. Version 2 data pages keep the levels apart
# from the values, which are compressed where they lie: a long answer cost 1.6 times its size
# to write, against 2.7 times with version 1 pages (which first join the two into one buffer).
PARQUET_WRITE: dict[str, Any] = {"compression": "zstd", "data_page_version": "2.0"}


LARGE_TABLE_BYTES = 8 * 2 ** 20  # a table this large is followed by release_arrow_memory()


def write_parquet_atomic(path: Location, arrow: pa.Table, row_group_size: int | None = None,
                         dictionary_floats: bool = True, *, within: Location) -> Location:
    """One Parquet file, published by rename (on object storage: one PUT). Min/max
    statistics only where tables.statistics_columns says (none on floats, which they would
    misdescribe, nor on free text, whose longest value they would copy). `row_group_size`
    (rows) lets a reader decode one file on several threads and skip groups by the key
    columns' statistics; free text is stored plain (tables.dictionary_columns), and so are
    float columns with `dictionary_floats=False` (distinct scores: a dictionary only adds a
    lookup). `within`: the store root the file must lie in."""
    _safe.inside(within, path)
    stats = statistics_columns(arrow.schema)
    options: dict[str, Any] = {**PARQUET_WRITE, "write_statistics": stats,
                               "use_dictionary": dictionary_columns(arrow.schema, floats=dictionary_floats)}
    if row_group_size:
        options["row_group_size"] = row_group_size
    if _fs.is_remote(path):
        sink = pa.BufferOutputStream()
        pq.write_table(arrow, sink, **options)
        path.write_bytes(sink.getvalue().to_pybytes())
        return path
    _safe.make_dirs(within, path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        pq.write_table(arrow, tmp, **options)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise failed_write(exc, tmp, path) from None
    return path


def write_part(directory: Path, table: str, rows: list[dict[str, Any]], *, within: Location,
               keep: bool = False) -> Path | None:
    """Append rows as a new part file named by time and a random id (never overwrites).

    The rows are consumed: once Arrow holds them, the list is emptied, so a long answer's
    Python text is not held beside its Arrow copy while the file is written. `keep`: a run's
    part, which the compaction that absorbs it takes from memory (store/written_parts.py)."""
    if not rows:
        return None
    name = f"part-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:8]}.parquet"
    arrow = to_arrow(table, rows)
    rows.clear()
    large = arrow.nbytes >= LARGE_TABLE_BYTES
    path = write_parquet_atomic(directory / name, arrow, within=within)
    if keep and not _fs.is_remote(path):  # the merge that absorbs it takes it from memory
        remember(path, arrow)
    del arrow
    if large:
        release_arrow_memory()
    return path


def release_arrow_memory() -> None:
    """Give back to the system what Arrow's allocator kept after a large table was written
    or read. It keeps freed memory for reuse, but what comes next (DuckDB computing a run's
    summaries, Python building the next batch) allocates elsewhere, so a long answer's
    buffers were still resident, 40-50 MB for an 8 MB answer, when the run was compacted."""
    pa.default_memory_pool().release_unused()
