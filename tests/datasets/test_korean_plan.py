"""The Korean plan's eval_questions.yaml: both layouts, category defaults, negative checks, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.datasets.korean_plan import CATEGORIES, load_korean_plan
from evalcore.datasets.registry import detect_format, load_questions
from evalcore.errors import InputError

FIXTURE = Path(__file__).parent / "fixtures" / "eval_questions_ko.yaml"
EXAMPLE = Path(__file__).resolve().parents[2] / "evalcore" / "examples" / "eval_questions_ko.yaml"


def write(tmp_path: Path, text: str, name: str = "eval_questions.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fixture_questions():
    return {q.id: q for q in load_korean_plan(FIXTURE)}


def test_fixture_covers_every_category_in_file_order(fixture_questions):
    ids = list(fixture_questions)
    assert ids[:3] == ["SH-01", "SH-02", "MH2-01"] and ids[-1] == "NG-04"
    assert {q.category for q in fixture_questions.values()} == set(CATEGORIES)
    assert len(ids) == 13


def test_difficulty_defaults_per_category_and_explicit_override(fixture_questions):
    got = {qid: q.difficulty for qid, q in fixture_questions.items()}
    assert got["SH-01"] == "easy"
    assert got["MH2-01"] == "medium"
    assert got["MH3-02"] == "hard"
    assert got["AG-01"] == "medium" and got["AG-02"] == "hard"  # AG-02 states its own
    assert got["IN-01"] == "hard"
    assert got["NG-01"] == "easy" and got["NG-03"] == "medium"


def test_plan_fields_map_to_question_fields(fixture_questions):
    mh = fixture_questions["MH3-01"]
    assert mh.question.startswith("HANBIT 코스닥150")  # `query` is the question text
    assert mh.expected_keywords == ["바이오", "HANBIT 헬스케어 ETF"]
    assert mh.metadata["hops"] == ["ETF → 최대 편입 종목", "종목 → 업종", "업종 → 대표 ETF"]
    assert fixture_questions["AG-01"].metadata == {"aggregation_type": "count"}
    assert fixture_questions["IN-01"].metadata == {"inference_type": "causal"}
    assert fixture_questions["SH-02"].tags == ["fee"]  # native fields pass through
    assert fixture_questions["SH-02"].expected_keywords == ["0.45%"]


def test_negative_checks_and_answerability(fixture_questions):
    neg = {qid: q for qid, q in fixture_questions.items() if q.category == "negative"}
    assert {qid: (q.negative_check, q.answerable) for qid, q in neg.items()} == {
        "NG-01": ("should_not_hallucinate", False),
        "NG-02": ("should_correct_premise", True),
        "NG-03": ("should_not_fabricate_data", False),
        "NG-04": ("should_provide_accurate_disclaimer", True),
    }
    assert neg["NG-04"].ground_truth == "ETF는 원금 보장 상품이 아니며 원금 손실 위험이 있습니다."
    assert all(q.answerable and q.negative_check is None
               for q in fixture_questions.values() if q.category != "negative")


def test_shipped_example_is_detected_and_uses_category_defaults():
    assert detect_format(EXAMPLE) == "korean_plan"
    questions = {q.id: q for q in load_questions(EXAMPLE)}
    assert {q.category for q in questions.values()} == set(CATEGORIES)
    assert questions["AG-01"].difficulty == "hard"  # the category block overrides "medium"
    assert questions["NG-01"].answerable is False and questions["NG-02"].answerable is True


def test_both_layouts_give_the_same_question(tmp_path):
    flat = write(tmp_path, "inference:\n  - id: I1\n    query: 왜 그런가요?\n    inference_type: causal\n",
                 "flat.yaml")
    nested = write(tmp_path, "categories:\n  inference:\n    questions:\n"
                   "      - {id: I1, question: \"왜 그런가요?\", inference_type: causal}\n", "nested.yaml")
    assert load_korean_plan(flat) == load_korean_plan(nested)


def test_explicit_answerable_wins_and_missing_ids_are_generated(tmp_path):
    path = write(tmp_path, "negative:\n  - query: 없는 상품?\n    check: should_not_hallucinate\n"
                 "    answerable: true\n  - query: 두 번째\n")
    first, second = load_korean_plan(path)
    assert first.answerable is True and first.id == "negative-01"
    assert second.answerable is False and second.negative_check is None and second.id == "negative-02"


def test_a_check_outside_negative_sets_answerability_too(tmp_path):
    path = write(tmp_path, "inference:\n  - {id: I1, query: q, check: should_not_fabricate_data}\n"
                 "  - {id: I2, query: r}\n")
    first, second = load_korean_plan(path)
    assert (first.answerable, first.negative_check) == (False, "should_not_fabricate_data")
    assert second.answerable is True


@pytest.mark.parametrize("body, record, field, message", [
    ("negative:\n  - id: N1\n    check: should_not_hallucinate\n", "negative #1", "question", "missing question"),
    ("single_hop:\n  - id: S1\n    query: 123\n", "single_hop #1", "question", "expected text"),
    ("negative:\n  - id: N1\n    query: q\n    check: should_be_polite\n", "negative #1", "check", "unknown check"),
    ("negative:\n  - id: N1\n    query: q\n    check: [should_not_hallucinate]\n", "negative #1", "check",
     "unknown check"),
    ("negative:\n  - id: N1\n    query: q\n    expected_answer: [a, b]\n", "negative #1", "expected_answer",
     "expected text"),
    ("single_hop:\n  - id: S1\n    query: q\n    expected_keywords: {a: 1}\n", "single_hop #1",
     "expected_keywords", "list of keywords"),
    ("single_hop:\n  - id: S1\n    query: q\n    question: q\n", "single_hop #1", "query", "not both"),
    ("single_hop:\n  - id: S1\n    query: q\n    expected_keyword: [a]\n", "single_hop #1",
     "expected_keyword", "did you mean 'expected_keywords'"),
    ("single_hop:\n  - just a string\n", "single_hop #1", None, "expected a mapping"),
    ("single_hop:\n  - id: S1\n    query: q\n    metadata: true\n", "single_hop #1", "metadata",
     "expected a mapping, got bool"),
    ("single_hop: 3\n", None, "single_hop", "expected a list of questions"),
    ("- id: x\n  question: q\n", None, None, "mapping of categories"),
    ("version: 2\n", None, None, "no categories"),
])
def test_bad_input_names_record_and_field(tmp_path, body, record, field, message):
    with pytest.raises(InputError) as info:
        load_korean_plan(write(tmp_path, body))
    err = info.value
    assert (err.record, err.field) == (record, field)
    assert message in str(err) and "eval_questions.yaml" in str(err)


def test_duplicate_ids_across_categories_are_an_error(tmp_path):
    path = write(tmp_path, "single_hop:\n  - {id: Q1, query: a}\ninference:\n  - {id: Q1, query: b}\n")
    with pytest.raises(InputError, match="duplicate question id 'Q1'") as info:
        load_korean_plan(path)
    assert info.value.record == "inference #1" and info.value.field == "id"   # the plan's own label
    assert "first at record single_hop #1" in str(info.value)


def test_invalid_yaml_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="invalid YAML"):
        load_korean_plan(write(tmp_path, "single_hop:\n  - id: [unclosed\n"))
