"""The dashboard's SQL: every aggregate the pages show, as bound-parameter queries against
the snapshot (tables named like `open_db`'s views, see snapshot.py).

Rules (datasette's): user input never becomes SQL text. Values are bound parameters;
the few identifiers a user can choose (a sort column) are checked against allow-lists
by the caller. Aggregation happens here in DuckDB; pandas only reshapes (pivot) results.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from evalcore.ui.snapshot import Snapshot

# Metrics the leaderboard shows first when present (others can be added by the user).
KEY_METRICS = ["weighted_score", "answer_correctness", "factual_accuracy", "faithfulness",
               "context_precision", "context_recall", "answer_relevance", "token_f1",
               "keyword_coverage", "recall@5", "mrr", "citation_precision"]


@dataclass(frozen=True)
class System:
    """A (run, method) pair: the unit the pages compare. URL form `run_id:method`
    (run ids cannot contain ':', so the first ':' always splits correctly)."""

    run_id: str
    method: str

    @property
    def key(self) -> str:
        return f"{self.run_id}:{self.method}"

    @staticmethod
    def parse(text: str) -> "System | None":
        run_id, sep, method = text.partition(":")
        return System(run_id, method) if sep and run_id and method else None


# ---- allow-lists ------------------------------------------------------------------------
def run_list(snap: Snapshot) -> pd.DataFrame:
    return snap.df("SELECT run_id, name, status, created_at, kind FROM runs ORDER BY created_at DESC")


def systems(snap: Snapshot, run_ids: list[str] | None = None) -> pd.DataFrame:
    """Every (run, method) with answers, newest run first; `label` is for pickers."""
    return snap.df("""
        SELECT s.run_id, s.method, r.name, r.created_at,
               r.name || ' / ' || s.method || '  (' || s.run_id || ')' AS label,
               EXISTS (SELECT 1 FROM metric_keys m WHERE m.run_id = s.run_id AND m.method = s.method)
                   AS has_metrics
        FROM response_stats s JOIN runs r USING (run_id)
        WHERE $runs IS NULL OR list_contains($runs, s.run_id)
        ORDER BY r.created_at DESC, s.method""", {"runs": run_ids})


def metric_names(snap: Snapshot, run_ids: list[str] | None = None) -> list[str]:
    df = snap.df("""SELECT DISTINCT metric FROM metric_keys
                    WHERE $runs IS NULL OR list_contains($runs, run_id) ORDER BY metric""",
                 {"runs": run_ids})
    return df["metric"].tolist()


def facet_values(snap: Snapshot, run_id: str) -> dict[str, list[str]]:
    """Distinct categories and question types of a run (the filter allow-lists)."""
    df = snap.df("""SELECT 'category' AS facet, category AS v FROM questions WHERE run_id = $r AND category IS NOT NULL
                    UNION SELECT 'question_type', question_type FROM questions
                    WHERE run_id = $r AND question_type IS NOT NULL ORDER BY 1, 2""", {"r": run_id})
    return {f: df.loc[df.facet == f, "v"].tolist() for f in ("category", "question_type")}


# ---- Runs page ---------------------------------------------------------------------------
def leaderboard(snap: Snapshot, metrics: list[str], search: str | None = None,
                statuses: list[str] | None = None) -> pd.DataFrame:
    """One row per (run, method): score means, n, cost, latency, judges, date.

    Cost = the target's reported cost plus judge cost; cost per query divides by answers.
    weighted_score_ci95 is the half-width of a normal-approximation 95% interval of that mean
    (1.96 s / sqrt(n)): enough to see whether two rows differ by more than their noise; the
    Compare page runs the paired tests that decide it.
    """
    base = snap.df("""
        SELECT r.run_id, r.name, s.method, r.status, r.created_at, r.dataset,
               ws.mean AS weighted_score,
               1.96 * ws.std / sqrt(nullif(ws.n_scored, 0)) AS weighted_score_ci95,
               s.n_responses AS n, s.n_errors,
               coalesce(s.rag_cost_usd, 0) + coalesce(j.judge_cost_usd, 0) AS cost_usd,
               (coalesce(s.rag_cost_usd, 0) + coalesce(j.judge_cost_usd, 0)) / nullif(s.n_responses, 0)
                   AS cost_per_query_usd,
               s.latency_p50_ms, s.latency_p95_ms,
               coalesce(j.judges, array_to_string(r.judges, ', ')) AS judges
        FROM runs r
        JOIN response_stats s USING (run_id)
        LEFT JOIN judge_stats j USING (run_id, method)
        LEFT JOIN metric_stats ws ON ws.run_id = s.run_id AND ws.method = s.method
                                  AND ws.metric = 'weighted_score'
        WHERE ($search IS NULL OR strpos(lower(concat_ws(' ', r.name, r.run_id, s.method, r.dataset)),
                                         lower($search)) > 0)
          AND ($statuses IS NULL OR list_contains($statuses, r.status))
        ORDER BY weighted_score DESC NULLS LAST, r.created_at DESC""",
                   {"search": search or None, "statuses": statuses or None})
    if base.empty or not metrics:
        return base
    means = snap.df("""SELECT run_id, method, metric, mean FROM metric_stats
                       WHERE list_contains($m, metric) AND metric <> 'weighted_score'""", {"m": metrics})
    if means.empty:
        return base
    wide = means.pivot(index=["run_id", "method"], columns="metric", values="mean").reset_index()
    wide.columns.name = None
    cols = [m for m in metrics if m in wide.columns]
    return base.merge(wide[["run_id", "method", *cols]], on=["run_id", "method"], how="left")


# ---- Questions page ---------------------------------------------------------------------
@dataclass
class QuestionFilter:
    run_id: str
    methods: list[str] | None = None
    category: str | None = None
    question_type: str | None = None
    text: str | None = None
    metric: str | None = None
    min_value: float | None = None
    max_value: float | None = None


def question_table(snap: Snapshot, f: QuestionFilter, show_metrics: list[str], limit: int = 5000) -> pd.DataFrame:
    """Rows (question, method) passing the filters, with the chosen metrics as columns."""
    rows = snap.df("""
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
        {"run": f.run_id, "methods": f.methods or None, "cat": f.category, "qt": f.question_type,
         "text": f.text or None, "metric": f.metric, "lo": f.min_value, "hi": f.max_value, "limit": limit})
    if rows.empty or not show_metrics:
        return rows
    values = snap.df("""SELECT question_id, method, metric, value FROM metrics
                        WHERE run_id = $run AND list_contains($m, metric)
                          AND ($methods IS NULL OR list_contains($methods, method))""",
                     {"run": f.run_id, "m": show_metrics, "methods": f.methods or None})
    if values.empty:
        return rows
    wide = values.pivot_table(index=["question_id", "method"], columns="metric", values="value",
                              aggfunc="first", dropna=False).reset_index()
    wide.columns.name = None
    cols = [m for m in show_metrics if m in wide.columns]
    return rows.merge(wide[["question_id", "method", *cols]], on=["question_id", "method"], how="left")


