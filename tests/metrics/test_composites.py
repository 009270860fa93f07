"""Composites: renormalised weights, and the second scoring phase reading stored values."""

import json
import math

import pytest

from evalcore.errors import EvalcoreError
from evalcore.scoring.importer import import_recorded
from evalcore.metrics.composites import (BUDGETS, SPECS, budget_score, combine, objective_means,
                                         objective_values, resolve_budgets, weighted)
from evalcore.store import query_df
from evalcore.schemas import MetricValue
from evalcore.scoring.engine import score_run


def test_combine_renormalises_and_lists_missing():
    score, used, missing = combine({"a": 1.0, "b": None, "c": 0.0}, {"a": 0.3, "b": 0.5, "c": 0.2})
    assert score == pytest.approx(0.6) and used == pytest.approx({"a": 0.6, "c": 0.4}) and missing == ["b"]
    assert combine({"a": math.nan}, {"a": 1.0})[0] is None


def test_budget_score_is_fixed_and_strictly_decreasing():
    assert budget_score(0.0, 2000.0) == 1.0 and budget_score(2000.0, 2000.0) == 0.5
    assert budget_score(1500.0, 2000.0) == pytest.approx(2000 / 3500)
    assert budget_score(0.004, 0.01) == pytest.approx(0.01 / 0.014)
    scores = [budget_score(v, 2000.0) for v in (0, 10, 100, 1000, 10_000, 1e7)]
    assert all(a > b > 0 for a, b in zip(scores, scores[1:]))
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError):
            budget_score(bad, 2000.0)


def test_objectives_use_budgets_not_the_compared_set():
    assert BUDGETS == {"latency": 2000.0, "cost": 0.01}
    values = {"token_f1": 0.5, "unanswerable_accuracy": 1.0, "latency_ms": 20.0, "cost_usd": 0.01}
    objs, used = objective_means(values)  # defaults
    assert objs["accuracy"] == pytest.approx(0.75) and used["accuracy"] == ["token_f1", "unanswerable_accuracy"]
    assert objs["latency"] == pytest.approx(2000 / 2020) and objs["cost"] == pytest.approx(0.5)
    assert objs["faithfulness"] is None
    assert objective_means(values, {})[0] == objs  # {} = defaults too
    objs, _ = objective_means(values, {"latency": 20})  # partial override keeps the cost default
    assert objs["latency"] == pytest.approx(0.5) and objs["cost"] == pytest.approx(0.5)


def test_weighted_worked_example_from_the_docs():
    values = {"token_f1": 0.8, "faithfulness": 0.9, "ndcg@10": 0.7, "latency_ms": 1500.0, "cost_usd": 0.004}
    score, details = weighted(values)
    parts = 0.30 * 0.8 + 0.20 * 0.9 + 0.15 * 0.7 + 0.10 * (0.01 / 0.014) + 0.05 * (2000 / 3500)
    assert parts == pytest.approx(0.625) and score == pytest.approx(0.625 / 0.80) == pytest.approx(0.78125)
    assert details["missing"] == ["citation"] and details["budgets"] == BUDGETS
    assert details["raw"] == {"latency": 1500.0, "cost": 0.004}
    assert sum(details["weights_used"].values()) == pytest.approx(1.0)
    assert weighted({**values, "latency_ms": 15000.0})[0] == pytest.approx(0.7528887, abs=1e-6)


def test_invalid_raw_values_are_reasons_not_zeros():
    objs, _, invalid = objective_values({"token_f1": 1.0, "latency_ms": -5.0, "cost_usd": math.inf})
    assert objs["latency"] is None and objs["cost"] is None
    assert "negative" in invalid["latency"] and "not finite" in invalid["cost"]
    score, details = weighted({"token_f1": 1.0, "latency_ms": -5.0})
    assert score == 1.0 and "latency" in details["missing"] and "latency" in details["invalid"]


@pytest.mark.parametrize("bad", [{"latency": 0}, {"latency": -1}, {"cost": math.nan}, {"cost": math.inf},
                                 {"latency": "2000"}, {"latency": True}, {"latency_ms": 2000}, [2000, 0.01]])
def test_bad_budgets_are_refused_naming_the_option(bad):
    with pytest.raises(EvalcoreError, match="budgets"):
        resolve_budgets(bad)


def test_weighted_score_version_bumped():
    """2: fixed budgets instead of min-max; 3: a failed answer scores 0 (not renormalised)."""
    assert next(s for s in SPECS if s.name == "weighted_score").version == "3"


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
    df = query_df(store, "SELECT question_id, value, details FROM metrics WHERE metric = 'weighted_score' ORDER BY 1")
    # accuracy = mean(token_f1, unanswerable_accuracy); latency = 2000 / (2000 + latency_ms);
    # no cost (no token usage): weights renormalised over accuracy .30 + latency .05.
    assert df.value.tolist() == pytest.approx([(0.30 * 1.0 + 0.05 * 2000 / 2100) / 0.35,
                                               (0.30 * 0.5 + 0.05 * 2000 / 2300) / 0.35])
    assert json.loads(df.details[0])["budgets"] == {"latency": 2000.0, "cost": 0.01}  # defaults recorded


def test_bad_budgets_option_stops_scoring(store, tmp_path):
    run_id = _run(store, tmp_path)
    score_run(store, run_id, metrics=["token_f1", "latency_ms"], progress=False)
    with pytest.raises(EvalcoreError, match="option 'budgets' 'latency'"):
        score_run(store, run_id, metrics=["weighted_score"], options={"budgets": {"latency": -1}}, progress=False)
