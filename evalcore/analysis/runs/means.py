"""Run-level aggregates of stored metric values, with uncertainty: means with CIs, answer
classes. The CLI (`show`), exports and the dashboard call these (operations: analysis.sql).

Every mean comes with a seeded percentile-bootstrap 95% CI (`mean_ci`, also the leaderboard's),
the number of questions it was
computed on (n_scored) out of all (n), and why the rest were not scored: a mean over 12 of
200 questions must not look like a mean over 200.

Dimensions (`by`): category, question_type, difficulty, tag (a question counts in every tag
it has), answerable, negative_check. Sums, means, counts and percentiles are SQL
(evalcore.analysis.read.sql); only the bootstrap runs in numpy.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.metrics.composites import OVERALL_COMPONENTS, combine, overall_parts
from evalcore.analysis.read import sql as Q
# which metric decides CORRECT vs WRONG: one rule, in evalcore.analysis.read.correctness
from evalcore.analysis.read.correctness import CORRECT_THRESHOLD, correct_metrics as correct_deciders
from evalcore.stats.resample import DEFAULT_BOOT, bootstrap_ci
from evalcore.store import RunStore, query_df



# Above this many values a mean's CI is the bootstrap's normal limit (mean ± z·sd/√n) instead of
# resampling: n_boot × n draws grow too big to be worth it (the Runs page bootstraps every system's
# weighted_score: 40 systems x 2,000 values took 3.4 s; at 500 values the two agree within the
# bootstrap's own Monte Carlo error, tests/stats/test_large_n.py).
BOOT_MAX_N = 500


def normal_ci(mean: float, sd: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """mean ± z·sd/√n (sd with n − 1): the large-n branch of `mean_ci`."""
    from evalcore.stats.normal import interval_z

    if n < 2 or sd != sd:
        return (mean, mean) if n == 1 else (math.nan, math.nan)
    half = interval_z(confidence) * sd / math.sqrt(n)
    return mean - half, mean + half


def mean_ci(values: Sequence[float], n_boot: int = DEFAULT_BOOT, seed: int = 0,
            confidence: float = 0.95) -> tuple[float, float]:
    """The CI of a mean, one definition for every page and command (means here, the leaderboard's
    ±): the seeded percentile bootstrap (NaN dropped), or its normal limit above BOOT_MAX_N values."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size > BOOT_MAX_N:
        return normal_ci(float(arr.mean()), float(arr.std(ddof=1)), int(arr.size), confidence)
    return bootstrap_ci(arr, n_boot=n_boot, seed=seed, confidence=confidence)


def metric_table(store: RunStore, run_id: str) -> pd.DataFrame:
    """Per method and metric: mean over scored values, n_scored / n, why the rest were not
    scored (reason (count); ...), judge — from the run's summary (what `evalcore show` prints)."""
    return query_df(store, """
        SELECT method, metric, "group", mean, n_scored, n, nan_reasons AS not_scored_reasons, judge_id
        FROM summary_metrics WHERE run_id = ? ORDER BY method, "group", metric""", [run_id], runs=[run_id])


def per_method_means(store: RunStore, run_id: str) -> dict[str, dict[str, float]]:
    """{method: {metric: mean over scored values}} of one run — the means `evalcore show` prints
    (metric_table), per method, never pooled across methods. The pytest gate and `evalcore score`
    read these; a metric with no scored value is absent."""
    table = metric_table(store, run_id)
    out: dict[str, dict[str, float]] = {}
    for r in table.itertuples(index=False):
        if r.mean is not None and r.mean == r.mean:
            out.setdefault(r.method, {})[r.metric] = float(r.mean)
    return out


