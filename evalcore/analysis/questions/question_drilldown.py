"""Per-question reads for the drill-down: filtered question rows, and one question end to end.

Context relevance verdicts come from the typed `context_verdicts` table (rank, verdict, score,
reason, judge), joined to the retrieved contexts by rank; nothing is parsed out of JSON here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pandas as pd

from evalcore.store import RunStore, query_df, wide_columns
from evalcore.store.wide import value_column, value_expr
from evalcore.analysis.read.recent_frames import RecentFrames


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
    # the keys first (the filters read only the columns they test), then the texts of the
    # `limit` rows kept: at 100,000 questions reading every answer's text to keep 5,000 took
    # twice as long (DuckDB prunes the second scans to the kept keys' row groups)
    rows = query_df(store, """
        WITH keys AS (
        SELECT q.question_id, r.method
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
        ORDER BY q.question_id, r.method LIMIT $limit)
        SELECT q.question_id, r.method, q.category, q.question_type, q.question,
               left(r.answer, 160) AS answer, r.latency_ms, r.error
        FROM keys JOIN questions q ON q.run_id = $run AND q.question_id = keys.question_id
                  JOIN responses r ON r.run_id = $run AND r.question_id = keys.question_id AND r.method = keys.method
        ORDER BY q.question_id, r.method""",
        {"run": f.run_id, "methods": list(f.methods) if f.methods else None, "cat": f.category,
         "qt": f.question_type, "text": f.text or None, "metric": f.metric, "lo": f.min_value,
         "hi": f.max_value, "limit": limit}, runs=runs)
    if rows.empty or not show_metrics:
        return rows
    # only the values of the rows shown, from metric_wide (one row per answer: no pivot); they
    # are sorted by question_id, so the id range bounds them
    present = wide_columns(store, runs)
    cols = [m for m in dict.fromkeys(show_metrics) if value_column(m) in present]
    if not cols:
        return rows
    picked = ", ".join(f"{value_expr(m, present)} AS v{i}" for i, m in enumerate(cols))
    values = query_df(store, f"""SELECT question_id, method, {picked} FROM metric_wide
                          WHERE run_id = $run AND question_id BETWEEN $first AND $last
                            AND ($methods IS NULL OR list_contains($methods, method))""",
                      {"run": f.run_id, "methods": list(f.methods) if f.methods else None,
                       "first": rows["question_id"].min(), "last": rows["question_id"].max()}, runs=runs)
    values = values.rename(columns={f"v{i}": m for i, m in enumerate(cols)})
    return rows.merge(values, on=["question_id", "method"], how="left")


# The last few questions' details, keyed by the store's state token (never stale): the Questions
# page reads one question's detail twice, for its columns and for its story (six queries each).
_RECENT = RecentFrames(8)


def question_detail(store: RunStore, run_id: str, question_id: str) -> dict[str, pd.DataFrame]:
    """Everything stored about one question in one run, every method."""
    kept = _RECENT.get(store, (run_id, question_id), lambda: _question_detail(store, run_id, question_id))
    return {name: frame.copy() for name, frame in kept.items()}  # each caller its own frames


def _question_detail(store: RunStore, run_id: str, question_id: str) -> dict[str, pd.DataFrame]:
    p = {"run": run_id, "q": question_id}
    runs = [run_id]
    return {
        "question": query_df(store, "SELECT * EXCLUDE (written_at) FROM questions WHERE run_id = $run AND question_id = $q",
                       p, runs),
        "responses": query_df(store, """SELECT method, answer, abstained, latency_ms, input_tokens, output_tokens,
                                         cost_usd, error, error_kind, record
                                  FROM responses WHERE run_id = $run AND question_id = $q ORDER BY method""", p, runs),
        "metrics": query_df(store, """SELECT method, metric, "group", value, label, reason, judge_id, version, details
                                FROM metrics WHERE run_id = $run AND question_id = $q
                                ORDER BY method, "group", metric""", p, runs),
        "claims": query_df(store, """SELECT method, metric, source, idx, text, verdict, reason, judge_id
                               FROM claims WHERE run_id = $run AND question_id = $q
                               ORDER BY method, metric, source, idx""", p, runs),
        "contexts": query_df(store, """SELECT method, metric, rank, verdict, score, reason, judge_id
                                 FROM context_verdicts WHERE run_id = $run AND question_id = $q
                                 ORDER BY method, metric, rank""", p, runs),
        "judge_calls": query_df(store, """SELECT method, purpose, judge_id, request, response_raw, parsed, error,
                                           input_tokens, output_tokens, cost_usd, latency_ms, cache_hit
                                    FROM judge_calls WHERE run_id = $run AND question_id = $q
                                    ORDER BY method, purpose""", p, runs),
    }


def _importance(name: str) -> tuple[int, int, str]:
    """Where a reader weighs a metric: its MetricSpec.importance (tier: answer quality,
    faithfulness, retrieval; position in the tier); an unplaced cut-off metric (`recall@3`)
    after the placed retrieval ones; everything else after the tiers, alphabetically."""
    from evalcore.metrics.base import IMPORTANCE_TIERS, RETRIEVAL
    from evalcore.metrics.registry import METRICS

    spec = METRICS.get(name)
    if spec is not None and spec.importance is not None:
        return spec.importance[0], spec.importance[1], name
    if "@" in name:
        return RETRIEVAL, sys.maxsize, name
    return len(IMPORTANCE_TIERS), 0, name


def metric_order(names: list[str]) -> list[str]:
    """`names` sorted by importance: answer quality, faithfulness, retrieval, then the rest."""
    return sorted(names, key=_importance)


def readable_details(details: str | None) -> list[tuple[str, str]]:
    """A metric's JSON details as (key, value) lines, nested keys joined with '.', for reading."""
    import json

    if not isinstance(details, str) or not details:
        return []
    try:
        data = json.loads(details)
    except ValueError:
        return [("details", details)]
    out: list[tuple[str, str]] = []

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value, start=1):
                walk(f"{prefix}[{i}]", v)
        else:
            out.append((prefix or "value", value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    walk("", data)
    return out


def metric_details(detail: dict[str, pd.DataFrame], metric: str) -> pd.DataFrame:
    """One metric's stored details and unscored reasons for every method of a question_detail,
    as (method, field, value) rows to read: the JSON is parsed here, not by the page."""
    rows = []
    m = detail["metrics"]
    for r in m[m.metric == metric].itertuples():
        rows += [{"method": r.method, "field": k, "value": v} for k, v in readable_details(r.details)]
        if isinstance(r.reason, str):
            rows.append({"method": r.method, "field": "reason (not scored)", "value": r.reason})
    return pd.DataFrame(rows, columns=["method", "field", "value"])


def grid(store: RunStore, run_id: str, metric: str, methods: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Questions x methods of one run, each cell the metric's value (NaN: not scored), plus the
    question text and `spread` (max - min across methods; 0 when the systems agree)."""
    values = query_df(store, """
        SELECT m.question_id, m.method, CASE WHEN isnan(m.value) THEN NULL ELSE m.value END AS value
        FROM metrics m WHERE m.run_id = $run AND m.metric = $metric
          AND ($methods IS NULL OR list_contains($methods, m.method))""",
                {"run": run_id, "metric": metric, "methods": list(methods) if methods else None}, runs=[run_id])
    texts = query_df(store, "SELECT question_id, question FROM questions WHERE run_id = $run", {"run": run_id}, runs=[run_id])
    if values.empty:
        return pd.DataFrame(columns=["question_id", "question", "spread"])
    wide = values.pivot_table(index="question_id", columns="method", values="value", aggfunc="first",
                              dropna=False)
    wide.columns.name = None
    cols = list(wide.columns)
    wide["spread"] = wide[cols].max(axis=1) - wide[cols].min(axis=1)
    out = texts.merge(wide.reset_index(), on="question_id", how="right")
    return out[["question_id", "question", *cols, "spread"]].sort_values("question_id").reset_index(drop=True)


def questions_with_unsupported_claims(store: RunStore, run_id: str) -> pd.DataFrame:
    """(question_id, method, n_unsupported): answers with at least one claim the judge found
    unsupported by the retrieved contexts."""
    return query_df(store, """
        SELECT question_id, method, count(*) AS n_unsupported FROM claims
        WHERE run_id = $run AND source = 'answer' AND verdict = 'not_supported'
        GROUP BY ALL ORDER BY question_id, method""", {"run": run_id}, runs=[run_id])


def question_deltas(store: RunStore, run_id: str, metric: str, method_a: str, method_b: str) -> pd.DataFrame:
    """Per question: the metric for two methods and Δ = b - a (for sorting the question list)."""
    return query_df(store, """
        WITH v AS (SELECT question_id, method, CASE WHEN isnan(value) THEN NULL ELSE value END AS value
                   FROM metrics WHERE run_id = $run AND metric = $metric)
        SELECT a.question_id, a.value AS a, b.value AS b, b.value - a.value AS delta
        FROM v a JOIN v b USING (question_id)
        WHERE a.method = $ma AND b.method = $mb ORDER BY abs(b.value - a.value) DESC NULLS LAST, a.question_id""",
              {"run": run_id, "metric": metric, "ma": method_a, "mb": method_b}, runs=[run_id])


def key_metrics(names: list[str], per_tier: tuple[int, ...] = (3, 2, 2)) -> list[str]:
    """The few scores that summarise an answer: the most important of answer quality,
    faithfulness and retrieval (a few of each), in importance order."""
    ordered = metric_order(names)
    picked: list[str] = []
    for tier, n in enumerate(per_tier):
        picked += [m for m in ordered if _importance(m)[0] == tier][:n]
    return picked
