"""The SQL the dashboard's read models share: which store tables a run has, and the
per-run aggregates derived from them.

Why its own module: the persisted Snapshot (snapshot_db.py) materialises these relations,
the Interim (interim.py) defines the same SQL as views over `open_db` while the snapshot is
first built, and the cache file's fingerprint (snapshot_file.py) hashes it; one definition
keeps the three in agreement.
"""

from __future__ import annotations

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


# Views over the tables above, (re)created whenever a connection is opened. metric_keys: which
# metrics each (run, method) has, what the pickers need; the Interim answers it without the
# metric aggregates (see interim.py).
VIEWS: dict[str, str] = {
    "metric_keys": "SELECT run_id, method, metric FROM metric_stats",
}
