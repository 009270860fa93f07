"""SQL for the Charts page. Systems are passed as `run_id:method` keys (validated by the page)."""

from __future__ import annotations

import pandas as pd

from evalcore.ui.snapshot import Snapshot

FACETS = ("category", "question_type", "difficulty")  # the only columns a user may group by
SYS = "run_id || ':' || method"

# Why every query names the runs (`list_contains($runs, run_id)`) beside the keys: DuckDB
# pushes that form below open_db's de-duplicating window, so while the snapshot is first
# built (the Interim queries open_db directly) a query reads only the picked runs; a filter
# on `run_id || ':' || method` alone is not pushed and de-duplicates every run (0.5-0.7 s).


def _runs(keys: list[str]) -> list[str]:
    return sorted({k.partition(":")[0] for k in keys})


def label_counts(snap: Snapshot, keys: list[str], kind: str) -> pd.DataFrame:
    """Counts of each grade (kind='grade') or answer class (kind='answer_class') per system."""
    return snap.df(f"""
        SELECT {SYS} AS system, label, count(*) AS n,
               count(*) / sum(count(*)) OVER (PARTITION BY run_id, method) AS share
        FROM labels WHERE kind = $kind AND label IS NOT NULL
          AND list_contains($runs, run_id) AND list_contains($keys, {SYS})
        GROUP BY run_id, method, label ORDER BY system, label""",
        {"kind": kind, "keys": keys, "runs": _runs(keys)})


def metric_by_facet(snap: Snapshot, keys: list[str], metric: str, facet: str) -> pd.DataFrame:
    """Per-question values of one metric with the question's facet (for box plots)."""
    if facet not in FACETS:
        raise ValueError(f"facet must be one of {FACETS}")
    return snap.df(f"""
        SELECT m.run_id || ':' || m.method AS system, coalesce(q.{facet}, '(none)') AS facet, m.value
        FROM metrics m JOIN questions q USING (run_id, question_id)
        WHERE m.metric = $metric AND NOT isnan(m.value) AND list_contains($runs, m.run_id)
          AND list_contains($runs, q.run_id) AND list_contains($keys, m.run_id || ':' || m.method)""",
        {"metric": metric, "keys": keys, "runs": _runs(keys)})


def facet_means(snap: Snapshot, keys: list[str], metric: str, facet: str) -> pd.DataFrame:
    if facet not in FACETS:
        raise ValueError(f"facet must be one of {FACETS}")
    return snap.df(f"""
        SELECT m.run_id || ':' || m.method AS system, coalesce(q.{facet}, '(none)') AS facet,
               avg(m.value) AS mean, count(*) AS n
        FROM metrics m JOIN questions q USING (run_id, question_id)
        WHERE m.metric = $metric AND NOT isnan(m.value) AND list_contains($runs, m.run_id)
          AND list_contains($runs, q.run_id) AND list_contains($keys, m.run_id || ':' || m.method)
        GROUP BY ALL ORDER BY facet, system""", {"metric": metric, "keys": keys, "runs": _runs(keys)})


def latency_cost(snap: Snapshot, keys: list[str]) -> pd.DataFrame:
    """Per-answer latency (ms) and cost (USD; the target's cost plus judge calls for it)."""
    return snap.df("""
        SELECT r.run_id || ':' || r.method AS system, r.question_id, r.latency_ms,
               coalesce(r.cost_usd, 0) + coalesce(j.cost, 0) AS cost_usd
        FROM responses r
        LEFT JOIN (SELECT run_id, method, question_id, sum(cost_usd) AS cost FROM judge_calls
                   WHERE list_contains($runs, run_id) GROUP BY ALL) j USING (run_id, method, question_id)
        WHERE list_contains($runs, r.run_id) AND list_contains($keys, r.run_id || ':' || r.method)""",
        {"keys": keys, "runs": _runs(keys)})


def frontier_points(snap: Snapshot, keys: list[str], metric: str) -> pd.DataFrame:
    """Per system: mean of the quality metric, cost per query (USD) and p50 latency (ms)."""
    return snap.df("""
        SELECT s.run_id || ':' || s.method AS system, m.mean AS quality,
               (coalesce(s.rag_cost_usd, 0) + coalesce(j.judge_cost_usd, 0)) / nullif(s.n_responses, 0)
                   AS cost_per_query_usd,
               s.latency_p50_ms
        FROM response_stats s
        JOIN metric_stats m ON m.run_id = s.run_id AND m.method = s.method AND m.metric = $metric
        LEFT JOIN judge_stats j ON j.run_id = s.run_id AND j.method = s.method AND list_contains($runs, j.run_id)
        WHERE list_contains($runs, s.run_id) AND list_contains($runs, m.run_id)
          AND list_contains($keys, s.run_id || ':' || s.method)
        ORDER BY quality DESC""", {"metric": metric, "keys": keys, "runs": _runs(keys)})
