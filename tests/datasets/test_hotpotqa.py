"""HotpotQA: the real dev slice, the Hugging Face row shape through the same mapping, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.datasets.hotpotqa import hotpot_question, load_hotpotqa
from evalcore.errors import InputError


@pytest.fixture(scope="module")
def hotpot_file(shared_data) -> Path:
    return shared_data / "hotpotqa_dev_distractor" / "hotpot_dev_distractor_v1_first53.json"


@pytest.fixture(scope="module")
def raw(hotpot_file):
    return json.loads(hotpot_file.read_text(encoding="utf-8"))


def as_hf_row(rec: dict) -> dict:
    """The same record in the shape `datasets` yields for hotpot_qa/distractor."""
    return {
        "id": rec["_id"], "question": rec["question"], "answer": rec["answer"],
        "type": rec["type"], "level": rec["level"],
        "supporting_facts": {"title": [t for t, _ in rec["supporting_facts"]],
                             "sent_id": [i for _, i in rec["supporting_facts"]]},
        "context": {"title": [t for t, _ in rec["context"]], "sentences": [s for _, s in rec["context"]]},
    }


def test_first_record(hotpot_file):
    questions = load_hotpotqa(hotpot_file)
    assert len(questions) == 53
    q = questions[0]
    assert q.id == "5a8b57f25542995d1e6f1371" and q.ground_truth == "yes"
    assert (q.question_type, q.difficulty) == ("comparison", "hard")
    assert [g.chunk_id for g in q.gold_passages] == ["Scott Derrickson", "Ed Wood"]
    assert q.required_support_groups == [["Scott Derrickson"], ["Ed Wood"]]
    assert q.gold_passages[0].snippet == ("Scott Derrickson (born July 16, 1966) is an American director, "
                                          "screenwriter and producer.")


def test_gold_passages_hold_the_supporting_sentences_of_each_title(hotpot_file, raw):
    for rec, q in zip(raw, load_hotpotqa(hotpot_file)):
        paragraphs = dict((t, s) for t, s in rec["context"])
        titles = list(dict.fromkeys(t for t, _ in rec["supporting_facts"]))
        assert [g.chunk_id for g in q.gold_passages] == titles
        assert q.required_support_groups == [[t] for t in titles]
        for g in q.gold_passages:
            ids = [i for t, i in rec["supporting_facts"] if t == g.chunk_id]
            expected = [paragraphs[g.chunk_id][i].strip() for i in ids]
            assert g.text == " ".join(expected) and g.snippet == expected[0]
            assert g.snippet in q.metadata["paragraphs"][[p["chunk_id"] for p in
                                                          q.metadata["paragraphs"]].index(g.chunk_id)]["text"]


def test_all_context_paragraphs_are_kept_for_a_demo_retriever(hotpot_file, raw):
    questions = load_hotpotqa(hotpot_file)
    assert [len(q.metadata["paragraphs"]) for q in questions] == [len(r["context"]) for r in raw]
    assert questions[0].metadata["paragraphs"][0]["text"].startswith("Ed Wood is a 1994 American")
    types = {q.question_type for q in questions}
    assert types == {"bridge", "comparison"}


def test_hf_rows_map_to_the_same_questions(hotpot_file, raw):
    from_file = load_hotpotqa(hotpot_file)
    from_hf = [hotpot_question(as_hf_row(rec), "hf", i) for i, rec in enumerate(raw, start=1)]
    assert from_hf == from_file


def test_fact_pointing_past_its_paragraph_is_recorded_not_fatal(raw):
    rec = dict(raw[0], supporting_facts=[["Scott Derrickson", 0], ["Ed Wood", 7]])
    q = hotpot_question(rec, "f.json", 1)
    assert q.metadata["missing_supporting_facts"] == [["Ed Wood", 7]]
    assert q.gold_passages[1].chunk_id == "Ed Wood" and q.gold_passages[1].text is None
    assert q.required_support_groups == [["Scott Derrickson"], ["Ed Wood"]]


@pytest.mark.parametrize("change, field, message", [
    ({"question": None}, "question", "missing field"),
    ({"answer": 5}, "answer", "expected text, got int"),
    ({"supporting_facts": "Ed Wood"}, "supporting_facts", "expected a list"),
    ({"supporting_facts": [["Ed Wood"]]}, "supporting_facts.0", "[title, value] pair"),
    ({"supporting_facts": [["Ed Wood", "0"]]}, "supporting_facts.0", "sentence index"),
    ({"context": [["Ed Wood", "one sentence"]]}, "context.0", "list of sentences"),
    ({"_id": None}, "_id", "missing field"),
])
def test_bad_records_name_record_and_field(tmp_path, raw, change, field, message):
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([raw[0], {**raw[1], **change}]), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_hotpotqa(path)
    assert (info.value.file, info.value.record, info.value.field) == (str(path), 2, field)
    assert message in str(info.value)


def test_duplicate_ids_are_an_error(tmp_path, raw):
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([raw[0], raw[1], raw[0]]), encoding="utf-8")
    with pytest.raises(InputError, match="duplicate question id") as info:
        load_hotpotqa(path)
    assert info.value.record == 3
