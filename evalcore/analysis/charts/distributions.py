"""Distributions per system for the Charts page: grade and answer-class shares, a metric by
question facet, per-answer latency and cost, and the points of the Pareto fronts.

Systems are `run_id:method` keys; every query opens only the runs they name.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from evalcore.analysis.runs.leaderboard import system_rows
from evalcore.store import RunStore, query_df

FACETS = ("category", "question_type", "difficulty")  # the only columns a user may group by
_SYS = "run_id || ':' || method"


def _runs(keys: Sequence[str]) -> list[str]:
    return sorted({k.partition(":")[0] for k in keys})


def grade_metrics() -> tuple[str, ...]:
    """The metrics whose stored label is a grade letter, first preferred (MetricSpec.label_kind
    "grade", by label_rank: factual_grade before factual_accuracy)."""
    from evalcore.metrics.registry import labelled_metrics

    return labelled_metrics("grade")


def label_counts(store: RunStore, keys: Sequence[str], kind: str) -> pd.DataFrame:
    """Counts and shares of each grade (kind='grade', from the run summaries; of the first of
    grade_metrics() a system has) or answer class (kind='answer_class': CORRECT / WRONG /
    DONT_KNOW / ERROR / UNSCORED by the one rule of evalcore.analysis.read.correctness) per system."""
    if kind not in ("grade", "answer_class"):
        raise ValueError("kind must be 'grade' or 'answer_class'")
    if kind == "answer_class":
        return _class_counts(store, keys)
    metrics = list(grade_metrics())
    out = query_df(store, f"""
        WITH l AS (SELECT run_id, method, metric, label, n FROM summary_labels
                   WHERE list_contains($metrics, metric) AND list_contains($keys, {_SYS})),
             pick AS (SELECT run_id, method, arg_min(metric, list_position($metrics, metric)) AS metric
                      FROM l GROUP BY run_id, method)
        SELECT {_SYS} AS system, label, n, n / sum(n) OVER (PARTITION BY run_id, method) AS share
        FROM l JOIN pick USING (run_id, method, metric) ORDER BY system, label""",
             {"metrics": metrics, "keys": list(keys)}, runs=_runs(keys))
    return out


def _class_counts(store: RunStore, keys: Sequence[str]) -> pd.DataFrame:
    """The answer classes counted in the store by the one rule (correctness.classified_sql):
    sums of failure_modes.outcome_counts, the table the diagnosis beside them reads too (a pandas
    frame of 200,000 answers cost ~1 s)."""
    from evalcore.analysis.questions.failure_modes import outcome_counts

    counts = outcome_counts(store, keys)
    if counts.empty:
        return pd.DataFrame(columns=["system", "label", "n", "share"])
    out = counts.groupby(["system", "cls"])["n"].sum().reset_index().rename(columns={"cls": "label"})
    out["share"] = out["n"] / out.groupby("system")["n"].transform("sum")
    return out.sort_values(["system", "label"]).reset_index(drop=True)


def metric_by_facet(store: RunStore, keys: Sequence[str], metric: str, facet: str) -> pd.DataFrame:
    """Per-question values of one metric with the question's facet (for box plots)."""
    if facet not in FACETS:
        raise ValueError(f"facet must be one of {FACETS}")
    return query_df(store, f"""
        SELECT m.run_id || ':' || m.method AS system, coalesce(q.{facet}, '(none)') AS facet, m.value
        FROM metrics m JOIN questions q USING (run_id, question_id)
        WHERE m.metric = $metric AND NOT isnan(m.value) AND list_contains($keys, m.run_id || ':' || m.method)""",
              {"metric": metric, "keys": list(keys)}, runs=_runs(keys))


def facet_means(store: RunStore, keys: Sequence[str], metric: str, facet: str) -> pd.DataFrame:
    if facet not in FACETS:
        raise ValueError(f"facet must be one of {FACETS}")
    return query_df(store, f"""
        SELECT m.run_id || ':' || m.method AS system, coalesce(q.{facet}, '(none)') AS facet,
               avg(m.value) AS mean, count(*) AS n
        FROM metrics m JOIN questions q USING (run_id, question_id)
        WHERE m.metric = $metric AND NOT isnan(m.value) AND list_contains($keys, m.run_id || ':' || m.method)
        GROUP BY ALL ORDER BY facet, system""", {"metric": metric, "keys": list(keys)}, runs=_runs(keys))


def latency_cost(store: RunStore, keys: Sequence[str]) -> pd.DataFrame:
    """Per answer: latency (ms) and cost (USD) by the one definition of evalcore.analysis.runs.cost
    (RAG cost + the judge calls made for it, its share of per-question calls included)."""
    from evalcore.analysis.runs.cost import answer_costs

    return answer_costs(store, keys)


def frontier_points(store: RunStore, keys: Sequence[str], metric: str) -> pd.DataFrame:
    """Per system: mean of the quality metric, cost per query (USD) and p50 latency (ms), by the
    leaderboard's definitions (the same numbers as the Runs page)."""
    systems = [tuple(k.partition(":")[::2]) for k in keys]
    rows = system_rows(store, systems, [metric])
    if rows.empty or metric not in rows.columns:
        return pd.DataFrame(columns=["system", "quality", "cost_per_query_usd", "latency_p50_ms"])
    out = pd.DataFrame({"system": rows.run_id + ":" + rows.method, "quality": rows[metric],
                        "cost_per_query_usd": rows["cost_per_query_usd"], "latency_p50_ms": rows["latency_p50_ms"]})
    return out.dropna(subset=["quality"]).sort_values("quality", ascending=False).reset_index(drop=True)


def front_2d(points: pd.DataFrame, x: str) -> pd.DataFrame:
    """The points of one 2-D Pareto chart (quality up, `x` down) with `front`: on the front or
    not, by evalcore.stats.pareto (the Pareto rule of `evalcore compare --pareto`). Points with
    no quality or no `x` cannot be placed and are left out."""
    from evalcore.stats.pareto import pareto_front

    pts = points.dropna(subset=[x, "quality"]).reset_index(drop=True)
    if pts.empty:
        return pts.assign(front=pd.Series(dtype=bool))
    table, _ = pareto_front([{"label": str(i), "quality": q, x: c} for i, (q, c) in enumerate(zip(pts["quality"], pts[x]))],
                            {"quality": "max", x: "min"})
    return pts.assign(front=table["on_front"].astype(bool).to_numpy())



def correct_differences(classes: pd.DataFrame, modes: pd.DataFrame) -> dict[str, int]:
    """Why the answer-class bars and the failure-mode diagnosis count "correct" differently, from
    the two tables the Charts page already has (`label_counts(..., "answer_class")` and
    `failure_modes`; nothing is queried again): `correct_abstention` answers (DONT_KNOW on an
    unanswerable question: a don't-know in the class bars, a right outcome in the diagnosis) and
    `target_error` answers (ERROR in the class bars, left out of the diagnosis, which covers
    answered questions only)."""
    return {"correct_abstention": int(modes.loc[modes.bucket == "correct abstention", "n"].sum()) if len(modes) else 0,
            "target_error": int(classes.loc[classes.label == "ERROR", "n"].sum()) if len(classes) else 0}
