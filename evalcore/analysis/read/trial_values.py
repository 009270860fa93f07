"""A system's repeated trials (`evalcore run --trials T`) as comparisons read them.

Why one module: a system asked T times per question has T values of each metric per question,
and everything that pairs two systems must take the same one value per question — the mean of
its trials — or the Compare page, `evalcore compare`, the gate and the report would pair
different numbers. Runs without trials (every run before trials existed, and T = 1) have only
trial 0; for them nothing here is used and every comparison reads metric_wide exactly as before.

- `trial_counts`: each system's T (the most trials any of its questions was asked);
- `trial_means_sql`: one row per question with each metric's mean over its trials, in the
  columns side_by_side reads from metric_wide;
- `trial_frame`: every trial's value and label, for the spread of the trials (pass@T, pass^T,
  flip rate: evalcore.analysis.comparison.trial_noise) and the Questions page.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from evalcore.schemas.ids import id_sql
from evalcore.store import RunStore, query_df
from evalcore.store.wide import literal


def _runs(keys: Sequence[str]) -> list[str]:
    return sorted({k.partition(":")[0] for k in keys})


def trial_counts(store: RunStore, keys: Sequence[str]) -> dict[str, int]:
    """{`run_id:method`: T} for the systems `keys` (the published answers' most trials of a
    question); 1 for a system without trials (or without answers)."""
    rows = query_df(store, """SELECT run_id || ':' || method AS system, max(trials) AS t FROM summary_responses
                               WHERE list_contains($keys, run_id || ':' || method) GROUP BY 1""",
                    {"keys": list(keys)}, runs=_runs(keys))  # the run summaries: a few rows, not every answer
    found = {s: int(t) for s, t in zip(rows["system"], rows["t"]) if not pd.isna(t)}
    return {k: found.get(k, 1) for k in keys}


def trial_means_sql(metrics: Sequence[str]) -> str:
    """SQL of one system's (`$run`, `$method`) per-question values, each metric's mean over the
    question's trials that have a value (NULL when none has): columns `question_id` (under the
    id rule, one row per stored id, in order, so colliding ids stay visible) and `v0`, `v1`...
    in the order of `metrics`, as side_by_side reads metric_wide."""
    cols = "".join(f", avg(value) FILTER (WHERE metric = {literal(m)} AND NOT isnan(value)) AS v{i}"
                   for i, m in enumerate(metrics))
    return (f"SELECT {id_sql('question_id')} AS question_id{cols} FROM trial_metrics "
            "WHERE run_id = $run AND method = $method GROUP BY question_id ORDER BY question_id")


def question_values_sql(value: str, side: str, trials: bool) -> str:
    """SQL of one metric's per-question values of the system `$r<side>`, `$m<side>`: rows
    (question_id under the id rule, value), questions without a value left out (Compare's lists
    of changed questions). Its metric_wide column (`value`: store.wide.value_expr), or, for a
    system with trials, the mean of each question's trials of `$metric`, as the pairs are."""
    qid = id_sql("question_id")
    if trials:
        return (f"SELECT {qid} AS question_id, avg(value) AS value FROM trial_metrics WHERE run_id = $r{side} "
                f"AND method = $m{side} AND metric = $metric AND NOT isnan(value) GROUP BY question_id")
    return (f"SELECT {qid} AS question_id, {value} AS value FROM metric_wide WHERE run_id = $r{side} "
            f"AND method = $m{side} AND {value} IS NOT NULL")


def trial_frame(store: RunStore, keys: Sequence[str], metrics: Sequence[str] | None = None,
                question_id: str | None = None) -> pd.DataFrame:
    """(system, question_id, metric, trial, value, label) of every trial of the systems `keys`
    (`run_id:method`), of `metrics` (all when None) and of one question when given; question
    ids under the id rule, in order. NaN values are kept (a trial without a value)."""
    params: dict[str, Any] = {"keys": list(keys), "metrics": None if metrics is None else list(metrics),
                              "q": question_id}
    return query_df(store, f"""
        SELECT run_id || ':' || method AS system, {id_sql("question_id")} AS question_id, metric, trial, value, label
        FROM trial_metrics
        WHERE list_contains($keys, run_id || ':' || method)
          AND ($metrics IS NULL OR list_contains($metrics, metric))
          AND ($q IS NULL OR {id_sql("question_id")} = {id_sql("$q")})
        ORDER BY system, metric, question_id, trial""", params, runs=_runs(keys))
