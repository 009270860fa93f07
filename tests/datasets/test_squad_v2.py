"""SQuAD 2.0: the real Normans article, the Hugging Face row shape, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.datasets.squad_v2 import load_squad_v2, paragraph_id, squad_question, squad_rows
from evalcore.errors import InputError


@pytest.fixture(scope="module")
def squad_file(shared_data) -> Path:
    return shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json"


@pytest.fixture(scope="module")
def raw(squad_file):
    return json.loads(squad_file.read_text(encoding="utf-8"))


def hf_rows(raw: dict) -> list[dict]:
    """The file's questions shaped like rajpurkar/squad_v2 rows (no is_impossible, no plausible)."""
    return [{"id": qa["id"], "title": art["title"], "context": par["context"], "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for art in raw["data"] for par in art["paragraphs"] for qa in par["qas"]]


def test_counts_match_the_source_description(squad_file):
    questions = load_squad_v2(squad_file)
    assert len(questions) == 208
    assert sum(q.answerable for q in questions) == 96
    assert {q.category for q in questions} == {"Normans"}


def test_answerable_question(squad_file, raw):
    q = load_squad_v2(squad_file)[0]
    paragraph = raw["data"][0]["paragraphs"][0]["context"]
    assert q.id == "56ddde6b9a695914005b9628" and q.answerable
    assert q.answers == ["France"]  # four identical human answers collapse to one
    assert [g.text for g in q.gold_passages] == [paragraph]
    assert q.gold_passages[0].chunk_id == paragraph_id("Normans", paragraph) == q.metadata["paragraph_id"]


def test_several_distinct_answers_keep_their_order(squad_file, raw):
    by_id = {q.id: q for q in load_squad_v2(squad_file)}
    multi = [qa for par in raw["data"][0]["paragraphs"] for qa in par["qas"]
             if len({a["text"] for a in qa["answers"]}) > 1]
    assert multi
    for qa in multi:
        expected = list(dict.fromkeys(a["text"] for a in qa["answers"]))
        assert by_id[qa["id"]].answers == expected and by_id[qa["id"]].ground_truth == expected[0]


def test_unanswerable_questions(squad_file):
    q = next(q for q in load_squad_v2(squad_file) if q.id == "5ad39d53604f3c001a3fe8d1")
    assert q.answerable is False and q.ground_truth is None and q.answers == []
    assert q.gold_passages == []
    assert q.metadata["plausible_answers"] == ["Normans"]
    assert q.metadata["context"].startswith("The Normans (Norman: Nourmands")


def test_hf_rows_give_the_same_questions_apart_from_file_only_fields(squad_file, raw):
    from_file = load_squad_v2(squad_file)
    from_hf = [squad_question(row, "hf", i) for i, row in enumerate(hf_rows(raw), start=1)]
    assert [q.id for q in from_hf] == [q.id for q in from_file]
    for a, b in zip(from_file, from_hf):
        a_meta = {k: v for k, v in a.metadata.items() if k != "plausible_answers"}
        assert a.model_copy(update={"metadata": a_meta}) == b


def test_flattening_labels_each_question_by_position(squad_file, raw):
    labels = [where for where, _ in squad_rows(iter([(1, raw["data"][0])]), "f")]
    assert labels[0] == "article 1 paragraph 1 question 1" and len(labels) == 208


def _file(tmp_path: Path, qa: dict, paragraph: dict | None = None) -> Path:
    par = {"context": "Some text.", "qas": [qa]} if paragraph is None else paragraph
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "T", "paragraphs": [par]}]}))
    return path


@pytest.mark.parametrize("qa, field, message", [
    ({"id": "a", "answers": [], "is_impossible": True}, "question", "missing field"),
    ({"id": "a", "question": "q?", "answers": [], "is_impossible": False}, "answers", "at least one answer"),
    ({"id": "a", "question": "q?", "answers": "France"}, "answers", "expected a list"),
    ({"id": "a", "question": "q?", "answers": [{"text": 3}]}, "answers", "'text' string"),
    ({"id": "a", "question": "q?", "answers": [], "is_impossible": "yes"}, "is_impossible", "true/false"),
    ({"id": 7, "question": "q?", "answers": [], "is_impossible": True}, "id", "expected text"),
])
def test_bad_questions_name_their_position_and_field(tmp_path, qa, field, message):
    path = _file(tmp_path, qa)
    with pytest.raises(InputError) as info:
        load_squad_v2(path)
    assert info.value.record == "article 1 paragraph 1 question 1" and info.value.field == field
    assert message in str(info.value)


def test_paragraph_without_qas_is_an_error(tmp_path):
    with pytest.raises(InputError, match="'qas' list") as info:
        load_squad_v2(_file(tmp_path, {}, paragraph={"context": "x"}))
    assert info.value.record == "article 1 paragraph 1"


def test_truncated_file_is_an_input_error(tmp_path, squad_file):
    path = tmp_path / "dev.json"
    path.write_text(squad_file.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        load_squad_v2(path)
