"""semantic_similarity and the BERTScore metric specs on real data, through the registry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.errors import EvalcoreError
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.registry import METRICS, groups
from evalcore.schemas import EvalQuestion, EvalResponse

NAMES = ["semantic_similarity", "bert_score_p", "bert_score_r", "bert_score_f1"]


def item(qid: str, answer: str, ground_truth=None, answers=None, error=None):
    q = EvalQuestion(id=qid, question="?", ground_truth=ground_truth, answers=answers or [])
    return q, EvalResponse(question_id=qid, method="m", answer=answer, error=error)


def ctx_for(store, **options) -> ScoringContext:
    return ScoringContext(run_id="t", store=store, options={"progress": False, **options})


def test_registered_in_semantic_group():
    assert set(NAMES) <= set(groups()["semantic"])
    for name in NAMES:
        assert METRICS[name].needs == frozenset({"embeddings", "ground_truth", "answer"})


def test_paraphrase_scores_higher_than_unrelated(squad_questions, store, minilm_path):
    """SQuAD questions with differently worded gold answers: answer A vs answer B of the same
    question must beat answer A vs the gold answer of another question."""
    multi = [q for q in squad_questions if len(q["answers"]) >= 2][:40]
    assert len(multi) >= 20
    related = [item(q["id"], q["answers"][1], q["answers"][0]) for q in multi]
    shifted = multi[7:] + multi[:7]
    unrelated = [item(q["id"], o["answers"][1], q["answers"][0]) for q, o in zip(multi, shifted)]
    ctx = ctx_for(store)
    spec = METRICS["semantic_similarity"]
    rel = np.array([s.value for s in spec.compute(related, ctx)])
    unrel = np.array([s.value for s in spec.compute(unrelated, ctx)])
    assert rel.mean() > unrel.mean() + 0.2
    assert (rel > unrel).mean() >= 0.8
    f1 = METRICS["bert_score_f1"]
    assert np.mean([s.value for s in f1.compute(related, ctx)]) > \
        np.mean([s.value for s in f1.compute(unrelated, ctx)]) + 0.1


def test_halueval_right_answer_beats_hallucination(halueval_rows, store, minilm_path):
    """Against the right answer as ground truth, the right answer put in a sentence must score
    above the hallucinated answer (which is fluent, on topic, and wrong)."""
    rows = halueval_rows[:40]
    ctx = ctx_for(store)
    right = [item(f"q{i}", f"The answer is {r['right_answer']}.", r["right_answer"]) for i, r in enumerate(rows)]
    wrong = [item(f"q{i}", r["hallucinated_answer"], r["right_answer"]) for i, r in enumerate(rows)]
    for name in ("semantic_similarity", "bert_score_f1"):
        a = np.array([s.value for s in METRICS[name].compute(right, ctx)])
        b = np.array([s.value for s in METRICS[name].compute(wrong, ctx)])
        assert a.mean() > b.mean() + 0.1, name
        assert (a > b).mean() >= 0.75, name


def test_nan_with_reasons_and_model_label(store, minilm_path):
    items = [item("1", "Cornish heath", "Cornish heath"), item("2", "   ", "x"),
             item("3", "", "x", error="timeout"), item("4", "something", None)]
    ctx = ctx_for(store)
    for name in NAMES:
        scores = METRICS[name].compute(items, ctx)
        assert scores[0].value == pytest.approx(1.0, abs=1e-5)
        assert "all-MiniLM-L6-v2" in scores[0].details["model"]
        assert [s.reason for s in scores[1:]] == ["empty answer", "no answer (target error: timeout)",
                                                 "no ground truth"]
        assert all(math.isnan(s.value) for s in scores[1:])


def test_max_over_gold_answers(store, minilm_path):
    ctx = ctx_for(store)
    single = METRICS["semantic_similarity"].compute([item("1", "Paris", "the city of Lyon")], ctx)[0]
    multi = METRICS["semantic_similarity"].compute(
        [item("1", "Paris", answers=["the city of Lyon", "Paris"])], ctx)[0]
    assert multi.value == pytest.approx(1.0, abs=1e-5) and single.value < 0.9
    assert multi.details["best_reference"] == 1
    f1 = METRICS["bert_score_f1"].compute([item("1", "Paris", answers=["the city of Lyon", "Paris"])], ctx)[0]
    assert f1.value == pytest.approx(1.0, abs=1e-5) and f1.details["best_f1_reference"] == 1


def test_rescoring_hits_the_cache(store, minilm_path):
    from evalcore.embeddings import get_embedder

    items = [item(str(i), f"answer number {i}", f"ground truth {i}") for i in range(10)]
    first = METRICS["semantic_similarity"].compute(items, ctx_for(store))
    embedder = get_embedder(None, store)
    calls = embedder.calls
    other_method = [(q, r.model_copy(update={"method": "other", "answer": r.answer + "!"})) for q, r in items]
    METRICS["semantic_similarity"].compute(other_method, ctx_for(store))
    assert embedder.calls == calls + 1 and embedder.encoded - 20 == 10  # only the 10 new answers
    again = METRICS["semantic_similarity"].compute(items, ctx_for(store))
    assert embedder.calls == calls + 1
    assert [s.value for s in again] == [s.value for s in first]


def test_unloadable_models_are_clear_errors(store, minilm_path):
    items = [item("1", "a", "b")]
    with pytest.raises(EvalcoreError, match="not available offline"):
        METRICS["semantic_similarity"].compute(items, ctx_for(store, embedding_model="no-such-org/no-such-model"))
    with pytest.raises(EvalcoreError, match="microsoft/deberta-xlarge-mnli.*not available offline"):
        METRICS["bert_score_f1"].compute(items, ctx_for(store, bertscore_model="microsoft/deberta-xlarge-mnli"))
    with pytest.raises(EvalcoreError, match="does not exist"):
        METRICS["bert_score_f1"].compute(items, ctx_for(store, bertscore_model="./missing/model/folder"))
