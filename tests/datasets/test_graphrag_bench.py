"""GraphRAG-Bench questions on the real files, plus the error paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.datasets.graphrag_bench import graphrag_question, load_graphrag_bench, split_evidence
from evalcore.datasets.registry import detect_format
from evalcore.errors import DuplicateIdsDropped, InputError


@pytest.fixture(scope="module")
def bench_dir(shared_data) -> Path:
    return shared_data / "graphrag_bench"


def test_cornwall_subset_maps_every_record(bench_dir):
    path = bench_dir / "novel_questions_Novel-44557_cornwall.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    questions = load_graphrag_bench(path)
    assert [q.id for q in questions] == [r["id"] for r in raw]
    first = questions[0]
    assert first.id == "Novel-73586ddc"
    assert first.ground_truth == "Cornish heath"
    assert first.question_type == "Fact Retrieval"
    assert first.category == "Novel-44557" and first.metadata["corpus_name"] == "Novel-44557"
    assert first.metadata["evidence_triple"].startswith("(erica vagans")
    assert [g.text for g in first.gold_passages] == [raw[0]["evidence"]]
    assert all(g.snippet is None and g.chunk_id is None for q in questions for g in q.gold_passages)


def test_multi_sentence_evidence_becomes_one_passage_per_sentence(bench_dir):
    raw = json.loads((bench_dir / "novel_questions_Novel-44557_cornwall.json").read_text(encoding="utf-8"))
    rec = next(r for r in raw if r["evidence"].count(";") >= 3)
    question = graphrag_question(rec, "f.json", 1)
    texts = [g.text for g in question.gold_passages]
    assert texts == [part.strip() for part in rec["evidence"].split(";")]
    assert len(texts) >= 4


def test_split_keeps_semicolons_inside_a_sentence():
    assert split_evidence("A; b is c.; D said \"no\".;E.") == ["A; b is c.", 'D said "no".', "E."]
    assert split_evidence("") == []


def test_full_file_has_a_real_duplicate_id_reported_precisely(bench_dir):
    path = bench_dir / "novel_questions.json"
    assert detect_format(path) == "graphrag_bench"
    with pytest.raises(InputError) as info:
        load_graphrag_bench(path)
    assert info.value.record == 872 and info.value.field == "id"
    assert "Novel-55f0c0e2" in str(info.value) and "first at record 330" in str(info.value)
    assert "--on-duplicate keep-first" in str(info.value)   # the way out is in the message


def test_keep_first_drops_the_later_copy(bench_dir):
    with pytest.warns(DuplicateIdsDropped, match="first kept at record 330, dropped record 872"):
        questions = load_graphrag_bench(bench_dir / "novel_questions.json", on_duplicate="keep_first")
    assert len(questions) == 2009
    dup = next(q for q in questions if q.id == "Novel-55f0c0e2")
    assert dup.category == "Novel-47558"  # record 330, not the corrupted record 872
    counts = {}
    for q in questions:
        counts[q.question_type] = counts.get(q.question_type, 0) + 1
    assert counts == {"Fact Retrieval": 971, "Complex Reasoning": 609, "Contextual Summarize": 362,
                      "Creative Generation": 67}


def test_parquet_twin_is_sniffed_and_loaded(tmp_path, bench_dir):
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = json.loads((bench_dir / "novel_questions_Novel-44557_cornwall.json").read_text(encoding="utf-8"))
    path = tmp_path / "novel_questions.parquet"
    pq.write_table(pa.Table.from_pylist(raw[:5]), path)
    assert detect_format(path) == "graphrag_bench"
    assert load_graphrag_bench(path) == load_graphrag_bench(
        bench_dir / "novel_questions_Novel-44557_cornwall.json")[:5]


GOOD = {"id": "N-1", "source": "Novel-1", "question": "Who?", "answer": "Ann", "question_type": "Fact Retrieval",
        "evidence": "Ann did it.", "evidence_triple": "(Ann, did, it)"}


@pytest.mark.parametrize("change, field, message", [
    ({"question": None}, "question", "missing field"),
    ({"answer": ["Ann"]}, "answer", "expected text, got list"),
    ({"evidence": 3}, "evidence", "expected text"),
    ({"question": "  "}, "question", "must not be empty"),
])
def test_bad_records_name_file_record_and_field(tmp_path, change, field, message):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([GOOD, {**GOOD, "id": "N-2", **change}]), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_graphrag_bench(path)
    assert (info.value.file, info.value.record, info.value.field) == (str(path), 2, field)
    assert message in str(info.value)


def test_truncated_json_is_an_input_error(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([GOOD, GOOD])[:-20], encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        load_graphrag_bench(path)
