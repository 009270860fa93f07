"""A compaction's derived tables: the run's summaries and its one-row-per-answer pivot, computed
from the canonical files the compaction just wrote (store/compaction.py) and written beside them.

Why apart: the merge rules and the pointer's crash safety are compaction.py's; how the derived
tables are computed is a question of speed (they are most of a live run's final publish,
bench/bench_runner.py) with rules of its own: which views each SQL reads, which jobs run side
by side, and which error is reported when several fail (the first in the derived tables' order,
as a sequential loop did).
"""

from __future__ import annotations

from typing import Callable

import duckdb
import pyarrow as pa

from evalcore.store import fs as _fs
from evalcore.store.columns import TRIAL_TABLES
from evalcore.store.compaction_db import compaction_connection
from evalcore.store.fs import Location
from evalcore.store.layout import DATA_DIR, run_root
from evalcore.store.merge_sql import sql_list
from evalcore.store.paired_jobs import run_jobs
from evalcore.store.parquet_write import write_parquet_atomic
from evalcore.store.summary import DERIVED_TABLES, SUMMARY_TABLES, summary_sql
from evalcore.store.tables import SCHEMAS
from evalcore.store.trial_stats import later_trials
from evalcore.store.wide import WIDE_TABLE, WIDE_WRITE, compute_sql as wide_compute_sql
from evalcore.store.wide_arrow import wide_from_file

# the tables the derived tables' SQL reads (store/summary.py, store/wide.py): only those get a
# view (a view costs a DESCRIBE of its file: ~4 ms of a live run's final publish each)
DERIVED_FROM = ("responses", "metrics", "judge_calls")


_NO_JUDGE_CALLS: dict[str, pa.Schema] = {}  # the judges' summary of a run without judge calls, per SQL


