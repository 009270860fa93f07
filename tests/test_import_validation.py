"""Imports that used to succeed with garbage now fail clearly (issue 14, "silent wrong input").

Each case is a file a user could plausibly hand us: a ragas CSV without or with a misspelt
`response` column, unknown columns, a JSON list in a `method` cell, a CSV with an unterminated
quote, a short row or a duplicated header, a lone UTF-16 surrogate in a JSON answer. The store
must stay empty after every refused import.
"""

import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import InputError
from evalcore.scoring.importer import import_recorded
from evalcore.scoring.queries import run_responses

runner = CliRunner()
RAGAS_HEADER = "user_input,response,retrieved_contexts,reference"


def _refused(store, path, match, **kw):
    with pytest.raises(InputError, match=match) as info:
        import_recorded(store, path, **kw)
    assert info.value.file == str(path)
    assert store.run_ids() == []
    return info.value


def test_csv_without_response_column_is_refused(store, tmp_path):
    path = tmp_path / "ragas.csv"
    path.write_text("user_input,retrieved_contexts,reference\nWhat?,\"[\"\"c\"\"]\",gt\n", encoding="utf-8")
    err = _refused(store, path, r"no answer field.*response")
    assert err.record == 1 and err.field == "answer"


def test_retrieval_only_import_needs_the_flag(store, tmp_path):
    path = tmp_path / "retriever.jsonl"
    path.write_text(json.dumps({"question_id": "q1", "question": "Q?", "method": "bm25",
                                "retrieved": [{"chunk_id": "c1", "text": "t"}]}) + "\n", encoding="utf-8")
    _refused(store, path, r"no answer field.*--retrieval-only")
    result = import_recorded(store, path, retrieval_only=True)
    (resp,) = run_responses(store, result.run_id)
    assert resp.answer == "" and resp.retrieved[0].chunk_id == "c1"


def test_misspelt_response_column_gets_did_you_mean(store, tmp_path):
    path = tmp_path / "ragas.csv"
    path.write_text("user_input,respnse,reference\nWhat?,an answer,gt\n", encoding="utf-8")
    err = _refused(store, path, r"did you mean 'response'")
    assert err.field == "respnse"
    # keeping extras does not let the typo through: there is still no answer, and the hint says why
    _refused(store, path, r"no answer field.*the file has 'respnse' \(did you mean 'response'", allow_extra=True)


def test_unknown_columns_refused_unless_allow_extra_and_reported(store, tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text(f"{RAGAS_HEADER},faithfulness_score\nWhat?,yes,\"[\"\"c\"\"]\",gt,0.9\n", encoding="utf-8")
    _refused(store, path, r"field 'faithfulness_score': unknown field.*--allow-extra")
    result = import_recorded(store, path, allow_extra=True)
    notes = "\n".join(result.notes())
    assert "answer \u2190 response" in notes and "question \u2190 user_input" in notes
    assert "contexts \u2190 retrieved_contexts" in notes and "ground_truth \u2190 reference" in notes
    assert "faithfulness_score" in notes
    assert store.manifest(result.run_id).source["fields"]["answer"] == "response"
    (resp,) = run_responses(store, result.run_id)
    assert resp.answer == "yes" and [c.text for c in resp.retrieved] == ["c"]


def test_cli_prints_the_mapping_and_has_allow_extra(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text(f"{RAGAS_HEADER},team\nWhat?,yes,\"[\"\"c\"\"]\",gt,blue\n", encoding="utf-8")
    root = tmp_path / "runs"
    res = runner.invoke(app, ["--store", str(root), "import", str(path)])
    assert res.exit_code != 0 and "field 'team': unknown field" in str(res.exception)
    res = runner.invoke(app, ["--store", str(root), "import", str(path), "--allow-extra"])
    assert res.exit_code == 0, res.output
    assert "answer \u2190 response" in res.stderr and "team" in res.stderr


def test_json_list_in_method_cell_is_refused(store, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('question_id,question,answer,method\nq1,Q?,a,"[""local""]"\n', encoding="utf-8")
    err = _refused(store, path, r"expected text, got a list")
    assert err.field == "method" and err.record == 1


def test_unterminated_quote_names_the_line(store, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('question_id,question,answer,method\nq1,Q?,ok,m\nq2,"Open quote?,ans,m\nq3,Q3?,c,m\n',
                    encoding="utf-8")
    _refused(store, path, r"line 3.*never closed")


def test_unterminated_quote_closed_later_still_caught(store, tmp_path):
    # the quote pairs with one on a later line: the swallowed row has the wrong number of cells
    path = tmp_path / "a.csv"
    path.write_text('question_id,question,answer,method\nq1,"Q1?,a,m\nq2,Q2?,b",m\n', encoding="utf-8")
    _refused(store, path, r"line 2-3: 3 cells, but the header has 4 columns")
    path.write_text('question_id,question,answer,method\nq1,"Q1?,a,m\nq2,"Q2?",b,m\n', encoding="utf-8")
    _refused(store, path, r"row starting at line 2: ',' expected after")


def test_short_row_names_the_line(store, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('question_id,question,answer,method\nq1,Q?,a,m\nq2,Q2?,b\n', encoding="utf-8")
    err = _refused(store, path, r"line 3: 3 cells, but the header has 4")
    assert err.record == 2


def test_duplicated_header_is_refused(store, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('question_id,question,answer,answer\nq1,Q?,first,second\n', encoding="utf-8")
    err = _refused(store, path, r"column 'answer' appears twice")
    assert err.field == "answer"


def test_multiline_quoted_cells_and_blank_lines_still_import(store, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('question_id,question,answer,method\nq1,"Two\nlines?","say ""hi""",m\n\nq2,Q2?,b,m\n',
                    encoding="utf-8")
    result = import_recorded(store, path)
    answers = {r.question_id: r.answer for r in run_responses(store, result.run_id)}
    assert answers == {"q1": 'say "hi"', "q2": "b"}


def test_lone_surrogate_replaced_and_reported(store, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"question_id": "q1", "method": "m", "question": "Q?", "answer": "bad \\ud800 char"}\n'
                    '{"question_id": "q2", "method": "m", "question": "Q2\\udfff?", "answer": "fine \\ud83d\\ude00"}\n',
                    encoding="utf-8")
    result = import_recorded(store, path)
    answers = {r.question_id: r.answer for r in run_responses(store, result.run_id)}
    assert answers == {"q1": "bad \ufffd char", "q2": "fine \U0001F600"}  # a real pair is kept
    assert result.replaced_surrogates == 2 and result.records_with_replacements == [1, 2]
    assert any("U+FFFD" in line and "1, 2" in line for line in result.notes())
    repairs = store.manifest(result.run_id).source["text_repairs"]
    assert repairs == {"fields_replaced": 2, "characters": "NUL or lone UTF-16 surrogates", "records": [1, 2]}


def test_no_question_id_nor_text_says_so(store, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"method": "m", "answer": "a", "qustion": "typo"}) + "\n", encoding="utf-8")
    _refused(store, path, r"did you mean .question.")
    _refused(store, path, r"neither a question id nor question text.*the file has .qustion.", allow_extra=True)
    path.write_text(json.dumps({"method": "m", "answer": "a", "question": "  "}) + "\n", encoding="utf-8")
    _refused(store, path, r"no question id and the question text is empty \(ids are derived from the question text\)")


def test_id_without_text_and_no_dataset_says_no_dataset(store, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"question_id": "q7", "method": "m", "answer": "a"}) + "\n", encoding="utf-8")
    err = _refused(store, path, r"no dataset was given to look up question id 'q7'")
    assert "not in the dataset" not in str(err)
