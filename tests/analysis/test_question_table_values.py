"""question_table reads only the metric values of the rows it shows (by their question-id range),
and they are the stored values of exactly those rows."""

from evalcore.analysis.questions import question_drilldown as Qn
from evalcore.store import query_df
from evalcore.demo.synthetic import build_store


def test_limited_rows_carry_their_own_stored_values(tmp_path):
    store = build_store(tmp_path / "runs", n_runs=1, n_questions=30, n_metrics=8)
    run = store.run_ids()[0]
    metrics = ("context_recall", "faithfulness")
    for f in (Qn.QuestionFilter(run_id=run), Qn.QuestionFilter(run_id=run, text="q0001")):
        table = Qn.question_table(store, f, metrics, limit=7)
        assert 0 < len(table) <= 7 and all(m in table.columns for m in metrics)
        stored = query_df(store, "SELECT question_id, method, metric, value FROM metrics WHERE run_id = $r",
                    {"r": run}, runs=[run])
        for row in table.itertuples(index=False):
            for m in metrics:
                want = stored[(stored.question_id == row.question_id) & (stored.method == row.method)
                              & (stored.metric == m)]["value"]
                got = getattr(row, m)
                assert len(want) == 1 and (got == want.iloc[0] or (got != got and want.iloc[0] != want.iloc[0]))


def test_rows_are_the_one_query_reading(tmp_path):
    """question_table finds its keys first and then reads their texts: the rows must be those
    of the plain one-query reading, for every filter and a limit that cuts."""
    store = build_store(tmp_path / "runs", n_runs=1, n_questions=40, n_metrics=6)
    run = store.run_ids()[0]
    cats = query_df(store, "SELECT DISTINCT category FROM questions WHERE category IS NOT NULL ORDER BY 1")
    filters = [Qn.QuestionFilter(run_id=run), Qn.QuestionFilter(run_id=run, methods=("local_search",)),
               Qn.QuestionFilter(run_id=run, category=cats.category.iloc[0] if len(cats) else None),
               Qn.QuestionFilter(run_id=run, text="Q0001"),
               Qn.QuestionFilter(run_id=run, metric="faithfulness", min_value=0.3, max_value=0.8)]
    for f in filters:
        for limit in (5000, 9):
            want = query_df(store, """
                SELECT q.question_id, r.method, q.category, q.question_type, q.question,
                       left(r.answer, 160) AS answer, r.latency_ms, r.error
                FROM questions q JOIN responses r ON r.run_id = q.run_id AND r.question_id = q.question_id
                WHERE q.run_id = $run AND ($methods IS NULL OR list_contains($methods, r.method))
                  AND ($cat IS NULL OR q.category = $cat)
                  AND ($text IS NULL OR strpos(lower(concat_ws(' ', q.question_id, q.question, q.ground_truth,
                                                               r.answer)), lower($text)) > 0)
                  AND ($metric IS NULL OR EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = r.run_id
                        AND m.method = r.method AND m.question_id = r.question_id AND m.metric = $metric
                        AND NOT isnan(m.value) AND m.value >= $lo AND m.value <= $hi))
                ORDER BY q.question_id, r.method LIMIT $limit""",
                {"run": run, "methods": list(f.methods) if f.methods else None, "cat": f.category,
                 "text": f.text, "metric": f.metric, "lo": f.min_value, "hi": f.max_value, "limit": limit},
                runs=[run])
            got = Qn.question_table(store, f, limit=limit)
            assert len(want) > 0 and got.equals(want), (f, limit)