def metric_judges(store: RunStore, keys: Sequence[str], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Who judged what: per system (`run_id:method`) and metric, one row per judge id whose
    verdicts produced its stored values (metric_table's judge column, split), sorted.
    Metrics computed without a judge have no row. Every page that shows a judged score names
    its judge from these rows."""
    rows = []
    for run_id in dict.fromkeys(k.partition(":")[0] for k in keys):
        table = metric_table(store, run_id)
        for r in table.itertuples(index=False):
            key = f"{run_id}:{r.method}"
            if key not in keys or (metrics is not None and r.metric not in metrics):
                continue
            if isinstance(r.judge_id, str):
                rows += [{"system": key, "metric": r.metric, "judge_id": j.strip()}
                         for j in r.judge_id.split(", ") if j.strip()]
    out = pd.DataFrame(rows, columns=["system", "metric", "judge_id"]).drop_duplicates()
    return out.sort_values(["system", "metric", "judge_id"]).reset_index(drop=True)


def summarize(store: RunStore, run_id: str, by: str | None = None, methods: Sequence[str] | None = None,
              metrics: Sequence[str] | None = None, n_boot: int = DEFAULT_BOOT, seed: int = 0,
              confidence: float = 0.95) -> pd.DataFrame:
    """Per method [, bucket], metric: mean, ci_low, ci_high, sd, n_scored, n, nan_reasons."""
    means = Q.metric_means(store, run_id, by=by, methods=methods, metrics=metrics)
    if means.empty:
        return means.assign(ci_low=[], ci_high=[])
    values = Q.metric_values(store, run_id, methods=methods, metrics=metrics, by=by)
    groups = {(m, b if isinstance(b, str) else None, k): g["value"].to_numpy()
              for (m, b, k), g in values.groupby(["method", "bucket", "metric"], dropna=False, sort=False)}
    lows, highs = [], []
    for row in means.itertuples(index=False):
        bucket = row.bucket if isinstance(row.bucket, str) else None
        arr = groups.get((row.method, bucket, row.metric), [])
        lo, hi = mean_ci(arr, n_boot=n_boot, seed=seed, confidence=confidence)
        lows.append(lo)
        highs.append(hi)
    out = means.copy()
    out.insert(out.columns.get_loc("mean") + 1, "ci_low", lows)
    out.insert(out.columns.get_loc("ci_low") + 1, "ci_high", highs)
    return out


def answer_classes(store: RunStore, run_id: str, by: str | None = None,
                   correct_metrics: Sequence[str] | None = None,
                   threshold: float = CORRECT_THRESHOLD) -> pd.DataFrame:
    """Counts and rates of CORRECT / WRONG / DONT_KNOW (and ERROR, UNSCORED) per method [, bucket],
    by the one answer-class rule of evalcore.analysis.read.correctness (counted in the store);
    `decided_by` counts which metric decided each CORRECT / WRONG."""
    from evalcore.analysis.read.correctness import classified_sql, dont_know_metrics, outcome_sql

    cols = ["method", "bucket", "n", "correct", "wrong", "dont_know", "error", "unscored",
            "correct_rate", "wrong_rate", "dont_know_rate", "decided_by"]
    correct_metrics = correct_deciders() if correct_metrics is None else tuple(correct_metrics)
    keys = [f"{run_id}:{m}" for m in Q.run_methods(store, run_id)]
    if not keys:
        return pd.DataFrame(columns=cols)
    source, params, present = outcome_sql(store, keys, [*dont_know_metrics(), *correct_metrics], by)
    counts = query_df(store, f"""
        SELECT method, coalesce(bucket, '') AS bucket, cls, decided_by, count(*) AS n
        FROM ({classified_sql(source, present, correct_metrics, threshold)}) GROUP BY ALL""", params, runs=[run_id])
    if counts.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for (method, bucket), g in counts.groupby(["method", "bucket"], sort=True):
        per = g.groupby("cls")["n"].sum()
        found = {c.lower(): int(per.get(c, 0)) for c in ("CORRECT", "WRONG", "DONT_KNOW", "ERROR", "UNSCORED")}
        decided = g[g["cls"].isin(["CORRECT", "WRONG"])].groupby("decided_by")["n"].sum()
        n = int(g["n"].sum())
        rows.append({"method": method, "bucket": bucket or None, "n": n, **found,
                     "correct_rate": found["correct"] / n, "wrong_rate": found["wrong"] / n,
                     "dont_know_rate": found["dont_know"] / n,
                     "decided_by": ", ".join(f"{k}:{v}" for k, v in sorted(decided.items()))})
    return pd.DataFrame(rows, columns=cols)


def overall_score_run(means: dict[str, float], components: dict | None = None) -> dict[str, Any]:
    """The Korean plan's overall_score on run means (its own definition: a mix of averages,
    not an average of per-question mixes). Missing parts are renormalised and listed."""
    parts, weights = overall_parts(means, components or OVERALL_COMPONENTS)
    score, used, missing = combine(parts, weights)
    return {"overall_score": score, "weights_used": used, "missing": missing}
