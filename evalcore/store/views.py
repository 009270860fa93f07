"""Read side of the store: DuckDB views over the runs' canonical files.

Views (one connection = a consistent set of views, over the runs asked for or all of them):
  runs               one row per run (from run.json manifests)
  questions, responses, metrics, judge_calls, claims, context_verdicts, metric_repeats
                     exactly one row per key: the canonical files that each run's pointer names
                     (metric_repeats: the K judge verdicts of `score --repeats K`; empty for
                     runs scored with K = 1); of the tables of answers, trial 0's rows only
  trial_responses, trial_metrics, trial_claims, trial_context_verdicts, trial_metric_repeats
                     the same tables with every trial of `run --trials T` (`trial`: 0 .. T-1;
                     0 for every row of a run without trials)
  summary_metrics, summary_responses, summary_judges, summary_labels
                     the per-run summaries written at compaction (store/summary.py)
  metric_wide        every answer's metric values in one row (store/wide.py; columns differ
                     by run, `wide_columns` says which exist)
  annotations        every human annotation (append-only, never de-duplicated), with when it
                     arrived: `arrived_at` (the time in its part file's name) and `arrival` (a
                     key that sorts in append order: file name, then row in the file)
  damaged_runs       runs left out of every view above, and why (one line each, naming the file)
  damaged_annotations  annotation files whose footer cannot be read: left out of `annotations`
User-supplied values only ever reach SQL as bound parameters.

Readers do not de-duplicate: compaction did (store/compaction.py). The one exception is a
format-1 run (written before compaction existed, not yet upgraded by a write): its part files
are merged here by the very rule compaction uses (`merge_sql`), and its summaries computed by
the very SQL compaction stores, so the numbers are the same before and after the upgrade.
Rows written since a run's last compaction are not visible; writers publish them when they end.

NaN: Parquet min/max statistics ignore NaN, and DuckDB's statistics propagation then folds
`isnan(value)` to false for a file it believes has no NaN. Every connection disables that
optimizer (and the store writes no statistics for NaN-bearing columns), so NaN filters hold.

Connections are kept: defining the views costs ~20-50 ms (a database, manifests parsed, every
file's footer read), far more than a typical query over compacted files. So `open_db` keeps a
few databases per process, keyed by the store's state token (RunStore.state_token: it changes
whenever anything readers can see changes) and the runs asked for, and hands each caller its
own cursor (a DuckDB cursor is a connection of its own to the same database: safe in one
thread while other threads use theirs). A changed run gets a new key, so nothing is stale; a
label saved (new annotation files, runs unchanged) redefines the kept database's `annotations`
view in place, so an annotator's next answer does not wait for every run view to be built again.

One damaged run stays inside itself: a run whose pointer is missing or unreadable is left out
at once; a file that cannot be read makes DuckDB's one read over every run fail, and only then
is each run's files' footers read to find which runs to leave out (so a healthy store pays
nothing for the check). Runs left out are listed in `damaged_runs`; asking for one by name
(`runs=[...]`) raises layout.RunDamaged, one line naming the file. An annotation file that
cannot be read is left out of `annotations` the same way (every other label still reads) and
listed in `damaged_annotations`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import duckdb

from evalcore.store import fs as _fs
from evalcore.store.annotation_views import (ANNOTATION_VIEW_COLUMNS, annotations_view, find_damaged_annotations,
                                            labels_refreshed)
from evalcore.store.columns import COLUMNS, TRIAL_TABLES, Column, create_table_sql
from evalcore.store.merge_sql import merge_sql
from evalcore.store.pointer_rules import columns_problem
from evalcore.store.quarantine import misfiled, read_errors, unreadable
from evalcore.store.layout import RUN_TABLES, RunDamaged, is_legacy, pending_parts, read_pointer
from evalcore.store.run_rows import before_trials, by_folder, create_trial_views, files_with_trials
from evalcore.store.runstore import RunStore
from evalcore.store.summary import DERIVED_TABLES, summary_sql
from evalcore.store import wide as _wide

if TYPE_CHECKING:
    import pandas as pd

_MANIFEST_COLUMNS: tuple[Column, ...] = (
    ("run_id", "VARCHAR"), ("name", "VARCHAR"), ("kind", "VARCHAR"), ("status", "VARCHAR"),
    ("created_at", "TIMESTAMPTZ"), ("finished_at", "TIMESTAMPTZ"),
    ("methods", "VARCHAR[]"), ("judges", "VARCHAR[]"),
    ("dataset", "VARCHAR"), ("dataset_fingerprint", "VARCHAR"), ("n_questions", "BIGINT"),
    ("evalcore_version", "VARCHAR"), ("manifest", "VARCHAR"),
)


@dataclass
class Sources:
    """Which files the views read: canonical files per table, and format-1 parts per table."""

    canonical: dict[str, list[Path]] = field(default_factory=dict)
    legacy: dict[str, list[Path]] = field(default_factory=dict)
    legacy_runs: list[str] = field(default_factory=list)
    by_run: dict[str, list[Path]] = field(default_factory=dict)  # every file each run contributes
    damaged: dict[str, RunDamaged] = field(default_factory=dict)  # runs left out, and why
    without: dict[str, list[str]] = field(default_factory=dict)  # derived table -> runs lacking its file
    damaged_annotations: dict[str, str] = field(default_factory=dict)  # file (under the store) -> why unreadable


def sources(store: RunStore, run_ids: Sequence[str], damaged: dict[str, RunDamaged] | None = None,
            damaged_annotations: dict[str, str] | None = None) -> Sources:
    out = Sources(damaged=dict(damaged or {}), damaged_annotations=dict(damaged_annotations or {}))
    for run_id in run_ids:
        if run_id in out.damaged:
            continue
        run_dir = store.run_dir(run_id)
        if is_legacy(run_dir):
            out.legacy_runs.append(run_id)
            for table in RUN_TABLES:
                parts = pending_parts(run_dir, table)
                out.legacy.setdefault(table, []).extend(parts)
                out.by_run.setdefault(run_id, []).extend(parts)
            continue
        try:
            files = read_pointer(run_dir)["files"]
        except RunDamaged as exc:  # one damaged run must not hide every other one
            out.damaged[run_id] = exc
            continue
        for name, rel in files.items():
            out.canonical.setdefault(name, []).append(run_dir / rel)
            out.by_run.setdefault(run_id, []).append(run_dir / rel)
        for name in DERIVED_TABLES:
            if name not in files:  # compacted before this table existed: computed when read
                out.without.setdefault(name, []).append(run_id)
    return out


def _find_damaged(store: RunStore, src: Sources) -> dict[str, RunDamaged]:
    """After the one read over every run failed: which runs hold a file whose footer cannot be
    read (the check DuckDB's read made, run by run)."""
    found = {}
    for run_id, paths in src.by_run.items():
        run_dir = store.run_dir(run_id)
        for path in paths:
            why = unreadable(path)
            if why:
                rel = path.relative_to(run_dir).as_posix()
                found[run_id] = RunDamaged(run_dir, f"{rel} is unreadable ({why})", file=rel)
                break
    return found


def _manifest_rows(manifests) -> list[dict[str, Any]]:
    return [{
        "run_id": m.run_id, "name": m.name, "kind": m.kind, "status": m.status,
        "created_at": _utc(m.created_at), "finished_at": _utc(m.finished_at), "methods": m.methods,
        "judges": m.judges, "dataset": m.dataset.get("name") or m.dataset.get("path"),
        "dataset_fingerprint": m.dataset.get("fingerprint"),
        "n_questions": m.counts.get("questions"), "evalcore_version": m.evalcore_version,
        "manifest": m.model_dump_json(),
    } for m in manifests]


def _utc(when: datetime | None) -> datetime | None:
    """A manifest time as DuckDB should read it: a time without a zone is UTC (as pyarrow took
    it), not the session's local time."""
    return when.replace(tzinfo=timezone.utc) if when is not None and when.tzinfo is None else when


def _table_sql(con: duckdb.DuckDBPyConnection, table: str, src: Sources, have: set[str] | None = None) -> str:
    """The rows of `table` over the runs read. `have`: for a table of answers, its files that
    have a `trial` column (run_rows.files_with_trials); the others' rows are trial 0."""
    parts = []
    files = src.canonical.get(table) or []
    newer = [p for p in files if have is None or str(p) in have]
    older = [p for p in files if have is not None and str(p) not in have]
    if newer:
        parts.append(by_folder(newer))
    if older:
        parts.append(before_trials(older))
    if src.legacy.get(table):  # format 1: merged when read (a trial column added where the key has one)
        parts.append(f"SELECT * FROM ({merge_sql(table, src.legacy[table])})")
    if not parts:
        return f"SELECT * FROM {_typed_table(con, f'_empty_{table}', COLUMNS[table])}"
    return " UNION ALL BY NAME ".join(parts)


def _typed_table(con: duckdb.DuckDBPyConnection, name: str, columns: tuple[Column, ...],
                 rows: Sequence[dict[str, Any]] = ()) -> str:
    """A real table `name` (so cursors see it) with `columns` (store/columns.py) holding
    `rows` (dicts by column name); with no rows, the typed empty table a view unions with.

    Why SQL and not an Arrow table: these tables hold a few rows (the manifests, the damaged
    runs), and importing pyarrow, numpy with it, took a third of `evalcore runs`' start
    (pyarrow's from_pylist imported pandas too, half a second more). DuckDB takes the rows as
    one list per column."""
    con.execute(create_table_sql(name, columns))
    if rows:
        values = {f"c{i}": [row.get(column) for row in rows] for i, (column, _) in enumerate(columns)}
        con.execute(f"INSERT INTO {name} SELECT {', '.join(f'unnest(${c})' for c in values)}", values)
    return name


# Columns a derived table has only for some runs, given to every run's rows (NULL where absent),
# so a reader can name them whatever runs it reads: `trials`, of runs asked with --trials T.
_ADDED = {"summary_responses": " UNION ALL BY NAME SELECT CAST(NULL AS BIGINT) AS trials WHERE false"}


def _summary_sql(name: str, src: Sources, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """A derived table's view: the runs' stored files, and the same SQL computed on the fly
    for runs that have none (format-1 runs; runs last compacted before the table existed)."""
    parts = []
    if src.canonical.get(name):
        parts.append(by_folder(src.canonical[name]))
    live = src.legacy_runs + src.without.get(name, [])
    if live or not parts:  # computed on the fly (or a typed empty view)
        runs = ", ".join(_wide.literal(r) for r in live)
        where = f"run_id IN ({runs})" if runs else "false"
        parts.append(_wide.compute_sql(con, where) if name == _wide.WIDE_TABLE else summary_sql(name, where))
    return " UNION ALL BY NAME ".join(f"({p})" for p in parts)


_KEPT: "OrderedDict[tuple, duckdb.DuckDBPyConnection]" = OrderedDict()
_KEPT_MAX = 16
_LABELS: dict[int, str] = {}  # id(kept database) -> the annotations' state its `annotations` view shows
_RUNS_SHOWN: dict[int, frozenset[str]] = {}  # id(kept whole-store database) -> its readable runs
_IN_USE: dict[int, int] = {}  # id(database) -> cursors handed out and not yet closed
_RETIRED: dict[int, duckdb.DuckDBPyConnection] = {}  # evicted, closed when their last cursor is
READER_MEMORY = "1GB"
_LOCK = threading.Lock()


_DAMAGED_COLUMNS: tuple[Column, ...] = (("run_id", "VARCHAR"), ("name", "VARCHAR"), ("file", "VARCHAR"),
                                         ("reason", "VARCHAR"))
_DAMAGED_FILES_COLUMNS: tuple[Column, ...] = (("file", "VARCHAR"), ("reason", "VARCHAR"))





def _build(store: RunStore, runs: Sequence[str] | None) -> duckdb.DuckDBPyConnection:
    misnamed: dict[str, RunDamaged] = {}  # folders that are not the run they name: listed apart
    manifests = store.manifests(damaged=misnamed)
    known = [m.run_id for m in manifests]  # = their folders' names (RunStore.manifest checks)
    wanted = known if runs is None else [r for r in known if r in set(runs)]
    src = sources(store, wanted, damaged=misnamed)
    while True:  # each round leaves out more runs or annotation files, or ends
        _refuse_damaged(src, runs)
        try:
            con = _connect(store, manifests, src)
        except read_errors():
            # a file that cannot be read: find the runs holding one (their footers), and annotation
            # files that cannot be read, and leave them out
            more = _find_damaged(store, src)
            bad_annotations = find_damaged_annotations(store)
            if not more and not set(bad_annotations) - set(src.damaged_annotations):
                raise
        else:
            more, bad_annotations = _find_misfiled(store, src, con), {}
            if not more:
                return con
            con.close()
        src = sources(store, wanted, damaged=src.damaged | more,
                      damaged_annotations=src.damaged_annotations | bad_annotations)


def _find_misfiled(store: RunStore, src: Sources, con: duckdb.DuckDBPyConnection) -> dict[str, RunDamaged]:
    """The runs whose canonical file of a run table is another table's (its columns say so: a
    responses file named like the questions file). A healthy store pays one catalog query (the
    views' columns, known since they were created: no file is read again); only when a view's
    columns are not its table's are the files' schemas read, one by one."""
    views = con.execute("SELECT table_name, list(column_name) FROM duckdb_columns() "
                        f"WHERE table_name IN ({', '.join(_wide.literal(t) for t in RUN_TABLES)}) GROUP BY 1").fetchall()
    if not any(columns_problem(table, names) for table, names in views):
        return {}
    found = {}
    for table, paths in src.canonical.items():
        for path in paths if table in RUN_TABLES else []:
            run_dir = path.parent.parent
            problem = misfiled(path, table)
            if problem and run_dir.name not in found:
                rel = path.relative_to(run_dir).as_posix()
                found[run_dir.name] = RunDamaged(run_dir, f"{rel}: {problem}", file=rel)
    return found


def _refuse_damaged(src: Sources, runs: Sequence[str] | None) -> None:
    """A run asked for by name that is damaged: say so, rather than show it empty."""
    for run_id in runs or ():
        if run_id in src.damaged:
            raise src.damaged[run_id]


def _connect(store: RunStore, manifests, src: Sources) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    try:
        _fs.use_in(con, store.root)  # s3:// paths read through s3fs (store/fs.py)
        con.execute("SET disabled_optimizers = 'statistics_propagation'")
        con.execute("SET parquet_metadata_cache = true")
        # several kept databases live in one dashboard process: each gets a bounded share of memory
        # (DuckDB's default is 80% of RAM per database) for its file cache and query work
        con.execute(f"SET memory_limit = '{READER_MEMORY}'")
        # tables, not registered Arrow objects: cursors (other connections) must see them
        _typed_table(con, "runs", _MANIFEST_COLUMNS, _manifest_rows([m for m in manifests if m.run_id not in src.damaged]))
        names = {m.run_id: m.name for m in manifests}
        _typed_table(con, "damaged_runs", _DAMAGED_COLUMNS,
                     [{"run_id": r, "name": names.get(r, d.name), "file": d.file, "reason": d.problem}
                      for r, d in sorted(src.damaged.items())])
        have = files_with_trials(con, [p for table in TRIAL_TABLES for p in src.canonical.get(table) or []])
        for table in RUN_TABLES:
            if table in TRIAL_TABLES:
                create_trial_views(con, table, _table_sql(con, table, src, have))
            else:
                con.execute(f"CREATE VIEW {table} AS {_table_sql(con, table, src)}")
        for name in DERIVED_TABLES:
            con.execute(f"CREATE VIEW {name} AS {_summary_sql(name, src, con)}{_ADDED.get(name, '')}")
        _typed_table(con, "damaged_annotations", _DAMAGED_FILES_COLUMNS,
                     [{"file": f, "reason": why} for f, why in sorted(src.damaged_annotations.items())])
        # BY NAME over a typed empty table: part files written before a column existed
        # (sample_id, inclusion_prob) read it as NULL instead of lacking it
        _typed_table(con, "_empty_annotations", ANNOTATION_VIEW_COLUMNS)
        annotations_view(con, store, set(src.damaged_annotations))
    except BaseException:
        con.close()
        raise
    return con


@contextmanager
def open_db(store: RunStore, runs: Sequence[str] | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB cursor with the store's views defined.

    `runs` restricts every per-run view to those runs (a per-run query then opens only their
    files); `runs` view always lists every readable run."""
    runs_state, labels_state = store.state_parts()
    key = (str(store.root.resolve()), runs_state, None if runs is None else tuple(sorted(set(runs))))
    with _LOCK:
        con = _KEPT.get(key)
        if con is None and runs is not None:  # every readable run asked for: the whole database is it
            whole = _KEPT.get(key[:2] + (None,))
            if whole is not None and _readable(whole) == set(key[2]):
                key, con, runs = key[:2] + (None,), whole, None  # rebuilt below (labels): the whole store's
        if con is not None and _LABELS.get(id(con)) != labels_state and not labels_refreshed(con, store):
            _retire(key, _KEPT.pop(key))
            con = None
        if con is None:
            con = _KEPT[key] = _build(store, runs)
            _IN_USE.setdefault(id(con), 0)
            while len(_KEPT) > _KEPT_MAX:
                _retire(*_KEPT.popitem(last=False))
        else:
            _KEPT.move_to_end(key)
        _LABELS[id(con)] = labels_state
        cur = con.cursor()
        _IN_USE[id(con)] = _IN_USE.get(id(con), 0) + 1
    try:
        yield cur
    finally:
        cur.close()
        with _LOCK:
            _IN_USE[id(con)] -= 1
            if _IN_USE[id(con)] == 0 and id(con) in _RETIRED:
                _RETIRED.pop(id(con)).close()
                del _IN_USE[id(con)]


def query_df(store: RunStore, sql: str, params: Any = None, runs: Sequence[str] | None = None) -> pd.DataFrame:
    """One query over the store's views as a DataFrame, parameters bound (a list for `?`, a
    dict for `$name`); `runs` restricts the per-run views to those runs (open_db)."""
    with open_db(store, runs=runs) as con:
        return con.execute(sql, params if params is not None else []).df()


_FRAMES = threading.local()  # one in-memory DuckDB per thread for query_frame (connecting costs ms)


def query_frame(sql: str, **frames: "pd.DataFrame") -> "pd.DataFrame":
    """One query over pandas frames (each named by its keyword), in memory, as a DataFrame.

    Why here: a rule written once in SQL (the answer-class rule, the diagnosis) must also judge
    a frame already in memory (one answer on the Questions page), and only the store opens
    DuckDB. Nothing is read from disk; each thread keeps one connection."""
    con = getattr(_FRAMES, "con", None)
    if con is None:
        con = _FRAMES.con = duckdb.connect(":memory:")
        con.execute("SET python_enable_replacements = false")  # only the frames named here, never a variable
    for name, frame in frames.items():
        con.register(name, frame)
    try:
        return con.execute(sql).df()
    finally:
        for name in frames:
            con.unregister(name)


def wide_columns(store: RunStore, runs: Sequence[str] | None = None) -> frozenset[str]:
    """The columns metric_wide has over `runs` (all runs when None): store/wide.py's value and
    label columns exist only for metrics some run has."""
    with open_db(store, runs=runs) as con:
        return frozenset(r[0] for r in con.execute(f"DESCRIBE {_wide.WIDE_TABLE}").fetchall())


def _readable(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The runs a kept database over the whole store shows (its `runs` view), read once.

    Why: a page asking for every run by name (the leaderboard's CIs over all its rows) got a
    database of its own, built again (~0.2 s on a first visit) though the whole store's, with
    exactly those runs in every view, was already kept. Under _LOCK."""
    if id(con) not in _RUNS_SHOWN:
        cur = con.cursor()
        try:
            _RUNS_SHOWN[id(con)] = frozenset(r[0] for r in cur.execute("SELECT run_id FROM runs").fetchall())
        finally:
            cur.close()
    return _RUNS_SHOWN[id(con)]


def _retire(key: tuple, con: duckdb.DuckDBPyConnection) -> None:
    """Close an evicted database once no cursor of it is in use (closing a DuckDB connection
    closes its cursors too: another thread may be in the middle of a query). Under _LOCK."""
    _LABELS.pop(id(con), None)
    _RUNS_SHOWN.pop(id(con), None)
    if _IN_USE.get(id(con), 0) == 0:
        _IN_USE.pop(id(con), None)
        con.close()
    else:
        _RETIRED[id(con)] = con


def forget_connections() -> None:
    """Close every kept database (tests; a store replaced wholesale underneath a process)."""
    with _LOCK:
        while _KEPT:
            _retire(*_KEPT.popitem(last=False))
