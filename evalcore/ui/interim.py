"""The dashboard's interim view while the first snapshot is built in the background.

Split from snapshot_db.py (the snapshot) and snapshot.py (the build thread) so each module keeps one job.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from typing import Any, Callable

import pandas as pd

from evalcore.queries import open_db
from evalcore.store import RunStore
from evalcore.ui.snapshot_db import Snapshot
from evalcore.ui.snapshot_sql import DERIVED

_RUN_FILTER = "run_id IN (SELECT unnest($runs))"


class Interim:
    """What pages read while the snapshot is being built in the background (no usable cache).

    Why: building the whole snapshot pulls every run out of Parquet (~5 s on the bench store,
    plus ~3 s writing the cache file); a page must not wait for that. The Interim is one
    `open_db` connection (the store's own de-duplicating views) with the snapshot's derived
    relations defined as views over it, by the snapshot's own DERIVED SQL:
    labels, metric_stats, response_stats, judge_stats, plus metric_keys (the distinct
    (run, method, metric) of the metric rows, read from raw_metrics: de-duplication keeps
    one row per key, so the set of keys is the same, without the window). Pages' queries run
    on it as they are, and nothing is materialised.

    What keeps it fast: every page query on per-run rows names its runs in a form DuckDB
    pushes below open_db's de-duplicating window (`run_id = $r`, `list_contains($runs,
    run_id)`), so it reads just those runs (30-80 ms each), and a filter on a metric name
    (the leaderboard's columns) is pushed too, so only the aggregates a page shows are
    computed. tests/app/test_snapshot_cache.py compares every page query on this and on the
    built snapshot. Views are restricted to the runs that existed when it was opened, like the
    snapshot's rows. Memoised computations are not kept. Thread safety: open_db registers
    Arrow tables, which a DuckDB cursor cannot see, so queries are serialised on one lock.
    """

    building = True

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.sigs, self.ann = Snapshot(store, path=None)._current_sigs()
        self._stack = ExitStack()
        self.con = self._stack.enter_context(open_db(store))
        runs = "[" + ", ".join("'" + r.replace("'", "''") + "'" for r in sorted(self.sigs)) + "]::VARCHAR[]"
        for name, sql in DERIVED.items():
            assert sql.count(_RUN_FILTER) >= 1, name
            self.con.execute(f"CREATE VIEW {name} AS {sql.replace(_RUN_FILTER, f'list_contains({runs}, run_id)')}")
        self.con.execute("CREATE VIEW metric_keys AS SELECT DISTINCT run_id, method, metric FROM raw_metrics "
                         f"WHERE list_contains({runs}, run_id)")
        self.initialised = True
        self.active = 0  # queries or computations under way (the background build waits for 0)
        self.page_done = threading.Event()
        self.last_used = time.monotonic()

    def refresh(self) -> list[str]:
        return []

    def _busy(self, delta: int) -> None:
        self.active += delta
        self.last_used = time.monotonic()

    def df(self, sql: str, params: Any = None) -> pd.DataFrame:
        self._busy(1)
        try:
            with self.lock:
                return self.con.execute(sql, params or []).df()
        finally:
            self._busy(-1)

    def memo(self, name: str, run_ids: list[str], params: Any,
             compute: Callable[[], tuple[pd.DataFrame, str]]) -> tuple[pd.DataFrame, str]:
        self._busy(1)
        try:
            return compute()
        finally:
            self._busy(-1)

    def close(self) -> None:
        with self.lock:
            self._stack.close()
