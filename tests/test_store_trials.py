"""How trials are stored (docs/store.md, "Trials"): `trial` ends the key of every table of
answers, rows of files written before the column existed are trial 0, readers see trial 0 under
each table's own name and every trial under trial_<table>."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from evalcore.scoring.engine import score_run
from evalcore.store import RunStore, query_df
from evalcore.store.layout import read_pointer
from tests.analysis.trial_runs import trial_run


def _drop_trial_column(store: RunStore, run_id: str, tables: tuple[str, ...]) -> None:
    """Rewrite the run's canonical files of `tables` as an evalcore older than trials wrote them."""
    run_dir = store.run_dir(run_id)
    files = read_pointer(run_dir)["files"]
    for table in tables:
        path = run_dir / files[table]
        data = pq.read_table(path)
        pq.write_table(data.drop_columns(["trial"]), path)


def test_rows_written_before_trials_are_trial_0_and_a_rescore_replaces_them(tmp_path):
    store = RunStore(tmp_path / "runs")
    run_id = trial_run(store, tmp_path, "old", {"q1": ["yes"], "q2": ["no"]}, trial_column=False)
    _drop_trial_column(store, run_id, ("responses", "metrics"))
    from evalcore.store.views import forget_connections

    forget_connections()
    assert set(query_df(store, "SELECT trial FROM trial_responses")["trial"]) == {0}
    assert len(query_df(store, "SELECT * FROM responses")) == 2
    before = query_df(store, "SELECT question_id, value FROM metrics ORDER BY 1")
    score_run(store, run_id, metrics=["exact_match"], progress=False)  # new rows (trial 0) meet old ones
    after = query_df(store, "SELECT question_id, trial, value FROM trial_metrics ORDER BY 1")
    assert len(after) == 2 and set(after.trial) == {0}  # replaced, not doubled
    assert after.value.tolist() == before.value.tolist()
    pointer = read_pointer(store.run_dir(run_id))
    assert pointer["rows"]["metrics"] == 2 and pointer["replaced"]["metrics"] == 2


def test_trials_are_rows_of_their_own_and_trial_0_is_what_readers_of_the_table_see(tmp_path):
    store = RunStore(tmp_path / "runs")
    run_id = trial_run(store, tmp_path, "t", {"q1": ["yes", "no", "yes"], "q2": ["no", "no", "yes"]})
    every = query_df(store, "SELECT question_id, trial, answer FROM trial_responses ORDER BY 1, 2")
    assert list(zip(every.question_id, every.trial)) == [(q, t) for q in ("q1", "q2") for t in range(3)]
    first = query_df(store, "SELECT question_id, answer FROM responses ORDER BY 1")
    assert first.answer.tolist() == ["yes", "no"]  # trial 0's
    values = query_df(store, "SELECT trial, value FROM trial_metrics WHERE question_id = 'q1' ORDER BY trial")
    assert values.value.tolist() == [1.0, 0.0, 1.0]  # each trial scored on its own
    wide = query_df(store, 'SELECT "v:exact_match" AS v FROM metric_wide ORDER BY question_id')
    assert wide.v.tolist() == [1.0, 0.0]  # one row per answer: trial 0's
    assert read_pointer(store.run_dir(run_id))["replaced"]["responses"] == 0


@pytest.mark.parametrize("bad", ["-1", "1.5", "x", "100", "true", "２"])
def test_an_import_refuses_a_bad_trial_in_one_line_naming_file_record_and_field(tmp_path, bad):
    from evalcore.errors import InputError
    from evalcore.scoring.importer import import_recorded

    path = tmp_path / "answers.csv"
    path.write_text(f"question_id,question,answer,trial\nq1,Is it?,yes,0\nq1,Is it?,no,{bad}\n", encoding="utf-8")
    store = RunStore(tmp_path / "runs")
    with pytest.raises(InputError) as err:
        import_recorded(store, path)
    text = str(err.value)
    assert len(text.splitlines()) == 1 and "answers.csv" in text and "record 2" in text and "field 'trial'" in text
    assert "0 to 99" in text
    assert store.run_ids() == []


def test_an_import_refuses_two_answers_of_one_trial(tmp_path):
    from evalcore.errors import InputError
    from evalcore.scoring.importer import import_recorded

    path = tmp_path / "answers.jsonl"
    path.write_text('{"question_id": "q1", "question": "Is it?", "answer": "yes", "trial": 1}\n'
                    '{"question_id": "q1", "question": "Is it?", "answer": "no", "trial": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match="record 2.*trial 1"):
        import_recorded(RunStore(tmp_path / "runs"), path)


def test_an_import_needs_trial_0_of_every_question_with_trials(tmp_path):
    from evalcore.errors import InputError
    from evalcore.scoring.importer import import_recorded

    path = tmp_path / "answers.csv"
    path.write_text("question_id,question,answer,trial\nq1,Is it?,yes,0\nq2,Is it?,no,1.0\nq2,Is it?,no,2\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"record 2, field 'trial': question 'q2' .* no trial 0"):
        import_recorded(RunStore(tmp_path / "runs"), path)
