"""The `annotations` view of the store's databases (store/views.py): every label file read in
append order, with when each label arrived; a label file that cannot be read left out.

Why apart from views.py: labels change far more often than runs (every save on Annotate), and
a kept database can take a new label file by defining this view again (`labels_refreshed`)
without building its run views anew; this module holds everything that step needs.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from evalcore.store import fs as _fs
from evalcore.store.columns import ANNOTATION_COLUMNS, Column
from evalcore.store.merge_sql import sql_list
from evalcore.store.quarantine import read_errors, unreadable
from evalcore.store.runstore import RunStore

# When a label arrived, from where it sits in the append-only log: part files are named
# part-<UTC time to the microsecond>-<random>.parquet (parquet_write.write_part), one append per file,
# rows in the order given. `arrival` sorts in append order (ties of "when" go to the later
# arrival); `arrived_at` is the file's time (NULL for a file named otherwise).
ARRIVAL_SQL = (
    "make_timestamptz(epoch_us(try_strptime(regexp_extract(filename, 'part-([0-9]{8}T[0-9]{12})-[^/]*$', 1), "
    "'%Y%m%dT%H%M%S%f'))) AS arrived_at, "
    "regexp_extract(filename, '[^/]*$') || '#' || lpad(CAST(file_row_number AS VARCHAR), 12, '0') AS arrival")
ANNOTATION_VIEW_COLUMNS: tuple[Column, ...] = (*ANNOTATION_COLUMNS, ("arrived_at", "TIMESTAMPTZ"),
                                                ("arrival", "VARCHAR"))


def annotation_files(store: RunStore) -> list[Path]:
    ann = store.annotations_dir()
    return sorted(p for p in ann.glob("*.parquet")) if ann.is_dir() else []


def annotation_key(store: RunStore, path: Path) -> str:
    """How a damaged annotation file is named: its path under a local store, its URL on S3."""
    return str(path) if _fs.is_remote(path) else str(path.relative_to(store.root))


def find_damaged_annotations(store: RunStore) -> dict[str, str]:
    """After the one read failed: which annotation files' footers cannot be read. One such file
    must not take every reading down; its labels are left out, and it is listed (never moved:
    a reader does not write)."""
    found = {}
    for path in annotation_files(store):
        why = unreadable(path)
        if why:
            found[annotation_key(store, path)] = why
    return found


def annotations_view(con: duckdb.DuckDBPyConnection, store: RunStore, left_out: set[str]) -> None:
    """(Re)define `annotations` over the store's annotation files now, less those `left_out`
    (damaged). Reads every file's footer: a damaged one raises here."""
    ann = [p for p in annotation_files(store) if annotation_key(store, p) not in left_out]
    files = (f"SELECT * EXCLUDE (filename, file_row_number), {ARRIVAL_SQL} FROM read_parquet({sql_list(ann)}, "
             "union_by_name = true, filename = true, file_row_number = true) UNION ALL BY NAME " if ann else "")
    con.execute(f"CREATE OR REPLACE VIEW annotations AS {files}SELECT * FROM _empty_annotations")


def labels_refreshed(con: duckdb.DuckDBPyConnection, store: RunStore) -> bool:
    """A kept database brought up to the store's labels in place: only annotation files were
    added since it was built (a saved label), so its run views stand and `annotations` is
    defined again. False (build anew) when it had left out a damaged annotation file or a new
    one cannot be read. Under views._LOCK; a query already running on another cursor keeps its snapshot."""
    if con.execute("SELECT count(*) FROM damaged_annotations").fetchone()[0]:
        return False
    try:
        con.execute("BEGIN TRANSACTION")
        annotations_view(con, store, set())
        con.execute("COMMIT")
    except read_errors():
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass
        return False
    return True
