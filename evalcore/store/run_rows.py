"""The SQL of a run table's rows as readers see them (store/views.py builds its views from it).

- `by_folder`: each row's run_id from the run folder its file lies in, never the stored column
  (a copy of a run folder holds the original's rows, ids and all, and a reader trusting them
  would count that run twice: docs/store.md, "Run ids");
- the tables of answers' two views (docs/store.md, "Trials"): `trial_<table>` with every trial
  of `run --trials T`, and `<table>` with trial 0's rows alone, the rows every reader that knows
  nothing of trials has always read (a run asked with trials reads there as a run of its first
  trial). Files written before trials existed have no `trial` column (`files_with_trials` finds
  the others from their footers, in one query): their rows are trial 0, read unfiltered. The
  others are filtered by `trial = 0` on the file's own column, which the Parquet reader answers
  from each row group's min and max, so a file of trial 0 only reads as if unfiltered (a filter
  on coalesce(trial, 0) cost every read of the table 10-25% more CPU).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import duckdb

from evalcore.store.layout import RUN_OF_FILE_SQL
from evalcore.store.merge_sql import sql_list


def by_folder(paths: list[Path]) -> str:
    """The rows of `paths`, each with the run_id of the run folder its file lies in."""
    return (f"SELECT * EXCLUDE (filename) REPLACE ({RUN_OF_FILE_SQL} AS run_id) "
            f"FROM read_parquet({sql_list(paths)}, union_by_name = true, filename = true)")


def files_with_trials(con: duckdb.DuckDBPyConnection, files: Sequence[Path]) -> set[str]:
    """Those of `files` (as text) that have a `trial` column: every file merged since trials exist."""
    if not files:
        return set()
    return {row[0] for row in con.execute(f"SELECT DISTINCT file_name FROM parquet_schema({sql_list(list(files))}) "
                                          "WHERE name = 'trial'").fetchall()}


def before_trials(paths: list[Path]) -> str:
    """The rows of files written before trials existed: all trial 0."""
    return f"SELECT *, CAST(0 AS INTEGER) AS trial FROM ({by_folder(paths)})"


def create_trial_views(con: duckdb.DuckDBPyConnection, table: str, every: str) -> None:
    """`trial_<table>` over `every` (rows of every trial, each with its `trial`), and `<table>`
    with trial 0's rows alone."""
    con.execute(f"CREATE VIEW trial_{table} AS {every}")
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM trial_{table} WHERE trial = 0")
