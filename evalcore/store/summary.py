"""A run's summary tables, written beside its canonical files at every compaction.

Why: the leaderboard and `evalcore runs` need per (run, method) figures — means of every
metric, answer counts, latency percentiles, cost, judge calls, grade and class counts — for
every run in the store. Computing them means scanning every answer and metric row of every
run; reading them from a few hundred summary rows takes milliseconds. They are derived data
(recomputed from the canonical rows whenever those change), so they can never disagree with
the rows they summarise.

The SQL runs over views named like the store's tables (`metrics`, `responses`, ...) and takes
a `{where}` filter, so compaction runs it on one run's new files and the reader runs the same
text over format-1 runs that have no summary files yet.
"""

from __future__ import annotations

from evalcore.store.wide import WIDE_TABLE

SUMMARY_SQL: dict[str, str] = {
    # per (run, method, metric): n, n_scored, mean, std, NaN reasons with counts, judge
    "summary_metrics": """
        WITH v AS (SELECT run_id, method, metric, "group", version, judge_id, reason,
                          CASE WHEN isnan(value) THEN NULL ELSE value END AS value
                   FROM metrics WHERE {where}),
        reasons AS (SELECT run_id, method, metric,
                           string_agg(reason || ' (' || n || ')', '; ' ORDER BY n DESC, reason) AS nan_reasons
                    FROM (SELECT run_id, method, metric, coalesce(reason, '?') AS reason, count(*) AS n
                          FROM v WHERE value IS NULL GROUP BY ALL)
                    GROUP BY ALL)
        SELECT v.run_id, v.method, v.metric, any_value(v."group") AS "group", max(v.version) AS version,
               count(*) AS n, count(v.value) AS n_scored, avg(v.value) AS mean,
               stddev_samp(v.value) AS std, sum(v.value) AS total,
               any_value(r.nan_reasons) AS nan_reasons,
               string_agg(DISTINCT v.judge_id, ', ' ORDER BY v.judge_id) AS judge_id
        FROM v LEFT JOIN reasons r USING (run_id, method, metric)
        GROUP BY v.run_id, v.method, v.metric""",
    # per (run, method): answers, errors by kind, latency, the target's reported cost and tokens
    "summary_responses": """
        SELECT run_id, method, count(*) AS n_responses, count(error) AS n_errors,
               count(*) FILTER (WHERE error_kind = 'timeout') AS n_timeouts,
               count(*) FILTER (WHERE error_kind = 'empty'
                                OR (error IS NULL AND regexp_matches(coalesce(answer, ''), '^\\s*$'))) AS n_empty,
               count(*) FILTER (WHERE abstained) AS n_abstained,
               quantile_cont(latency_ms, 0.5) AS latency_p50_ms,
               quantile_cont(latency_ms, 0.95) AS latency_p95_ms,
               avg(latency_ms) AS latency_mean_ms,
               sum(cost_usd) AS reported_cost_usd, count(cost_usd) AS n_reported_cost,
               sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
        FROM responses WHERE {where} GROUP BY run_id, method""",
    # per (run, method): judge calls, cache hits, tokens, cost, which judges. A call made for
    # no method (reference statements, split once per question for every method) is shared
    # evenly by the methods that answered its question, so per-method cost adds up to the run's.
    "summary_judges": """
        WITH calls AS (SELECT * FROM judge_calls WHERE {where}),
        answered AS (SELECT DISTINCT run_id, method, question_id FROM responses WHERE {where}),
        shares AS (SELECT run_id, question_id, 1.0 / count(*) AS share FROM answered GROUP BY ALL),
        attributed AS (
            SELECT run_id, method, 1.0 AS share, cache_hit, error, cost_usd, input_tokens, output_tokens, judge_id
            FROM calls WHERE method IS NOT NULL
            UNION ALL
            SELECT c.run_id, a.method, s.share, c.cache_hit, c.error, c.cost_usd, c.input_tokens,
                   c.output_tokens, c.judge_id
            FROM calls c JOIN answered a ON a.run_id = c.run_id AND a.question_id = c.question_id
                         JOIN shares s ON s.run_id = c.run_id AND s.question_id = c.question_id
            WHERE c.method IS NULL)
        SELECT run_id, method, sum(share) AS n_calls,
               coalesce(sum(share) FILTER (WHERE cache_hit), 0) AS n_cache_hits,
               coalesce(sum(share) FILTER (WHERE error IS NOT NULL), 0) AS n_call_errors,
               sum(cost_usd * share) AS judge_cost_usd, sum(input_tokens * share) AS judge_input_tokens,
               sum(output_tokens * share) AS judge_output_tokens,
               string_agg(DISTINCT judge_id, ', ' ORDER BY judge_id) AS judges
        FROM attributed GROUP BY run_id, method""",
    # per (run, method, metric, label): counts of categorical verdicts (grades, answer classes)
    "summary_labels": """
        SELECT run_id, method, metric, label, count(*) AS n
        FROM metrics WHERE {where} AND label IS NOT NULL GROUP BY ALL""",
}