def question_detail(snap: Snapshot, run_id: str, question_id: str) -> dict[str, pd.DataFrame]:
    """Everything stored about one question in one run, every method."""
    p = {"run": run_id, "q": question_id}
    return {
        "question": snap.df("SELECT * EXCLUDE (written_at) FROM questions WHERE run_id = $run AND question_id = $q", p),
        "responses": snap.df("""SELECT method, answer, abstained, latency_ms, input_tokens, output_tokens,
                                       cost_usd, error, error_kind, record
                                FROM responses WHERE run_id = $run AND question_id = $q ORDER BY method""", p),
        "metrics": snap.df("""SELECT method, metric, "group", value, reason, judge_id, version, details
                              FROM metrics WHERE run_id = $run AND question_id = $q
                              ORDER BY method, "group", metric""", p),
        "claims": snap.df("""SELECT method, metric, source, idx, text, verdict, reason, judge_id
                             FROM claims WHERE run_id = $run AND question_id = $q
                             ORDER BY method, metric, source, idx""", p),
        "judge_calls": snap.df("""SELECT method, purpose, judge_id, request, response_raw, parsed, error,
                                         input_tokens, output_tokens, cost_usd, latency_ms, cache_hit
                                  FROM judge_calls WHERE run_id = $run AND question_id = $q
                                  ORDER BY method, purpose""", p),
    }
