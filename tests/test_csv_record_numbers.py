"""One record numbering for CSV in every error (issue 34 round 4, item 17).

A header and three data rows, the third bad: bytes that are not UTF-8 said `record 4` (the line,
from the byte reader), a field error or a wrong cell count `record 3` (the data row). Now every
error about a CSV record names it the one documented way (evalcore/datasets/records.py,
docs/data-formats.md): record N is the Nth row under the header, blank rows counted, so it is the
spreadsheet's row N + 1; the line is named as well where the file has one.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.datasets.records import read_records
from evalcore.errors import InputError
from evalcore.store import query_df
from evalcore.common.text_input import LIMIT_ENV

HEAD = b"question_id,method,question,answer,latency_ms\r\n"
GOOD = [b"q1,m,Q1,a1,1\r\n", b"q2,m,Q2,a2,2\r\n"]

# the third data row, bad in each way a reader can find
BAD_THIRD = {
    "not utf-8": b"q3,m,Q3,a\xff3,3\r\n",
    "a NUL byte": b"q3,m,Q3,a\x003,3\r\n",
    "cell count": b"q3,m,Q3,3\r\n",
    "unclosed quote": b'q3,m,Q3,"a3,3\r\n',
    "bad latency": b"q3,m,Q3,a3,slow\r\n",
    "bad list": b"q3,m,Q3,['a' 'b'],3\r\n",
}


def _file(tmp_path, body: bytes, name: str = "answers.csv"):
    path = tmp_path / name
    path.write_bytes(HEAD + b"".join(GOOD) + body)
    return path


@pytest.mark.parametrize("kind", list(BAD_THIRD))
def test_every_error_in_the_third_row_names_record_3(tmp_path, kind):
    from evalcore.scoring.importer import parse_recorded

    path = _file(tmp_path, BAD_THIRD[kind])
    with pytest.raises(InputError) as info:
        parse_recorded(path)
    assert info.value.record == 3, (kind, str(info.value))
    assert str(info.value).startswith(f"{path}, record 3"), str(info.value)


def test_an_over_long_record_names_its_record_too(tmp_path, monkeypatch):
    monkeypatch.setenv(LIMIT_ENV, "1")
    path = _file(tmp_path, b'q3,m,Q3,"' + b"line\r\n" * 300_000 + b'",3\r\n')
    with pytest.raises(InputError) as info:
        list(read_records(path))
    assert info.value.record == 3 and "line 4" in str(info.value), str(info.value)


def test_blank_rows_count_so_a_record_is_its_spreadsheet_row_minus_one(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_bytes(HEAD + GOOD[0] + b"\r\n,,,,\r\n" + b"q4,m,Q4,a\xff,4\r\n")
    with pytest.raises(InputError) as info:
        list(read_records(path))
    assert info.value.record == 4 and "line 5" in str(info.value), str(info.value)
    path.write_bytes(HEAD + GOOD[0] + b"\r\n" + GOOD[1])
    assert [n for n, _ in read_records(path)] == [1, 3]


def test_a_record_spanning_lines_keeps_its_number(tmp_path):
    """A quoted cell with line breaks: the record after it is still record 2 (the line is 4)."""
    path = tmp_path / "multi.csv"
    path.write_bytes(HEAD + b'q1,m,Q1,"one\r\ntwo",1\r\n' + b"q2,m,Q2,a\xff,2\r\n")
    with pytest.raises(InputError) as info:
        list(read_records(path))
    assert info.value.record == 2 and "line 4" in str(info.value), str(info.value)


def test_an_error_in_the_header_says_so(tmp_path):
    path = tmp_path / "head.csv"
    path.write_bytes(b"question_id,an\xffswer\r\nq1,a\r\n")
    with pytest.raises(InputError) as info:
        list(read_records(path))
    assert "header" in str(info.value) and "line 1" in str(info.value), str(info.value)


def test_labels_and_answers_say_the_same_record_on_the_command_line(tmp_path):
    """Through the CLI (one line, exit 2): `import` and `labels import` of CSV files whose third row
    is bad in two different ways both say record 3."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=3, n_metrics=4, judge_calls=False)
    run = store.run_ids()[0]
    qids = sorted(query_df(store, "SELECT DISTINCT question_id FROM metrics WHERE metric = 'answer_class'").question_id)
    runner = CliRunner()
    answers = _file(tmp_path, BAD_THIRD["not utf-8"])
    res = runner.invoke(app, ["--store", str(store.root), "import", str(answers)])
    assert res.exit_code != 0 and f"{answers}, record 3" in str(res.exception), res.output
    labels = tmp_path / "labels.csv"
    rows = [f"{run},local_search,{q},answer_class,CORRECT,ann" for q in qids[:2]]
    rows.append(f"{run},nope,{qids[2]},answer_class,x,ann")
    labels.write_text("run,method,question_id,metric,label,who\n" + "\n".join(rows) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["--store", str(store.root), "labels", "import", str(labels)])
    assert res.exit_code != 0 and f"{labels}, record 3" in str(res.exception), str(res.exception)
    labels.write_bytes(labels.read_bytes().replace(b"nope", b"n\xffope"))
    res = runner.invoke(app, ["--store", str(store.root), "labels", "import", str(labels)])
    assert res.exit_code != 0 and f"{labels}, record 3" in str(res.exception), str(res.exception)
