"""The DuckDB connection one compaction computes its summaries on.

Why not a new database per compaction: creating an in-memory DuckDB database (its catalog of
built-in functions) and closing it costs ~35 ms of CPU on this machine, more than the rest of
a small run's compaction; a live run, an import and every scoring pass end with one. A local
compaction instead gets its own connection (a cursor: ~1.5 ms) to one database kept by the
process. What it defines there is its own: compaction creates TEMP views and registers its
empty tables on that connection, and both are visible to that connection only, so compactions
in other threads never see each other's views. The settings every compaction wants are the
database's, set once.

A compaction of an s3:// run gets a database of its own, as before: our s3fs filesystem is
registered on the database, and two stores may use different ones. A process forked after
the database was created (its threads do not survive a fork) makes a new one.
"""

from __future__ import annotations

import os
import threading

import duckdb

from evalcore.store import fs as _fs
from evalcore.store.fs import Location

_SETTINGS = (
    # NaN filters must hold (store/views.py says why)
    "SET disabled_optimizers = 'statistics_propagation'",
    # the summaries scan each table once: DuckDB's file cache would only hold the run's data in
    # memory (a 100 MB import grew by it)
    "SET enable_external_file_cache = false",
)
_KEPT: dict[int, duckdb.DuckDBPyConnection] = {}  # pid -> the process's database
_LOCK = threading.Lock()


def _configured(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    for statement in _SETTINGS:
        con.execute(statement)
    return con


def compaction_connection(run_dir: Location) -> duckdb.DuckDBPyConnection:
    """A connection of its own for one compaction of `run_dir`; the caller closes it."""
    if _fs.is_remote(run_dir):
        con = duckdb.connect(":memory:")
        try:
            _fs.use_in(con, run_dir)
            return _configured(con)
        except BaseException:
            con.close()
            raise
    with _LOCK:
        database = _KEPT.get(os.getpid())
        if database is None:
            _KEPT.clear()  # a parent's database, inherited by a fork: left alone, never used
            database = _KEPT[os.getpid()] = _configured(duckdb.connect(":memory:"))
        return database.cursor()
