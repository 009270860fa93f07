"""A missing value reads "–" (docs/dashboard.md), never Streamlit's default "None": every table
of the Runs page, the Questions page's per-method tables and the agreement table (whose
annotator columns are empty until two people label the same item) sets the placeholder."""

from __future__ import annotations

from tests.app.test_pages import synthetic_runs

MISSING = "–"


def _placeholders(at) -> list[str]:
    return [d.proto.placeholder for d in at.dataframe]


def test_runs_table_shows_missing_values_as_a_dash(make_app):
    at = make_app("runs", cols=["faithfulness", "token_f1"])
    assert not at.exception
    board = at.dataframe[0]
    assert board.value.isna().any().any()  # there is something missing to show
    assert _placeholders(at) == [MISSING] * len(at.dataframe)


def test_questions_metric_tables_show_missing_values_as_a_dash(make_app, app_store):
    run = synthetic_runs(app_store)[0]
    at = make_app("questions", run=run, qid="q00002")
    assert not at.exception
    scores = [d for d in at.dataframe if list(d.value.columns) == ["metric", "value", "label", "basis"]]
    assert len(scores) == 2 and all(d.proto.placeholder == MISSING for d in scores)
    assert _placeholders(at) == [MISSING] * len(at.dataframe)


def test_agreement_annotator_columns_show_missing_values_as_a_dash(make_app, app_store):
    run = synthetic_runs(app_store)[0]
    at = make_app("annotate", run=run, kind="claim", who="dora")
    next(b for b in at.button if b.proto.shortcut.upper() == "A").click().run()
    assert not at.exception
    agreement = next(d for d in at.dataframe if "cohen_kappa" in d.value.columns)
    assert agreement.value["annotator_agreement"].isna().all()  # one annotator: no pair yet
    assert _placeholders(at) == [MISSING] * len(at.dataframe)
