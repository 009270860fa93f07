"""Failure-mode diagnosis: each answer lands in the bucket its metrics say, never a guess."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evalcore.analysis.questions.failure_modes import diagnose, failure_modes, questions_in_bucket
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION

NAN = math.nan


@pytest.mark.parametrize("row, bucket", [
    ({"token_f1": 0.9}, "correct"),
    ({"answer_correct": 1.0, "token_f1": 0.0}, "correct"),              # the judge's class beats token F1
    ({"dont_know": 1.0, "answerable": True}, "wrong abstention"),
    ({"dont_know": 1.0, "answerable": False}, "correct abstention"),
    ({"token_f1": 0.0, "hit_rate@5": 0.0, "answerable": False}, "should have abstained"),  # not a retrieval miss
    ({"token_f1": 0.1, "hit_rate@5": 0.0, "faithfulness": 1.0}, "retrieval miss"),
    ({"token_f1": 0.1, "hit_rate@5": 1.0, "faithfulness": 0.5}, "unfaithful"),
    ({"token_f1": 0.1, "hit_rate@5": 1.0, "faithfulness": 1.0}, "faithful but wrong"),
    ({"token_f1": 0.1, "context_precision": 0.0}, "retrieval miss"),   # no gold: the judge's relevance
    ({"token_f1": 0.1, "hit_rate@5": 1.0}, "wrong, cause unknown"),    # faithfulness not scored
    ({"faithfulness": 1.0}, "unscored"),
    ({"error": "HTTP 500", "token_f1": 0.0}, None),
])
def test_diagnose(row, bucket):
    base = {"answerable": True, "error": None, "dont_know": 0.0}
    assert diagnose(pd.Series({**base, **row})) == bucket


def test_breakdown_counts_and_links(store):
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r", name="r",
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?", ground_truth="g") for i in range(4)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="m", answer="a") for i in range(4)])
    rows = {"q0": {"token_f1": 1.0}, "q1": {"token_f1": 0.0, "hit_rate@5": 0.0},
            "q2": {"token_f1": 0.0, "hit_rate@5": 1.0, "faithfulness": 0.4}, "q3": {"token_f1": 0.0, "hit_rate@5": 1.0,
                                                                                   "faithfulness": 1.0}}
    writer.write_metrics([MetricValue(run_id="r", method="m", question_id=q, metric=k, value=v, group="g")
                          for q, vals in rows.items() for k, v in {**vals, "dont_know": 0.0}.items()])
    writer.publish()
    table = failure_modes(store, ("r:m",)).set_index("bucket")
    assert table["n"].to_dict() == {"correct": 1, "retrieval miss": 1, "unfaithful": 1, "faithful but wrong": 1}
    assert table["share"].sum() == pytest.approx(1.0)
    assert questions_in_bucket(store, "r:m", "unfaithful") == ["q2"]


def test_vectorised_rule_equals_the_row_rule(store):
    """diagnoses() (the rule run in the store, what pages count), explained() (the same rule run
    over the outcome frame) and diagnose() (over one answer) never disagree."""
    import random

    from evalcore.analysis.read.correctness import outcome_frame
    from evalcore.analysis.questions.failure_modes import diagnoses, diagnosis_metrics, explained

    rng = random.Random(4)
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="v", name="v",
                                          evalcore_version="t", methods=["m"]))
    qs = [EvalQuestion(id=f"q{i}", question=f"Q{i}?", answerable=rng.random() < 0.8) for i in range(200)]
    writer.write_questions(qs)
    writer.write_responses([EvalResponse(question_id=q.id, method="m", answer="a",
                                         error="boom" if rng.random() < 0.05 else None) for q in qs])
    names = ["token_f1", "answer_correct", "dont_know", "faithfulness", "hit_rate@5", "context_precision"]
    values = []
    for q in qs:
        for name in names:
            if rng.random() < 0.6:
                v = rng.choice([0.0, 1.0, 0.5, 0.3, float("nan")])
                values.append(MetricValue(run_id="v", method="m", question_id=q.id, metric=name, value=v,
                                          group="g", reason="x" if v != v else None))
    writer.write_metrics(values)
    writer.publish()
    wide = outcome_frame(store, ("v:m",), extra=diagnosis_metrics())
    by_frame = dict(zip(wide["question_id"], explained(wide)["bucket"]))
    by_row = {r.question_id: diagnose(r) for _, r in wide.iloc[::5].iterrows()}  # one answer at a time
    assert by_row == {q: by_frame[q] for q in by_row}
    vec = dict(zip(*diagnoses(store, ("v:m",))[["question_id", "bucket"]].T.values))
    assert vec == {q: b for q, b in by_frame.items() if b is not None}
