"""A DuckDB copy of the store's views for the dashboard, kept on disk and refreshed per run.

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
import json
import shutil
import threading
import io
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import duckdb
import pandas as pd

from evalcore.queries import open_db
from evalcore.store import RunStore
from evalcore.tables import SCHEMAS

RUN_TABLES = ("questions", "responses", "metrics", "judge_calls", "claims")
CACHE_DIR = "app_cache"
CACHE_FILE = "snapshot.duckdb"
CACHE_FORMAT = 2  # bump when the layout of the cache file changes in a way the fingerprint misses

# Derived per-run tables, rebuilt for a run whenever its rows are refreshed.
DERIVED: dict[str, str] = {
    "metric_stats": """
        SELECT run_id, method, metric, any_value("group") AS "group",
               avg(value) FILTER (WHERE NOT isnan(value)) AS mean,
               stddev_samp(value) FILTER (WHERE NOT isnan(value)) AS std,
               count(*) FILTER (WHERE NOT isnan(value)) AS n_scored, count(*) AS n,
               min(judge_id) AS judge_id
        FROM metrics WHERE run_id IN (SELECT unnest($runs)) GROUP BY run_id, method, metric""",
    "response_stats": """
        SELECT run_id, method, count(*) AS n_responses, count(error) AS n_errors,
               quantile_cont(latency_ms, 0.5) AS latency_p50_ms,
               quantile_cont(latency_ms, 0.95) AS latency_p95_ms,
               sum(cost_usd) AS rag_cost_usd, avg(cost_usd) AS rag_cost_per_query_usd,
               sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)) AS rag_tokens
        FROM responses WHERE run_id IN (SELECT unnest($runs)) GROUP BY run_id, method""",
    "judge_stats": """
        SELECT run_id, method, count(*) AS n_judge_calls, sum(cost_usd) AS judge_cost_usd,
               string_agg(DISTINCT judge_id, ', ') AS judges
        FROM judge_calls WHERE run_id IN (SELECT unnest($runs)) GROUP BY run_id, method""",
    # Categorical verdicts the charts and the annotation queue read: a grade (A-E) from
    # factual_accuracy/factual_grade details (or derived from the 0-1 value with the
    # METRICS.md thresholds) and a class from answer_class details.
    "labels": """
        SELECT run_id, method, question_id, 'grade' AS kind, metric,
               upper(coalesce(json_extract_string(details, '$.grade'),
                    CASE WHEN isnan(value) THEN NULL
                         WHEN (CASE WHEN value > 1 THEN value ELSE value * 100 END) >= 80 THEN 'A'
                         WHEN (CASE WHEN value > 1 THEN value ELSE value * 100 END) >= 60 THEN 'B'
                         WHEN (CASE WHEN value > 1 THEN value ELSE value * 100 END) >= 40 THEN 'C'
                         WHEN (CASE WHEN value > 1 THEN value ELSE value * 100 END) >= 20 THEN 'D'
                         ELSE 'E' END)) AS label,
               judge_id
        FROM metrics WHERE run_id IN (SELECT unnest($runs))
          AND metric IN ('factual_grade', 'factual_accuracy')
        QUALIFY row_number() OVER (PARTITION BY run_id, method, question_id
                                   ORDER BY metric = 'factual_grade' DESC) = 1
        UNION ALL
        SELECT run_id, method, question_id, 'answer_class', metric,
               upper(coalesce(json_extract_string(details, '$.class'),
                              json_extract_string(details, '$.answer_class'),
                              json_extract_string(details, '$.label'))),
               judge_id
        FROM metrics WHERE run_id IN (SELECT unnest($runs)) AND metric = 'answer_class'""",
}


# Views over the tables above, (re)created whenever a connection is opened. metric_keys: which
# metrics each (run, method) has, what the pickers need; the Interim answers it without the
# metric aggregates (see interim.py).
VIEWS: dict[str, str] = {
    "metric_keys": "SELECT run_id, method, metric FROM metric_stats",
}

_ANN_KEY = "__annotations__"  # the annotations' signature row in _sigs (not a valid run id)


def _fingerprint() -> str:
    """What the cached rows depend on: table schemas, derived SQL, the DuckDB storage version."""
    parts = [str(CACHE_FORMAT), duckdb.__version__, *DERIVED.values(),
             *(f"{t}:{SCHEMAS[t]}" for t in RUN_TABLES)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


FINGERPRINT = _fingerprint()


def cache_path(store: RunStore) -> Path:
    return store.shared_dir(CACHE_DIR) / CACHE_FILE


def clear_cache(store: RunStore) -> None:
    """Delete the persisted snapshot (harmless: the next open rebuilds it)."""
    forget(store)
    shutil.rmtree(store.shared_dir(CACHE_DIR), ignore_errors=True)


def _signature(root: Path, paths: list[str]) -> str:
    """(path relative to the store, size, mtime) of each file, as JSON: stable across restarts
    and store moves."""
    out = []
    for p in sorted(paths):
        try:
            st = Path(p).stat()
        except OSError:
            continue
        try:
            name = str(Path(p).resolve().relative_to(root))
        except ValueError:
            name = p
        out.append((name, st.st_size, st.st_mtime_ns))
    return json.dumps(out)


def _open_file(path: Path) -> tuple[duckdb.DuckDBPyConnection | None, str]:
    """Connect to the cache file; (None, why) when it cannot be used here."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"cannot create {path.parent}: {exc}"
    for attempt in (1, 2):
        try:
            return duckdb.connect(str(path)), ""
        except duckdb.Error as exc:
            first_line = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            if "lock" in str(exc).lower():  # another process (a second dashboard) has it open
                return None, f"cache file in use by another process ({first_line})"
            if attempt == 2:
                return None, f"cache file unusable ({first_line})"
            # A damaged or foreign file: it is only a cache, so start over.
            for leftover in (path, path.with_name(path.name + ".wal")):
                try:
                    leftover.unlink(missing_ok=True)
                except OSError:
                    return None, f"cache file unusable and not removable ({first_line})"
    return None, "unreachable"


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
        con, self.note = _open_file(self.path) if self.path is not None else (None, "")
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
            sigs[run_id] = _signature(root, [p for paths in by_table.values() for p in paths] + [manifest])
        self._files = files
        ann = _signature(root, glob.glob(str(self.store.annotations_dir() / "*.parquet")))
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


