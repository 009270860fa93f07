"""Data contracts: what they accept, what they refuse, and why."""

import math

import pytest
from pydantic import ValidationError

from evalcore.schemas import Check, EvalQuestion, EvalResponse, GoldPassage, MetricValue


def test_ground_truth_list_becomes_answers():
    q = EvalQuestion(id="q1", question="Where?", ground_truth=["Paris", "paris, France", "Paris"])
    assert q.ground_truth == "Paris"
    assert q.answers == ["Paris", "paris, France"]


def test_answers_always_start_with_ground_truth():
    q = EvalQuestion(id="q1", question="Where?", ground_truth="Rome", answers=["Milan", "Rome"])
    assert q.answers == ["Rome", "Milan"]
    q2 = EvalQuestion(id=7, question="Where?", answers=["Oslo"])
    assert q2.id == "7" and q2.ground_truth == "Oslo"


@pytest.mark.parametrize("bad", [
    {"id": "q", "question": "   "},
    {"id": " \u3000", "question": "x"},  # blank under the id rule (" q" is "q": tests/test_id_normalisation.py)
    {"id": True, "question": "x"},
    {"id": "q", "question": "x", "unknown_field": 1},
    {"id": "q", "question": "x", "recency_conflict_rule": "cite_older"},
])
def test_question_rejects(bad):
    with pytest.raises(ValidationError):
        EvalQuestion.model_validate(bad)


def test_gold_passage_needs_identity_and_accepts_doc_alias():
    assert GoldPassage.model_validate({"doc": "a.md", "heading_path": "A > B"}).rel_path == "a.md"
    with pytest.raises(ValidationError):
        GoldPassage()


@pytest.mark.parametrize("check", [
    {"type": "contains"}, {"type": "contains_any", "values": []}, {"type": "number"},
    {"type": "regex", "value": "("}, {"type": "bogus", "value": "x"},
])
def test_check_rejects_incomplete(check):
    with pytest.raises(ValidationError):
        Check.model_validate(check)


def test_response_rejects_duplicate_chunk_ids_and_bad_numbers():
    chunk = {"rank": 1, "chunk_id": "c1", "text": "t"}
    with pytest.raises(ValidationError, match="twice"):
        EvalResponse(question_id="q", method="m", retrieved=[chunk, {**chunk, "rank": 2}])
    with pytest.raises(ValidationError):
        EvalResponse(question_id="q", method="m", latency_ms=float("inf"))
    with pytest.raises(ValidationError):
        EvalResponse(question_id="q", method="m", retrieved=[{"rank": 0, "text": "x"}])


def test_response_error_gets_a_kind():
    r = EvalResponse(question_id="q", method="m", error="boom")
    assert r.error_kind == "error"


def test_metric_value_nan_needs_reason():
    with pytest.raises(ValidationError, match="reason"):
        MetricValue(run_id="r", method="m", question_id="q", metric="x", value=float("nan"), group="g")
    ok = MetricValue(run_id="r", method="m", question_id="q", metric="x", value=float("nan"), group="g",
                     reason="no contexts")
    assert math.isnan(ok.value)
    with pytest.raises(ValidationError):
        MetricValue(run_id="r", method="m", question_id="q", metric="x", value=float("inf"), group="g")


def test_ground_truth_list_with_malformed_answers_is_a_validation_error():
    """Found by the loader fuzzer: answers holding a list crashed with TypeError (unhashable)."""
    with pytest.raises(ValidationError, match="answers"):
        EvalQuestion.model_validate({"id": "q", "question": "x", "ground_truth": [], "answers": [[]]})
    q = EvalQuestion.model_validate({"id": "q", "question": "x", "ground_truth": ["a", "b"], "answers": ["b", "c"]})
    assert q.ground_truth == "a" and q.answers == ["a", "b", "c"]