# A run asked with `--trials T` (answers of trials 1..T-1 beside trial 0's) is summed up over
# every trial: its answers, errors, latency and cost are all it asked (responses), its label
# counts all its verdicts, and a metric's n, mean and SD are over questions, each question's
# value the mean of its trials (as Compare pairs them: docs/comparison.md, "Trials"). A run
# without trials keeps the SQL above, character for character: its summaries are what they were.
TRIAL_SUMMARY_SQL: dict[str, str] = {
    "summary_metrics": """
        WITH raw AS (SELECT run_id, method, question_id, metric, "group", version, judge_id, reason, trial,
                            CASE WHEN isnan(value) THEN NULL ELSE value END AS value
                     FROM trial_metrics WHERE {where}),
        v AS (SELECT run_id, method, metric, any_value("group") AS "group", max(version) AS version,
                     arg_min(reason, trial) AS reason, avg(value) AS value
              FROM raw GROUP BY run_id, method, question_id, metric),
        judges AS (SELECT run_id, method, metric, string_agg(DISTINCT judge_id, ', ' ORDER BY judge_id) AS judge_id
                   FROM raw GROUP BY ALL),
        reasons AS (SELECT run_id, method, metric,
                           string_agg(reason || ' (' || n || ')', '; ' ORDER BY n DESC, reason) AS nan_reasons
                    FROM (SELECT run_id, method, metric, coalesce(reason, '?') AS reason, count(*) AS n
                          FROM v WHERE value IS NULL GROUP BY ALL)
                    GROUP BY ALL)
        SELECT v.run_id, v.method, v.metric, any_value(v."group") AS "group", max(v.version) AS version,
               count(*) AS n, count(v.value) AS n_scored, avg(v.value) AS mean,
               stddev_samp(v.value) AS std, sum(v.value) AS total,
               any_value(r.nan_reasons) AS nan_reasons, any_value(j.judge_id) AS judge_id
        FROM v LEFT JOIN reasons r USING (run_id, method, metric) LEFT JOIN judges j USING (run_id, method, metric)
        GROUP BY v.run_id, v.method, v.metric""",
    # ... and says how many trials (T: the most any question of the method was asked); a run
    # without trials has no such column, read as 1 (store/views.py gives every run the column)
    "summary_responses": SUMMARY_SQL["summary_responses"].replace(
        "FROM responses", "FROM trial_responses").replace(" AS output_tokens\n", " AS output_tokens,\n"
                                                            "               max(trial) + 1 AS trials\n"),
    "summary_judges": SUMMARY_SQL["summary_judges"],
    "summary_labels": SUMMARY_SQL["summary_labels"].replace("FROM metrics", "FROM trial_metrics"),
}

SUMMARY_TABLES = tuple(SUMMARY_SQL)
# every table compaction derives from a run's canonical rows: a pointer lacking one (a run
# compacted by an older evalcore) is computed when read, and written by the next compaction
DERIVED_TABLES = (*SUMMARY_TABLES, WIDE_TABLE)


def summary_sql(name: str, where: str = "true", trials: bool = False) -> str:
    """A summary's SQL over rows matching `where`; `trials`: the run has answers of trials
    beyond the first (TRIAL_SUMMARY_SQL), which only a compaction of that run can say."""
    return (TRIAL_SUMMARY_SQL if trials else SUMMARY_SQL)[name].format(where=where)
