"""Cost per query: one definition for the Runs page, the operations table (`evalcore show`,
exports), Charts, Compare and the CLI.

    cost per query = RAG cost per priced answer + judge cost per answer

- RAG cost of an answer: its `cost_usd` metric where scored (priced from tokens, or what the
  target reported), else the cost the target reported. It is averaged over the answers that
  have one: an unpriced answer's cost is unknown, not 0, so it neither lowers the mean (as
  dividing by every answer would) nor counts as free.
- Judge cost: every judge call made for the system's answers, a call made for a question and no
  method (its reference statements) shared evenly between the methods that answered it; divided
  by every answer, since every answer was judged (or not) at that cost.
- Missing on both sides -> missing (never 0). Judge only (no RAG price at all) -> the judge part.

Per answer (the Charts' box plot) the same parts: `rag_cost_usd`, `judge_cost_usd` (with its
share of per-question calls) and `cost_usd` = their sum where the RAG cost is known, or the
judge part alone when no answer of the system is priced. `system_costs` rolls the per-answer
rows up to the per-system figure by the definition above (a test holds it equal to the Runs
page's figure, which is computed from the run summaries).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from evalcore.store import RunStore, query_df


def cost_per_query(rag_per_priced_answer: pd.Series, judge_total: pd.Series, n_answers: pd.Series,
                   judge_unknown: pd.Series | None = None) -> pd.Series:
    """The definition, on aligned Series (one row per system or group): RAG mean over priced
    answers + judge cost total / answers; NaN when neither part is known, and NaN where
    `judge_unknown` (a judge call of an unpriced model: its cost is unknown, not 0)."""
    rag = rag_per_priced_answer.astype(float)
    judge = judge_total.astype(float) / n_answers.astype(float).where(n_answers > 0)
    total = (rag.fillna(0) + judge.fillna(0)).where(rag.notna() | judge.notna())
    if judge_unknown is not None:
        total = total.where(~judge_unknown.fillna(False).astype(bool))
    return total


def answer_costs(store: RunStore, keys: Sequence[str]) -> pd.DataFrame:
    """Per answer of the systems (`run_id:method`): latency_ms, rag_cost_usd (NaN when unknown),
    judge_cost_usd (its calls plus its share of per-question calls; NaN when the system has no
    judge call at all), cost_usd (see the module docstring)."""
    runs = sorted({k.partition(":")[0] for k in keys})
    out = query_df(store, """
        WITH r AS (SELECT run_id, method, question_id, latency_ms, cost_usd AS reported FROM responses
                   WHERE list_contains($keys, run_id || ':' || method)),
             priced AS (SELECT run_id, method, question_id, CASE WHEN isnan(value) THEN NULL ELSE value END AS v
                        FROM metrics WHERE metric = 'cost_usd' AND list_contains($keys, run_id || ':' || method)),
             shares AS (SELECT run_id, question_id, 1.0 / count(DISTINCT method) AS share FROM r GROUP BY ALL),
             j AS (SELECT run_id, method, question_id, sum(cost) AS cost FROM (
                       SELECT c.run_id, c.method, c.question_id, c.cost_usd AS cost FROM judge_calls c
                       WHERE c.method IS NOT NULL
                       UNION ALL
                       SELECT c.run_id, a.method, c.question_id, c.cost_usd * s.share FROM judge_calls c
                       JOIN (SELECT DISTINCT run_id, method, question_id FROM r) a USING (run_id, question_id)
                       JOIN shares s USING (run_id, question_id)
                       WHERE c.method IS NULL)
                   GROUP BY ALL),
             judged AS (SELECT DISTINCT run_id, method FROM j)
        SELECT r.run_id || ':' || r.method AS system, r.question_id, r.latency_ms,
               coalesce(p.v, r.reported) AS rag_cost_usd,
               CASE WHEN judged.method IS NOT NULL THEN coalesce(j.cost, 0) END AS judge_cost_usd,
               coalesce(isnan(j.cost), false) AS judge_cost_unknown
        FROM r LEFT JOIN priced p USING (run_id, method, question_id)
               LEFT JOIN j USING (run_id, method, question_id)
               LEFT JOIN judged USING (run_id, method)
        ORDER BY system, r.question_id""", {"keys": list(keys)}, runs=runs)
    for col in ("latency_ms", "rag_cost_usd", "judge_cost_usd"):
        out[col] = out[col].astype(float)
    any_priced = out.groupby("system")["rag_cost_usd"].transform(lambda s: s.notna().any()) if len(out) else out["rag_cost_usd"]
    both = out["rag_cost_usd"] + out["judge_cost_usd"].fillna(0)
    judge_only = out["judge_cost_usd"].where(~any_priced.astype(bool)) if len(out) else out["judge_cost_usd"]
    out["cost_usd"] = both.where(out["rag_cost_usd"].notna(), judge_only)
    out["judge_cost_unknown"] = out["judge_cost_unknown"].astype(bool)
    out.loc[out["judge_cost_unknown"], "cost_usd"] = np.nan  # an unpriced judge call: unknown, not 0
    return out


def system_costs(per_answer: pd.DataFrame) -> pd.DataFrame:
    """Per system: n, n_priced, rag and judge cost per query and cost_per_query_usd, from
    `answer_costs` rows, by the definition."""
    g = per_answer.groupby("system")
    out = pd.DataFrame({"n": g.size(), "n_priced": g["rag_cost_usd"].count(),
                        "rag_cost_per_query_usd": g["rag_cost_usd"].mean(),
                        "judge_cost_usd": g["judge_cost_usd"].sum(min_count=1),
                        "judge_cost_unknown": g["judge_cost_unknown"].any()}).reset_index()
    out["judge_cost_usd"] = out["judge_cost_usd"].where(~out["judge_cost_unknown"].astype(bool))
    out["judge_cost_per_query_usd"] = out["judge_cost_usd"] / out["n"]
    out["cost_per_query_usd"] = cost_per_query(out["rag_cost_per_query_usd"], out["judge_cost_usd"], out["n"],
                                               judge_unknown=out.pop("judge_cost_unknown"))
    return out
