"""How far a run has got: answers stored, published or not yet published.

Why its own function: a live run publishes what it has written every few seconds (compaction),
so the published count alone lags; the writer's pending part files say the rest.
"""

from __future__ import annotations

from evalcore.analysis.sql import df
from evalcore.store import RunStore


def answers_stored(store: RunStore, run_id: str) -> int:
    """Answers of the run on disk: published (its summary) plus written since the last publish."""
    published = df(store, "SELECT coalesce(sum(n_responses), 0) AS n FROM summary_responses WHERE run_id = ?",
                   [run_id], runs=[run_id])
    return int(published["n"].iloc[0]) + store.pending_rows(run_id, "responses")
