"""Per-question reads for the drill-down: filtered question rows, and one question end to end.

Context relevance verdicts come from the typed `context_verdicts` table (rank, verdict, score,
reason, judge), joined to the retrieved contexts by rank; nothing is parsed out of JSON here.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from evalcore.analysis.sql import df
from evalcore.store import RunStore


@dataclass(frozen=True)
class QuestionFilter:
    run_id: str
    methods: tuple[str, ...] | None = None
    category: str | None = None
    question_type: str | None = None
    text: str | None = None
    metric: str | None = None
    min_value: float | None = None
    max_value: float | None = None


def question_table(store: RunStore, f: QuestionFilter, show_metrics: tuple[str, ...] = (),
                   limit: int = 5000) -> pd.DataFrame:
    """Rows (question, method) passing the filters, with the chosen metrics as columns."""
    runs = [f.run_id]
    rows = df(store, """
        SELECT q.question_id, r.method, q.category, q.question_type, q.question,
               left(r.answer, 160) AS answer, r.latency_ms, r.error
        FROM questions q JOIN responses r ON r.run_id = q.run_id AND r.question_id = q.question_id
        WHERE q.run_id = $run
          AND ($methods IS NULL OR list_contains($methods, r.method))
          AND ($cat IS NULL OR q.category = $cat)
          AND ($qt IS NULL OR q.question_type = $qt)
          AND ($text IS NULL OR strpos(lower(concat_ws(' ', q.question_id, q.question, q.ground_truth, r.answer)),
                                       lower($text)) > 0)
          AND ($metric IS NULL OR EXISTS (
                SELECT 1 FROM metrics m WHERE m.run_id = r.run_id AND m.method = r.method
                  AND m.question_id = r.question_id AND m.metric = $metric AND NOT isnan(m.value)
                  AND ($lo IS NULL OR m.value >= $lo) AND ($hi IS NULL OR m.value <= $hi)))
        ORDER BY q.question_id, r.method LIMIT $limit""",
        {"run": f.run_id, "methods": list(f.methods) if f.methods else None, "cat": f.category,
         "qt": f.question_type, "text": f.text or None, "metric": f.metric, "lo": f.min_value,
         "hi": f.max_value, "limit": limit}, runs=runs)
    if rows.empty or not show_metrics:
        return rows
    values = df(store, """SELECT question_id, method, metric, value FROM metrics
                          WHERE run_id = $run AND list_contains($m, metric)
                            AND ($methods IS NULL OR list_contains($methods, method))""",
                {"run": f.run_id, "m": list(show_metrics), "methods": list(f.methods) if f.methods else None},
                runs=runs)
    if values.empty:
        return rows
    wide = values.pivot_table(index=["question_id", "method"], columns="metric", values="value",
                              aggfunc="first", dropna=False).reset_index()
    wide.columns.name = None
    cols = [m for m in show_metrics if m in wide.columns]
    return rows.merge(wide[["question_id", "method", *cols]], on=["question_id", "method"], how="left")


def question_detail(store: RunStore, run_id: str, question_id: str) -> dict[str, pd.DataFrame]:
    """Everything stored about one question in one run, every method."""
    p = {"run": run_id, "q": question_id}
    runs = [run_id]
    return {
        "question": df(store, "SELECT * EXCLUDE (written_at) FROM questions WHERE run_id = $run AND question_id = $q",
                       p, runs),
        "responses": df(store, """SELECT method, answer, abstained, latency_ms, input_tokens, output_tokens,
                                         cost_usd, error, error_kind, record
                                  FROM responses WHERE run_id = $run AND question_id = $q ORDER BY method""", p, runs),
        "metrics": df(store, """SELECT method, metric, "group", value, label, reason, judge_id, version, details
                                FROM metrics WHERE run_id = $run AND question_id = $q
                                ORDER BY method, "group", metric""", p, runs),
        "claims": df(store, """SELECT method, metric, source, idx, text, verdict, reason, judge_id
                               FROM claims WHERE run_id = $run AND question_id = $q
                               ORDER BY method, metric, source, idx""", p, runs),
        "contexts": df(store, """SELECT method, metric, rank, verdict, score, reason, judge_id
                                 FROM context_verdicts WHERE run_id = $run AND question_id = $q
                                 ORDER BY method, metric, rank""", p, runs),
        "judge_calls": df(store, """SELECT method, purpose, judge_id, request, response_raw, parsed, error,
                                           input_tokens, output_tokens, cost_usd, latency_ms, cache_hit
                                    FROM judge_calls WHERE run_id = $run AND question_id = $q
                                    ORDER BY method, purpose""", p, runs),
    }
