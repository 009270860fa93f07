"""Composites: renormalised weights, and the second scoring phase reading stored values."""

import math

import pytest

from evalcore.importer import import_recorded
from evalcore.metrics.composites import combine, invert, objective_means
from evalcore.queries import query_df
from evalcore.schemas import MetricValue
from evalcore.scoring import score_run


def test_combine_renormalises_and_lists_missing():
    score, used, missing = combine({"a": 1.0, "b": None, "c": 0.0}, {"a": 0.3, "b": 0.5, "c": 0.2})
    assert score == pytest.approx(0.6) and used == pytest.approx({"a": 0.6, "c": 0.4}) and missing == ["b"]
    assert combine({"a": math.nan}, {"a": 1.0})[0] is None


def test_invert_and_objectives():
    assert invert(10, 10, 30) == 1.0 and invert(30, 10, 30) == 0.0 and invert(5, 5, 5) == 1.0
    objs, used = objective_means({"token_f1": 0.5, "unanswerable_accuracy": 1.0, "latency_ms": 20.0},
                                 {"latency": (10.0, 30.0)})
    assert objs["accuracy"] == pytest.approx(0.75) and used["accuracy"] == ["token_f1", "unanswerable_accuracy"]
    assert objs["latency"] == pytest.approx(0.5) and objs["faithfulness"] is None


def _run(store, tmp_path):
    path = tmp_path / "rec.jsonl"
    path.write_text(
        '{"question_id": "a", "question": "Q1?", "ground_truth": "Paris", "method": "m", "answer": "Paris", "latency_ms": 100}\n'
        '{"question_id": "b", "question": "Q2?", "ground_truth": "Rome", "method": "m", "answer": "Milan", "latency_ms": 300}\n')
    return import_recorded(store, path).run_id


def test_ragas_score_from_stored_judge_values(store, tmp_path):
    run_id = _run(store, tmp_path)
    writer = store.open_run(run_id)
    parts = {"a": {"faithfulness": 1.0, "context_precision": 0.5, "context_recall": 0.5, "answer_relevance": 1.0},
             "b": {"faithfulness": 0.0, "context_precision": math.nan, "context_recall": 1.0, "answer_relevance": math.nan}}
    writer.write_metrics([MetricValue(run_id=run_id, method="m", question_id=q, metric=k, value=v, group="judged",
                                      reason="no contexts" if math.isnan(v) else None)
                          for q, d in parts.items() for k, v in d.items()])
    score_run(store, run_id, metrics=["ragas_score"], progress=False)
    df = query_df(store, "SELECT question_id, value, details FROM metrics WHERE metric = 'ragas_score' ORDER BY 1")
    assert df.value.tolist() == pytest.approx([0.3 + 0.1 + 0.1 + 0.3, (0.0 * 0.3 + 1.0 * 0.2) / 0.5])
    assert '"missing": ["context_precision", "answer_relevance"]' in df.details[1]


def test_weighted_and_overall_need_inputs(store, tmp_path):
    run_id = _run(store, tmp_path)
    report = score_run(store, run_id, metrics=["overall_score"], progress=False)
    assert report.by_metric["overall_score"].n_nan == 2  # nothing stored yet: NaN with a reason
    assert "score those metrics first" in next(iter(report.by_metric["overall_score"].reasons))
    score_run(store, run_id, progress=False)  # default: lexical/perf first, then composites
    df = query_df(store, "SELECT question_id, value FROM metrics WHERE metric = 'weighted_score' ORDER BY 1")
    # accuracy = mean(token_f1, unanswerable_accuracy); latency inverted over 100..300 ms;
    # weights renormalised over accuracy .30 + latency .05.
    assert df.value.tolist() == pytest.approx([(0.30 * 1.0 + 0.05 * 1.0) / 0.35, (0.30 * 0.5 + 0.05 * 0.0) / 0.35])
