"""SQL for the Compare page: systems paired on question_id.

Means, deltas and improved/regressed/unchanged counts come straight from SQL for every
metric. Confidence intervals and p-values come from evalcore.analysis.compare (paired
bootstrap, randomization / exact McNemar, Holm across metrics) when that module is
importable; otherwise the page says they are unavailable rather than inventing them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalcore.ui.data import System
from evalcore.ui.snapshot import Snapshot

EPS = 1e-12


def higher_is_better(metric: str) -> bool:
    """The metric's direction from the registry; unknown metrics count as higher-is-better."""
    try:
        from evalcore.metrics.registry import METRICS
    except Exception:  # the registry failing to import must not take the page down
        return True
    spec = METRICS.get(metric)
    return True if spec is None else bool(spec.higher_is_better)


def delta_table(snap: Snapshot, base: System, cand: System) -> pd.DataFrame:
    """Per metric: paired n, means, Δ = cand - base, and improved/regressed/unchanged counts
    (in the 'higher is better' sense; the page flips them for lower-is-better metrics)."""
    return snap.df("""
        WITH a AS (SELECT question_id, metric, value FROM metrics
                   WHERE run_id = $ra AND method = $ma AND NOT isnan(value)),
             b AS (SELECT question_id, metric, value FROM metrics
                   WHERE run_id = $rb AND method = $mb AND NOT isnan(value))
        SELECT metric,
               count(a.value) FILTER (WHERE b.value IS NOT NULL) AS n_pairs,
               avg(a.value) FILTER (WHERE b.value IS NOT NULL) AS mean_base,
               avg(b.value) FILTER (WHERE a.value IS NOT NULL) AS mean_cand,
               avg(b.value - a.value) AS delta,
               count(*) FILTER (WHERE b.value - a.value > $eps) AS up,
               count(*) FILTER (WHERE b.value - a.value < -$eps) AS down,
               count(*) FILTER (WHERE abs(b.value - a.value) <= $eps) AS unchanged,
               count(*) FILTER (WHERE a.value IS NULL OR b.value IS NULL) AS missing
        FROM a FULL JOIN b USING (question_id, metric)
        GROUP BY metric ORDER BY metric""",
        {"ra": base.run_id, "ma": base.method, "rb": cand.run_id, "mb": cand.method, "eps": EPS})


def paired_values(snap: Snapshot, base: System, cand: System, metrics: list[str]) -> pd.DataFrame:
    """(question_id, metric, a, b) for questions scored (non-NaN) on both sides."""
    return snap.df("""
        SELECT a.question_id, a.metric, a.value AS a, b.value AS b
        FROM metrics a JOIN metrics b ON a.question_id = b.question_id AND a.metric = b.metric
        WHERE a.run_id = $ra AND a.method = $ma AND b.run_id = $rb AND b.method = $mb
          AND list_contains($m, a.metric) AND NOT isnan(a.value) AND NOT isnan(b.value)
        ORDER BY a.metric, a.question_id""",
        {"ra": base.run_id, "ma": base.method, "rb": cand.run_id, "mb": cand.method, "m": metrics})


def changed_questions(snap: Snapshot, base: System, cand: System, metric: str, outcome: str,
                      higher: bool) -> pd.DataFrame:
    """Questions whose `metric` improved / regressed / stayed / is missing on one side."""
    sign = 1.0 if higher else -1.0
    return snap.df("""
        WITH a AS (SELECT question_id, value FROM metrics WHERE run_id = $ra AND method = $ma
                   AND metric = $metric AND NOT isnan(value)),
             b AS (SELECT question_id, value FROM metrics WHERE run_id = $rb AND method = $mb
                   AND metric = $metric AND NOT isnan(value)),
             j AS (SELECT question_id, a.value AS base, b.value AS cand, (b.value - a.value) AS delta
                   FROM a FULL JOIN b USING (question_id))
        SELECT j.question_id, q.category, q.question_type, j.base, j.cand, j.delta, left(q.question, 120) AS question
        FROM j LEFT JOIN questions q ON q.run_id = $ra AND q.question_id = j.question_id
        WHERE CASE $outcome
                WHEN 'improved' THEN $sign * j.delta > $eps
                WHEN 'regressed' THEN $sign * j.delta < -$eps
                WHEN 'unchanged' THEN abs(j.delta) <= $eps
                ELSE j.delta IS NULL END
        ORDER BY abs(j.delta) DESC NULLS LAST, j.question_id""",
        {"ra": base.run_id, "ma": base.method, "rb": cand.run_id, "mb": cand.method, "metric": metric,
         "outcome": outcome, "sign": sign, "eps": EPS})


def answers(snap: Snapshot, systems: list[System], question_id: str) -> pd.DataFrame:
    keys = [s.key for s in systems]
    return snap.df("""
        SELECT r.run_id || ':' || r.method AS system, r.answer, q.question, q.ground_truth
        FROM responses r
        LEFT JOIN (SELECT * FROM questions WHERE list_contains($runs, run_id) AND question_id = $q) q
            USING (run_id, question_id)
        WHERE r.question_id = $q AND list_contains($runs, r.run_id)
          AND list_contains($keys, r.run_id || ':' || r.method)""",
        {"q": question_id, "keys": keys, "runs": sorted({s.run_id for s in systems})})


def significance(pairs: pd.DataFrame, n_boot: int = 1000, n_perm: int = 2000) -> tuple[pd.DataFrame, str]:
    """CI, p and Holm-adjusted p per metric from evalcore.stats, or (empty, reason) without it."""
    try:
        from evalcore.analysis.compare import compare_pair
        from evalcore.stats.resample import holm
    except Exception as exc:  # the stats module is another issue; its absence is reported, not hidden
        return pd.DataFrame(), f"p-values unavailable: evalcore.analysis.compare could not be imported ({exc})"
    rows: list[dict[str, Any]] = []
    for metric, g in pairs.groupby("metric", sort=True):
        stats = compare_pair(g["a"].to_numpy(float), g["b"].to_numpy(float), higher_is_better(metric),
                             n_boot, n_perm, 0)
        rows.append({"metric": metric, "ci_low": stats["ci_low"], "ci_high": stats["ci_high"],
                     "test": stats["test"], "p_value": stats["p_value"]})
    if not rows:
        return pd.DataFrame(), "no paired values"
    out = pd.DataFrame(rows)
    out["p_holm"] = holm(out["p_value"].tolist())
    out["significant"] = [bool(not math.isnan(p) and p < 0.05) for p in out["p_holm"].astype(float)]
    return out, ""


def scatter_frame(pairs: pd.DataFrame, metric: str) -> pd.DataFrame:
    g = pairs[pairs.metric == metric]
    return g.assign(delta=np.asarray(g["b"], float) - np.asarray(g["a"], float))
