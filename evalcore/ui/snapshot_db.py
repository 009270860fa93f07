"""The dashboard's snapshot: a DuckDB copy of the store's views, kept on disk, refreshed per run.

Why: `open_db` re-reads Parquet and de-duplicates (a window over every row) on each query;
on 20 runs x 2,000 questions x 30 metrics that is ~1.5 s per aggregate, far over the
dashboard's budget (a page < 2 s, a query < 200 ms). The snapshot pulls each run's rows
out of `open_db`'s views once (so the store's de-duplication rules still apply), keeps
them in tables named like the views, and pre-aggregates per (run, method) so the
leaderboard reads a few hundred rows instead of millions.

Persistence: pulling every run out of Parquet takes 10-20 s on that store, which used to
be paid by the first page of every server start. The snapshot now lives in a DuckDB file,
<store>/_shared/app_cache/snapshot.duckdb, beside each run's signature, so a restart only
re-reads the runs whose files changed since. It is a cache and nothing more: the store never
reads it, deleting it costs one rebuild, and a file written by another cache version (see
FINGERPRINT) is emptied and rebuilt. When the file cannot be opened (another process, e.g.
a second dashboard, holds DuckDB's lock; a read-only store) the snapshot lives in memory.

Freshness: a run is re-read when the set of its part files (name, size, mtime) or its
run.json changes, so a live run being written is picked up on the next page render while
finished runs are never re-read. Thread safety: Streamlit serves sessions from threads;
every query uses its own cursor and a refresh swaps a run's rows, and its signature, inside
one transaction (so a crash never leaves rows that disagree with their signature).
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import duckdb
import pandas as pd

from evalcore.queries import open_db
from evalcore.store import RunStore
from evalcore.tables import SCHEMAS
from evalcore.ui.snapshot_file import FINGERPRINT, open_file, signature
from evalcore.ui.snapshot_sql import DERIVED, RUN_TABLES, VIEWS

_ANN_KEY = "__annotations__"  # the annotations' signature row in _sigs (not a valid run id)


@dataclass
class Snapshot:
    store: RunStore
    path: Path | None = None  # the persisted cache file; None = in memory only
    con: duckdb.DuckDBPyConnection = field(default=None)  # type: ignore[assignment]
    run_sigs: dict[str, str] = field(default_factory=dict)
    ann_sig: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_refresh_s: float = 0.0
    initialised: bool = False
    persisted: bool = False  # rows came from (and go to) the cache file
    loaded_from_cache: bool = False  # this process found a usable cache file when it opened
    note: str = ""  # why the snapshot is in memory, when it is
    threads: int = 0  # DuckDB threads for reloads (0 = DuckDB's default); a background build uses 1
    _files: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.con is not None:
            return
        con, self.note = open_file(self.path) if self.path is not None else (None, "")
        if con is None:
            self.con = duckdb.connect(":memory:")
            return
        self.con, self.persisted = con, True
        try:
            self._adopt_cache()
        except duckdb.Error as exc:  # unreadable content: empty it and rebuild
            self.note = f"cache reset ({type(exc).__name__})"
            self._empty_cache()

    # ---- the cache file ------------------------------------------------------------
    def _tables(self) -> set[str]:
        rows = self.con.execute("SELECT table_name FROM information_schema.tables "
                                "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'").fetchall()
        return {r[0] for r in rows}

    def _create_views(self) -> None:
        for name, sql in VIEWS.items():
            self.con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")

    def _empty_cache(self) -> None:
        views = self.con.execute("SELECT table_name FROM information_schema.tables "
                                 "WHERE table_schema = 'main' AND table_type = 'VIEW'").fetchall()
        for (view,) in views:
            self.con.execute(f'DROP VIEW IF EXISTS "{view}"')
        for table in self._tables():
            self.con.execute(f'DROP TABLE IF EXISTS "{table}"')
        self.run_sigs, self.ann_sig, self.initialised = {}, None, False

    def _adopt_cache(self) -> None:
        """Take over a cache file's rows and signatures when it was written by this version."""
        needed = {*RUN_TABLES, *DERIVED, "runs", "annotations", "_meta", "_sigs", "_memo"}
        if not needed <= self._tables():
            self._empty_cache()
            return
        meta = dict(self.con.execute("SELECT key, value FROM _meta").fetchall())
        if meta.get("fingerprint") != FINGERPRINT:
            self._empty_cache()
            return
        sigs = dict(self.con.execute("SELECT key, sig FROM _sigs").fetchall())
        self.ann_sig = sigs.pop(_ANN_KEY, None)
        self.run_sigs = sigs
        self._create_views()
        self.initialised = self.loaded_from_cache = True

    # ---- freshness -----------------------------------------------------------------
    def _current_sigs(self) -> tuple[dict[str, str], str]:
        """Each run's signature (and, kept in self._files, its part files per table)."""
        root = self.store.root.resolve()
        files: dict[str, dict[str, list[str]]] = {run_id: {} for run_id in self.store.run_ids()}
        for table in RUN_TABLES:
            for path in glob.glob(self.store.table_glob(table)):
                run_id = Path(path).parent.parent.name
                if run_id in files:
                    files[run_id].setdefault(table, []).append(path)
        sigs = {}
        for run_id, by_table in files.items():
            manifest = str(self.store.run_dir(run_id) / "run.json")
            sigs[run_id] = signature(root, [p for paths in by_table.values() for p in paths] + [manifest])
        self._files = files
        ann = signature(root, glob.glob(str(self.store.annotations_dir() / "*.parquet")))
        return sigs, ann

    def refresh(self) -> list[str]:
        """Re-read the runs whose files changed; returns their ids."""
        with self.lock:
            started = time.perf_counter()
            sigs, ann = self._current_sigs()
            changed = [r for r, s in sigs.items() if self.run_sigs.get(r) != s]
            removed = [r for r in self.run_sigs if r not in sigs]
            if not self.initialised or changed or removed or ann != self.ann_sig:
                self._reload(changed, removed, ann != self.ann_sig or not self.initialised, sigs, ann)
                self.run_sigs, self.ann_sig = sigs, ann
            self.last_refresh_s = time.perf_counter() - started
            return changed

    def _create_tables(self, runs, ann) -> None:
        con = self.con
        for t in RUN_TABLES:
            con.register("_empty", SCHEMAS[t].empty_table())
            con.execute(f"CREATE TABLE {t} AS SELECT * FROM _empty")
            con.unregister("_empty")
        con.register("_arrow", ann)
        con.execute("CREATE TABLE annotations AS SELECT * FROM _arrow LIMIT 0")
        con.unregister("_arrow")
        con.register("_arrow", runs)
        con.execute("CREATE TABLE runs AS SELECT * FROM _arrow LIMIT 0")
        con.unregister("_arrow")
        for name, sql in DERIVED.items():
            con.execute(f"CREATE TABLE {name} AS {sql}", {"runs": []})
        con.execute("CREATE TABLE _sigs (key VARCHAR PRIMARY KEY, sig VARCHAR)")
        con.execute("CREATE TABLE _meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.execute("CREATE TABLE _memo (key VARCHAR PRIMARY KEY, run_ids VARCHAR[], frame BLOB, note VARCHAR)")
        con.execute("INSERT INTO _meta VALUES ('fingerprint', ?)", [FINGERPRINT])
        self._create_views()
        self.initialised = True

    def _run_rows(self, src: duckdb.DuckDBPyConnection, table: str, changed: list[str]):
        """The changed runs' rows of `table` through open_db's own de-duplicating view.

        Why narrowed: DuckDB does not push `run_id IN (...)` below the view's window, so one
        changed run (a live run's every flush) cost a de-duplication of every run's rows, 5 s
        on the bench store. Pointing the view's raw_<table> source at just these runs' part
        files keeps the store's rule (the view on top is open_db's, untouched) and reads only
        them. If a file vanished meanwhile, the full view is read instead.
        """
        sql = f"SELECT * FROM {table} WHERE run_id IN (SELECT unnest($runs))"
        if not self.initialised and set(changed) == set(self._files):
            return src.sql(sql, params={"runs": changed}).to_arrow_table()  # everything: the view as is
        files = [f for run_id in changed for f in self._files.get(run_id, {}).get(table, [])]
        if files:
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            narrowed = f"SELECT * FROM read_parquet([{listed}], union_by_name = true)"
        else:
            src.register(f"_none_{table}", SCHEMAS[table].empty_table())
            narrowed = f"SELECT * FROM _none_{table}"
        original = src.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [f"raw_{table}"]).fetchone()
        src.execute(f"CREATE OR REPLACE VIEW raw_{table} AS {narrowed}")
        try:
            return src.sql(sql, params={"runs": changed}).to_arrow_table()
        except duckdb.IOException:
            if original is None:
                raise
            src.execute(original[0].replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1))
            return src.sql(sql, params={"runs": changed}).to_arrow_table()

    def _reload(self, changed: list[str], removed: list[str], annotations: bool,
                sigs: dict[str, str], ann_sig: str) -> None:
        with open_db(self.store) as src:
            if self.threads:
                src.execute(f"SET threads = {int(self.threads)}")
            fresh = {t: self._run_rows(src, t, changed) for t in RUN_TABLES}
            runs = src.sql("SELECT * FROM runs").to_arrow_table()
            ann = src.sql("SELECT * FROM annotations").to_arrow_table() if annotations else None
        con = self.con
        if not self.initialised:
            self._create_tables(runs, ann)
        touched = changed + removed
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM runs")
            con.register("runs_arrow", runs)
            con.execute("INSERT INTO runs SELECT * FROM runs_arrow")
            con.unregister("runs_arrow")
            for t in (*RUN_TABLES, *DERIVED):
                con.execute(f"DELETE FROM {t} WHERE run_id IN (SELECT unnest(?))", [touched])
            for t, table in fresh.items():
                con.register("fresh_arrow", table)
                con.execute(f"INSERT INTO {t} SELECT * FROM fresh_arrow")
                con.unregister("fresh_arrow")
            for name, sql in DERIVED.items():
                con.execute(f"INSERT INTO {name} {sql}", {"runs": changed})
            if annotations and ann is not None:
                con.register("ann_arrow", ann)
                con.execute("DELETE FROM annotations")
                con.execute("INSERT INTO annotations SELECT * FROM ann_arrow")
                con.unregister("ann_arrow")
            con.execute("DELETE FROM _sigs WHERE key IN (SELECT unnest(?))", [[*touched, _ANN_KEY]])
            con.execute("DELETE FROM _memo WHERE list_has_any(run_ids, ?::VARCHAR[])", [touched])
            rows = [(r, sigs[r]) for r in changed] + [(_ANN_KEY, ann_sig)]
            con.executemany("INSERT INTO _sigs VALUES (?, ?)", rows)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        if self.persisted and sum(t.num_rows for t in fresh.values()) > 100_000:
            con.execute("CHECKPOINT")  # fold a big write into the file now, not at the next open

    # ---- memoised computations ------------------------------------------------------
    def memo(self, name: str, run_ids: list[str], params: Any,
             compute: Callable[[], tuple[pd.DataFrame, str]]) -> tuple[pd.DataFrame, str]:
        """A deterministic (frame, note) computed from these runs' rows, kept with the snapshot.

        Why: the Compare page's seeded bootstrap and permutation tests take ~0.3-1 s per pair
        of systems; kept here they survive a restart like the rows they came from. The key
        holds the runs' signatures, and a run's entries are dropped whenever it is re-read.
        """
        sigs = [self.run_sigs.get(r, "") for r in run_ids]
        key = hashlib.sha256(json.dumps([name, run_ids, sigs, params], default=str).encode()).hexdigest()
        cur = self.con.cursor()
        try:
            row = cur.execute("SELECT frame, note FROM _memo WHERE key = ?", [key]).fetchone()
        finally:
            cur.close()
        if row is not None:
            return pd.read_parquet(io.BytesIO(row[0])), row[1]
        frame, note = compute()
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        with self.lock:
            self.con.execute("INSERT OR REPLACE INTO _memo VALUES (?, ?, ?, ?)", [key, run_ids, buf.getvalue(), note])
        return frame, note

    # ---- reads ---------------------------------------------------------------------
    def df(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run one read query with bound parameters on a private cursor."""
        cur = self.con.cursor()
        try:
            return cur.execute(sql, params or []).df()
        finally:
            cur.close()
