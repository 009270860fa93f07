"""SQL for per-run aggregates, over the store's DuckDB views (evalcore.store.open_db).

Why SQL: the dashboard calls the same functions on every page load, and DuckDB aggregates
the Parquet parts without materialising every row in Python. Bootstrap CIs need the
per-question values, which `metric_values` returns.

Grouping columns are allow-listed (`BY`): a user-chosen dimension never becomes SQL text, and
run ids, methods and metric names are bound parameters.

Every function names the run(s) it reads, and opens only those runs' files (open_db's `runs`),
so a query costs the size of its run, not of the store. NaN handling: see evalcore/store/views.py.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from evalcore.errors import EvalcoreError
from evalcore.store import RunStore, open_db

# dimension -> (SQL expression over questions q / tag t, needs the tag unnest)
BY: dict[str, tuple[str, bool]] = {
    "category": ("q.category", False),
    "question_type": ("q.question_type", False),
    "difficulty": ("q.difficulty", False),
    "answerable": ("CAST(q.answerable AS VARCHAR)", False),
    "tag": ("t.tag", True),
    "negative_check": ("json_extract_string(q.record, '$.negative_check')", False),
}


def by_expression(by: str | None) -> tuple[str, str]:
    """(select expression, join clause) for a grouping dimension."""
    if by is None:
        return "NULL::VARCHAR", ""
    if by not in BY:
        raise EvalcoreError(f"cannot group by {by!r}; choose one of: {', '.join(BY)}")
    expr, needs_tag = BY[by]
    return expr, ("CROSS JOIN unnest(q.tags) AS t(tag)" if needs_tag else "")


def _in(column: str, values: Sequence[str] | None) -> tuple[str, list[Any]]:
    if not values:
        return "", []
    return f" AND {column} IN ({', '.join('?' for _ in values)})", list(values)


def metric_values(store: RunStore, run_id: str, methods: Sequence[str] | None = None,
                  metrics: Sequence[str] | None = None, by: str | None = None) -> pd.DataFrame:
    """One row per (method, question, metric[, group value]): value (NaN when not scored),
    reason, group, and `bucket` (the grouping value, NULL without `by`)."""
    expr, join = by_expression(by)
    m_sql, m_params = _in("m.method", methods)
    k_sql, k_params = _in("m.metric", metrics)
    sql = f"""
        SELECT m.method, m.question_id, m.metric, m."group" AS metric_group,
               CASE WHEN isnan(m.value) THEN NULL ELSE m.value END AS value,
               m.reason, {expr} AS bucket
        FROM metrics m JOIN questions q ON q.run_id = m.run_id AND q.question_id = m.question_id
        {join}
        WHERE m.run_id = ?{m_sql}{k_sql}
        ORDER BY m.method, m.metric, m.question_id
    """
    with open_db(store, runs=[run_id]) as con:
        out = con.execute(sql, [run_id, *m_params, *k_params]).df()
    out["value"] = out["value"].astype(float)
    return out


def metric_means(store: RunStore, run_id: str, by: str | None = None,
                 methods: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per method [, bucket], metric: mean, sd, n_scored, n, and NaN reasons with counts."""
    expr, join = by_expression(by)
    m_sql, m_params = _in("m.method", methods)
    k_sql, k_params = _in("m.metric", metrics)
    sql = f"""
        WITH v AS (
            SELECT m.method, m.metric, m."group" AS metric_group, {expr} AS bucket,
                   CASE WHEN isnan(m.value) THEN NULL ELSE m.value END AS value, m.reason
            FROM metrics m JOIN questions q ON q.run_id = m.run_id AND q.question_id = m.question_id
            {join}
            WHERE m.run_id = ?{m_sql}{k_sql}
        ), reasons AS (
            SELECT method, metric, bucket, string_agg(reason || ' (' || n || ')', '; ' ORDER BY n DESC) AS nan_reasons
            FROM (SELECT method, metric, bucket, reason, count(*) AS n FROM v WHERE value IS NULL
                  GROUP BY ALL) GROUP BY ALL
        )
        SELECT v.method, v.bucket, v.metric, any_value(v.metric_group) AS metric_group,
               avg(v.value) AS mean, stddev_samp(v.value) AS sd,
               count(v.value) AS n_scored, count(*) AS n, any_value(r.nan_reasons) AS nan_reasons
        FROM v LEFT JOIN reasons r ON r.method = v.method AND r.metric = v.metric
             AND r.bucket IS NOT DISTINCT FROM v.bucket
        GROUP BY v.method, v.bucket, v.metric
        ORDER BY v.method, v.bucket NULLS FIRST, v.metric
    """
    with open_db(store, runs=[run_id]) as con:
        return con.execute(sql, [run_id, *m_params, *k_params]).df()


