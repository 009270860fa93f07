"""Whether a run holds answers (or metric values) of trials beyond the first, read from the
Parquet footers of its canonical files instead of their rows.

Why: which SQL a run's summaries take depends on it (store/summary.py, TRIAL_SUMMARY_SQL), and
asking DuckDB meant defining the tables' views and counting rows before any derived table could
start, ~10 ms on the path of the publish a live run's user waits for after the last answer
(bench/bench_runner.py). A file compaction writes keeps `trial`'s min/max per row group
(store/tables.py statistics_columns), which answer the same question exactly: an INT32 column's
statistics are not truncated, and a null trial (counted by neither) is no trial above 0.

When a footer cannot answer (a file on object storage, a row group without statistics, a file
that cannot be read), the answer is None and the caller counts the rows, as before.
"""

from __future__ import annotations

from evalcore.store import fs as _fs
from evalcore.store.fs import Location


def later_trials(paths: list[Location]) -> bool | None:
    """True when a row of one of `paths` has a trial above 0, False when none has (a file
    without the column holds trial 0's rows only); None when the footers do not say."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in paths:
        if _fs.is_remote(path):
            return None
        try:
            where, _ = _fs.arrow(path)
            meta = pq.ParquetFile(where, pre_buffer=False).metadata
        except (OSError, pa.ArrowException):
            return None
        found = _trial_column(meta)
        if found is None:
            continue
        column = meta.schema.column(found)
        if column.physical_type not in ("INT32", "INT64") or column.logical_type.type not in ("NONE", "INT"):
            return None  # not a file compaction wrote (a text, float or date `trial`): the rows decide
        for group in range(meta.num_row_groups):
            rows = meta.row_group(group)
            if rows.num_rows == 0:
                continue
            stats = rows.column(found).statistics
            if stats is None or not stats.has_min_max:
                if stats is not None and stats.null_count == rows.num_rows:
                    continue  # every trial null: none above 0
                return None
            if stats.max > 0:
                return True
    return False


def _trial_column(meta) -> int | None:
    """The position of the top-level `trial` column among the file's leaf columns, if any."""
    for i in range(meta.num_columns):
        if meta.schema.column(i).path == "trial":
            return i
    return None
