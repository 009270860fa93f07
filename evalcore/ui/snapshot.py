"""An in-memory DuckDB copy of the store's views, refreshed per run when its files change.

Why: `open_db` re-reads Parquet and de-duplicates (a window over every row) on each query;
on 20 runs x 2,000 questions x 30 metrics that is ~1.5 s per aggregate, far over the
dashboard's budget (a page < 2 s, a query < 200 ms). The snapshot pulls each run's rows
out of `open_db`'s views once (so the store's de-duplication rules still apply), keeps
them in tables named like the views, and pre-aggregates per (run, method) so the
leaderboard reads a few hundred rows instead of millions.

Freshness: a run is re-read when the set of its part files (name, size, mtime) or its
run.json changes, so a live run being written is picked up on the next page render while
finished runs are never re-read. Thread safety: Streamlit serves sessions from threads;
every query uses its own cursor and a refresh swaps a run's rows inside one transaction.
"""

from __future__ import annotations

import glob
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from evalcore.queries import open_db
from evalcore.store import RunStore
from evalcore.tables import SCHEMAS

RUN_TABLES = ("questions", "responses", "metrics", "judge_calls", "claims")

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


def _signature(paths: list[str]) -> tuple:
    out = []
    for p in sorted(paths):
        try:
            st = Path(p).stat()
        except OSError:
            continue
        out.append((p, st.st_size, st.st_mtime_ns))
    return tuple(out)


@dataclass
class Snapshot:
    store: RunStore
    con: duckdb.DuckDBPyConnection = field(default_factory=lambda: duckdb.connect(":memory:"))
    run_sigs: dict[str, tuple] = field(default_factory=dict)
    ann_sig: tuple | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_refresh_s: float = 0.0
    initialised: bool = False

    # ---- freshness -----------------------------------------------------------------
    def _current_sigs(self) -> tuple[dict[str, tuple], tuple]:
        by_run: dict[str, list[str]] = {run_id: [] for run_id in self.store.run_ids()}
        for table in RUN_TABLES:
            for path in glob.glob(self.store.table_glob(table)):
                run_id = Path(path).parent.parent.name
                if run_id in by_run:
                    by_run[run_id].append(path)
        sigs = {}
        for run_id, paths in by_run.items():
            manifest = str(self.store.run_dir(run_id) / "run.json")
            sigs[run_id] = _signature(paths + [manifest])
        ann = _signature(glob.glob(str(self.store.annotations_dir() / "*.parquet")))
        return sigs, ann

    def refresh(self) -> list[str]:
        """Re-read the runs whose files changed; returns their ids."""
        with self.lock:
            started = time.perf_counter()
            sigs, ann = self._current_sigs()
            changed = [r for r, s in sigs.items() if self.run_sigs.get(r) != s]
            removed = [r for r in self.run_sigs if r not in sigs]
            if not self.initialised or changed or removed or ann != self.ann_sig:
                self._reload(changed, removed, ann != self.ann_sig or not self.initialised)
                self.run_sigs, self.ann_sig = sigs, ann
            self.last_refresh_s = time.perf_counter() - started
            return changed

    def _reload(self, changed: list[str], removed: list[str], annotations: bool) -> None:
        with open_db(self.store) as src:
            fresh = {t: src.sql(f"SELECT * FROM {t} WHERE run_id IN (SELECT unnest($runs))",
                                params={"runs": changed}).to_arrow_table() for t in RUN_TABLES}
            runs = src.sql("SELECT * FROM runs").to_arrow_table()
            ann = src.sql("SELECT * FROM annotations").to_arrow_table() if annotations else None
        con = self.con
        if not self.initialised:
            for t in RUN_TABLES:
                con.register("_empty", SCHEMAS[t].empty_table())
                con.execute(f"CREATE TABLE {t} AS SELECT * FROM _empty")
                con.unregister("_empty")
            con.register("_arrow", ann)
            con.execute("CREATE TABLE annotations AS SELECT * FROM _arrow")
            con.unregister("_arrow")
            con.register("_arrow", runs)
            con.execute("CREATE TABLE runs AS SELECT * FROM _arrow LIMIT 0")
            con.unregister("_arrow")
            for name, sql in DERIVED.items():
                con.execute(f"CREATE TABLE {name} AS {sql}", {"runs": []})
            self.initialised = True
            annotations = False
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
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

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


def get_snapshot(store: RunStore, refresh: bool = True) -> Snapshot:
    """The process-wide snapshot for a store root, refreshed unless told otherwise."""
    key = str(store.root.resolve())
    with _GLOBAL:
        snap = _SNAPSHOTS.get(key)
        if snap is None:
            snap = _SNAPSHOTS[key] = Snapshot(store)
    if refresh or not snap.initialised:
        snap.refresh()
    return snap


def forget(store: RunStore) -> None:
    """Drop a store's snapshot (tests, or a store deleted underneath us)."""
    with _GLOBAL:
        snap = _SNAPSHOTS.pop(str(store.root.resolve()), None)
    if snap is not None:
        snap.con.close()
