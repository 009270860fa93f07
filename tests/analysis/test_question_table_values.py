"""question_table reads only the metric values of the rows it shows (by their question-id range),
and they are the stored values of exactly those rows."""

from evalcore.analysis import question_drilldown as Qn
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
