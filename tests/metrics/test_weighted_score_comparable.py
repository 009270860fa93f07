"""weighted_score is comparable across runs: end to end through import, store and scoring.

docs/metrics/composites.md: cost and latency use fixed, configurable reference budgets, never min-max within a
run or selection; a system's score must not change when other systems are added, and must drop
when it is slower or dearer. Min-max normalisation (weighted_score version 1) broke all three.
"""

from __future__ import annotations

import json
import math

import pytest

from evalcore.scoring.importer import import_recorded
from evalcore.store import query_df
from evalcore.scoring.engine import score_run

# (question id, question, ground truth)
QUESTIONS = [("q1", "Capital of France?", "Paris"), ("q2", "Capital of Italy?", "Rome"),
             ("q3", "Capital of Spain?", "Madrid"), ("q4", "Capital of Peru?", "Lima")]
# method -> per question (answer, latency_ms, cost_usd); "a" varies, "b" is far slower and dearer
METHODS = {
    "a": [("Paris", 800.0, 0.002), ("Rome is the capital", 1500.0, 0.004),
          ("Barcelona", 2500.0, 0.006), ("Lima", 400.0, 0.001)],
    "b": [("Paris", 30000.0, 0.5), ("Rome", 12000.0, 0.2), ("Madrid", 45000.0, 0.9), ("Cusco", 9000.0, 0.1)],
}
INPUTS = ["token_f1", "latency_ms", "cost_usd"]


def _write(path, methods, latency_factor=1.0, cost_factor=1.0):
    lines = []
    for method in methods:
        for (qid, question, truth), (answer, latency, cost) in zip(QUESTIONS, METHODS[method]):
            lines.append(json.dumps({
                "question_id": qid, "question": question, "ground_truth": truth, "method": method,
                "answer": answer, "latency_ms": latency * latency_factor,
                "token_usage": {"input_tokens": 100, "output_tokens": 20, "cost_usd": cost * cost_factor}}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _scored(store, tmp_path, name, methods, options=None, **factors):
    run_id = import_recorded(store, _write(tmp_path / f"{name}.jsonl", methods, **factors), name=name).run_id
    score_run(store, run_id, metrics=INPUTS, progress=False)
    score_run(store, run_id, metrics=["weighted_score"], options=options, progress=False)
    return run_id


def _weighted(store, run_id, method="a"):
    df = query_df(store, "SELECT question_id, value, reason, details, version FROM metrics "
                         "WHERE run_id = ? AND metric = 'weighted_score' AND method = ? ORDER BY question_id",
                  [run_id, method])
    assert len(df) == len(QUESTIONS) and df.value.notna().all(), df.reason.tolist()
    assert set(df.version) == {"3"}
    return df


def test_score_does_not_change_when_another_method_is_added(store, tmp_path):
    alone = _weighted(store, _scored(store, tmp_path, "alone", ["a"]))
    together_run = _scored(store, tmp_path, "together", ["a", "b"])
    together = _weighted(store, together_run)
    assert together.value.tolist() == alone.value.tolist()  # identical, not merely close
    assert together.value.mean() == alone.value.mean()
    # and the other method really is far worse on cost and latency
    assert _weighted(store, together_run, "b").value.mean() < alone.value.mean() - 0.1


def test_score_drops_when_slower_or_dearer(store, tmp_path):
    base = _weighted(store, _scored(store, tmp_path, "base", ["a"]))
    slow = _weighted(store, _scored(store, tmp_path, "slow", ["a"], latency_factor=10.0))
    dear = _weighted(store, _scored(store, tmp_path, "dear", ["a"], cost_factor=10.0))
    assert slow.value.mean() < base.value.mean() and dear.value.mean() < base.value.mean()
    # per question too: every answer is slower (dearer), so every score is strictly lower
    assert all(s < b for s, b in zip(slow.value, base.value))
    assert all(d < b for d, b in zip(dear.value, base.value))


def test_per_question_value_follows_the_budget_formula(store, tmp_path):
    run_id = _scored(store, tmp_path, "formula", ["a"])
    row = _weighted(store, run_id).set_index("question_id").loc["q2"]
    f1 = query_df(store, "SELECT value FROM metrics WHERE run_id = ? AND metric = 'token_f1' AND method = 'a' "
                         "AND question_id = 'q2'", [run_id]).value[0]
    assert 0 < f1 < 1  # "Rome is the capital" vs "Rome"
    details = json.loads(row.details)
    assert details["budgets"] == {"latency": 2000.0, "cost": 0.01}  # defaults recorded
    assert details["raw"] == {"latency": 1500.0, "cost": 0.004}
    # accuracy .30, cost .10, latency .05 present; renormalised over 0.45
    expected = (0.30 * f1 + 0.10 * 0.01 / 0.014 + 0.05 * 2000 / 3500) / 0.45
    assert row.value == pytest.approx(expected)
    assert sorted(details["missing"]) == ["citation", "faithfulness", "retrieval"]


def test_budgets_option_changes_the_score_and_is_recorded(store, tmp_path):
    default = _weighted(store, _scored(store, tmp_path, "default", ["a"]))
    budgets = {"latency": 500.0, "cost": 0.001}
    run_id = _scored(store, tmp_path, "tight", ["a"], options={"budgets": budgets})
    tight = _weighted(store, run_id)
    assert all(t < d for t, d in zip(tight.value, default.value))  # tighter budgets, lower scores
    assert all(json.loads(d)["budgets"] == budgets for d in tight.details)
    q1 = json.loads(tight.details[0])
    assert q1["objectives"]["latency"] == pytest.approx(500 / (500 + 800))
    assert q1["objectives"]["cost"] == pytest.approx(0.001 / 0.003)
    # the option is stored with the run as well
    scoring = store.manifest(run_id).config["scoring"]
    assert scoring[-1]["options"]["budgets"] == budgets
    # a partial override keeps the other default
    partial = _weighted(store, _scored(store, tmp_path, "partial", ["a"], options={"budgets": {"latency": 500}}))
    assert json.loads(partial.details[0])["budgets"] == {"latency": 500.0, "cost": 0.01}
    assert not math.isclose(partial.value[0], default.value[0])
