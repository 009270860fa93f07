"""RAGChecker checking_inputs: questions, recorded output in metadata, importer records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.datasets.ragchecker import load_ragchecker, ragchecker_records
from evalcore.errors import InputError
from evalcore.scoring.importer import parse_recorded


@pytest.fixture(scope="module")
def inputs(shared_data) -> Path:
    return shared_data / "ragchecker" / "checking_inputs.json"


def test_questions_keep_the_recorded_output_out_of_gold(inputs):
    raw = json.loads(inputs.read_text(encoding="utf-8"))["results"]
    questions = load_ragchecker(inputs)
    assert [q.id for q in questions] == ["0", "1"]
    q = questions[0]
    assert q.question == "What's the longest river in the world?"
    assert q.ground_truth == raw[0]["gt_answer"]
    assert q.gold_passages == []
    assert q.metadata["recorded_response"] == raw[0]["response"]
    assert q.metadata["recorded_context"] == raw[0]["retrieved_context"]


def test_records_import_as_responses_with_their_contexts(tmp_path, inputs):
    raw = json.loads(inputs.read_text(encoding="utf-8"))["results"]
    records = ragchecker_records(inputs, method="ragchecker_example")
    path = tmp_path / "recorded.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    questions, responses = parse_recorded(path)
    assert [q.id for q in questions] == ["0", "1"]
    first = responses[0]
    assert first.method == "ragchecker_example" and first.answer == raw[0]["response"]
    assert [c.chunk_id for c in first.retrieved] == [c["doc_id"] for c in raw[0]["retrieved_context"]]
    assert [c.rank for c in first.retrieved] == [1, 2, 3, 4]
    assert questions[0].ground_truth == raw[0]["gt_answer"]


def test_outputs_file_also_loads_with_its_extra_fields_in_metadata(shared_data):
    questions = load_ragchecker(shared_data / "ragchecker" / "checking_outputs.json")
    assert len(questions) == 2 and "response_claims" in questions[0].metadata


GOOD = {"query_id": "a", "query": "q?", "gt_answer": "x", "response": "y",
        "retrieved_context": [{"doc_id": "d1", "text": "t"}]}


@pytest.mark.parametrize("change, field, message", [
    ({"query": None}, "query", "missing field"),
    ({"query_id": None}, "query_id", "missing field"),
    ({"gt_answer": 1.5}, "gt_answer", "expected text"),
    ({"retrieved_context": "t"}, "retrieved_context", "expected a list"),
    ({"retrieved_context": [{"doc_id": "d"}]}, "retrieved_context.0", "'text' string"),
])
def test_bad_records(tmp_path, change, field, message):
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"results": [GOOD, {**GOOD, "query_id": "b", **change}]}))
    with pytest.raises(InputError) as info:
        load_ragchecker(path)
    assert (info.value.record, info.value.field) == (2, field) and message in str(info.value)


def test_records_need_at_least_one_response(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"results": [{**GOOD, "response": None}]}))
    assert len(load_ragchecker(path)) == 1
    with pytest.raises(InputError, match="no records with a response"):
        ragchecker_records(path)
