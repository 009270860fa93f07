"""The dashboard's interim view while the first snapshot is built in the background.

Split from snapshot.py (which owns the cache and the build thread) so each module keeps one job.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

import pandas as pd

from evalcore.queries import open_db
from evalcore.store import RunStore
from evalcore.ui.snapshot import DERIVED, RUN_TABLES, Snapshot

PER_RUN_TABLES = (*RUN_TABLES, "labels")
STATS_TABLES = ("metric_stats", "response_stats", "judge_stats")
_TABLE_RE = re.compile(r"\b(" + "|".join((*PER_RUN_TABLES, *STATS_TABLES)) + r")\b")


class Interim:
    """What pages read while the snapshot is being built in the background (no usable cache).

    Why: building the whole snapshot pulls every run out of Parquet (~4-5 s on the bench
    store, plus ~3 s writing the cache file); a page must not wait for that. This is an
    in-memory Snapshot filled on demand with just what each query needs:
    - the per-run tables (questions, responses, metrics, judge_calls, claims, labels) of the
      runs a query names in its parameters (a run id, a list of them, or `run:method` keys),
      read through open_db's own views narrowed to those runs' part files (Snapshot._run_rows),
      so the store's de-duplication rules hold; a query on those tables that names no run
      gets every run (slow, but never partial);
    - the per-(run, method) aggregates (metric_stats, response_stats, judge_stats) of every
      run, computed once straight from open_db with the snapshot's own DERIVED SQL.
    Every dashboard query on a per-run table filters by the runs it passes as parameters,
    which is what makes reading only those runs exact (tests/app/test_snapshot_cache.py
    compares every page query against the built snapshot). Memoised computations are not
    kept. Thread safety: loads happen under one lock; reads use their own cursors.
    """

    building = True

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.inner = Snapshot(store, path=None)
        self.lock = threading.Lock()
        self.sigs, self.ann = self.inner._current_sigs()
        self.loaded: set[str] = set()
        self.stats = False
        self.initialised = True
        self.last_used = time.monotonic()

    def _runs_in(self, params: Any) -> set[str]:
        found: set[str] = set()
        values = params.values() if isinstance(params, dict) else (params or [])
        for v in values:
            for item in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(item, str):
                    run_id = item.partition(":")[0]
                    if run_id in self.sigs:
                        found.add(run_id)
        return found

    def _ensure(self, runs: set[str], stats: bool) -> None:
        with self.lock:
            inner = self.inner
            todo = sorted(r for r in runs if r not in self.loaded)
            if todo or not inner.initialised:
                inner._reload(todo, [], not inner.initialised, self.sigs, self.ann)
                self.loaded |= set(todo)
            if stats and not self.stats:
                rest = sorted(r for r in self.sigs if r not in self.loaded)
                if rest:
                    with open_db(self.store) as src:
                        fresh = {name: src.sql(DERIVED[name], params={"runs": rest}).to_arrow_table()
                                 for name in STATS_TABLES}
                    con = inner.con
                    con.execute("BEGIN TRANSACTION")
                    for name, table in fresh.items():
                        con.register("_stats", table)
                        con.execute(f"INSERT INTO {name} SELECT * FROM _stats")
                        con.unregister("_stats")
                    con.execute("COMMIT")
                self.stats = True

    def refresh(self) -> list[str]:
        return []

    def df(self, sql: str, params: Any = None) -> pd.DataFrame:
        self.last_used = time.monotonic()
        tables = set(_TABLE_RE.findall(sql))
        runs = set()
        if tables & set(PER_RUN_TABLES):
            runs = self._runs_in(params) or set(self.sigs)
        self._ensure(runs, bool(tables & set(STATS_TABLES)))
        try:
            return self.inner.df(sql, params)
        finally:
            self.last_used = time.monotonic()

    def memo(self, name: str, run_ids: list[str], params: Any,
             compute: Callable[[], tuple[pd.DataFrame, str]]) -> tuple[pd.DataFrame, str]:
        self.last_used = time.monotonic()
        return compute()
