"""The merge rule of store/merge.py in SQL, for readers of format-1 runs (store/views.py), and
the SQL list of files every reader hands DuckDB.

Why apart from merge.py: merging writes (pyarrow, numpy, pandas), reading only builds SQL, and
`evalcore runs` should not import the writing side's libraries to list the runs.
"""

from __future__ import annotations

from pathlib import Path

from evalcore.common.regular_files import require_regular
from evalcore.store import fs as _fs
from evalcore.store.columns import KEY_DEFAULTS, KEYS, ORDER_COLUMN, SET_KEYS, SORT_COLUMNS
from evalcore.store.layout import RUN_OF_FILE_SQL

# Format-1 metric rows kept grades and classes only in details: which metrics did, and the
# details key that held the word. A fixed fact about files written then (a metric added since
# writes its `label` itself: MetricSpec.label_kind), so it is not read from the registry.
FORMAT1_LABELS = {"factual_grade": "grade", "factual_accuracy": "grade", "answer_class": "class"}


def sql_list(paths: list[Path]) -> str:
    """The files for DuckDB's read_parquet, as an SQL list. Every local one is proven a regular
    file first (NotRegularFile, an OSError naming it): DuckDB opens what it is given, and a FIFO
    would block it for ever, a character device feed it without end."""
    for p in paths:
        if not _fs.is_remote(p):
            require_regular(p)
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _label_fill(has_label: bool) -> str:
    """Format-1 metric rows kept grades and classes only in details: lift them into `label`."""
    derived = "CASE " + " ".join(f"WHEN metric = '{metric}' THEN upper(json_extract_string(details, '$.{key}'))"
                                 for metric, key in FORMAT1_LABELS.items()) + " END"
    return f"coalesce(label, {derived})" if has_label else derived


def _has_column(paths: list[Path], column: str) -> bool:
    import pyarrow.parquet as pq  # format-1 runs only: a store written since never reads a part

    for path in paths:
        where, filesystem = _fs.arrow(path)
        if column in pq.read_schema(where, filesystem=filesystem).names:
            return True
    return False


def merge_sql(table: str, paths: list[Path]) -> str:
    """SELECT of the newest row per key (or newest set per set key) over `paths`: the rule of
    store/merge.py in SQL, for reading format-1 runs. Ties on the timestamp go to the later file
    name (part names start with their write time), then to the later row of that file."""
    # each row's run_id from its run folder, as every reader takes it (store/views.py)
    # key columns added later (trial) are their default in files written before them
    added = "".join(f", {default} AS {name}" for name, default in KEY_DEFAULTS.items()
                    if name in SORT_COLUMNS[table] and not _has_column(paths, name))
    src = (f"(SELECT * REPLACE ({RUN_OF_FILE_SQL} AS run_id){added} FROM read_parquet({sql_list(paths)}, "
           "union_by_name = true, filename = true, file_row_number = true))")
    order = ORDER_COLUMN[table]
    sort = ", ".join(SORT_COLUMNS[table])
    star = "* EXCLUDE (filename, file_row_number)"
    if table == "metrics":
        has_label = _has_column(paths, "label")
        star = (f"* EXCLUDE (filename, file_row_number{', label' if has_label else ''}), "
                f"{_label_fill(has_label)} AS label")
    if table in KEYS:
        keys = ", ".join(KEYS[table])
        first = "cache_hit IS NOT TRUE DESC, " if table == "judge_calls" else ""  # store/merge.PRIORITY
        qualify = (f"row_number() OVER (PARTITION BY {keys} ORDER BY {first}{order} DESC NULLS LAST, filename DESC, "
                   f"file_row_number DESC) = 1")
    else:
        keys = ", ".join(SET_KEYS[table])
        qualify = f"dense_rank() OVER (PARTITION BY {keys} ORDER BY {order} DESC NULLS LAST, filename DESC) = 1"
    return f"SELECT {star} FROM {src} QUALIFY {qualify} ORDER BY {sort}"