_SNAPSHOTS: dict[str, Snapshot] = {}
_GLOBAL = threading.Lock()
# background first builds: store key -> (thread, the Interim serving pages meanwhile)
_BUILDS: dict[str, tuple[threading.Thread, Any]] = {}
IDLE_S, BUILD_DELAY_MAX_S = 0.5, 8.0
_BUILD_ERRORS: dict[str, BaseException] = {}


def get_snapshot(store: RunStore, refresh: bool = True, persist: bool = True) -> Snapshot:
    """The process-wide snapshot for a store root, refreshed unless told otherwise.

    `persist` (the default) keeps it in the store's cache file when that file can be used.
    """
    key = str(store.root.resolve())
    with _GLOBAL:
        snap = _SNAPSHOTS.get(key)
        if snap is None:
            # Only inside an existing store: opening the app on a wrong path must not create folders.
            use_file = persist and store.root.is_dir()
            snap = _SNAPSHOTS[key] = Snapshot(store, path=cache_path(store) if use_file else None)
    if refresh or not snap.initialised:
        snap.refresh()
    return snap


def forget(store: RunStore) -> None:
    """Drop a store's snapshot from this process (tests, benchmarks, a store deleted underneath us)."""
    wait_built(store)  # never close a connection a background build is writing to
    _BUILD_ERRORS.pop(str(store.root.resolve()), None)
    with _GLOBAL:
        snap = _SNAPSHOTS.pop(str(store.root.resolve()), None)
    if snap is not None:
        snap.con.close()


# ---- the first start without a cache: build in the background, serve pages meanwhile ----


def _build(key: str, snap: Snapshot) -> None:
    # Let the page that started the build render first: it competes with the page for the
    # cores (2 on the bench machine). Start once the page has finished (entry.main calls
    # page_finished), or once the Interim has been idle for IDLE_S with no query or
    # computation under way (pages run without entry.main), or after BUILD_DELAY_MAX_S;
    # then build on one DuckDB thread, so pages served meanwhile keep the other cores.
    interim = _BUILDS[key][1]
    deadline = time.monotonic() + BUILD_DELAY_MAX_S
    while time.monotonic() < deadline and not interim.page_done.is_set() and (
            interim.active or time.monotonic() - interim.last_used < IDLE_S):
        time.sleep(0.05)
    snap.threads = 1
    snap.con.execute("SET threads = 1")
    try:
        snap.refresh()
    except BaseException as exc:  # reported by the next page render (which then builds in line)
        _BUILD_ERRORS[key] = exc
    finally:
        snap.threads = 0
        try:
            snap.con.execute("RESET threads")
        except duckdb.Error:
            pass
        with _GLOBAL:
            _BUILDS.pop(key, None)


def get_view(store: RunStore) -> Any:
    """What a page reads: the snapshot, refreshed, when it is usable now; while it is first
    built (no usable cache file), an Interim, with the build running in a background thread
    (one per process and store)."""
    key = str(store.root.resolve())
    with _GLOBAL:
        snap = _SNAPSHOTS.get(key)
        if snap is None:
            use_file = store.root.is_dir()
            snap = _SNAPSHOTS[key] = Snapshot(store, path=cache_path(store) if use_file else None)
        running = _BUILDS.get(key)
        if running is None and not snap.initialised and key not in _BUILD_ERRORS:
            thread = threading.Thread(target=_build, args=(key, snap), name="evalcore-snapshot-build", daemon=True)
            from evalcore.ui.interim import Interim  # late: interim builds on this module

            running = _BUILDS[key] = (thread, Interim(store))
            thread.start()
    if running is not None:
        return running[1]
    _BUILD_ERRORS.pop(key, None)
    snap.refresh()
    return snap


def page_finished() -> None:
    """A page render has ended (called by entry.main): background builds waiting may start."""
    with _GLOBAL:
        waiting = [interim for _, interim in _BUILDS.values()]
    for interim in waiting:
        interim.page_done.set()


def building(store: RunStore) -> bool:
    """Whether this process is building the store's snapshot in the background now."""
    with _GLOBAL:
        return str(store.root.resolve()) in _BUILDS


def wait_built(store: RunStore, timeout: float | None = None) -> None:
    """Wait for a background build of the store's snapshot (tests, benchmarks)."""
    with _GLOBAL:
        running = _BUILDS.get(str(store.root.resolve()))
    if running is not None:
        running[0].join(timeout)
