"""Reading TREC files (qrels, runs, topics) and turning them into questions."""

from __future__ import annotations

import pytest

from evalcore.datasets.trec import (
    load_trec, load_trec_topics, qrels_beside, read_qrels, read_qrels_table, read_run, read_run_table, read_topics,
    sniff_trec_topics,
)
from evalcore.errors import InputError


@pytest.fixture(scope="module")
def msmarco(shared_data):
    return shared_data / "msmarco_passage_qrels"


def test_msmarco_topics_and_qrels(msmarco):
    topics = read_topics(msmarco / "topics.msmarco-passage.dev-subset.txt")
    assert len(topics) == 6980 and topics["2"] == "Androgen receptor define"
    qrels = read_qrels(msmarco / "qrels.msmarco-passage.dev-subset.txt")
    assert sum(len(d) for d in qrels.values()) == 7437 and set(qrels) == set(topics)
    assert qrels["300674"]["7067032"] == 1


def test_load_trec_dl19_graded(msmarco):
    questions = load_trec(msmarco / "topics.dl19-passage.txt", msmarco / "qrels.dl19-passage.txt", relevance_threshold=2)
    assert len(questions) == 43
    grades = [g.relevance for q in questions for g in q.gold_passages]
    assert len(grades) == 1601 + 1804 + 697 and set(grades) == {1.0, 2.0, 3.0}  # grade 0 is not gold
    assert all(q.metadata["relevance_level"] == 2 for q in questions)
    assert sum(q.metadata["judged"] for q in questions) == 9260
    via_registry = load_trec_topics(msmarco / "topics.dl19-passage.txt")
    assert [q.id for q in via_registry] == [q.id for q in questions]
    assert sniff_trec_topics(msmarco / "topics.dl19-passage.txt")
    assert not sniff_trec_topics(msmarco / "qrels.dl19-passage.txt")


def test_whitespace_variants_read_the_same(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\n")
    messy = tmp_path / "messy"
    messy.write_bytes(b"\xef\xbb\xbfq1\tQ0   d1 1 2.5 t\r\n\n  q1 Q0 d2\t2 1.5 t  \r\n")
    assert read_run_table(plain).to_pylist() == read_run_table(messy).to_pylist()
    assert read_run(messy) == {"q1": {"d1": 2.5, "d2": 1.5}}


@pytest.mark.parametrize("content, record, field", [
    ("q1 0 d1 1\nq1 0 d2\n", 2, None),
    ("q1 0 d1 1\n\nq1 0 d2 1.5\n", 3, "relevance"),
])
def test_bad_qrels_lines(tmp_path, content, record, field):
    path = tmp_path / "qrels"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        read_qrels_table(path)
    assert (err.value.record, err.value.field) == (record, field) and str(path) in str(err.value)


def test_bad_run_lines(tmp_path):
    path = tmp_path / "run"
    path.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 nan t\n")
    with pytest.raises(InputError) as err:
        read_run_table(path)
    assert (err.value.record, err.value.field) == (2, "score")
    path.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d1 2 1.5 t\n")
    with pytest.raises(InputError) as err:
        read_run(path)
    assert err.value.record == 2 and "twice" in str(err.value)


def test_qrels_judged_twice(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("q1 0 d1 1\nq1 0 d1 0\n")
    with pytest.raises(InputError) as err:
        read_qrels(path)
    assert err.value.record == 2


@pytest.mark.parametrize("content, record, field", [
    ("1\tfine\n2 no tab\n", 2, None),
    ("1\tfine\n1\tagain\n", 2, "qid"),
    ("1\t  \n", 1, "query"),
])
def test_bad_topics(tmp_path, content, record, field):
    path = tmp_path / "topics.txt"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        read_topics(path)
    assert (err.value.record, err.value.field) == (record, field)


def test_topics_without_qrels_give_questions_without_gold(tmp_path):
    topics = tmp_path / "topics.x.txt"
    topics.write_text("1\tfirst\n2\tsecond\n")
    (tmp_path / "qrels.x.txt").write_text("1 0 d1 1\n1 0 d2 0\n9 0 d3 1\n")
    questions = load_trec_topics(topics)
    assert [len(q.gold_passages) for q in questions] == [1, 0]
    assert qrels_beside(topics).name == "qrels.x.txt"
    with pytest.raises(InputError):
        qrels_beside(tmp_path / "questions.txt")


@pytest.mark.parametrize("content", ["", "\n \n\t\n"])
def test_empty_files_are_reported(tmp_path, content):
    path = tmp_path / "run"
    path.write_text(content)
    with pytest.raises(InputError, match="no records"):
        read_run_table(path)
    with pytest.raises(InputError, match="no records"):
        read_qrels_table(path)