def operations(store: RunStore, run_id: str, by: str | None = None) -> pd.DataFrame:
    """Per method [, bucket]: latency p50/p95/mean, error/timeout/empty rates, RAG cost, judge
    cost from judge_calls (a call made for no method shared evenly by the question's methods),
    cost per query by the one definition of evalcore.analysis.runs.cost (also the leaderboard's)."""
    expr, join = by_expression(by)
    sql = f"""
        WITH r AS (
            SELECT r.method, r.question_id, {expr} AS bucket, r.latency_ms, r.error, r.error_kind, r.answer,
                   r.cost_usd AS reported_cost
            FROM responses r JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
            {join} WHERE r.run_id = ?
        ), priced AS (
            SELECT method, question_id, CASE WHEN isnan(value) THEN NULL ELSE value END AS cost
            FROM metrics WHERE run_id = ? AND metric = 'cost_usd'
        ), c AS (
            SELECT r.method, r.question_id, coalesce(p.cost, r.reported_cost) AS cost
            FROM r LEFT JOIN priced p USING (method, question_id)
        ), shares AS (  -- a call made for no method (reference statements) is shared by the question's methods
            SELECT question_id, 1.0 / count(DISTINCT method) AS share FROM r GROUP BY ALL
        ), j AS (
            SELECT method, question_id, sum(cost * share) AS judge_cost, sum(share) AS judge_calls,
                   sum(ms * share) AS judge_ms
            FROM (SELECT c.method, c.question_id, c.cost_usd AS cost, c.latency_ms AS ms, 1.0 AS share
                  FROM judge_calls c WHERE c.run_id = ? AND c.method IS NOT NULL
                  UNION ALL
                  SELECT a.method, c.question_id, c.cost_usd, c.latency_ms, s.share
                  FROM judge_calls c JOIN (SELECT DISTINCT method, question_id FROM r) a USING (question_id)
                                     JOIN shares s USING (question_id)
                  WHERE c.run_id = ? AND c.method IS NULL)
            GROUP BY ALL
        )
        SELECT r.method, r.bucket, count(*) AS n,
               quantile_cont(r.latency_ms, 0.5) AS latency_p50_ms,
               quantile_cont(r.latency_ms, 0.95) AS latency_p95_ms,
               avg(r.latency_ms) AS latency_mean_ms,
               avg(CASE WHEN r.error IS NOT NULL THEN 1.0 ELSE 0.0 END) AS error_rate,
               avg(CASE WHEN r.error_kind = 'timeout' THEN 1.0 ELSE 0.0 END) AS timeout_rate,
               avg(CASE WHEN r.error_kind = 'empty' OR (r.error IS NULL AND regexp_matches(coalesce(r.answer, ''), '^\\s*$'))
                        THEN 1.0 ELSE 0.0 END) AS empty_rate,
               sum(c.cost) AS rag_cost_usd, count(c.cost) AS n_costed,
               coalesce(sum(j.judge_cost), 0) AS judge_cost_usd,
               coalesce(sum(j.judge_calls), 0) AS judge_calls, count(j.judge_cost) AS n_judged
        FROM r LEFT JOIN c ON c.method = r.method AND c.question_id = r.question_id
               LEFT JOIN j ON j.method = r.method AND j.question_id = r.question_id
        GROUP BY r.method, r.bucket ORDER BY r.method, r.bucket NULLS FIRST
    """
    with open_db(store, runs=[run_id]) as con:
        out = con.execute(sql, [run_id, run_id, run_id, run_id]).df()
    from evalcore.analysis.runs.cost import cost_per_query  # the one definition (not SQL: shared with the leaderboard)

    judge = out["judge_cost_usd"].astype(float).where(out["n_judged"] > 0)
    unknown = judge.isna() & (out["n_judged"] > 0)  # NaN, not NULL: a call of an unpriced model
    out["cost_per_query_usd"] = cost_per_query(out["rag_cost_usd"].astype(float) / out["n_costed"].where(out["n_costed"] > 0),
                                               judge, out["n"], judge_unknown=unknown)
    return out.drop(columns="n_judged")


def run_methods(store: RunStore, run_id: str) -> list[str]:
    """The methods that answered in the run, sorted: from the run's summary (one row per method;
    scanning 200,000 answers for their two method names cost `compare` a tenth of a second)."""
    with open_db(store, runs=[run_id]) as con:
        rows = con.execute("SELECT DISTINCT method FROM summary_responses WHERE run_id = ? ORDER BY method",
                           [run_id]).fetchall()
    return [r[0] for r in rows]


def question_ids(store: RunStore, run_id: str, method: str) -> list[str]:
    with open_db(store, runs=[run_id]) as con:
        rows = con.execute("SELECT question_id FROM responses WHERE run_id = ? AND method = ? ORDER BY 1",
                           [run_id, method]).fetchall()
    return [r[0] for r in rows]