def _no_judge_calls(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """The judges' summary of a run that has no judge call: no row, in the columns and types
    DuckDB gives it (computed once per process: ~10 ms of every publish of an unjudged run)."""
    schema = _NO_JUDGE_CALLS.get(sql)
    if schema is None:
        arrow = con.sql(sql).to_arrow_table()
        if arrow.num_rows:  # (never: every row comes from a judge call)
            return arrow
        schema = _NO_JUDGE_CALLS[sql] = arrow.schema
    return schema.empty_table()


def _define(con: duckdb.DuckDBPyConnection, table: str, path: Location | None, merged: bool = False) -> None:
    """The view the derived tables' SQL reads `table` through: its canonical file. Tables of
    answers get two, as readers have (store/views.py): `trial_<table>` with every trial, `<table>`
    with trial 0's rows; a file merged before trials existed has no `trial`, and its rows are
    trial 0's. `merged`: this compaction wrote the file, in the table's schema (store/merge.py),
    so it is not asked for its columns (a DESCRIBE reads its footer: ~4 ms of every publish)."""
    if path is None:
        con.register(f"_empty_{table}", SCHEMAS[table].empty_table())
        rows = f"SELECT * FROM _empty_{table}"
    else:
        rows = f"SELECT * FROM read_parquet({sql_list([path])})"
    if table not in TRIAL_TABLES:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS {rows}")
        return
    columns = SCHEMAS[table].names if path is None or merged else [
        r[0] for r in con.execute(f"DESCRIBE {rows}").fetchall()]
    if "trial" not in columns:
        rows = f"SELECT *, CAST(0 AS INTEGER) AS trial FROM ({rows})"
    con.execute(f"CREATE OR REPLACE TEMP VIEW trial_{table} AS {rows}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT * FROM trial_{table} WHERE trial = 0")


def write_derived(run_dir: Location, files: dict[str, str], tag: str, merged: set[str]) -> dict[str, str]:
    """Compute and write the run's derived tables from its canonical `files`: {name: file}.
    Jobs on connections of their own, two at a time (store/paired_jobs.py): the
    one-row-per-answer pivot with the label counts, and each other summary alone (so the
    shorter ones fill whichever worker frees first: the metrics' summary is now the longest,
    the pivot being computed in Arrow); whether the run has trials is read from the files'
    footers (store/trial_stats.py), so no job waits for another. On object storage, where a
    connection is a new database (~35 ms), all of them in turn on one."""
    con = compaction_connection(run_dir)  # its views are its own (store/compaction_db.py)
    try:
        def write(name: str, arrow: pa.Table) -> str:
            rel = f"{DATA_DIR}/{name}-{tag}.parquet"
            write_parquet_atomic(run_dir / rel, arrow, **(WIDE_WRITE if name == WIDE_TABLE else {}),
                                 within=run_root(run_dir))
            return rel

        def define(c: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> None:
            for table in tables:
                _define(c, table, run_dir / files[table] if table in files else None, merged=table in merged)

        def summaries(c: duckdb.DuckDBPyConnection, names: tuple[str, ...]) -> dict[str, str]:
            out = {}
            for name in names:
                sql = summary_sql(name, trials=trials)
                no_calls = name == "summary_judges" and "judge_calls" not in files
                out[name] = write(name, _no_judge_calls(c, sql) if no_calls else c.sql(sql).to_arrow_table())
            return out

        trials = later_trials([run_dir / files[t] for t in ("responses", "metrics") if t in files])
        counted = trials is None  # a footer does not say: the rows are counted, on the views defined here
        if counted:
            define(con, DERIVED_FROM)
            trials = con.execute("SELECT (SELECT count(*) FROM trial_responses WHERE trial > 0) + "
                                 "(SELECT count(*) FROM trial_metrics WHERE trial > 0)").fetchall()[0][0] > 0
        if _fs.is_remote(run_dir):
            define(con, () if counted else DERIVED_FROM)
            return {**summaries(con, SUMMARY_TABLES), WIDE_TABLE: write(WIDE_TABLE, _wide(con))}

        def alone(name: str) -> Callable[[], dict[str, str]]:
            def job() -> dict[str, str]:
                c = compaction_connection(run_dir)
                try:
                    if not _cached_without_rows(name, files, trials):
                        define(c, SUMMARY_READS[name])
                    return summaries(c, (name,))
                finally:
                    c.close()
            return job

        # in the derived tables' order (a failure of several is reported as the sequential loop
        # did: the first in that order), the longest two started first
        metrics = run_dir / files["metrics"] if "metrics" in files else None
        jobs = {name: alone(name) for name in SUMMARY_TABLES if name != "summary_labels"}
        jobs["pivot"] = lambda: _wide_alone(run_dir, metrics, define, write, summaries)
        done = run_jobs(jobs, first=["pivot", "summary_metrics"])
        found = {table: rel for written in done.values() for table, rel in written.items()}
        return {name: found[name] for name in DERIVED_TABLES}
    finally:
        con.close()


# the views each summary's SQL reads (store/summary.py; `trial_<table>` comes with `<table>`)
SUMMARY_READS = {"summary_metrics": ("metrics",), "summary_responses": ("responses",),
                 "summary_judges": ("judge_calls", "responses")}


def _cached_without_rows(name: str, files: dict[str, str], trials: bool) -> bool:
    """Whether `name` is the judges' summary of a run without judge calls whose empty table
    this process already knows (_no_judge_calls): no view is needed for it."""
    return name == "summary_judges" and "judge_calls" not in files and summary_sql(name, trials=trials) in _NO_JUDGE_CALLS


def _wide(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """The one-row-per-answer pivot of the `metrics` view (store/wide.py)."""
    return con.sql(wide_compute_sql(con)).to_arrow_table()


def _wide_alone(run_dir: Location, metrics: Location | None, define: Callable, write: Callable,
                summaries: Callable) -> dict[str, str]:
    """The label counts and the pivot (both read `metrics` only; in the derived tables' order,
    so a failure of both names the first), written from a connection of their own (its views
    are its own: store/compaction_db.py). The pivot of a local file is computed in Arrow
    (store/wide_arrow.py: the same table, ~6.5 ms instead of the SQL's 20-24 ms), or by the
    SQL when that declines."""
    con = compaction_connection(run_dir)
    try:
        define(con, ("metrics",))
        labels = summaries(con, ("summary_labels",))
        pivot = wide_from_file(metrics) if metrics is not None else None
        return {**labels, WIDE_TABLE: write(WIDE_TABLE, pivot if pivot is not None else _wide(con))}
    finally:
        con.close()
